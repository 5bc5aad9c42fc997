import { spawn } from "node:child_process";
import { lstatSync, realpathSync, type BigIntStats } from "node:fs";
import { basename, dirname } from "node:path";
import { BASH, BASH_COMMAND } from "./close-fds.js";

/**
 * What the seat's own uid may read and execute of the files the launcher would copy into its
 * /etc (etc-copies.ts), asked of the kernel as that uid. A copy is read by the daemon — as root
 * in system mode — where a bind leaves the check to the kernel at the seat's uid: without this,
 * a world-readable file an ACL or the seat's group denies it, or one behind a folder it cannot
 * enter, was readable through the copy (found by an attack, round seven). In user mode the
 * daemon is the seat's uid, and its own open and access(2) are the seat's answer.
 *
 * The kernel is asked by a short bash run as the seat's uid and gid (no supplementary groups,
 * as the launch chain runs): `[ -r ]` and `[ -x ]` are access(2), which counts ACLs, group and
 * every folder on the way. Answers are kept per uid and gid, each with the identity of the file
 * and of every folder above it (device, inode, mode, owner, group, change time: chmod, chown
 * and setfacl all move the change time), so a launch asks again only for what changed. A check
 * that cannot run answers nothing readable: the files are bound, as before (fail closed).
 */
export interface SeatAccess {
  readonly read: boolean;
  readonly exec: boolean;
  /**
   * The identity of the file and of every folder above it (through the links on the way) that
   * the answer holds for: the launch copies the file only when what it opened still has it
   * (etc-copies.ts) — otherwise a file swapped between the check and the daemon's open (as
   * root) reached the seat as a copy (found by an attack, round eight).
   */
  readonly sig: string;
}

export type SeatReadable = (paths: readonly string[], ids: { readonly uid: number; readonly gid: number }) => Promise<ReadonlyMap<string, SeatAccess>>;

/** The kernel's answer for one path, before it is tied to what it held for. */
export type Answer = Omit<SeatAccess, "sig">;

/** The answers kept for this many seat uids at most (the oldest is forgotten first). */
const USERS_KEPT = 256;
const CHECK_TIMEOUT_MS = 5_000;
const SCRIPT = 'for f; do r=0; x=0; [ -r "$f" ] && r=1; [ -x "$f" ] && x=1; printf "%s%s%s\\0" "$r" "$x" "$f"; done';

export function createSeatReadable(check: typeof askKernel = askKernel): SeatReadable {
  const users = new Map<string, Map<string, { readonly sig: string; readonly access: SeatAccess }>>();
  return async (paths, ids) => {
    const user = `${ids.uid}:${ids.gid}`;
    const known = users.get(user) ?? new Map<string, { readonly sig: string; readonly access: SeatAccess }>();
    users.delete(user);
    users.set(user, known);
    while (users.size > USERS_KEPT) users.delete(users.keys().next().value as string);
    const before = new Map<string, string | undefined>();
    const out = new Map<string, SeatAccess>();
    const ask: string[] = [];
    for (const path of paths) {
      const sig = signature(path, before);
      if (sig === undefined) continue;
      const kept = known.get(path);
      if (kept !== undefined && kept.sig === sig) out.set(path, kept.access);
      else ask.push(path);
    }
    if (ask.length > 0) {
      const answers = await check(ask, ids).catch(() => new Map<string, Answer>());
      // Taken again after the kernel answered: an answer holds only for what was there both
      // before and after it (a file or folder changed meanwhile is not copied, and the answer
      // is not kept — found by an attack, round eight: a flapping mount poisoned the cache).
      const after = new Map<string, string | undefined>();
      for (const path of ask) {
        const answer = answers.get(path);
        const sig = signature(path, after);
        if (answer === undefined || sig === undefined || sig !== signature(path, before)) continue;
        const access = { ...answer, sig };
        out.set(path, access);
        known.set(path, { sig, access });
      }
    }
    return out;
  };
}

/**
 * The identity of `path` and of every folder above it, or undefined when any is missing. The
 * folders are those of its real path (a link on the way is followed, and its text kept), so a
 * folder reached through a link is the folder that counts (found by an attack, round eight).
 * `memo` holds what one pass has read; a pass after a check starts a new one.
 */
export function signature(path: string, memo: Map<string, string | undefined> = new Map()): string | undefined {
  const folder = dirname(path);
  const realKey = `\0real:${folder}`;
  if (!memo.has(realKey)) {
    try {
      memo.set(realKey, realpathSync.native(folder));
    } catch {
      memo.set(realKey, undefined);
    }
  }
  const realFolder = memo.get(realKey);
  if (realFolder === undefined) return undefined;
  const real = `${realFolder === "/" ? "" : realFolder}/${basename(path)}`;
  const parts: string[] = [real];
  for (let at = real; ; at = dirname(at)) {
    let sig = memo.get(at);
    if (!memo.has(at)) {
      const stats = lstatSync(at, { bigint: true, throwIfNoEntry: false });
      sig = stats === undefined ? undefined : identity(stats);
      memo.set(at, sig);
    }
    if (sig === undefined) return undefined;
    parts.push(sig);
    if (at === dirname(at)) return parts.join("\0");
  }
}

/** What names one file as it is now: which file, its mode and owners, and its change time (chmod, chown and setfacl move it). */
export function identity(stats: BigIntStats): string {
  return `${stats.dev}:${stats.ino}:${stats.mode}:${stats.uid}:${stats.gid}:${stats.ctimeNs}`;
}

/** One bash as the seat's ids: each path's read and execute answer from access(2). */
export function askKernel(paths: readonly string[], ids: { readonly uid: number; readonly gid: number }): Promise<Map<string, Answer>> {
  return new Promise((resolve, reject) => {
    const child = spawn(BASH, [...BASH_COMMAND, SCRIPT, "teamd-readable", ...paths], {
      uid: ids.uid,
      gid: ids.gid,
      env: {},
      cwd: "/",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: CHECK_TIMEOUT_MS,
      killSignal: "SIGKILL",
    });
    const chunks: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    child.once("error", reject);
    child.once("close", (code) => {
      if (code !== 0) return reject(new Error(`the access check as uid ${ids.uid} ended ${String(code)}`));
      const asked = new Set(paths);
      const answers = new Map<string, Answer>();
      for (const entry of Buffer.concat(chunks).toString("utf8").split("\0")) {
        if (entry.length < 3) continue;
        const path = entry.slice(2);
        if (asked.has(path)) answers.set(path, { read: entry[0] === "1", exec: entry[1] === "1" });
      }
      resolve(answers);
    });
  });
}
