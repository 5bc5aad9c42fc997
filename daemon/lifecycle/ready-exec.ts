import type { Duplex } from "node:stream";
import type { LaunchResult, SeatExit, SeatProcess } from "../../src/sandbox/launcher-types.js";
import type { SandboxPlan } from "../../src/sandbox/plan-types.js";
import { commandFitsTrampoline, encodeCommand, trampolineCommand, trampolineFailure } from "../../src/sandbox/exec-trampoline.js";
import { classifyBwrapFailure } from "../../src/sandbox/bwrap-failure.js";

/**
 * A seat's next `teamd exec`, its sandbox made before it is asked for (issue 26). Most of an
 * exec is bubblewrap building the seat's root: on a guest where a mount costs ~0.25 ms, the
 * seat's ~80 binds were ~20 ms of an ~85 ms exec, in line. After an owner's exec is answered,
 * the daemon starts the next one's sandbox — the running seat's own plan, cgroups and limits,
 * through the same launcher — with a trampoline in place of the command (exec-trampoline.ts),
 * waiting on its control pipe. The next exec of that run takes it and, once its record is
 * durable, writes its command there; nothing of the command runs before that.
 *
 * Bounded and never the seat's to ask for: only an owner's exec leaves one, one per seat at a
 * time, and one nobody takes is stopped after READY_EXEC_IDLE_MS. It is stopped too when the
 * run ends, is frozen, or its seat stops; an exec takes one only of the same run and plan, and
 * only while it lives. Taken or not, it counts against the seat's cgroups while it waits (its
 * namespace's init and bash: two of the seat's pids, and their memory; bwrap's outer process is
 * the daemon's child, as a fresh exec's is).
 *
 * What the copies of /etc's files (etc-copies.ts) hold is what they held when it was made: at
 * most READY_EXEC_IDLE_MS older than an exec's own launch would have read.
 */
export const READY_EXEC_IDLE_MS = 5_000;
/** How long after an exec is answered its successor's sandbox starts: not on the CPU the owner's CLI is exiting with. */
export const READY_EXEC_DELAY_MS = 50;
/** How long a ready exec's end waits for what its trampoline said on the control pipe. */
const CONTROL_SETTLE_MS = 2_000;

export interface ReadyRun {
  readonly runId: string;
  readonly plan: SandboxPlan;
  /** The sandbox, launched as the seat's execs are (its cgroups, no record: nothing of a command runs in it yet). */
  launch(control: { command(fd: number): readonly string[] }): Promise<LaunchResult>;
  /** Whether the run may still have one (running, not frozen, the same slot). */
  live(): boolean;
}

export interface ReadyExec {
  /**
   * Runs `command` in the sandbox once `recording` is durable; a record that fails stops it and
   * is the answer. Undefined when the sandbox ended before the command could be given (its
   * seat's cgroup killed, an OOM): nothing of the command ran, and the exec launches its own.
   */
  run(command: readonly string[], recording: Promise<unknown>): Promise<SeatProcess | undefined>;
}

export interface ReadyExecs {
  /** After an exec of `key`'s run was answered: its next exec's sandbox, unless one is there or on its way. */
  prepare(key: string, run: ReadyRun): void;
  /** The ready sandbox for this exec (same run, same plan, alive, the command fits), taken once; else undefined (and one still on its way is stopped). */
  take(key: string, runId: string, plan: SandboxPlan, command: readonly string[]): ReadyExec | undefined;
  /** Stop `key`'s (its run ends, is frozen or stopped): resolved once it has exited. */
  discard(key: string): Promise<void>;
}

interface Entry {
  readonly runId: string;
  readonly plan: SandboxPlan;
  state: "starting" | "ready" | "gone";
  proc?: SeatProcess;
  control?: Duplex;
  idle?: NodeJS.Timeout;
  /** Resolved once it is gone (never started, exited, or stopped). */
  readonly ended: Promise<void>;
  end(): void;
}

export function createReadyExecs(log: (line: string) => void, timing: { readonly idleMs?: number; readonly delayMs?: number } = {}): ReadyExecs {
  const entries = new Map<string, Entry>();
  const idleMs = timing.idleMs ?? READY_EXEC_IDLE_MS;
  const delayMs = timing.delayMs ?? READY_EXEC_DELAY_MS;

  function stop(key: string, entry: Entry): Promise<void> {
    if (entries.get(key) === entry) entries.delete(key);
    clearTimeout(entry.idle);
    if (entry.state !== "gone") {
      entry.state = "gone";
      entry.proc?.kill();
    }
    return entry.ended;
  }

  /** An entry whose sandbox is gone or was never made: no longer the seat's, and its end told. */
  function forget(key: string, entry: Entry): void {
    if (entries.get(key) === entry) entries.delete(key);
    clearTimeout(entry.idle);
    entry.state = "gone";
    entry.end();
  }

  function start(key: string, run: ReadyRun, entry: Entry): void {
    void run.launch({ command: trampolineCommand }).then(
      (launched) => {
        if (!launched.ok) {
          // The next exec launches its own, and says why if it fails too.
          log(`ready exec for ${key}: not made: ${launched.refusal.rule}: ${launched.refusal.reason}`);
          forget(key, entry);
          return;
        }
        const proc = launched.seat;
        void proc.exit.then(() => forget(key, entry));
        entry.proc = proc;
        const control = proc.io.kind === "pipes" ? proc.io.control : undefined;
        if (entry.state === "gone" || control === undefined || !run.live()) {
          // Stopped while it started, or a launcher without a control pipe: not kept.
          entry.state = "gone";
          proc.kill();
          if (entries.get(key) === entry) entries.delete(key);
          return;
        }
        control.on("error", () => undefined);
        entry.control = control;
        entry.state = "ready";
        entry.idle = setTimeout(() => void stop(key, entry), idleMs);
        entry.idle.unref();
      },
      (error: unknown) => {
        log(`ready exec for ${key}: not made: ${String(error)}`);
        forget(key, entry);
      },
    );
  }

  return {
    prepare(key, run) {
      if (entries.has(key)) return;
      let end = () => undefined as void;
      const ended = new Promise<void>((resolve) => (end = resolve));
      const entry: Entry = { runId: run.runId, plan: run.plan, state: "starting", ended, end };
      entries.set(key, entry);
      const timer = setTimeout(() => {
        if (entry.state === "gone" || !run.live()) {
          void stop(key, entry);
          entry.end();
          return;
        }
        start(key, run, entry);
      }, delayMs);
      timer.unref();
    },
    take(key, runId, plan, command) {
      const entry = entries.get(key);
      if (entry === undefined) return undefined;
      if (entry.state !== "ready") {
        // Still on its way: this exec launches its own, and the one on its way is stopped rather
        // than made beside it (execs one after another would each pay for a launch they never take).
        void stop(key, entry);
        return undefined;
      }
      if (entry.runId !== runId || entry.plan !== plan || !commandFitsTrampoline(command) || ended(entry.proc as SeatProcess)) {
        void stop(key, entry);
        return undefined;
      }
      entries.delete(key);
      clearTimeout(entry.idle);
      const proc = entry.proc as SeatProcess;
      const control = entry.control as Duplex;
      return {
        async run(cmd, recording) {
          try {
            await recording;
          } catch (error) {
            entry.state = "gone";
            proc.kill();
            throw error;
          }
          // Killed while the record was made (the seat's run ending, its cgroup's OOM): its
          // streams may have ended unread already. From here to the caller's listeners nothing
          // but promise jobs run, so a sandbox found alive here is listened to before its end.
          if (ended(proc)) {
            entry.state = "gone";
            proc.kill();
            return undefined;
          }
          let said = "";
          control.setEncoding("utf8");
          control.on("data", (chunk: string) => {
            if (said.length < 8) said += chunk;
          });
          const closed = new Promise<void>((resolve) => {
            control.once("end", resolve);
            control.once("close", resolve);
          });
          control.end(encodeCommand(cmd));
          const exit: Promise<SeatExit> = proc.exit.then(async (how) => {
            if (how.kind !== "exited") return how;
            await settled(closed, CONTROL_SETTLE_MS);
            const failure = trampolineFailure(said);
            if (failure === undefined) return how;
            return { kind: "setup-failed", code: how.code, refusal: classifyBwrapFailure(`bwrap: execvp ${cmd[0] ?? ""}: ${failure}`).refusal };
          });
          return { ...proc, exit };
        },
      };
    },
    discard(key) {
      const entry = entries.get(key);
      return entry === undefined ? Promise.resolve() : stop(key, entry);
    },
  };
}

/** Whether the sandbox is gone or going: its stdout has ended or closed (Node drains a child's unread streams at its exit). */
function ended(proc: SeatProcess): boolean {
  return proc.io.kind !== "pipes" || proc.io.stdout.readableEnded || proc.io.stdout.destroyed || proc.io.stderr.readableEnded || proc.io.stderr.destroyed;
}

/** `done`, or `ms` passed, whichever is first (the timer never holds the process open). */
async function settled(done: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([done, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms).unref()))]);
  clearTimeout(timer);
}
