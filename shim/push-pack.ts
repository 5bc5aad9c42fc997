import { spawn, type ChildProcess, type ChildProcessByStdio } from "node:child_process";
import { closeSync, constants, openSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { packFileName } from "../src/effects/pack-file-name.js";
import { guessPush, type PushGuess } from "./push-guess.js";
import { randomUUID } from "./request-id.js";

/**
 * A push's `git pack-objects --revs --stdout` in the seat (the remote helper's, git-remote.ts):
 * started before its input is known, or given a guess of it (push-guess.ts) as it starts. Its
 * output is held (not read) until the pack is sent, or, with `file`, written to that file in the
 * seat's tmp folder, which `stop` removes. This module is small and loads no gRPC: the helper's
 * front (main.ts) starts a push's pack with it before the rest of the helper has loaded.
 */
export interface Packer {
  readonly child: ChildProcessByStdio<Writable, Readable | null, null>;
  readonly done: Promise<void>;
  readonly file?: PackFile;
  /** The guess it was given as it started; none: it waits for its input. */
  readonly guess?: PushGuess;
  /** Started as the helper started (startEarlyPack), not at git's listing. */
  readonly early?: boolean;
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
  const done = new Promise<void>((resolve, reject) => {
    packer.on("error", reject);
    packer.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`git ${PACK_OBJECTS.join(" ")} failed (${code})`))));
  });
  done.catch(() => undefined);
  if (guess !== undefined) packer.stdin.end(revisions([guess.tip], guess.excludes));
  return {
    child: packer,
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
