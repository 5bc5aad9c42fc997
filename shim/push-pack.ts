import { spawn, type ChildProcess, type ChildProcessByStdio } from "node:child_process";
import { closeSync, constants, openSync, readFileSync, readSync, rmSync } from "node:fs";
import { Socket } from "node:net";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { PACK_FILE_NAME, packFileName } from "../src/effects/pack-file-name.js";
import { guessPush, OBJECT_ID, type PushGuess } from "./push-guess.js";
import { randomUUID } from "./request-id.js";

/**
 * A push's `git pack-objects --revs --stdout` in the seat (the remote helper's, git-remote.ts):
 * started before its input is known, or given a guess of it (push-guess.ts) as it starts. Its
 * output is held (not read) until the pack is sent, or, with `file`, written to that file in the
 * seat's tmp folder, which `stop` removes. This module is small and loads no gRPC: the helper's
 * front (main.ts) starts a push's pack with it before the rest of the helper has loaded.
 */
export interface Packer {
  /** Gives pack-objects its input: only one started without a guess waits for it. */
  input(revisions: string): void;
  /** Its output, where it writes no file (the pack then streams). */
  readonly output?: Readable;
  readonly done: Promise<void>;
  /** Whether pack-objects has exited 0 (then every revision it was given names an object here). */
  succeeded(): boolean;
  /** Whether it has exited otherwise (or could not start). */
  failed(): boolean;
  readonly file?: PackFile;
  /** The guess it was given as it started; none: it waits for its input. */
  readonly guess?: PushGuess;
  /** Started as the helper started (startEarlyPack), not at git's listing. */
  readonly early?: boolean;
  /** Started by the helper's front, before the helper (adoptFrontPack). */
  readonly front?: boolean;
  stop(): void;
}

export interface PackFile {
  readonly name: string;
  readonly path: string;
}

const PACK_OBJECTS = ["pack-objects", "--revs", "--stdout", "-q"];

/** pack-objects' input: the tips, then the commits left out (as `^OID`), a line each. */
export function revisions(tips: readonly string[], exclude: readonly string[]): string {
  return [...tips, ...exclude.map((oid) => `^${oid}`)].join("\n") + "\n";
}

export function stopChild(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

export function startPacker(guess: PushGuess | undefined, early = false): Packer {
  const file = openPackFile();
  let packer: ChildProcessByStdio<Writable, Readable | null, null>;
  try {
    packer = spawn("git", PACK_OBJECTS, { stdio: ["pipe", file?.fd ?? "pipe", "inherit"] }) as ChildProcessByStdio<Writable, Readable | null, null>;
  } finally {
    if (file !== undefined) closeSync(file.fd);
  }
  // Held until read: when a child exits, Node drops the unread output of a stream nobody
  // listens to (its flushStdio), and a small pack can be written and git gone before the call
  // that sends it reads a byte.
  packer.stdout?.on("readable", () => undefined);
  // git may exit before it read all of its input (EPIPE): its exit code tells what happened.
  packer.stdin.on("error", () => undefined);
  let succeeded = false;
  let failed = false;
  const done = new Promise<void>((resolve, reject) => {
    packer.on("error", (error) => {
      failed = true;
      reject(error);
    });
    packer.on("close", (code) => {
      succeeded = code === 0;
      failed = code !== 0;
      if (code === 0) resolve();
      else reject(new Error(`git ${PACK_OBJECTS.join(" ")} failed (${code})`));
    });
  });
  done.catch(() => undefined);
  if (guess !== undefined) packer.stdin.end(revisions([guess.tip], guess.excludes));
  return {
    input: (text) => packer.stdin.end(text),
    succeeded: () => succeeded,
    failed: () => failed,
    ...(packer.stdout !== null ? { output: packer.stdout } : {}),
    done,
    ...(file !== undefined ? { file: { name: file.name, path: file.path } } : {}),
    ...(guess !== undefined ? { guess } : {}),
    early,
    stop: () => {
      stopChild(packer);
      if (file !== undefined) rmSync(file.path, { force: true });
    },
  };
}

/**
 * A new file for the pack in the seat's tmp folder (TEAMD_TMP, set by the seat's plan), opened
 * for pack-objects' output; undefined where there is none (the pack then streams).
 */
function openPackFile(): (PackFile & { readonly fd: number }) | undefined {
  const folder = process.env.TEAMD_TMP;
  if (folder === undefined || !folder.startsWith("/")) return undefined;
  const name = packFileName(randomUUID());
  const path = join(folder, name);
  try {
    const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    return { name, path, fd };
  } catch {
    return undefined;
  }
}

/**
 * The pack of a push's guess, started as the helper starts (issue 26), when the git that ran
 * the helper is a `git push`: the word `push` among the arguments of the git that runs
 * `git remote-teamd` (the helper's parent; /proc, at most 4 KiB of each command line read). The
 * listing git asks first takes ~20 ms in a seat, and the helper's own start ~15 ms before it;
 * the pack, the longest wait of a push, starts ahead of both. Anything else that ran the helper
 * (a fetch, git under another name) gets no early pack: the helper guesses when git lists refs
 * for a push, as before. A wrong word costs a guess, not a pack: the helper sends the guess's
 * pack only if it is exactly the push's (git-remote.ts).
 */
export function startEarlyPack(remote: string | undefined): Packer | undefined {
  const front = adoptFrontPack();
  if (front !== "none") return front;
  if (!ranByPush()) return undefined;
  const guess = guessPush(process.env.GIT_DIR, remote);
  return guess !== undefined ? startPacker(guess, true) : undefined;
}

function ranByPush(): boolean {
  // git runs a remote helper as `git remote-NAME`, itself run by the git that pushes.
  const parent = commandLine(process.ppid);
  if (parent === undefined) return false;
  if (parent.includes("push")) return true;
  if (!(parent[1] ?? "").startsWith("remote-")) return false;
  const grandparent = parentOf(process.ppid);
  return grandparent !== undefined && commandLine(grandparent)?.includes("push") === true;
}

function commandLine(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/cmdline`, "latin1");
    return text.length <= 4096 ? text.split("\0") : undefined;
  } catch {
    return undefined;
  }
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // After the command's name, which may hold spaces and parentheses: state, then the parent's pid.
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    return Number.isSafeInteger(ppid) && ppid > 1 ? ppid : undefined;
  } catch {
    return undefined;
  }
}

/** The fd on which the remote helper's front tells of the pack it started (shim/git-remote-front.sh). */
const FRONT_FD = 4;
/** The most the front's account of its pack may take before its exit: the revisions it gave, bounded there at 1 MiB. */
const FRONT_ACCOUNT_BYTES = 2 * 1024 * 1024 + 4096;

/**
 * The pack the remote helper's front started on the push's guess before Node loaded
 * (shim/git-remote-front.sh, issue 26): its file's name in TEAMD_EARLY_PACK, and on fd 4 its
 * account — `pid N`, the revisions it gave pack-objects (the tip, `--not`, the commits left out,
 * a line each), `.`, then, once pack-objects has exited, `exit N`. The revisions are already
 * there when this runs (the front wrote them before Node started), so they are read in line.
 * "none": the front started no pack (or there is no front); undefined: it did, and the account
 * could not be read as it should — the pack is stopped, and no other is started early.
 */
export function adoptFrontPack(fd = FRONT_FD): Packer | undefined | "none" {
  const name = process.env.TEAMD_EARLY_PACK;
  const folder = process.env.TEAMD_TMP;
  // Not for what this helper runs (pack-objects, cat-file, index-pack).
  delete process.env.TEAMD_EARLY_PACK;
  if (name === undefined) return "none";
  const path = folder !== undefined && folder.startsWith("/") && PACK_FILE_NAME.test(name) ? join(folder, name) : undefined;
  let account = "";
  const buffer = Buffer.alloc(64 * 1024);
  try {
    while (!account.includes("\n.\n") && account.length < FRONT_ACCOUNT_BYTES) {
      const read = readSync(fd, buffer, 0, buffer.length, null);
      if (read === 0) break;
      account += buffer.toString("latin1", 0, read);
    }
  } catch {
    // No account to read (fd 4 is not the front's): nothing of the front's to take.
    if (path !== undefined) rmSync(path, { force: true });
    return undefined;
  }
  const end = account.indexOf("\n.\n");
  const lines = account.slice(0, Math.max(end, 0)).split("\n");
  const pid = /^pid ([1-9][0-9]{0,9})$/.exec(lines[0] ?? "")?.[1];
  const tip = lines[1] ?? "";
  const excludes = lines.slice(3);
  let exited = false;
  let succeeded = false;
  const stop = () => {
    // Killed only while it has not exited: its id then still names it (the front has not reaped
    // it; a pid namespace hands out ids in turn, so a reaped one is not soon another's).
    if (!exited && pid !== undefined) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // Gone already.
      }
    }
    if (path !== undefined) rmSync(path, { force: true });
  };
  if (
    end < 0 ||
    pid === undefined ||
    path === undefined ||
    !OBJECT_ID.test(tip) ||
    lines[2] !== "--not" ||
    excludes.length === 0 ||
    !excludes.every((oid) => OBJECT_ID.test(oid))
  ) {
    stop();
    return undefined;
  }
  let rest = account.slice(end + 3);
  const done = new Promise<void>((resolve, reject) => {
    const pipe = new Socket({ fd, readable: true, writable: false });
    const settle = (): boolean => {
      const status = /^exit (\d+)\n/.exec(rest)?.[1];
      if (status === undefined && rest.length < 64) return false;
      exited = true;
      succeeded = status === "0";
      pipe.destroy();
      if (status === "0") resolve();
      else reject(new Error(`git ${PACK_OBJECTS.join(" ")} failed (${status ?? "no exit status"})`));
      return true;
    };
    const ended = () => {
      if (exited) return;
      exited = true;
      reject(new Error(`git ${PACK_OBJECTS.join(" ")} failed (no exit status)`));
    };
    if (settle()) return;
    pipe.on("data", (chunk: Buffer) => {
      rest += chunk.toString("latin1");
      settle();
    });
    pipe.on("end", ended);
    pipe.on("error", ended);
  });
  done.catch(() => undefined);
  return {
    input: () => {
      throw new Error("the pack the helper's front started was given its input there");
    },
    done,
    succeeded: () => succeeded,
    failed: () => exited && !succeeded,
    file: { name, path },
    guess: { tip, excludes: [...new Set(excludes)] },
    early: true,
    front: true,
    stop,
  };
}
