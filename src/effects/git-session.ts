import { spawn } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { isDeepStrictEqual } from "node:util";
import { BASH } from "../sandbox/close-fds.js";
import {
  CONTAINED_STDERR_BYTES,
  ContainmentError,
  STATUS_FD,
  containedChain,
  watchSandbox,
  type ContainedGitOptions,
  type GitSessionHost,
  type Spawned,
} from "./contained-git.js";
import { GitError } from "./git.js";

/**
 * One sandbox for a push's contained reads (issue 26). A push's checks ran five or six contained
 * gits over the same quarantine, each in a sandbox of its own, and starting a sandbox (bash,
 * bubblewrap's namespaces and mounts, the seat's cgroups and filter) was most of each one's time
 * — ~6 ms, CPU on a 2-core host where the checks run two at a time. A session is that sandbox
 * made once, as the pack is indexed: the same binds (read-only), env, seccomp filter, cgroups and
 * rlimits as each run had, and inside it a bash that runs each git it is asked for on a lane of
 * its own — a fork of git, not a sandbox.
 *
 * A lane is three sockets (git's stdin, stdout, stderr) made with the session, each used by one
 * run: the session's bash hands a lane's three to that run's git alone (every other lane's fd is
 * closed in it first, and the bash's own copies once it has started), so git's output ends when
 * git does, and no run can write into another's. The bash reports each run's pid and exit status
 * on its stdout; a run is stopped (its time out, an abort, its output past the bound) by a SIGKILL
 * to its process group (each run's git leads one), inside the sandbox's pid namespace.
 *
 * What a session changes for a hostile pack: nothing about what a git reading it may reach (the
 * same sandbox a run had), but a git that a crafted object took over now shares its sandbox with
 * the push's other reads, for the push's life: it could kill or answer for another of the push's
 * runs. Each run already read the same seat-written objects and could be taken over the same way
 * and answer falsely for itself, so a check it could falsify was already its to falsify; the
 * session ends with the push (its quarantine's dispose), and no other push or seat ever shares it.
 *
 * A run the session cannot take as asked (other binds, env or limits, a streamed input, a cwd, no
 * lane left, the session not started or gone) answers undefined, and gets a sandbox of its own.
 */
export interface GitSession extends GitSessionHost {
  /** Stops the session's sandbox, and any run still in it; settles once bubblewrap has exited. */
  close(): Promise<void>;
}

/** Lanes a session makes: a push of one ref runs up to ~7 reads; more refs fall back to runs of their own. */
export const SESSION_LANES = 8;
/** The first lane's fd in the chain (after the status fd 3 and the seccomp filter's fd 4). */
const FIRST_LANE_FD = STATUS_FD + 2;
const SESSION_STDERR_BYTES = 4096;

/**
 * The session's bash, inside the sandbox. Requests arrive on its stdin as NUL-ended fields:
 * `run LANE N ARG1 … ARGN` or `kill PID`; anything else ends the session. It answers
 * `LANE pid PID`, `LANE exit STATUS` and `LANE lost` lines on its stdout (each one write, under
 * PIPE_BUF). A lane carries one run, so its number names the run.
 */
const SESSION_SCRIPT = [
  "first=$1; lanes=$2; end=$((first + 3 * lanes))",
  "while IFS= read -r -d '' op; do",
  "  case $op in",
  "    run)",
  "      IFS= read -r -d '' lane && IFS= read -r -d '' n || exit 1",
  "      [[ $lane =~ ^[0-9]+$ && $n =~ ^[0-9]+$ ]] && ((lane < lanes && n < 4096)) || exit 1",
  "      args=()",
  "      for ((k = 0; k < n; k++)); do IFS= read -r -d '' a || exit 1; args+=(\"$a\"); done",
  "      li=$((first + 3 * lane)); lo=$((li + 1)); le=$((li + 2))",
  "      (",
  // A subshell that cannot start git (its fork failed past bash's retries: the seat's pids ran
  // out) or ends otherwise says so: its run would else wait for a report that never comes.
  "        told=",
  `        trap '[[ -n $told ]] || echo "$lane lost"' EXIT`,
  "        for ((f = first; f < end; f++)); do",
  "          if ((f != li && f != lo && f != le)) && [[ -e /proc/self/fd/$f ]]; then exec {f}>&-; fi",
  "        done",
  "        set -m",
  '        "${args[@]}" <&"$li" >&"$lo" 2>&"$le" {li}<&- {lo}>&- {le}>&- &',
  "        g=$!",
  "        exec {li}<&- {lo}>&- {le}>&-",
  '        echo "$lane pid $g"',
  '        wait "$g"',
  "        status=$?",
  "        told=1",
  '        echo "$lane exit $status"',
  "      ) &",
  "      exec {li}<&- {lo}>&- {le}>&-",
  "      ;;",
  "    kill)",
  "      IFS= read -r -d '' pid || exit 1",
  '      [[ $pid =~ ^[0-9]+$ ]] && kill -KILL -- "-$pid" 2>/dev/null',
  "      ;;",
  "    *) exit 1 ;;",
  "  esac",
  "done",
].join("\n");

interface Run {
  pid?: number;
  killWanted: boolean;
  exited(status: number): void;
  ended(reason: string): void;
}

interface Live {
  readonly requests: Writable;
  readonly lanes: { readonly stdin: Writable; readonly stdout: Readable; readonly stderr: Readable }[];
  gone: boolean;
  readonly closed: Promise<void>;
  kill(): void;
}

/**
 * A session over `context` (its binds, env and limits; nothing writable): started now, in the
 * background; a run asked before it is up waits for it, and one asked of a session that could not
 * start gets a sandbox of its own (which fails, if it must, as any run does).
 */
export function openGitSession(context: ContainedGitOptions): GitSession {
  const readOnly = new Set(context.readOnly);
  const runs = new Map<number, Run>();
  let nextLane = 0;
  let closing = false;
  const live: Promise<Live | undefined> = start().catch(() => undefined);

  async function start(): Promise<Live> {
    if (context.writable.length > 0) throw new ContainmentError("a git session binds nothing writable");
    const lastFd = FIRST_LANE_FD + 3 * SESSION_LANES - 1;
    const chain = await containedChain(
      ["bash", "--norc", "--noprofile", "-c", SESSION_SCRIPT, "teamd-git-session", String(FIRST_LANE_FD), String(SESSION_LANES)],
      context,
      lastFd,
    );
    if (closing) throw new ContainmentError("closed before it started");
    const child = spawn(BASH, chain.bashArgs, { stdio: Array.from({ length: lastFd + 1 }, () => "pipe" as const), env: {}, cwd: "/" });
    const filterPipe = child.stdio[chain.seccompFd] as Writable;
    filterPipe.on("error", () => undefined);
    filterPipe.end(chain.filter);
    const watched = watchSandbox(child, child.stdio[STATUS_FD] as Readable);
    let stderr = "";
    (child.stderr as Readable).setEncoding("utf8").on("data", (chunk: string) => {
      if (stderr.length < SESSION_STDERR_BYTES) stderr += chunk.slice(0, SESSION_STDERR_BYTES - stderr.length);
    });
    const lanes = Array.from({ length: SESSION_LANES }, (_, lane) => {
      const at = FIRST_LANE_FD + 3 * lane;
      const stdin = child.stdio[at] as Writable;
      stdin.on("error", () => undefined);
      return { stdin, stdout: child.stdio[at + 1] as Readable, stderr: child.stdio[at + 2] as Readable };
    });
    const requests = child.stdin as Writable;
    requests.on("error", () => undefined);
    const state: Live = {
      requests,
      lanes,
      gone: false,
      closed: new Promise<void>((resolve) => {
        child.once("close", () => resolve());
        child.once("error", () => resolve());
      }),
      kill: watched.kill,
    };
    let pending = "";
    (child.stdout as Readable).setEncoding("utf8").on("data", (chunk: string) => {
      pending += chunk;
      for (let at = pending.indexOf("\n"); at >= 0; at = pending.indexOf("\n")) {
        const line = pending.slice(0, at);
        pending = pending.slice(at + 1);
        const report = /^(\d+) (?:(pid|exit) (\d+)|(lost))$/.exec(line);
        const run = report === null ? undefined : runs.get(Number(report[1]));
        if (run === undefined || report === null) continue;
        const value = Number(report[3]);
        if (report[4] === "lost") run.ended("contained git could not be started in the push's git session (the seat's processes ran out?)");
        else if (report[2] === "pid") {
          run.pid = value;
          if (run.killWanted) signal(state, value);
        } else run.exited(value);
      }
      // A line is a few dozen bytes; what is not one is not kept.
      if (pending.length > 256) pending = "";
    });
    const end = (): void => {
      state.gone = true;
      const why = `contained git's session ended before the run did${stderr.trim() === "" ? "" : `: ${stderr.trim().split("\n").slice(-2).join(" / ")}`}`;
      for (const run of [...runs.values()]) run.ended(why);
    };
    // bash could not be started: no run of it will be answered.
    child.once("error", end);
    child.once("exit", () => (state.gone = true));
    // Its reports end when every process of the sandbox has: a run not reported done by then never will be.
    (child.stdout as Readable).once("close", end);
    return state;
  }

  return {
    async spawn(gitArgs, args, options) {
      if (!takes(options)) return undefined;
      const state = await live;
      if (state === undefined || state.gone || closing || nextLane >= SESSION_LANES) return undefined;
      const lane = nextLane++;
      const { stdin, stdout, stderr: errors } = state.lanes[lane] as Live["lanes"][number];
      return runOnLane(state, runs, lane, gitArgs, args, options, stdin, stdout, errors);
    },
    async close() {
      closing = true;
      const state = await live;
      if (state === undefined) return;
      state.requests.end();
      // A lane never used still holds its stdin open on this side.
      for (const lane of state.lanes) lane.stdin.end();
      state.kill();
      await state.closed;
    },
  };

  /** Whether a run asked with `options` is the run this session's sandbox makes. */
  function takes(options: ContainedGitOptions): boolean {
    return (
      options.writable.length === 0 &&
      (options.cwd === undefined || options.cwd === "/") &&
      (options.input === undefined || Buffer.isBuffer(options.input)) &&
      options.readOnly.every((path) => readOnly.has(path)) &&
      isDeepStrictEqual(options.env ?? {}, context.env ?? {}) &&
      isDeepStrictEqual(options.limits, context.limits)
    );
  }
}

function signal(state: Live, pid: number): void {
  if (!state.gone) state.requests.write(`kill\0${pid}\0`);
}

function runOnLane(
  state: Live,
  runs: Map<number, Run>,
  lane: number,
  gitArgs: readonly string[],
  args: readonly string[],
  options: ContainedGitOptions,
  stdin: Writable,
  stdout: Readable,
  errors: Readable,
): Spawned {
  let stderr = "";
  errors.setEncoding("utf8").on("data", (chunk: string) => {
    if (stderr.length < CONTAINED_STDERR_BYTES) stderr += chunk.slice(0, CONTAINED_STDERR_BYTES - stderr.length);
  });
  const streamsEnded = Promise.all([ended(stdout), ended(errors)]);
  let timer: NodeJS.Timeout | undefined;
  let settle: { resolve(value: { stderr: string }): void; reject(error: Error): void } | undefined;
  const done = new Promise<{ stderr: string }>((resolve, reject) => (settle = { resolve, reject }));
  const run: Run = {
    killWanted: false,
    exited(status) {
      runs.delete(lane);
      void streamsEnded.then(() => {
        if (timer !== undefined) clearTimeout(timer);
        // A run its time out answered stays answered (a promise settles once).
        if (status !== 0) settle?.reject(new GitError(args, status, stderr));
        else settle?.resolve({ stderr });
      });
    },
    ended(reason) {
      runs.delete(lane);
      if (timer !== undefined) clearTimeout(timer);
      // Its lane's sockets end with the sandbox (no process holds them any more).
      settle?.reject(new ContainmentError(reason));
    },
  };
  const kill = (): void => {
    if (!runs.has(lane) || run.killWanted) return;
    run.killWanted = true;
    if (run.pid !== undefined) signal(state, run.pid);
  };
  runs.set(lane, run);
  // A time out answers at once, whether or not git has a pid yet or its exit is ever reported:
  // a run that never started (its fork failed) waited for ever (found by an attack on this
  // change). Whatever still runs is killed when its pid comes, and with the session at the end.
  if (options.timeoutMs !== undefined) {
    timer = setTimeout(() => {
      kill();
      settle?.reject(new GitError(args, `timed out after ${options.timeoutMs} ms`, stderr));
    }, options.timeoutMs);
  }
  // git reads its input to its end, or stops early (its exit status says why, not EPIPE).
  stdin.end(Buffer.isBuffer(options.input) ? options.input : undefined);
  state.requests.write(Buffer.from([`run\0${lane}\0${gitArgs.length}\0`, ...gitArgs.map((arg) => `${arg}\0`)].join(""), "utf8"));
  return { stdout, done, kill };
}

function ended(stream: Readable): Promise<void> {
  return new Promise((resolve) => {
    if (stream.readableEnded || stream.destroyed) resolve();
    else {
      stream.once("close", () => resolve());
      stream.once("end", () => resolve());
    }
  });
}
