import { execFile, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { constants } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { join } from "node:path";

/**
 * git as teamd runs it: never with the machine's or the user's configuration, never with
 * hooks, fsmonitor, filters, external diff/textconv or a pager. The repositories teamd
 * touches (the hub above all) hold content agents wrote; a config or hook in them, or in
 * a global file an agent could once reach, must never run code in the daemon.
 */
export const HARDENING: readonly string[] = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "core.fsmonitor=false",
  "-c",
  "core.pager=cat",
  "-c",
  "diff.external=",
  "-c",
  "core.sshCommand=false",
  "-c",
  "protocol.ext.allow=never",
  "-c",
  "credential.helper=",
  "-c",
  "core.askPass=",
  "-c",
  "gc.auto=0",
];

/** Environment for git: only what it needs, nothing inherited that could redirect it. */
export function gitEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    LANG: "C",
    LC_ALL: "C",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_ASKPASS: "",
    SSH_ASKPASS: "",
    GIT_ATTR_NOSYSTEM: "1",
    // Agents write the hub: a refs/replace/ object there must not change what a commit means.
    GIT_NO_REPLACE_OBJECTS: "1",
    // A path the daemon hands git comes from a seat: `:(glob)…`, `:(top)…` or `*` must name a
    // file of that name, never pathspec magic (found by an audit: `:(glob)x` made ls-tree exit
    // 128 inside a file read, an unrecorded internal error in the daemon's log).
    GIT_LITERAL_PATHSPECS: "1",
    HOME: "/nonexistent",
    // A commit made by teamd itself (none yet) is signed off as teamd, not as the user.
    GIT_AUTHOR_NAME: "teamd",
    GIT_AUTHOR_EMAIL: "teamd@localhost",
    GIT_COMMITTER_NAME: "teamd",
    GIT_COMMITTER_EMAIL: "teamd@localhost",
    ...extra,
  };
}

export class GitError extends Error {
  override readonly name = "GitError";
  constructor(
    readonly args: readonly string[],
    readonly code: number | string | null,
    readonly stderr: string,
  ) {
    super(`git ${args.join(" ")} failed (${code}): ${stderr.trim().split("\n").slice(-3).join(" / ")}`);
  }
}

export interface GitResult {
  readonly stdout: string;
  readonly stderr: string;
}

export interface GitOptions {
  /** Working directory; for a bare repository pass its path as gitDir instead. */
  readonly cwd?: string;
  readonly gitDir?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly timeoutMs?: number;
}

/** Run git hardened. Rejects with GitError (carrying stderr) on a non-zero exit. */
export function git(args: readonly string[], options: GitOptions = {}): Promise<GitResult> {
  const full = [...HARDENING, ...(options.gitDir ? ["--git-dir", options.gitDir] : []), ...args];
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      full,
      { cwd: options.cwd, env: gitEnv(options.env ?? {}), timeout: options.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (error) {
          const code = (error as NodeJS.ErrnoException & { code?: number | string }).code ?? null;
          if (code === "ENOENT") reject(new Error("git is not installed or not on PATH (scripts/setup.sh installs it)"));
          else reject(new GitError(args, code, stderr));
        } else resolve({ stdout, stderr });
      },
    );
  });
}

/** The tree of a commit the repository has (an act's input state, src/ledger/input-state.ts); "" for none. */
export async function treeOfCommit(gitDir: string, commit: string | undefined): Promise<string> {
  if (commit === undefined || commit === "") return "";
  return (await git(["rev-parse", "--verify", "--end-of-options", `${commit}^{tree}`], { gitDir })).stdout.trim();
}

/**
 * The branch HEAD names (`git symbolic-ref HEAD`: refs/heads/NAME), read from the file where it
 * is the plain `ref: refs/heads/NAME` line git writes — for teamd's own repositories (the hub),
 * never a seat's — and asked of git for anything else (a detached HEAD, a link, another ref
 * storage, whose HEAD file names refs/heads/.invalid). A git process was ~1-2 ms of every ref
 * listing and fetch a seat makes (issue 26). At most 256 bytes are read.
 */
export async function symbolicHead(gitDir: string): Promise<string> {
  const text = await readHead(join(gitDir, "HEAD"));
  const named = text === undefined ? undefined : /^ref: (refs\/heads\/[A-Za-z0-9._/-]+)\n$/.exec(text)?.[1];
  if (named !== undefined && !/(^|\/)\.|\.\.|\/\/|\/$|\.lock(\/|$)/.test(named.slice("refs/heads/".length))) return named;
  return (await git(["symbolic-ref", "HEAD"], { gitDir })).stdout.trim();
}

async function readHead(path: string): Promise<string | undefined> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    if (!(await handle.stat()).isFile()) return undefined;
    const buffer = Buffer.alloc(256);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return bytesRead === buffer.length ? undefined : buffer.toString("utf8", 0, bytesRead);
  } catch {
    return undefined;
  } finally {
    await handle?.close();
  }
}

/** Like git(), but a non-zero exit is an answer (false), not an error. */
export async function gitSucceeds(args: readonly string[], options: GitOptions = {}): Promise<boolean> {
  try {
    await git(args, options);
    return true;
  } catch (error) {
    if (error instanceof GitError) return false;
    throw error;
  }
}

/** A hardened git process with pipes, for long-lived batch commands (`cat-file --batch`). */
export function spawnGit(args: readonly string[], gitDir: string, env: Record<string, string> = {}): ChildProcessWithoutNullStreams {
  return spawn("git", [...HARDENING, "--git-dir", gitDir, ...args], { env: gitEnv(env), stdio: "pipe" });
}

/** The most stdout one git run may hold whole in the daemon, unless its caller says otherwise. */
export const GIT_OUTPUT_BYTES = 64 * 1024 * 1024;

/**
 * A git run printed more than its bound: git was killed, and the output dropped (issue 20: the
 * daemon's memory never holds what a seat's objects expand to — a tree of a few hundred bytes
 * can list a million paths).
 */
export class GitOutputTooLarge extends Error {
  override readonly name = "GitOutputTooLarge";
  constructor(
    readonly args: readonly string[],
    readonly maxBytes: number,
  ) {
    super(`git ${args.slice(0, 2).join(" ")} printed more than ${maxBytes} bytes; it was stopped`);
  }
}

/**
 * A process's stdout gathered whole up to `maxBytes`; past it the rest is dropped, what was
 * held is let go, and `stop` is called once (the caller kills the process).
 */
export function collectBounded(
  stream: NodeJS.ReadableStream,
  maxBytes: number,
  stop: () => void,
): { readonly over: () => boolean; readonly bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  let held = 0;
  let over = false;
  stream.on("data", (chunk: Buffer) => {
    if (over) return;
    held += chunk.length;
    if (held > maxBytes) {
      over = true;
      chunks.length = 0;
      stop();
      return;
    }
    chunks.push(chunk);
  });
  return { over: () => over, bytes: () => Buffer.concat(chunks) };
}

/**
 * One hardened run with bytes on stdin and bytes out (blobs, packs); rejects GitError on a
 * non-zero exit, GitOutputTooLarge past `maxOutputBytes` (default GIT_OUTPUT_BYTES).
 */
export function gitInput(
  args: readonly string[],
  gitDir: string,
  input: Uint8Array | string,
  env: Record<string, string> = {},
  maxOutputBytes = GIT_OUTPUT_BYTES,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawnGit(args, gitDir, env);
    const out = collectBounded(child.stdout, maxOutputBytes, () => child.kill("SIGKILL"));
    const err: Buffer[] = [];
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    // EPIPE when git exits early: the exit code tells what happened.
    child.stdin.on("error", () => undefined);
    child.on("error", reject);
    child.on("close", (code) => {
      if (out.over()) reject(new GitOutputTooLarge(args, maxOutputBytes));
      else if (code === 0) resolve(out.bytes());
      else reject(new GitError(args, code, Buffer.concat(err).toString("utf8")));
    });
    child.stdin.end(input);
  });
}

/** git's -z output split on NUL (a trailing NUL ends the last field, it does not open another). */
export function splitNul(buffer: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  let start = 0;
  for (let at = buffer.indexOf(0, start); at >= 0; at = buffer.indexOf(0, start)) {
    parts.push(buffer.subarray(start, at));
    start = at + 1;
  }
  if (start < buffer.length) parts.push(buffer.subarray(start));
  return parts;
}
