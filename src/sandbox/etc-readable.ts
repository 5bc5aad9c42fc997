import { spawn } from "node:child_process";
import { lstatSync } from "node:fs";
import { dirname } from "node:path";
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
}

export type SeatReadable = (paths: readonly string[], ids: { readonly uid: number; readonly gid: number }) => Promise<ReadonlyMap<string, SeatAccess>>;

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
    const sigs = new Map<string, string | undefined>();
    const out = new Map<string, SeatAccess>();
    const ask: string[] = [];
    for (const path of paths) {
      const sig = signature(path, sigs);
      if (sig === undefined) continue;
      const kept = known.get(path);
      if (kept !== undefined && kept.sig === sig) out.set(path, kept.access);
      else ask.push(path);
    }
    if (ask.length > 0) {
      const answers = await check(ask, ids).catch(() => new Map<string, SeatAccess>());
      for (const path of ask) {
        const access = answers.get(path) ?? { read: false, exec: false };
        out.set(path, access);
        const sig = signature(path, sigs);
        if (sig !== undefined && answers.has(path)) known.set(path, { sig, access });
      }
    }
    return out;
  };
}

/** The identity of `path` and every folder above it, or undefined when any is missing. */
function signature(path: string, memo: Map<string, string | undefined>): string | undefined {
  const parts: string[] = [];
  for (let at = path; ; at = dirname(at)) {
    let sig = memo.get(at);
    if (!memo.has(at)) {
      const stats = lstatSync(at, { bigint: true, throwIfNoEntry: false });
      sig = stats === undefined ? undefined : `${stats.dev}:${stats.ino}:${stats.mode}:${stats.uid}:${stats.gid}:${stats.ctimeNs}`;
      memo.set(at, sig);
    }
    if (sig === undefined) return undefined;
    parts.push(sig);
    if (at === dirname(at)) return parts.join("/");
  }
}

/** One bash as the seat's ids: each path's read and execute answer from access(2). */
export function askKernel(paths: readonly string[], ids: { readonly uid: number; readonly gid: number }): Promise<Map<string, SeatAccess>> {
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
      const answers = new Map<string, SeatAccess>();
      for (const entry of Buffer.concat(chunks).toString("utf8").split("\0")) {
        if (entry.length < 3) continue;
        const path = entry.slice(2);
        if (asked.has(path)) answers.set(path, { read: entry[0] === "1", exec: entry[1] === "1" });
      }
      resolve(answers);
    });
  });
}
