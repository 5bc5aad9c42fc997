import type { ChildProcess } from "node:child_process";
import { constants as osConstants } from "node:os";
import { PassThrough, type Duplex, type Readable } from "node:stream";
import type { CgroupPlacement, LaunchRequest, LaunchResult, SeatExit, SeatProcess } from "./launcher-types.js";
import type { LaunchProtocol } from "./launch-protocol.js";
import { BLOCK_FD, STATUS_FD } from "./bwrap-args.js";
import { refuseContainment, type ContainmentRefusal } from "./refusal.js";
import { killWithChildren } from "./kill-with-children.js";

/**
 * A seat on pipes (`teamd exec`, tests), for both launchers: the chain was spawned with fd 3
 * as its status pipe and, with a cgroup, fd 4 as the block pipe its init waits on. Tee stderr
 * (kept to explain a setup failure, passed on whole), read the status fd for the init pid
 * (and, from bwrap, the command's exit code), and resolve once the init exists — or refuse
 * when the chain fails or stays silent before that. `protocol` says who reports and how the
 * end is read (launch-protocol.ts).
 */
const DEFAULT_START_TIMEOUT_MS = 10_000;
/** How much of stderr is kept to explain a setup failure. */
const SNIFF_BYTES = 8192;
/**
 * How long a failed chain's explanation waits for the rest of its stderr. The child's exit can
 * be seen before its last stderr bytes are read (Node reports the exit from the process, the
 * pipe separately): under load a clean-clone run explained a failure as "no message" that
 * bwrap had printed. Bounded: a process the chain left behind may hold the pipe open.
 */
const STDERR_SETTLE_MS = 2_000;

export function startedOnPipes(
  child: ChildProcess,
  request: LaunchRequest,
  limits: SeatProcess["limits"],
  cgroup: CgroupPlacement | undefined,
  protocol: LaunchProtocol,
  controlFd?: number,
): Promise<LaunchResult> {
  const status = child.stdio[STATUS_FD] as Readable;
  const stdout = child.stdout as Readable;
  const stderrIn = child.stderr as Readable;
  const stderr = new PassThrough();
  let sniffed = "";
  stderrIn.on("data", (chunk: Buffer) => {
    if (sniffed.length < SNIFF_BYTES) sniffed += chunk.toString("utf8").slice(0, SNIFF_BYTES - sniffed.length);
  });
  stderrIn.pipe(stderr);
  const stderrDone = new Promise<void>((resolve) => {
    stderrIn.once("end", resolve);
    stderrIn.once("close", resolve);
    stderrIn.once("error", () => resolve());
  });

  let statusText = "";
  let initPid: number | undefined;
  let commandExit: number | undefined;
  let killed = false;
  let exited = false;
  let onInit: (() => void) | undefined;
  status.setEncoding("utf8");
  status.on("data", (chunk: string) => {
    statusText += chunk;
    for (const doc of statusText.split("\n")) {
      const child = /"child-pid"\s*:\s*(\d+)/.exec(doc);
      if (child && initPid === undefined) initPid = Number(child[1]);
      const code = /"exit-code"\s*:\s*(\d+)/.exec(doc);
      if (code) commandExit = Number(code[1]);
    }
    if (initPid !== undefined) onInit?.();
  });
  const statusDone = new Promise<void>((resolve) => {
    status.once("close", () => resolve());
    status.once("error", () => resolve());
  });
  const processDone = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", (error) => {
      // A spawn that failed never writes to the status fd: close it so the exit can settle.
      status.destroy();
      resolve({ code: null, signal: null, error });
    });
  });
  const exit: Promise<SeatExit> = Promise.all([processDone, statusDone]).then(async ([done]) => {
    exited = true;
    const code = done.code ?? (done.signal ? 128 + (osConstants.signals[done.signal] ?? 0) : 1);
    if (killed) return { kind: "killed", code };
    if (commandExit !== undefined) return { kind: "exited", code: commandExit };
    if (done.signal) return { kind: "exited", code };
    // Uncontained: once the wrapper reported itself, it has exec'd the command; its exit is the command's.
    if (protocol.exitFrom === "process" && initPid !== undefined && done.error === undefined) return { kind: "exited", code };
    if (done.error === undefined) await settled(stderrDone, STDERR_SETTLE_MS);
    const refusal = done.error
      ? refuseContainment(
          "containment.unavailable",
          `cannot run ${protocol.reporter}: ${done.error.message}`,
          "check that it is installed and executable by the seat's user",
        )
      : protocol.failure(sniffed);
    return { kind: "setup-failed", code, refusal };
  });

  return new Promise<LaunchResult>((resolve) => {
    const timeoutMs = request.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    const timer = setTimeout(() => {
      // Nothing reported in time: stop what we started (by its pid) and refuse. With its
      // children: bubblewrap that has cloned the seat's init but not reported it, killed alone,
      // left that init waiting forever under pid 1 (as in contained-git.ts; killWithChildren).
      onInit = undefined;
      if (child.pid !== undefined && !exited) {
        killed = true;
        void killWithChildren(child.pid);
      }
      resolve(
        refused(
          "containment.failed",
          `${protocol.reporter} did not report the seat's init within ${timeoutMs} ms`,
          "run `teamd doctor`; the host may be overloaded",
        ),
      );
    }, timeoutMs);
    onInit = () => {
      clearTimeout(timer);
      onInit = undefined;
      const pid = initPid as number;
      if (cgroup !== undefined) {
        // The init waits on the block fd: move it into the seat's cgroups, then release it.
        // It has not forked yet, so everything the seat ever runs is born inside them.
        const block = child.stdio[BLOCK_FD] as NodeJS.WritableStream;
        // The chain may be gone before the byte arrives (EPIPE): its exit reports that, not this stream.
        block.on("error", () => undefined);
        void cgroup.place(pid).then(
          () => {
            block.end("1");
            publish(pid);
          },
          (error: unknown) => {
            // The init first: killing only the spawned process left bwrap's init waiting on
            // the block fd, reparented, for as long as this process held the pipe (found here).
            if (!exited) protocol.kill(pid);
            if (child.pid !== undefined && !exited) child.kill("SIGKILL");
            resolve(
              refused("containment.limit", (error as Error).message, "run `teamd doctor` (cgroups); or drop start.limits from the team file (`limits: none`)"),
            );
          },
        );
        return;
      }
      publish(pid);
    };
    const publish = (pid: number) => {
      const seat: SeatProcess = {
        pid: child.pid as number,
        initPid: pid,
        io: {
          kind: "pipes",
          stdin: child.stdin as NonNullable<ChildProcess["stdin"]>,
          stdout,
          stderr,
          ...(controlFd !== undefined ? { control: child.stdio[controlFd] as Duplex } : {}),
        },
        limits,
        exit,
        // The init pid is only signalled while the spawned process has not exited: bwrap reaps
        // the init and exits right after (uncontained, the init is that process), so the window
        // in which the number could belong to a new process is that of a pid wrap-around within
        // its last instructions. (pidfd would close it; Node has none.)
        kill() {
          if (exited) return;
          killed = true;
          protocol.kill(pid);
        },
      };
      resolve({ ok: true, seat });
    };
    if (initPid !== undefined) onInit();
    void exit.then((how) => {
      if (onInit === undefined) return; // already resolved with the seat
      clearTimeout(timer);
      onInit = undefined;
      resolve({ ok: false, refusal: how.kind === "setup-failed" ? how.refusal : protocol.failure(sniffed) });
    });
  });
}

/** `done`, or `ms` passed, whichever is first (the timer never holds the process open). */
async function settled(done: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([done, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms).unref()))]);
  clearTimeout(timer);
}

function refused(rule: ContainmentRefusal["rule"], reason: string, fix: string): { ok: false; refusal: ContainmentRefusal } {
  return { ok: false, refusal: refuseContainment(rule, reason, fix) };
}
