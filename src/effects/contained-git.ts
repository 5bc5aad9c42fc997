import { spawn, execFile, type ChildProcess } from "node:child_process";
import { access, lstat, readFile, readlink, realpath, stat } from "node:fs/promises";
import { constants as fsConstants } from "node:fs";
import { isAbsolute, join, normalize, resolve as resolvePath } from "node:path";
import type { Readable, Writable } from "node:stream";
import { ISOLATION, missingFeatures, seccompFdAfter } from "../sandbox/bwrap-args.js";
import { seatFilter } from "../sandbox/seccomp-filter.js";
import { LINUX_BASE } from "../sandbox/linux-base.js";
import { collectBounded, GIT_OUTPUT_BYTES, GitError, GitOutputTooLarge, HARDENING, gitEnv } from "./git.js";
import { BASH, BASH_COMMAND, closeFdsScript } from "../sandbox/close-fds.js";
import { killWithChildren } from "../sandbox/kill-with-children.js";

/**
 * git run on content a seat wrote (a pushed pack, the objects quarantined from it) runs in
 * a bubblewrap sandbox, not only hardened: a parser bug in git reached by a crafted pack
 * must find no network, no host files but the system folders and the repositories named,
 * and nothing writable but the folders the caller named (the quarantine). The hardening of
 * git.ts (no config, hooks, fsmonitor, pager, helpers) applies inside as well.
 *
 * The namespaces are those of a seat: all of them, a user namespace made explicitly (as
 * root too: it costs nothing and is what lets --disable-userns stop git from making a
 * namespace of its own), and no fallback when bubblewrap is missing or too old. Run by
 * root, git is still uid 0 inside, but without a capability, in a mount namespace where
 * only the named folders are writable; teamd's files are root's, so no other uid could read
 * the hub.
 */
export interface ContainedGitOptions {
  readonly gitDir?: string;
  /** Inside the sandbox; must lie in a bound folder. Default "/". */
  readonly cwd?: string;
  /** Bound read-only at the same path inside (alternates of a repository are not added: see objectStores). */
  readonly readOnly: readonly string[];
  /** Bound read-write at the same path inside. */
  readonly writable: readonly string[];
  readonly env?: Record<string, string>;
  readonly input?: Buffer | NodeJS.ReadableStream;
  /** Default 120 s for containedGit; containedGitStream has none unless given. */
  readonly timeoutMs?: number;
  /**
   * The checked bubblewrap and system binds to reuse (createGitSandbox): the git runs of one
   * operation (a push, a merge, a fetch) share one, made where the operation builds its
   * context. Without one, the run checks for itself.
   */
  readonly sandbox?: GitSandbox;
  /** Bounds of the seat the work is for (a push's index-pack, a fetch's pack-objects): its cgroups, or rlimits. */
  readonly limits?: ContainedGitLimits;
  /**
   * containedGit only: the most stdout it holds (default CONTAINED_OUTPUT_BYTES). Past it git is
   * killed and the run rejects with GitOutputTooLarge — the daemon's memory never holds what a
   * seat's objects expand to (a tree of a few hundred bytes can list a million paths).
   */
  readonly maxOutputBytes?: number;
  /** containedGit only: stop git (as a time out does) once this aborts. */
  readonly signal?: AbortSignal;
  /** A push's git session (git-session.ts): the run goes there when it can, else to a sandbox of its own. */
  readonly session?: GitSessionHost;
}

/**
 * The memory (RLIMIT_DATA) of a contained run over seat-written trees where no seat's limits
 * apply — a merge's or an artifact's diff, a push by a seat without limits: git holds a whole
 * diff before printing it, and trees that name one another expand to millions of paths.
 */
export const SEAT_DATA_MEMORY_BYTES = 2 * 1024 * 1024 * 1024;

/**
 * The limits contained git for a seat runs under: the seat's cgroups where it has them, and
 * always a memory rlimit per process — the seat's own memory limit, or for a seat without one
 * SEAT_DATA_MEMORY_BYTES (a 256 MiB pack's index-pack fits in it). Always: the seat's cgroups
 * need not carry its memory (a host whose cgroups have no memory controller still gives the
 * seat pids and cpu ones, and the seat itself then falls back to RLIMIT_DATA), and with only
 * the cgroups a seat limited to 32 MiB had a delta bomb's 48 MiB blob indexed into the hub
 * (found by an attack, round seven). Where the cgroup does carry it, the rlimit at the same
 * figure is the looser bound of the two for any one process.
 */
export function seatGitLimits(cgroupProcs: readonly string[], seatMemoryBytes: number | undefined): ContainedGitLimits {
  return { ...(cgroupProcs.length > 0 ? { cgroupProcs } : {}), memoryBytes: seatMemoryBytes ?? SEAT_DATA_MEMORY_BYTES };
}

/** Options to read a hub's seat-written trees contained: the hub and its object stores read-only, held to SEAT_DATA_MEMORY_BYTES (git holds a whole diff before it prints). */
export async function hubReadContext(hubDir: string): Promise<ContainedGitOptions> {
  return repoReadContext(hubDir, { memoryBytes: SEAT_DATA_MEMORY_BYTES });
}

/** Options to read a repository (its real path) contained: it and its object stores read-only, nothing writable, under `limits` where given. */
export async function repoReadContext(dir: string, limits: ContainedGitLimits | undefined): Promise<ContainedGitOptions> {
  return {
    gitDir: dir,
    readOnly: [dir, ...(await objectStores(dir))],
    writable: [],
    sandbox: createGitSandbox(),
    ...(limits !== undefined ? { limits } : {}),
  };
}

/** Default bound on a contained run's stdout held whole in the daemon. */
export const CONTAINED_OUTPUT_BYTES = GIT_OUTPUT_BYTES;

export { GitOutputTooLarge };

/**
 * What git run for a seat is held to (DESIGN.md "The daemon never works for a seat
 * unbounded"). `cgroupProcs`: the seat's own cgroups — the launch chain writes its own pid
 * into each `cgroup.procs` before bwrap starts, so git and every process it forks count
 * against the seat's memory and pids (and die with the seat's cgroup.kill); a write that fails
 * fails the run (git never starts unbounded). `memoryBytes` as RLIMIT_DATA per process, set
 * by the launch chain's own shell (`ulimit`, soft and hard) before it execs bwrap, with or
 * without them (a seat's cgroups may hold no memory limit); without them, `processes` as
 * RLIMIT_NPROC — per host uid,
 * which root does not obey (see src/sandbox/rlimit-args.ts): as root without cgroups, the
 * process bound is only the per-seat bound on concurrent runs (daemon/seat/git.ts).
 */
export interface ContainedGitLimits {
  readonly cgroupProcs?: readonly string[];
  readonly memoryBytes?: number;
  readonly processes?: number;
}

/** What every contained run needs of the host, checked once per holder (an operation's context), not once per process. */
export interface GitSandbox {
  /** The bwrap that passed the check. */
  bwrap(): Promise<string>;
  /** /usr and friends read-only; /bin -> usr/bin and the like recreated as the symlinks they are. */
  systemMounts(): Promise<string[]>;
}

export interface ContainedGitResult {
  readonly stdout: Buffer;
  readonly stderr: string;
}

export interface ContainedGitStream {
  /** git's stdout; reading it is what lets git go on (back-pressure reaches the process). */
  readonly stdout: AsyncIterable<Buffer>;
  /** Settles once git has exited and its output is closed: GitError on a non-zero exit. */
  readonly done: Promise<{ stderr: string }>;
  /** Stop git (SIGKILL to bubblewrap, which takes git with it). */
  kill(): void;
}

/** The sandbox could not be made: not a verdict on the input git was given. */
export class ContainmentError extends Error {
  override readonly name = "ContainmentError";
}

const BWRAP_CANDIDATES = ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"];
export const STATUS_FD = 3;
/** How long a kill waits for bubblewrap to name its init before it kills bubblewrap alone (see spawnContained). */
const KILL_REPORT_WAIT_MS = 10_000;
/** Enough of git's stderr to explain a failure; a hostile pack must not make the daemon hold more. */
export const CONTAINED_STDERR_BYTES = 64 * 1024;
/** git follows alternates of alternates this deep (its own limit); so do the binds. */
const ALTERNATES_DEPTH = 5;
const NOT_BOUND = ["/", "/proc", "/dev"];

/**
 * A holder of the host checks contained git needs, each made at most once by it: the bwrap
 * that passed the check (a failed check is not kept: bubblewrap may be installed meanwhile)
 * and the system binds.
 */
export function createGitSandbox(): GitSandbox {
  let checked: Promise<string> | undefined;
  let systemArgs: Promise<string[]> | undefined;
  return {
    bwrap() {
      const pending = (checked ??= findBwrap());
      pending.catch(() => {
        if (checked === pending) checked = undefined;
      });
      return pending;
    },
    systemMounts: () => (systemArgs ??= systemMounts()),
  };
}

/**
 * Each bwrap's check (its --help, for the features contained git needs), by the file's identity:
 * every operation makes its own sandbox holder, and a push's dozen contained runs asked bwrap
 * --help five times, each a process start on the push's path (~25 ms on a slow host). The same
 * file answers the same; a file replaced or changed (device, inode, size, times) is checked
 * again, and a failed check is never kept (bubblewrap may be installed meanwhile).
 */
// eslint-disable-next-line teamd/module-state -- a memo keyed by a frozen input: the bwrap file's identity, whose check's answer it is
const BWRAP_CHECKS = new Map<string, Promise<string>>();

async function findBwrap(): Promise<string> {
  let found: string | undefined;
  for (const candidate of BWRAP_CANDIDATES) {
    if (
      await access(candidate, fsConstants.X_OK).then(
        () => true,
        () => false,
      )
    ) {
      found = candidate;
      break;
    }
  }
  if (found === undefined) {
    throw new ContainmentError(
      `bubblewrap is not installed (looked for ${BWRAP_CANDIDATES.join(", ")}); git on seat content runs only contained — scripts/setup.sh installs bubblewrap`,
    );
  }
  const file = await stat(found).catch(() => undefined);
  if (file === undefined) return checkBwrap(found);
  const key = [found, file.dev, file.ino, file.size, file.mtimeMs, file.ctimeMs].join(":");
  const known = BWRAP_CHECKS.get(key);
  if (known !== undefined) return known;
  const checking = checkBwrap(found);
  BWRAP_CHECKS.set(key, checking);
  checking.catch(() => BWRAP_CHECKS.delete(key));
  return checking;
}

async function checkBwrap(found: string): Promise<string> {
  const help = await new Promise<string>((resolve) => {
    execFile(found, ["--help"], { env: {}, timeout: 5_000, encoding: "utf8" }, (_error, stdout, stderr) => resolve(`${stdout}${stderr}`));
  });
  const missing = missingFeatures(help);
  if (missing.length > 0) {
    throw new ContainmentError(
      `${found} lacks ${missing.join(", ")}, so git on seat content cannot be contained — scripts/setup.sh installs bubblewrap 0.8.0 or later`,
    );
  }
  return found;
}

async function systemMounts(): Promise<string[]> {
  // Each path at once, in its place: one after another they were ~10 round trips of the
  // daemon's I/O pool before each sandbox of a push's (issue 26: its two at the listing landed
  // on the push's header on a busy host).
  const mounts = await Promise.all(
    LINUX_BASE.system.map(async (path) => {
      const stats = await lstat(path).catch(() => undefined);
      if (stats?.isSymbolicLink()) return ["--symlink", await readlink(path), path];
      return stats?.isDirectory() ? ["--ro-bind", path, path] : [];
    }),
  );
  return mounts.flat();
}

async function bindArgs(readOnly: readonly string[], writable: readonly string[]): Promise<string[]> {
  const asked: { dest: string; writable: boolean }[] = [];
  for (const [paths, isWritable] of [
    [readOnly, false],
    [writable, true],
  ] as const) {
    for (const path of paths) {
      if (!isAbsolute(path) || path.includes("\u0000")) throw new ContainmentError(`cannot bind ${JSON.stringify(path)}: not an absolute path`);
      const dest = normalize(path).replace(/(.)\/+$/, "$1");
      if (NOT_BOUND.some((root) => dest === root || (root !== "/" && dest.startsWith(`${root}/`)))) {
        throw new ContainmentError(`cannot bind ${dest} into contained git: the sandbox builds it itself`);
      }
      asked.push({ dest, writable: isWritable });
    }
  }
  // The sources are resolved here (all at once), so a symlink swapped in later cannot redirect
  // a bind (bwrap would follow it); the destination keeps the name the git arguments use.
  const binds = await Promise.all(
    asked.map(async ({ dest, writable: isWritable }) => {
      const src = await realpath(dest).catch(() => {
        throw new ContainmentError(`cannot bind ${dest} into contained git: it does not exist`);
      });
      return { src, dest, writable: isWritable };
    }),
  );
  // A folder before what is bound inside it; a writable bind after a read-only one of the same path.
  binds.sort((a, b) => depth(a.dest) - depth(b.dest) || Number(a.writable) - Number(b.writable));
  return binds.flatMap((bind) => [bind.writable ? "--bind" : "--ro-bind", bind.src, bind.dest]);
}

function depth(path: string): number {
  return path.split("/").length;
}

/** A contained run as its callers see it: its stdout, its end, and a way to stop it. */
export interface Spawned {
  readonly stdout: Readable;
  readonly done: Promise<{ stderr: string }>;
  kill(): void;
}

/**
 * A sandbox already running that may take a run in place of a fresh one (git-session.ts):
 * `spawn` answers undefined for a run it cannot take as the run asks (other binds, env or
 * limits, streamed input, no lane free, the session gone), which then gets a sandbox of its own.
 */
export interface GitSessionHost {
  spawn(gitArgs: readonly string[], args: readonly string[], options: ContainedGitOptions): Promise<Spawned | undefined>;
}

/** git's argv as every contained run gives it: the hardening first, then the repository named. */
export function containedGitArgv(args: readonly string[], gitDir: string | undefined): string[] {
  const gitArgs = ["git", ...HARDENING, ...(gitDir ? ["--git-dir", gitDir] : []), ...args];
  if (gitArgs.some((arg) => arg.includes("\u0000"))) throw new ContainmentError("a git argument contains a NUL byte");
  return gitArgs;
}

/**
 * The launch chain of a contained run of `command` (bash's fd closer, the limits' steps, then
 * bwrap with the binds, env, status fd 3 and seccomp fd 4 of `options`), and the filter's bytes
 * to write to fd 4. `keepFds`: the highest fd the chain passes on (more than fd 4: a git
 * session's lanes, git-session.ts).
 */
export async function containedChain(
  command: readonly string[],
  options: ContainedGitOptions,
  keepFds = seccompFdAfter(STATUS_FD),
): Promise<{ readonly file: string; readonly bashArgs: string[]; readonly filter: Uint8Array; readonly seccompFd: number }> {
  const sandbox = options.sandbox ?? createGitSandbox();
  const file = await sandbox.bwrap();
  const env = gitEnv({ PATH: LINUX_BASE.path.join(":"), ...(options.env ?? {}) });
  // The seat's own filter: git reading a seat's objects is as hostile a place as the seat.
  const filter = seatFilter(process.arch);
  if (!filter.ok) throw new ContainmentError(`contained git cannot run: ${filter.refusal.reason}`);
  const seccompFd = seccompFdAfter(STATUS_FD);
  const argv = [
    ...ISOLATION,
    "--clearenv",
    ...Object.entries(env).flatMap(([name, value]) => (value === undefined ? [] : ["--setenv", name, value])),
    ...(await sandbox.systemMounts()),
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
    ...(await bindArgs(options.readOnly, options.writable)),
    "--chdir",
    options.cwd ?? "/",
    "--json-status-fd",
    String(STATUS_FD),
    "--seccomp",
    String(seccompFd),
    "--",
    ...command,
  ];
  // Through the fd closer (src/sandbox/close-fds.ts): bwrap would hand git every fd the
  // daemon inherited without close-on-exec.
  return {
    file,
    bashArgs: [...BASH_COMMAND, closeFdsScript(keepFds, chainSteps(options.limits)), "teamd-git", file, ...argv],
    filter: filter.bytes,
    seccompFd,
  };
}

async function spawnContained(args: readonly string[], options: ContainedGitOptions): Promise<Spawned> {
  const gitArgs = containedGitArgv(args, options.gitDir);
  // A run the push's git session can take (git-session.ts) costs a fork of git, not a sandbox.
  const inSession = await options.session?.spawn(gitArgs, args, options);
  if (inSession !== undefined) return inSession;
  const { file, bashArgs, filter, seccompFd } = await containedChain(gitArgs, options);
  const child = spawn(BASH, bashArgs, {
    stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe", "pipe", "pipe"],
    env: {},
    cwd: "/",
  });
  const filterPipe = child.stdio[seccompFd] as Writable;
  filterPipe.on("error", () => undefined);
  filterPipe.end(filter);

  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    if (stderr.length < CONTAINED_STDERR_BYTES) stderr += chunk.slice(0, CONTAINED_STDERR_BYTES - stderr.length);
  });
  const watched = watchSandbox(child, child.stdio[STATUS_FD] as Readable);
  const { kill } = watched;

  if (options.input !== undefined) {
    const stdin = child.stdin as Writable;
    // git may stop reading early (a corrupt pack); its exit status says why, not EPIPE.
    stdin.on("error", () => undefined);
    if (Buffer.isBuffer(options.input)) stdin.end(options.input);
    else {
      const input = options.input as NodeJS.ReadableStream & { on(event: "error", listener: (error: Error) => void): unknown };
      input.on("error", (error: Error) => stdin.destroy(error));
      input.pipe(stdin);
    }
  }

  let timedOut = false;
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          kill();
        }, options.timeoutMs);

  const done = new Promise<{ stderr: string }>((resolve, reject) => {
    child.once("error", (error) => {
      if (timer !== undefined) clearTimeout(timer);
      (child.stdio[STATUS_FD] as Readable).destroy();
      reject(new ContainmentError(`cannot run ${file}: ${error.message}`));
    });
    child.once("close", (code, signal) => {
      if (timer !== undefined) clearTimeout(timer);
      const started = /"child-pid"\s*:\s*\d+/.test(watched.status());
      const exit = /"exit-code"\s*:\s*(\d+)/.exec(watched.status());
      if (timedOut) reject(new GitError(args, `timed out after ${options.timeoutMs} ms`, stderr));
      else if (!started)
        reject(new ContainmentError(`contained git could not start (bubblewrap exit ${code ?? signal}): ${stderr.trim().split("\n").slice(-3).join(" / ")}`));
      else if (exit === null) reject(new GitError(args, signal ?? code, stderr));
      else if (Number(exit[1]) !== 0) reject(new GitError(args, Number(exit[1]), stderr));
      else resolve({ stderr });
    });
  });
  return { stdout: child.stdout as Readable, done, kill };
}

/**
 * A sandbox's bubblewrap (`child`) and what it reports on its JSON status fd (`status`): the
 * report so far, and a kill that takes the sandbox's init (its whole pid namespace) first.
 */
export function watchSandbox(child: ChildProcess, status: Readable): { kill(): void; status(): string } {
  let statusText = "";
  // Killed only once bubblewrap has named its sandbox's init, the init first (below).
  let killWanted = false;
  let gone = false;
  let killWait: NodeJS.Timeout | undefined;
  const killReported = (): boolean => {
    const init = /"child-pid"\s*:\s*(\d+)/.exec(statusText);
    if (init === null) return false;
    // Not once it has reported the command's exit: bubblewrap has reaped it then, and its pid is free.
    if (!/"exit-code"/.test(statusText)) {
      try {
        process.kill(Number(init[1]), "SIGKILL");
      } catch {
        // gone already
      }
    }
    child.kill("SIGKILL");
    return true;
  };
  /**
   * SIGKILL to bubblewrap alone, between its clone and its report of the init, left the init
   * waiting forever on bubblewrap's signal — reparented to pid 1, holding a pid and this run's
   * pipes, so `done` never settled (found by an attack: a seat's fetch whose speculative pack
   * was stopped at once left one such process every ~17 fetches). So a kill waits for the
   * init's pid (bubblewrap reports it within milliseconds of its start) and kills the init — and
   * with it every process of its pid namespace — then bubblewrap; and bubblewrap alone only if
   * it has not reported in KILL_REPORT_WAIT_MS — stopped first, with every child it has made by
   * then (killWithChildren).
   */
  const kill = (): void => {
    if (gone) return;
    killWanted = true;
    if (killReported()) return;
    killWait ??= setTimeout(() => {
      // Not named in time (a seat starved of CPU can hold bubblewrap this long): bubblewrap
      // stopped, then whatever it has started (an init it has not reported yet), then itself.
      if (!gone && !killReported() && child.pid !== undefined) void killWithChildren(child.pid);
    }, KILL_REPORT_WAIT_MS);
  };
  status.setEncoding("utf8").on("data", (chunk: string) => {
    if (statusText.length < 4096) statusText += chunk;
    if (killWanted && !gone) killReported();
  });
  status.on("error", () => undefined);
  child.once("exit", () => {
    gone = true;
    if (killWait !== undefined) clearTimeout(killWait);
  });
  return { kill, status: () => statusText };
}

/**
 * The chain's last steps: the rlimits no cgroup of the seat's carries (bash's `ulimit`, which
 * sets soft and hard alike, as prlimit --data=N:N did — one exec fewer a run: a process start is
 * ~10 ms on a slow host, and a push makes a dozen runs), then join each of the seat's cgroups
 * (this shell's pid, before it execs the rest), then exec. A step that fails ends the chain
 * before bwrap: git never starts unbounded.
 */
function chainSteps(limits: ContainedGitLimits | undefined): string {
  const procs = limits?.cgroupProcs ?? [];
  for (const file of procs)
    if (!isAbsolute(file) || !file.endsWith("/cgroup.procs") || /['\u0000\n]/.test(file))
      throw new ContainmentError(`cannot join the cgroup ${JSON.stringify(file)}`);
  return [...ulimits(limits), ...procs.map((file) => `echo $$ > '${file}'`), 'exec "$@"'].join(" && ");
}

/** `ulimit` steps for what no cgroup of the seat's carries: RLIMIT_DATA in KiB (bash's unit, rounded down), RLIMIT_NPROC. */
function ulimits(limits: ContainedGitLimits | undefined): string[] {
  if (limits === undefined) return [];
  const steps: string[] = [];
  // With cgroups too: a seat's cgroup may carry no memory limit (its pids and kill only).
  if (limits.memoryBytes !== undefined) steps.push(`ulimit -d ${wholeLimit(Math.floor(limits.memoryBytes / 1024), "memory")}`);
  if (limits.processes !== undefined && (limits.cgroupProcs?.length ?? 0) === 0) steps.push(`ulimit -u ${wholeLimit(limits.processes, "processes")}`);
  return steps;
}

function wholeLimit(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new ContainmentError(`contained git's ${what} limit ${value} is not a positive whole number`);
  return value;
}

/** Run git contained; stdout whole, as bytes (packs are binary). Rejects with GitError on a non-zero exit, ContainmentError when no sandbox could be made. */
export async function containedGit(args: readonly string[], options: ContainedGitOptions): Promise<ContainedGitResult> {
  const run = await containedGitExit(args, options);
  if (run.code !== 0) throw new GitError(args, run.code, run.stderr);
  return { stdout: run.stdout, stderr: run.stderr };
}

/**
 * Run git contained, and answer git's own exit status with what it wrote before it, rather than
 * reject on it: a walk that stops at an object it cannot read tells, by what it listed first,
 * where it stopped. Still rejects when git did not exit on its own (a time out, a signal: the
 * seat's limits), when its output was over the bound, or when no sandbox could be made.
 */
export async function containedGitExit(args: readonly string[], options: ContainedGitOptions): Promise<ContainedGitResult & { readonly code: number }> {
  const spawned = await spawnContained(args, { ...options, timeoutMs: options.timeoutMs ?? 120_000 });
  const max = options.maxOutputBytes ?? CONTAINED_OUTPUT_BYTES;
  const out = collectBounded(spawned.stdout, max, spawned.kill);
  const stop = () => spawned.kill();
  if (options.signal?.aborted === true) stop();
  options.signal?.addEventListener("abort", stop, { once: true });
  const finished = await spawned.done.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  options.signal?.removeEventListener("abort", stop);
  if (out.over()) throw new GitOutputTooLarge(args, max);
  if ("error" in finished) {
    const { error } = finished;
    if (error instanceof GitError && typeof error.code === "number") return { stdout: out.bytes(), stderr: error.stderr, code: error.code };
    throw error;
  }
  return { stdout: out.bytes(), stderr: finished.value.stderr, code: 0 };
}

/** Run git contained and hand its stdout on as it comes (a fetch's pack can be large). */
export async function containedGitStream(args: readonly string[], options: ContainedGitOptions): Promise<ContainedGitStream> {
  const spawned = await spawnContained(args, options);
  // Nobody may be waiting on `done` when the reader stops early; that must not be an unhandled rejection.
  spawned.done.catch(() => undefined);
  // Held until read, however late: when a child exits, Node resumes each of its output streams
  // that has no 'readable' listener (child_process's flushStdio), and what git wrote is dropped.
  // A caller that reads a moment later (a fetch's pack, held while its wants are checked) got
  // nothing, and git's exit was still 0. A listener that reads nothing keeps it held, back-pressure too.
  const hold = () => undefined;
  spawned.stdout.on("readable", hold);
  return {
    stdout: spawned.stdout,
    done: spawned.done,
    kill() {
      spawned.kill();
      // What is left unread is dropped, so the stream ends and `done` settles (resume does
      // nothing while a 'readable' listener is there).
      spawned.stdout.off("readable", hold);
      spawned.stdout.resume();
    },
  };
}

/** Whether contained git runs here (bubblewrap present, new enough, and allowed to make its namespaces), asked now. */
export function containmentAvailable(): Promise<boolean> {
  return containedGit(["--version"], { readOnly: [], writable: [], timeoutMs: 10_000 }).then(
    () => true,
    () => false,
  );
}

/**
 * The object folders git reads for `gitDir` beyond its own: its alternates, theirs, and so
 * on (git's depth). Each must be bound read-only, or contained git finds objects missing
 * that the repository has.
 */
export async function objectStores(gitDir: string): Promise<string[]> {
  const found: string[] = [];
  const visit = async (objects: string, level: number): Promise<void> => {
    if (level > ALTERNATES_DEPTH) return;
    const text = await readFile(join(objects, "info", "alternates"), "utf8").catch(() => "");
    for (const raw of text.split("\n")) {
      const line = raw.startsWith('"') ? unquote(raw) : raw.trim();
      if (line === undefined || line.length === 0 || line.startsWith("#")) continue;
      const path = await realpath(resolvePath(objects, line)).catch(() => undefined);
      if (path === undefined || found.includes(path)) continue;
      found.push(path);
      await visit(path, level + 1);
    }
  };
  await visit(join(gitDir, "objects"), 1);
  return found;
}

/** git's C-style quoting of an alternates line (a path with a newline, a quote, a backslash). */
function unquote(line: string): string | undefined {
  const match = /^"((?:[^"\\]|\\.)*)"\s*$/.exec(line);
  if (match === null) return undefined;
  const escapes: Record<string, string> = { n: "\n", t: "\t", '"': '"', "\\": "\\", a: "\x07", b: "\b", f: "\f", r: "\r", v: "\v" };
  const bytes: number[] = [];
  const body = match[1] as string;
  for (let i = 0; i < body.length; i++) {
    const char = body[i] as string;
    if (char !== "\\") {
      bytes.push(...Buffer.from(char, "utf8"));
      continue;
    }
    const next = body[i + 1] ?? "";
    const octal = /^[0-3][0-7]{2}/.exec(body.slice(i + 1));
    if (octal) {
      bytes.push(parseInt(octal[0], 8));
      i += 3;
    } else {
      bytes.push(...Buffer.from(escapes[next] ?? next, "utf8"));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

/** `oid type` of each object, or `missing`; the ids must already be checked as ids. */
export async function objectTypes(context: ContainedGitOptions, oids: readonly string[]): Promise<Map<string, string>> {
  const unique = [...new Set(oids)];
  const types = new Map<string, string>();
  if (unique.length === 0) return types;
  const { stdout } = await containedGit(["cat-file", "--batch-check=%(objectname) %(objecttype)"], {
    ...context,
    input: Buffer.from(unique.map((oid) => `${oid}\n`).join("")),
  });
  for (const line of stdout.toString("utf8").split("\n")) {
    const [oid, type] = line.split(" ");
    if (oid !== undefined && type !== undefined) types.set(oid, type);
  }
  return types;
}
