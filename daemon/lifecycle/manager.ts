import { OutcomeResult, RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { boundText, RECORD_TEXT_BYTES } from "../../src/ledger/bounded-text.js";
import { daemonPrincipal, LedgerRefusal, type Ledger } from "../../src/ledger/index.js";
import { RefusalError, UsageError } from "../../src/rpc/errors.js";
import type { ForwardedConnection } from "../../src/effects/forward-hub.js";
import type { Launcher, SeatExit, SeatProcess } from "../../src/sandbox/launcher.js";
import type { SeatCgroup } from "../../src/sandbox/cgroup-host.js";
import type { Limits, SandboxPlan } from "../../src/sandbox/plan-types.js";
import type { TeamdHome } from "../host/home.js";
import { warmCgroupMoves } from "../../src/sandbox/cgroup-warm.js";
import { EXEC_DEFAULT_TIMEOUT_MS, streamRun, type ExecOptions, type ExecResult, type ExecSink } from "./exec.js";
import { createReadyExecs, type ReadyExec } from "./ready-exec.js";
import { Scrollback, SCROLLBACK_BYTES } from "./scrollback.js";
import { fromRefusal, prepareSeat, type PreparedSeat } from "./prepare.js";
import { policyInForce, policySeats, readyLedger, startableSeat, type StartableSeat } from "../../src/ledger/policy-in-force.js";
import { checkSeatLaunch } from "../../src/kernel/envelope-seats.js";
import { runtimeRefusal } from "../../src/kernel/envelope-runtime.js";
import { seatCarve } from "../../src/kernel/create-bound.js";
import { openSeatCgroup, sweepSeatCgroups, walkNamespaceUsage, walkTreeUsage } from "./cgroup.js";
import { processStartTime } from "../../src/sandbox/process-tree.js";
import { pidNamespaceOf, register, registrations, sweep, unregister } from "./registry.js";
import { resolveSeatUser, type SeatUser } from "./user.js";
import { seatHostUser } from "../host/seat-uids.js";
import { redactCredentials } from "../../src/teamfile/credentials.js";
import { stopRefusal } from "../../src/ledger/stop-state.js";
import { LOST_WITH_THE_DAEMON, RunLog, markRunLost } from "./run-log.js";
import { describeRunEnd, endedInFailure, runEnd, type RunEnd, type StoppedBy } from "../host/run-state.js";
import { lastPlainLines } from "../host/plain-text.js";
import { SEAT_PTY_SIZE } from "../host/screen-text.js";
import { terminalText } from "../host/terminal-text.js";
import { commandNotInView } from "./start-diagnosis.js";
import { untraversable } from "../host/traversal.js";
import { RESTART_RESET_MS, restartBackoffMs } from "../../src/kernel/start-restart.js";
import { listRuns } from "../host/run-logs.js";
import { recordHandoff } from "./handoff.js";
import { lastHandoffs, type RecordedHandoff } from "../../src/ledger/handoff.js";
import { readFile } from "node:fs/promises";
import { readSelftestRecord } from "../host/selftest-record.js";

/**
 * The seat lifecycle in the daemon (DESIGN.md "Seat lifecycle", R's ordering): reserve
 * (the seat's slot, so two starts cannot race) → prepare → launch under containment →
 * publish (registry file, seat_start record, status shows it) → stop (SIGKILL to the
 * pid-namespace init, wait, seat_stop record, socket and tmp removed). Every failure
 * unwinds what was prepared; a seat that exits by itself is torn down the same way. A seat
 * whose applied team file says `containment: none` is launched uncontained
 * (src/sandbox/launcher-none.ts): no namespace, its stop kills its process tree and its
 * cgroup, and every record of it says `containment: none`, strength M.
 */
/** A command that ended by itself: its pty's last output is read until quiet this long… */
const OUTPUT_DRAIN_QUIET_MS = 100;
/** …or at most this long, before its run log closes. */
const OUTPUT_DRAIN_MAX_MS = 1_000;

export interface SeatView {
  readonly team: string;
  readonly seat: string;
  /** A run state (daemon/host/run-state.ts): `restarting` while a restart waits out its back-off. */
  readonly state: "starting" | "running" | "stopping" | "restarting";
  readonly socket: string;
  readonly initPid: number;
  readonly runId: string;
  readonly startedAt: string;
  readonly limits: string;
  readonly repository: string;
  readonly uid: number;
  /** "bwrap", or "none" (`containment: none`: every record says it holds against a mistake only). */
  readonly containment: string;
  /** The seat's cgroups in words ("v2 (kill), v1 (memory 512M)"), or why it has none ("none: ..."). */
  readonly cgroup: string;
  /** Metered over the seat's whole tree (its cgroup's counters, else a /proc walk of its pid namespace); absent before it runs. */
  readonly cpuMs?: number;
  readonly memoryBytes?: number;
  /** "cgroup" or "proc walk": where cpuMs and memoryBytes come from. */
  readonly meteredBy?: string;
  /** Every process of the seat is frozen where it stands (teamd freeze), until teamd thaw. */
  readonly frozen?: boolean;
  /** Frozen by its team's spent runtime (§8): its run is `paused` until the owner renews the team. */
  readonly paused?: boolean;
  /** The execution-context hash this run started with (its seat_start's `context`). */
  readonly context?: string;
  /** The lab the run launched as (the envelope's seats count it so while it lives, §8). */
  readonly lab?: string;
}

/** The owner at a seat's pty (`teamd attach`): one at a time, recorded, never its content. */
export interface Attachment {
  readonly view: SeatView;
  readonly seq: number;
  readonly scrollback: Buffer;
  /** The seat's output from now on (after the scrollback). */
  onData(listener: (chunk: Buffer) => void): void;
  write(keys: Uint8Array): void;
  resize(cols: number, rows: number): void;
  /** Settles with the seat's exit in words when its command ends. */
  readonly ended: Promise<string>;
  /** Idempotent: frees the seat for the next attacher and records the detach. */
  detach(how: string): Promise<void>;
  /** A byte stream that may lose nothing (a forwarded connection): an owner too far behind ends it rather than drop bytes. */
  readonly lossless?: boolean;
  /** The owner's side finished sending (a half-close): the output goes on until `ended`. Without it, the owner's end is the detach. */
  endInput?(): void;
}

/** teamd forward: what the owner's side may send ahead of what the seat has read. */
const FORWARD_UNREAD_CAP = 4 * 1024 * 1024;

/** The size a seat's pty starts with, before anyone attaches. */
const PTY_COLS = SEAT_PTY_SIZE.cols;
const PTY_ROWS = SEAT_PTY_SIZE.rows;

export interface SeatManager {
  /** One seat, or (seat undefined) every seat of the team that has a start. */
  start(team: string | undefined, seat: string | undefined, by?: string): Promise<SeatView[]>;
  stop(team: string | undefined, seat: string | undefined): Promise<SeatView[]>;
  /**
   * Halt a running seat (§8, issue 27): SIGTERM to its command, a short grace for it to exit (not
   * to act: its gated acts are refused already), then the kill; the run ends `suspended` (never
   * completed, never restarted) and the daemon records the handoff checkpoint its next run is
   * given (daemon/lifecycle/handoff.ts). `why` is the seat_stop's reason; `by`: a bound, by
   * default. Its run as it was and the checkpoint's record (0: not recorded, the log says why),
   * or undefined when it does not run.
   */
  halt(team: string, seat: string, why: string, by?: StoppedBy): Promise<{ view: SeatView; checkpointSeq: number } | undefined>;
  exec(team: string | undefined, seat: string, command: readonly string[], options: ExecOptions, sink: ExecSink): Promise<ExecResult & { seq: number }>;
  attach(team: string | undefined, seat: string, size: { cols: number; rows: number }): Promise<Attachment>;
  /** teamd forward: one connection to `port` on the running seat's loopback, as an attachment (keys in, data out); recorded. */
  forward(team: string | undefined, seat: string, port: number): Promise<Attachment>;
  /** `teamd exec -t`: one command in a pty of its own inside the running seat, as an attachment; detaching kills it. */
  execTty(
    team: string | undefined,
    seat: string,
    command: readonly string[],
    size: { cols: number; rows: number },
    options: { timeoutMs: number | "none" },
  ): Promise<Attachment>;
  /** Freeze every process of a running seat where it stands (v2 cgroup.freeze), or thaw it: an owner act, recorded first. */
  /** `by`: the owner (teamd freeze / thaw), or the envelope's runtime pausing the team and its renewal (§8). */
  freeze(team: string | undefined, seat: string, frozen: boolean, by?: "owner" | "runtime"): Promise<{ view: SeatView; seq: number }>;
  list(): SeatView[];
  /** list(), with each running seat's CPU and memory read now. */
  metered(): Promise<SeatView[]>;
  /** The daemon is stopping, or the owner's machine-wide stop: stop every seat of every team (records written while the ledger is open). */
  stopAll(why: string, by: StoppedBy): Promise<SeatView[]>;
  /** At daemon start: what a crashed daemon left. */
  sweep(): Promise<string[]>;
  /**
   * At daemon start, after the sweep: bring back each seat with a restart policy whose last run
   * ended because the daemon went down (stopped for the daemon's stop, or lost in its crash), so
   * restarting the service ends no agent run for good. Each is a new run that obeys every stop.
   */
  resumeRestartable(): Promise<SeatView[]>;
}

/** The seat_stop reason of every run the daemon's own stop ends (daemon/server/daemon.ts). */
export const DAEMON_STOPPING = "the daemon is stopping";

export interface SeatManagerOptions {
  readonly home: TeamdHome;
  readonly ledger: () => Ledger | undefined;
  readonly launcher: Launcher;
  openSocket(team: string, seat: string, at: string, egress: boolean): Promise<string>;
  closeSocket(team: string, seat: string): Promise<void>;
  /** A connection to a port on a running seat's own loopback, through its launcher (src/effects/forward-hub.ts). */
  forward?(team: string, seat: string, port: number): Promise<ForwardedConnection>;
  readonly log: (line: string) => void;
  /** The daemon's clock (unix ms) and id source, from the composition root: a seat's start time and run id. */
  readonly now: () => number;
  readonly newId: () => string;
  /** How long an owner's start watches the seat's command before it answers (default START_SETTLE_MS; TEAMD_START_SETTLE_MS). */
  readonly startSettleMs?: number;
  /** Test seam (TEAMD_TEST_FAIL_AT=STEP:SEAT): fail that seat's start at a named step (dirs, repo, home, socket, plan, publish), to prove the unwind. */
  readonly failAt?: string;
  /**
   * Test seam (TEAMD_TEST_HOLD_START=FOLDER, daemon/server/start-hold.ts): a start waits here, its
   * spend reserved and nothing launched, while the test holds it — so a race with the daemon's
   * own timers (a meter report landing while a seat starts) is met every time, not by luck.
   */
  readonly holdStart?: (team: string, seat: string) => Promise<void>;
  /**
   * The spend envelope's dispatch (daemon/server/spend-book.ts): called in the launch's deciding
   * turn; a refusal, the reservation's record to await before launch, or undefined (no spend ceiling).
   */
  spend?(team: string, seat: string, runId: string): RefusalError | { readonly recorded: Promise<number> } | undefined;
}

interface Slot {
  view: SeatView;
  prepared?: PreparedSeat;
  process?: SeatProcess;
  plan?: SandboxPlan;
  user?: SeatUser;
  cgroup?: SeatCgroup;
  pidNamespace?: string;
  teardown?: Promise<void>;
  scrollback?: Scrollback;
  /** The one attacher's output listener, while someone is attached. */
  attached?: (chunk: Buffer) => void;
  /** The run's output on disk (daemon/lifecycle/run-log.ts), kept after it ends. */
  runLog?: RunLog;
  /** How the run ended, once torn down. */
  end?: RunEnd;
  /** Which restart in a row this run is (0: started by the owner, or after a run that lived RESTART_RESET_MS). */
  attempt: number;
  /** In an owner's start's settle window: a run that ends now is the start's failure, told to the owner, never restarted. */
  settling: boolean;
  /** The run's seat_start record (its intent): where its acts begin in the ledger. */
  startSeq?: number;
  /** A halt is under way (its grace): the command's exit is the halt's, not a run that ended by itself. */
  halting?: boolean;
}

/** A restart waiting out its back-off: `teamd status` shows the seat `restarting`. */
interface PendingRestart {
  readonly view: SeatView;
  readonly attempt: number;
  readonly at: number;
  readonly timer: NodeJS.Timeout;
}

const STOP_WAIT_MS = 10_000;
/** A halt's grace: how long a seat's command has, after SIGTERM, to exit by itself before the kill. */
export const HALT_GRACE_MS = 3_000;
/**
 * How long `teamd start` watches a seat's command before it answers (docs/cli.md): a command
 * that ends within it — not found, a missing login, a crash at start — is reported as a failed
 * start with its exit and last lines, never as "started".
 */
export const START_SETTLE_MS = 2_000;
/** The last lines of a seat's output a failed start shows, each cut to this many characters. */
const FAILED_START_LINES = 12;
const FAILED_START_LINE_CHARS = 240;

export function createSeatManager(options: SeatManagerOptions): SeatManager {
  const { home, log } = options;
  const settleMs = options.startSettleMs ?? START_SETTLE_MS;
  const slots = new Map<string, Slot>();
  const restarts = new Map<string, PendingRestart>();
  const key = (team: string, seat: string) => `${team}/${seat}`;
  // A seat's next exec's sandbox, made after an owner's exec is answered (ready-exec.ts).
  const readyExecs = createReadyExecs(log);

  async function record(
    type: RecordType,
    target: StartableSeat | { team: string; seat: string },
    action: string,
    runId: string,
    fields: Record<string, string>,
    requestId = "",
  ) {
    // An unavailable store is left to the append, which gives it one chance to come back (a
    // store put back is opened again); refused here only when there is none or it is blocked.
    // Otherwise an owner's exec after the store came back was refused until a seat acted.
    const found = options.ledger();
    const ledger = found !== undefined && found.state.status === "unavailable" ? found : readyLedger(found);
    // A store that failed under the append (gone, unwritable) is a refusal to the caller, in its
    // rule's words — an exec answered "internal error" when the ledger's file was gone.
    return ledger
      .append({
        type,
        team: target.team,
        actor: daemonPrincipal(),
        signer: daemonPrincipal(),
        action,
        payload: {
          target: { kind: TargetKind.SEAT, name: target.seat },
          requestId,
          fields: Object.entries(fields).map(([k, value]) => ({ key: k, value })),
          detail: { case: "seat", value: { seat: target.seat, runId } },
        },
      })
      .catch((error: unknown) => {
        throw error instanceof LedgerRefusal ? RefusalError.from(error.refusal) : error;
      });
  }

  /**
   * A start's outcome (§15 "Order and effect", R): the seat_start record is its intent, written
   * before anything is launched; this closes it — done once the run is published, refused with
   * why when any step failed (the launch's failure included). Recovery closes one a dead daemon left.
   */
  async function recordStartOutcome(target: StartableSeat, intentSeq: number, runId: string, done: boolean, note: string, fields: Record<string, string>) {
    const ledger = readyLedger(options.ledger());
    return ledger.closeStart(intentSeq, {
      type: RecordType.OUTCOME,
      team: target.team,
      actor: daemonPrincipal(),
      signer: daemonPrincipal(),
      action: "seat.start",
      payload: {
        target: { kind: TargetKind.SEAT, name: target.seat },
        requestId: runId,
        fields: Object.entries(fields).map(([k, value]) => ({ key: k, value })),
        detail: {
          case: "outcome",
          value: { intentSeq: BigInt(intentSeq), result: done ? OutcomeResult.DONE : OutcomeResult.REFUSED, note: boundText(note, RECORD_TEXT_BYTES) },
        },
      },
    });
  }

  /** Stop a slot: kill the init, wait, record, unwind. Idempotent (one teardown per run). */
  function teardown(slot: Slot, why: string, by?: StoppedBy, suspend = false): Promise<void> {
    slot.teardown ??= (async () => {
      slot.view = { ...slot.view, state: "stopping" };
      const ready = readyExecs.discard(key(slot.view.team, slot.view.seat));
      const proc = slot.process;
      let exit: SeatExit | undefined;
      // The init first (the run's exit then reads "killed"), then cgroup.kill: it also ends what
      // `teamd exec` runs in the seat, in pid namespaces of its own.
      proc?.kill();
      await slot.cgroup?.kill();
      await ready;
      if (proc) {
        exit = await Promise.race([proc.exit, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), STOP_WAIT_MS).unref())]);
        if (exit === undefined) log(`seat ${slot.view.team}/${slot.view.seat}: init ${slot.view.initPid} did not exit within ${STOP_WAIT_MS} ms of SIGKILL`);
      }
      const end = runEnd(exit, by !== undefined ? { by, reason: why, suspend } : undefined);
      slot.end = end;
      // The output's size and hash, never the output: it can hold anything the seat read.
      const output = finishLog(slot, end);
      await record(RecordType.SEAT_STOP, slot.view, "seat.stop", slot.view.runId, {
        reason: why,
        exit: exit ? `${exit.kind} ${exit.code}` : "unknown",
        run_state: end.state,
        ...(end.exitCode !== undefined ? { exit_code: String(end.exitCode) } : {}),
        ...(end.stoppedBy !== undefined ? { stopped_by: end.stoppedBy } : {}),
        ...(output !== undefined ? { output_bytes: String(output.bytes), output_hmac: output.hmac } : {}),
      }).catch((error: unknown) => log(`seat ${slot.view.team}/${slot.view.seat}: seat_stop not recorded: ${String(error)}`));
      const left = (await slot.cgroup?.remove()) ?? [];
      for (const leaf of left) log(`seat ${slot.view.team}/${slot.view.seat}: its cgroup ${leaf} could not be removed (still busy); the next start sweeps it`);
      // The registry entry stays while a cgroup is left, so the next daemon's sweep finds it.
      if (left.length === 0) await unregister(home, slot.view.team, slot.view.seat);
      // A release that fails (a tmp tree teamd cannot remove) is said, never a seat stuck "stopping".
      await slot.prepared
        ?.release()
        .catch((error: unknown) => log(`seat ${slot.view.team}/${slot.view.seat}: its tmp could not be removed: ${String(error)}; the next start tries again`));
      slots.delete(key(slot.view.team, slot.view.seat));
      // The reason can quote what a launch printed: escaped for the daemon's log, as every view of it is.
      log(`seat ${slot.view.team}/${slot.view.seat} ${terminalText(describeRunEnd(end))}`);
    })();
    return slot.teardown;
  }

  /**
   * Once a run whose command has exited is torn down: its teardown starts after the output's drain
   * (OUTPUT_DRAIN_MAX_MS at most) or with a stop or halt under way; waited for at most as long as
   * those and the teardown's own wait for the init take, never forever.
   */
  async function tornDown(slot: Slot): Promise<void> {
    const deadline = performance.now() + OUTPUT_DRAIN_MAX_MS + STOP_WAIT_MS;
    while (slot.teardown === undefined && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    if (slot.teardown === undefined) return;
    await Promise.race([slot.teardown.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, STOP_WAIT_MS + 5_000).unref())]);
  }

  function finishLog(slot: Slot, end: RunEnd): { bytes: number; hmac: string } | undefined {
    try {
      return slot.runLog?.finish(end, new Date(options.now()).toISOString());
    } catch (error) {
      log(`seat ${slot.view.team}/${slot.view.seat}: its output log could not be closed: ${String(error)}`);
      return undefined;
    }
  }

  /** A chunk of the seat's output to its log; a log that fails (a full disk) stops logging, never the seat. */
  function logOutput(slot: Slot, chunk: Buffer): void {
    const runLog = slot.runLog;
    if (runLog === undefined) return;
    try {
      runLog.write(chunk);
    } catch (error) {
      slot.runLog = undefined;
      log(`seat ${slot.view.team}/${slot.view.seat}: its output log stopped: ${String(error)}`);
    }
  }

  /** Drop a pending restart (the owner stopped or started the seat, a stop flag, the daemon's stop): it never fires. */
  function cancelRestart(team: string, seat: string): PendingRestart | undefined {
    const k = key(team, seat);
    const pending = restarts.get(k);
    if (pending !== undefined) {
      clearTimeout(pending.timer);
      restarts.delete(k);
    }
    return pending;
  }

  /**
   * After a run ended by itself: start it again if its pinned restart policy says so, after the
   * back-off, at most `retries` times in a row. Never after a stop (by anyone), and each attempt
   * is a whole start from the policy in force then (a seat the owner removed is not restarted).
   */
  function maybeRestart(target: StartableSeat, slot: Slot): void {
    const policy = target.start.restart;
    const end = slot.end;
    // A halt suspends the run into its handoff: never restarted, whatever the policy (§8, issue 27).
    if (policy === undefined || end === undefined || end.state === "stopped" || end.state === "suspended" || slot.settling || isHalting(slot)) return;
    if (policy.when === "on-failure" && !endedInFailure(end)) return;
    const lived = options.now() - Date.parse(slot.view.startedAt);
    const attempt = Number.isFinite(lived) && lived >= RESTART_RESET_MS ? 1 : slot.attempt + 1;
    const seat = `${target.seat}@${target.team}`;
    if (attempt > policy.retries) {
      log(`seat ${seat}: not restarted: ${policy.retries} restarts in a row ended too (restart: ${policy.when}); teamd start ${seat} runs it again`);
      return;
    }
    scheduleRestart(target.team, target.seat, attempt, policy.retries, slot.view);
  }

  function scheduleRestart(team: string, seat: string, attempt: number, retries: number, last: SeatView): void {
    const delay = restartBackoffMs(attempt);
    const k = key(team, seat);
    const timer = setTimeout(() => {
      restarts.delete(k);
      void (async () => {
        try {
          const fresh = startableSeat(readyLedger(options.ledger()), team, seat);
          if (fresh.start.restart === undefined) {
            log(`seat ${seat}@${team}: not restarted: the policy in force no longer asks for it`);
            return;
          }
          await startChecked(fresh, attempt, false);
          log(`seat ${seat}@${team}: restarted (attempt ${attempt} of ${retries})`);
        } catch (error) {
          // A refusal (a stop flag, a seat removed) ends the retries; a failed launch counts as an attempt.
          const refused = error instanceof RefusalError && error.rule !== "seat.start-failed" && !error.rule.startsWith("containment.");
          log(`seat ${seat}@${team}: restart ${attempt} of ${retries} failed: ${(error as Error).message}`);
          if (!refused && attempt < retries && !slots.has(k)) scheduleRestart(team, seat, attempt + 1, retries, last);
        }
      })();
    }, delay);
    timer.unref();
    restarts.set(k, { view: { ...last, state: "restarting", socket: "", initPid: 0 }, attempt, at: options.now() + delay, timer });
    log(`seat ${seat}@${team}: restarting in ${delay / 1000} s (attempt ${attempt} of ${retries})`);
  }

  async function startOne(target: StartableSeat & { readonly by?: string }, attempt: number, settling: boolean): Promise<SeatView> {
    const k = key(target.team, target.seat);
    // An owner's stop refuses every start (§11), read from the flags before anything else.
    const stopped = stopRefusal(options.ledger(), target.team);
    if (stopped) throw new RefusalError(stopped.rule, `${stopped.reason}; run teamd resume to clear it`);
    // §11, "when containment exists and fails, work stops": the last selftest on this machine found
    // containment broken, so no contained seat starts until one passes (host/selftest-record.ts).
    if ((target.start.containment ?? "bwrap") !== "none") {
      const last = readSelftestRecord(home);
      if ("doc" in last && last.doc.status === "failed") {
        const broken = last.doc.rows.filter((r) => r.here === "broken").map((r) => r.id);
        throw new RefusalError(
          "containment.selftest-failed",
          `the last selftest on this host (${last.doc.startedAt}) found containment broken (${broken.join(", ") || "see its map"}); fix the host, then run teamd selftest until it passes`,
        );
      }
    }
    if (slots.has(k))
      throw new RefusalError(
        "seat.running",
        `seat '${target.seat}' of team '${target.team}' is already ${slots.get(k)?.view.state}; stop it first (teamd stop ${target.seat}@${target.team})`,
      );
    // §8, the envelope's seats: the lab's live seats of this team, each counted as the lab it
    // launched as (a seat renamed away since still runs, and still counts). Decided and the slot
    // reserved in one turn: two starts at once cannot both take the last place.
    const { policy } = policyInForce(readyLedger(options.ledger()), target.team);
    const lab = Object.prototype.hasOwnProperty.call(policy.seats, target.seat) ? policy.seats[target.seat]?.lab : undefined;
    const live = [...slots.values()].filter((s) => s.view.team === target.team).map((s) => ({ seat: s.view.seat, lab: s.view.lab }));
    // Create (§8, §10): the allowances this team carved to its children, and a created team's own slice.
    const carve = seatCarve(readyLedger(options.ledger()).view.teams(), target.team);
    const overCap =
      checkSeatLaunch(policy, target.seat, live, carve) ?? runtimeRefusal(policy, readyLedger(options.ledger()).view.runtimeClock(target.team), options.now());
    if (overCap) throw new RefusalError(overCap.rule, overCap.reason);
    const runId = options.newId();
    // System mode: a host uid of the seat's own (daemon/host/seat-uids.ts); user mode: the daemon's.
    const user = home.mode === "system" ? seatHostUser(home, target.team, target.seat, resolveSeatUser("system")) : resolveSeatUser("user");
    // §8, the envelope's spend: the per-dispatch maximum held against the team's and the lab's
    // remainder, decided and held in this same turn as the slot (two launches cannot together
    // pass it); its record is awaited below, before anything is launched.
    const spendHold = options.spend?.(target.team, target.seat, runId);
    if (spendHold instanceof RefusalError) throw spendHold;
    // Reserve: the slot exists before anything is prepared, so a second start is refused.
    const slot: Slot = {
      // The applied team file's word, never a fallback: a host without bubblewrap refuses a
      // bwrap seat (fail closed); only `containment: none` runs one uncontained.
      view: {
        team: target.team,
        seat: target.seat,
        state: "starting",
        socket: "",
        initPid: 0,
        runId,
        startedAt: "",
        limits: "none",
        repository: "",
        uid: user.uid,
        containment: target.start.containment ?? "bwrap",
        cgroup: "",
        context: target.contextHash,
        ...(lab !== undefined ? { lab } : {}),
      },
      user,
      attempt,
      settling: settling,
    };
    slots.set(k, slot);
    // An owner's start (or a restart firing) replaces a pending restart of the seat.
    cancelRestart(target.team, target.seat);
    let prepared: PreparedSeat | undefined;
    let intentSeq: number | undefined;
    const [failStep, failSeat] = (options.failAt ?? "").split(":");
    const failAt = failSeat === target.seat ? failStep : undefined;
    // The seat's last handoff checkpoint, handed to this run read-only (a new run: issue 27);
    // the start's record names it, so what the run was given is on record.
    let handed: RecordedHandoff | undefined;
    try {
      const reserveSeq = spendHold === undefined ? undefined : await spendHold.recorded;
      await options.holdStart?.(target.team, target.seat);
      const ledger = readyLedger(options.ledger());
      handed = lastHandoffs(
        (from, limit) => ledger.entries(from, limit, RecordType.CHECKPOINT),
        target.seat,
        target.team,
        (seq) => ledger.view.tombstoneOf(seq) !== undefined,
      ).get(target.team);
      // The start's intent, durable before anything is made or launched (a ledger that cannot
      // take it refuses the start here): what this run will be, decided from the policy in force.
      intentSeq = (
        await record(
          RecordType.SEAT_START,
          target,
          "seat.start",
          runId,
          {
            policy_seq: String(target.policySeq),
            // §9: a start leads made for its own team names it (the owner's, and the daemon's restarts, name none).
            ...(target.by !== undefined ? { started_by: target.by } : {}),
            ...(attempt > 0
              ? { restart: `attempt ${attempt} of ${target.start.restart?.retries ?? 0} (restart: ${target.start.restart?.when ?? "never"})` }
              : {}),
            context: target.contextHash,
            command: JSON.stringify(target.start.command),
            uid: String(user.uid),
            // What holds for this run's acts: "bwrap" (A where docs/enforcement.md says so), or
            // "none" (`containment: none`): every refusal holds against a mistake only.
            containment: slot.view.containment,
            strength: strength(slot),
            ...(handed !== undefined ? { handoff_seq: String(handed.seq) } : {}),
            ...(reserveSeq !== undefined ? { reserve_seq: String(reserveSeq) } : {}),
          },
          runId,
        )
      ).seq;
      slot.startSeq = intentSeq;
      prepared = await prepareSeat(target, {
        home,
        user,
        openSocket: (at, egress) => options.openSocket(target.team, target.seat, at, egress),
        closeSocket: () => options.closeSocket(target.team, target.seat),
        ...(failAt !== undefined ? { failAt } : {}),
        ...(handed !== undefined ? { handoff: JSON.stringify({ seq: handed.seq, ...handed.handoff }) + "\n" } : {}),
      });
      // Every bind source must be reachable by the seat's uid (bwrap opens them as it): a folder on
      // the way it cannot search is named now, not left to die as "setup-failed" or "ESRCH".
      for (const source of prepared.plan.sources) {
        const blocked = untraversable(source, user.uid, user.gid);
        if (blocked !== undefined) {
          throw new RefusalError(
            "seat.start-failed",
            `the seat's uid ${user.uid} cannot traverse ${blocked.folder} (mode ${blocked.mode}, ${blocked.owner}) on the way to ${source}; ` +
              `fix: let others search it (chmod o+x ${blocked.folder}), or put TEAMD_HOME where every folder above it is searchable (teamd doctor checks this)`,
          );
        }
      }
      // The seat's cgroups, before launch: the launcher moves the init in before the command runs.
      const opened = await openSeatCgroup(home, target.team, target.seat, runId, prepared.plan.limits);
      slot.cgroup = opened.cgroup;
      // The seat runs in a pty whose master the daemon holds (issue 7): its output goes to a
      // bounded scrollback and to the one attached owner, never to the ledger.
      const launched = await options.launcher.launch({
        plan: prepared.plan,
        command: target.start.command,
        io: { kind: "pty", cols: PTY_COLS, rows: PTY_ROWS },
        containment: uncontained(slot) ? "none" : "bwrap",
        ...(opened.cgroup !== undefined ? { cgroup: opened.cgroup } : {}),
      });
      if (!launched.ok) {
        // A launch refused for a command the seat cannot see says so (the launcher's words are about bwrap).
        const missing = commandNotInView(prepared.plan, target.start.command, process.env);
        if (missing !== undefined) throw new RefusalError("seat.start-failed", `${missing} (the launcher said: ${launched.refusal.reason})`);
        throw fromRefusal(launched.refusal);
      }
      const proc = launched.seat;
      slot.process = proc;
      const scrollback = new Scrollback(SCROLLBACK_BYTES);
      slot.scrollback = scrollback;
      const startedAt = new Date(options.now()).toISOString();
      // The HMAC key is the run's own, from the daemon's id source (never in a record).
      slot.runLog = await RunLog.open(home, {
        team: target.team,
        seat: target.seat,
        runId,
        startedAt,
        command: target.start.command.map(redactCredentials),
        hmacKey: options.newId(),
      });
      // I/O timing, not a decision: the monotonic clock (a test's fixed decision clock never moves).
      let lastOutputAt = performance.now();
      const output = (chunk: Buffer) => {
        lastOutputAt = performance.now();
        scrollback.push(chunk);
        logOutput(slot, chunk);
      };
      if (proc.io.kind === "pty") {
        proc.io.onData((chunk) => {
          output(chunk);
          slot.attached?.(chunk);
        });
      } else {
        // A launcher without a pty (another platform's, later): drain, so a full pipe cannot stall the seat.
        proc.io.stdout.on("data", output);
        proc.io.stderr.on("data", output);
      }
      if (failAt === "publish") throw new Error("injected failure at publish (test)");
      const limits = describeLimits(prepared.plan.limits, proc.limits);
      const cgroup = opened.cgroup !== undefined ? opened.cgroup.summary : `none: ${opened.missing ?? "not made"}`;
      // Uncontained there is no namespace: the registry names the init by pid and start time
      // (its process tree is what a stop without a cgroup kills), never the host's namespace.
      const none = uncontained(slot);
      const pidNamespace = none ? "" : ((await pidNamespaceOf(proc.initPid)) ?? "");
      if (!none) slot.pidNamespace = pidNamespace;
      // Both: the start time names the init whatever number its pid or namespace is given again later.
      const initStart = processStartTime(proc.initPid);
      await register(home, {
        team: target.team,
        seat: target.seat,
        runId,
        initPid: proc.initPid,
        pidNamespace,
        daemonPid: process.pid,
        startedAt,
        ...(opened.cgroup !== undefined ? { cgroups: opened.cgroup.plan.leaves } : {}),
        ...(none ? { containment: "none" as const } : {}),
        ...(initStart !== undefined ? { initStart } : {}),
      });
      slot.prepared = prepared;
      slot.plan = prepared.plan;
      await recordStartOutcome(target, intentSeq, runId, true, "running", { init_pid: String(proc.initPid), limits, cgroup });
      slot.view = {
        ...slot.view,
        state: "running",
        socket: prepared.layout.socket,
        initPid: proc.initPid,
        startedAt,
        limits,
        repository: prepared.layout.repo,
        cgroup,
      };
      void proc.exit.then(async (how) => {
        if (slot.teardown !== undefined || isHalting(slot)) return;
        // The pty may still hold the command's last output when its exit is seen: let it drain
        // (until quiet for OUTPUT_DRAIN_QUIET_MS, at most OUTPUT_DRAIN_MAX_MS) before the log closes.
        const deadline = performance.now() + OUTPUT_DRAIN_MAX_MS;
        while (performance.now() - lastOutputAt < OUTPUT_DRAIN_QUIET_MS && performance.now() < deadline && slot.teardown === undefined)
          await new Promise((resolve) => setTimeout(resolve, 20));
        if (slot.teardown !== undefined || isHalting(slot)) return;
        await teardown(slot, `the seat's command ended (${how.kind} ${how.code})`);
        maybeRestart(target, slot);
      });
      log(`seat ${target.team}/${target.seat} running (init pid ${proc.initPid}, uid ${user.uid}, run ${runId})`);
      return slot.view;
    } catch (error) {
      // Unwind in reverse: the process (if launched), its log, the registry file, what prepare made.
      if (slot.process) {
        slot.process.kill();
        await slot.process.exit;
      }
      finishLog(slot, { state: "crashed", reason: `its start failed: ${(error as Error).message}` });
      await slot.cgroup?.remove().catch(() => undefined);
      await unregister(home, target.team, target.seat).catch(() => undefined);
      await prepared?.unwind();
      slots.delete(k);
      // The intent's outcome: the start did not happen (everything it made is unwound above).
      if (intentSeq !== undefined) {
        const why = error instanceof RefusalError ? `${error.rule}: ${error.message}` : (error as Error).message;
        await recordStartOutcome(target, intentSeq, runId, false, why, {}).catch((e: unknown) =>
          log(`seat ${target.team}/${target.seat}: the refused outcome of start intent ${intentSeq} could not be recorded: ${(e as Error).message}`),
        );
      }
      throw error;
    }
  }

  /**
   * The settle window: a seat whose command ends within settleMs (START_SETTLE_MS unless the owner set it) of its start did not
   * start. Its run is torn down (recorded, its log kept) and the start fails naming how it
   * ended, why where teamd can tell (the command is not in the seat's view), and its last lines.
   */
  async function settle(target: StartableSeat, view: SeatView): Promise<void> {
    const slot = slots.get(key(target.team, target.seat));
    const proc = slot?.process;
    if (slot === undefined || proc === undefined || slot.view.runId !== view.runId) return;
    let timer: NodeJS.Timeout | undefined;
    const ended = await Promise.race([proc.exit.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), settleMs)))]);
    clearTimeout(timer);
    if (!ended) {
      slot.settling = false;
      return;
    }
    await (slot.teardown ?? teardown(slot, "the seat's command ended during its start"));
    // Stopped meanwhile (the owner, a stop flag): not a failed start, the stop says why.
    if (slot.end?.state === "stopped" || slot.end?.state === "suspended") return;
    const end = slot.end ?? { state: "crashed" as const, reason: "unknown" };
    const missing = slot.plan !== undefined ? commandNotInView(slot.plan, target.start.command, process.env) : undefined;
    const lines = lastPlainLines(slot.scrollback?.snapshot() ?? new Uint8Array(0), FAILED_START_LINES).map((l) =>
      l.length > FAILED_START_LINE_CHARS ? `${l.slice(0, FAILED_START_LINE_CHARS)}…` : l,
    );
    const seat = `${target.seat}@${target.team}`;
    throw new RefusalError(
      "seat.start-failed",
      // The cause in its own words first, when teamd can tell it; else how the command ended.
      (missing !== undefined
        ? `seat ${seat} did not start: ${missing}`
        : `seat ${seat}: its command ${describeRunEnd(end)} within ${settleMs / 1000} s of its start`) +
        (lines.length > 0 ? `; its last lines:\n${lines.map((l) => `    ${l}`).join("\n")}\n` : "; it printed nothing; ") +
        `(teamd logs ${seat} shows its output)`,
    );
  }

  /** One exec's command in the running seat's exact containment: its plan, and its own cgroups (one pids and memory budget). */
  async function launchInSeat(
    slot: Slot,
    plan: SandboxPlan,
    command: readonly string[],
    io: Parameters<Launcher["launch"]>[0]["io"],
    recording: Promise<{ seq: number }>,
  ): Promise<SeatProcess> {
    // Nothing of the command runs before its record is durable. With the seat's cgroups the
    // exec's init waits on its block fd until it is placed: it is placed only once the record
    // is, so the record and the sandbox's setup overlap (issue 26: ~5 ms of an exec). Without
    // them there is no such wait, and the launch starts after the record.
    const outcome = recording.then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    const { cgroup } = slot;
    if (cgroup === undefined) {
      const failed = await outcome;
      if (failed !== undefined) throw failed.error;
    }
    const launched = await options.launcher.launch({
      plan,
      command,
      io,
      containment: uncontained(slot) ? "none" : "bwrap",
      ...(cgroup !== undefined
        ? {
            cgroup: {
              byCgroup: cgroup.byCgroup,
              summary: cgroup.summary,
              place: async (pid: number) => {
                await recording;
                await cgroup.place(pid);
              },
            },
          }
        : {}),
    });
    // A record that failed is the answer, not the refused placement it caused (the init was killed unreleased).
    const failed = await outcome;
    if (failed !== undefined) {
      if (launched.ok) launched.seat.kill();
      throw failed.error;
    }
    if (!launched.ok) throw fromRefusal(launched.refusal);
    return launched.seat;
  }

  /** A running, unfrozen seat for `teamd exec`, and the exec's record (being written: the command waits for it, launchInSeat). */
  function execSlot(
    team: string | undefined,
    seat: string,
    command: readonly string[],
    tty: boolean,
  ): { slot: Slot; recording: Promise<{ seq: number }>; ready: ReadyExec | undefined } {
    const t = team ?? teamOf(seat, true);
    const slot = slots.get(key(t, seat));
    if (slot === undefined || slot.view.state !== "running" || slot.plan === undefined) {
      throw new RefusalError(
        "seat.not-running",
        `seat '${seat}' of team '${t}' is not running; exec runs inside a running seat's containment: teamd start ${seat}@${t}`,
      );
    }
    // A command joining a frozen seat's cgroup would freeze with it, and the owner would wait on nothing.
    if (slot.view.frozen === true)
      throw new RefusalError("seat.frozen", `seat '${seat}' of team '${t}' is frozen; nothing runs inside it until: teamd thaw ${seat}@${t}`);
    if (command.length === 0 || command[0] === "") throw new Error("exec needs a command: teamd exec SEAT -- CMD...");
    // A sandbox made for it after the last exec (ready-exec.ts): already in the seat's cgroups.
    const ready = tty ? undefined : readyExecs.take(key(t, seat), slot.view.runId, slot.plan, command);
    // The kernel's wait before the exec's init may join the seat's cgroups, begun now (cgroup-warm.ts).
    if (slot.cgroup !== undefined && ready === undefined) warmCgroupMoves();
    // Recorded before it runs: an owner act that cannot be recorded does not happen.
    const recording = record(RecordType.NOTICE, slot.view, "seat.exec", slot.view.runId, {
      by: "owner",
      // An owner may pass a key to log an agent in: a value of a known credential shape is on record only as its shape, length and hash.
      command: JSON.stringify(command.map(redactCredentials)),
      ...(tty ? { tty: "pty" } : {}),
      containment: slot.view.containment,
      strength: strength(slot),
    });
    // Answered by launchInSeat; never an unhandled rejection while the launch starts.
    recording.catch(() => undefined);
    return { slot, recording, ready };
  }

  /** After an exec of this run was answered: the next one's sandbox, launched as launchInSeat does but with no command yet (ready-exec.ts). */
  function prepareReadyExec(slot: Slot): void {
    const { plan, cgroup } = slot;
    const runId = slot.view.runId;
    const live = () => slots.get(key(slot.view.team, slot.view.seat)) === slot && slot.view.state === "running" && slot.view.frozen !== true;
    // A seat with egress runs each command as a child of its egress launcher (plan-egress.ts),
    // which hands it the three streams only, not the trampoline's control pipe: no ready exec.
    if (plan === undefined || plan.egress !== undefined || uncontained(slot) || !live()) return;
    readyExecs.prepare(key(slot.view.team, slot.view.seat), {
      runId,
      plan,
      live,
      launch(control) {
        if (cgroup !== undefined) warmCgroupMoves();
        return options.launcher.launch({
          plan,
          command: [],
          io: { kind: "pipes" },
          containment: "bwrap",
          control,
          ...(cgroup !== undefined ? { cgroup: { byCgroup: cgroup.byCgroup, summary: cgroup.summary, place: (pid: number) => cgroup.place(pid) } } : {}),
        });
      },
    });
  }

  /** Start, then look again: a stop raised while the seat launched may have missed its slot (§11). */
  async function startChecked(target: StartableSeat & { readonly by?: string }, attempt = 0, settling = true): Promise<SeatView> {
    const view = await startOne(target, attempt, settling);
    const late = stopRefusal(options.ledger(), target.team);
    if (late) {
      const slot = slots.get(key(target.team, target.seat));
      if (slot) await teardown(slot, "the owner's stop arrived during the start", "stop-flag");
      throw new RefusalError(late.rule, `${late.reason}; run teamd resume to clear it`);
    }
    return view;
  }

  /** The team of a seat named without one: the one registered team whose policy (or running seats) has it. */
  function teamOf(seat: string, running: boolean): string {
    const teams = new Set<string>();
    if (running) {
      for (const slot of slots.values()) if (slot.view.seat === seat) teams.add(slot.view.team);
      for (const pending of restarts.values()) if (pending.view.seat === seat) teams.add(pending.view.team);
    } else {
      const ledger = readyLedger(options.ledger());
      for (const team of ledger.view.teams()) {
        if (ledger.view.policy(team.team) === undefined) continue;
        if (Object.prototype.hasOwnProperty.call(policySeats(ledger, team.team), seat)) teams.add(team.team);
      }
    }
    if (teams.size === 1) return [...teams][0] as string;
    if (teams.size === 0) {
      throw running
        ? new RefusalError("seat.not-running", `no running seat is named '${seat}' (teamd status lists them)`)
        : new RefusalError("seat.unknown", `no applied policy on this machine has a seat '${seat}'; add it to teamd.yaml and run teamd apply`);
    }
    throw new Error(`seat '${seat}' is in several teams (${[...teams].join(", ")}); name one: ${seat}@TEAM`);
  }

  return {
    async start(team, seat, by) {
      // The stop first: it holds by its flag even when the store cannot record a start (§15).
      const stopped = stopRefusal(options.ledger(), team ?? "");
      if (stopped) throw new RefusalError(stopped.rule, `${stopped.reason}; run teamd resume to clear it`);
      const ledger = readyLedger(options.ledger());
      if (seat !== undefined) {
        const t = team ?? teamOf(seat, false);
        const target = { ...startableSeat(ledger, t, seat), ...(by !== undefined ? { by } : {}) };
        const view = await startChecked(target);
        await settle(target, view);
        return [slots.get(key(t, seat))?.view ?? view];
      }
      if (team === undefined) throw new Error("name a seat or a team (teamd start SEAT | --team TEAM)");
      // The whole team or nothing: every seat with a start is checked against the policy
      // first, and a launch that fails stops the seats this call already started.
      const targets = Object.entries(policySeats(ledger, team))
        .filter(([name, s]) => s.start !== undefined && !slots.has(key(team, name)))
        .map(([name]) => ({ ...startableSeat(ledger, team, name), ...(by !== undefined ? { by } : {}) }));
      const started: SeatView[] = [];
      try {
        for (const target of targets) started.push(await startChecked(target));
        // One settle window for the whole team, watched together.
        await Promise.all(targets.map((target, i) => settle(target, started[i] as SeatView)));
      } catch (error) {
        for (const view of started.reverse()) {
          const slot = slots.get(key(view.team, view.seat));
          if (slot) await teardown(slot, "the team's start failed", "daemon");
        }
        throw error;
      }
      return started;
    },
    async stop(team, seat) {
      if (seat !== undefined) {
        const t = team ?? teamOf(seat, true);
        // A seat waiting out a restart's back-off: the owner's stop ends the retries.
        const pending = cancelRestart(t, seat);
        const slot = slots.get(key(t, seat));
        if (slot === undefined) return pending !== undefined ? [pending.view] : [];
        const view = slot.view;
        await teardown(slot, "stopped by the owner", "owner");
        return [view];
      }
      if (team === undefined) throw new Error("name a seat or a team (teamd stop SEAT | --team TEAM)");
      const pending = [...restarts.values()].filter((r) => r.view.team === team).map((r) => cancelRestart(r.view.team, r.view.seat)?.view);
      const matching = [...slots.values()].filter((s) => s.view.team === team);
      await Promise.all(matching.map((s) => teardown(s, "stopped by the owner (team)", "owner")));
      return [...matching.map((s) => s.view), ...pending.filter((v): v is SeatView => v !== undefined)];
    },
    async halt(team, seat, why, by = "bound") {
      // A crash-loop caught in its back-off is halted too: its restart never fires (an owner's
      // halt of a `restarting` seat was refused as not running, and the restart came back).
      const pending = cancelRestart(team, seat);
      const slot = slots.get(key(team, seat));
      if (slot === undefined) return pending !== undefined ? { view: pending.view, checkpointSeq: 0 } : undefined;
      // Halted whatever it was doing: a run already ending by itself (`stopping`) is not restarted
      // (maybeRestart reads this), and a restart still launching is halted once it runs.
      slot.halting = true;
      for (const until = performance.now() + STOP_WAIT_MS; slot.view.state === "starting" && slots.get(key(team, seat)) === slot && performance.now() < until;)
        await new Promise((resolve) => setTimeout(resolve, 50));
      if (slots.get(key(team, seat)) !== slot) return { view: slot.view, checkpointSeq: 0 };
      const view = slot.view;
      if (slot.teardown === undefined) {
        // The seat's door closes before its SIGTERM: the grace is for the process to exit, not
        // to act (§8, issue 27). With the socket open, a seat trapping SIGTERM landed a note, a
        // file write and a push in its grace (test/escape/envelope-attack.test.ts).
        await options
          .closeSocket(team, seat)
          .catch((error: unknown) => log(`seat ${team}/${seat}: its socket could not be closed at the halt: ${String(error)}`));
        await terminate(slot);
      }
      await teardown(slot, why, by, true);
      let checkpointSeq = 0;
      if (slot.end?.state === "suspended" && slot.startSeq !== undefined) {
        try {
          const run = {
            team,
            seat,
            runId: view.runId,
            startSeq: slot.startSeq,
            startedAt: view.startedAt,
            haltedBy: by,
            reason: why,
            ...(view.lab !== undefined ? { lab: view.lab } : {}),
          };
          checkpointSeq = (await recordHandoff(readyLedger(options.ledger()), run, options.now())).seq;
          log(`seat ${team}/${seat}: its handoff checkpoint is record ${checkpointSeq}`);
        } catch (error) {
          log(`seat ${team}/${seat}: its handoff checkpoint could not be recorded: ${String(error)}`);
        }
      }
      return { view, checkpointSeq };
    },
    async exec(team, seat, command, execOptions, sink) {
      const { slot, recording, ready } = execSlot(team, seat, command, false);
      if (slot.plan === undefined) throw new Error("a running seat without a plan");
      // A ready sandbox that ended before its command was given: the exec launches its own.
      const proc = (await ready?.run(command, recording)) ?? (await launchInSeat(slot, slot.plan, command, { kind: "pipes" }, recording));
      const recorded = await recording;
      const result = await streamRun(proc, execOptions, sink);
      prepareReadyExec(slot);
      return { ...result, seq: recorded.seq };
    },
    async execTty(team, seat, command, size, ttyOptions) {
      const { slot, recording } = execSlot(team, seat, command, true);
      if (slot.plan === undefined) throw new Error("a running seat without a plan");
      const proc = await launchInSeat(
        slot,
        slot.plan,
        command,
        {
          kind: "pty",
          cols: size.cols > 0 ? Math.min(size.cols, 1000) : PTY_COLS,
          rows: size.rows > 0 ? Math.min(size.rows, 1000) : PTY_ROWS,
        },
        recording,
      );
      const recorded = await recording;
      const pty = proc.io;
      if (pty.kind !== "pty") {
        proc.kill();
        throw new Error("exec -t needs a pty from the launcher");
      }
      const ms = ttyOptions.timeoutMs === "none" ? undefined : ttyOptions.timeoutMs > 0 ? ttyOptions.timeoutMs : EXEC_DEFAULT_TIMEOUT_MS;
      const timer = ms === undefined ? undefined : setTimeout(() => proc.kill(), ms);
      const ended = proc.exit.then((how) => {
        clearTimeout(timer);
        return `${how.kind} ${how.code}`;
      });
      let detached: Promise<void> | undefined;
      // What the command prints before the session listens is held (bounded), not lost.
      const early: Buffer[] = [];
      let heldBytes = 0;
      let listener: ((chunk: Buffer) => void) | undefined;
      pty.onData((chunk) => {
        if (listener !== undefined) listener(chunk);
        else if (heldBytes + chunk.length <= SCROLLBACK_BYTES) {
          early.push(chunk);
          heldBytes += chunk.length;
        }
      });
      return {
        view: slot.view,
        seq: recorded.seq,
        scrollback: Buffer.alloc(0),
        onData: (next) => {
          listener = next;
          for (const chunk of early.splice(0)) next(chunk);
        },
        write: (keys) => pty.write(keys),
        resize: (cols, rows) => {
          if (cols > 0 && rows > 0 && cols <= 1000 && rows <= 1000) pty.resize(cols, rows);
        },
        ended,
        // The owner leaving ends the command: nothing else could reach it.
        detach() {
          detached ??= (async () => {
            proc.kill();
            await proc.exit;
          })();
          return detached;
        },
      };
    },
    async attach(team, seat, size) {
      const t = team ?? teamOf(seat, true);
      const slot = slots.get(key(t, seat));
      const proc = slot?.process;
      if (slot === undefined || proc === undefined || slot.view.state !== "running" || slot.scrollback === undefined) {
        throw new RefusalError("seat.not-running", `seat '${seat}' of team '${t}' is not running; start it first: teamd start ${seat}@${t}`);
      }
      if (proc.io.kind !== "pty") throw new RefusalError("seat.not-running", `seat '${seat}' of team '${t}' has no pty to attach to`);
      // One attacher at a time: two owners' keystrokes interleaved in one agent's input would
      // be acts neither of them meant. The second is refused, naming how to free the seat.
      if (slot.attached !== undefined) {
        throw new RefusalError("seat.attached", `seat '${seat}' of team '${t}' already has an owner attached; detach there first (Ctrl-] in that terminal)`);
      }
      const pty = proc.io;
      const listeners: Array<(chunk: Buffer) => void> = [];
      const relay = (chunk: Buffer) => {
        for (const listener of listeners) listener(chunk);
      };
      slot.attached = relay;
      let recorded: { seq: number };
      try {
        // Recorded before the owner sees anything: who and when, never what the pty shows.
        recorded = await record(RecordType.NOTICE, slot.view, "seat.attach", slot.view.runId, {
          by: "owner",
          containment: slot.view.containment,
          strength: strength(slot),
        });
      } catch (error) {
        slot.attached = undefined;
        throw error;
      }
      if (size.cols > 0 && size.rows > 0) pty.resize(size.cols, size.rows);
      let detached: Promise<void> | undefined;
      return {
        view: slot.view,
        seq: recorded.seq,
        scrollback: slot.scrollback.snapshot(),
        onData: (listener) => listeners.push(listener),
        write: (keys) => pty.write(keys),
        resize: (cols, rows) => {
          if (cols > 0 && rows > 0 && cols <= 1000 && rows <= 1000) pty.resize(cols, rows);
        },
        // Told once the run is torn down, not at the command's exit: the output it drains after its
        // exit still reaches the owner, and a `teamd status` right after the attachment ends no
        // longer lists the seat (under load it did, for the drain and the stop's record).
        ended: proc.exit.then(async (how) => {
          await tornDown(slot);
          return `${how.kind} ${how.code}`;
        }),
        detach(how) {
          detached ??= (async () => {
            if (slot.attached === relay) slot.attached = undefined;
            await record(RecordType.NOTICE, slot.view, "seat.detach", slot.view.runId, { by: "owner", how, attach_seq: String(recorded.seq) }).catch(
              (error: unknown) => log(`seat ${slot.view.team}/${slot.view.seat}: detach not recorded: ${String(error)}`),
            );
          })();
          return detached;
        },
      };
    },
    async forward(team, seat, port) {
      const t = team ?? teamOf(seat, true);
      const slot = slots.get(key(t, seat));
      if (slot === undefined || slot.process === undefined || slot.view.state !== "running") {
        throw new RefusalError("seat.not-running", `seat '${seat}' of team '${t}' is not running; start it first: teamd start ${seat}@${t}`);
      }
      if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UsageError(`the port ${port} is not between 1 and 65535`);
      if (options.forward === undefined) throw new Error("this daemon forwards no connection");
      // Recorded before a byte moves: who, which port; never what passes.
      const recorded = await record(RecordType.NOTICE, slot.view, "seat.forward", slot.view.runId, { by: "owner", port: String(port) });
      const started = options.now();
      let opened: ForwardedConnection;
      try {
        opened = await options.forward(t, seat, port);
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error);
        await record(RecordType.NOTICE, slot.view, "seat.forward-end", slot.view.runId, {
          by: "owner",
          port: String(port),
          how: `not opened: ${why}`,
          forward_seq: String(recorded.seq),
        }).catch(() => undefined);
        throw new RefusalError("seat.forward", `port ${port} of seat '${seat}' could not be reached: ${why}`);
      }
      const { socket, rest, headerBytes } = opened;
      socket.on("error", () => undefined);
      // What the seat took of what the owner's side sent (not what still waits in our buffer), and what it sent (not the launcher's header).
      const counted = () => ({ up: socket.bytesWritten - socket.writableLength, down: Math.max(0, socket.bytesRead - headerBytes) });
      let cut: { how: string; up: number; down: number } | undefined;
      // The seat ending its side ends the forwarded connection (after what it sent is delivered);
      // the socket is half-open, so its end is seen here, not only its close.
      const ended = new Promise<string>((resolve) => {
        socket.once("end", () => resolve("closed by the seat"));
        socket.once("close", () => resolve(cut?.how ?? "closed by the seat"));
      });
      let detached: Promise<void> | undefined;
      return {
        view: slot.view,
        seq: recorded.seq,
        scrollback: rest,
        lossless: true,
        onData: (listener) => {
          socket.on("data", listener);
          socket.resume();
        },
        // What the owner's side sends waits in memory only while the seat reads: past
        // FORWARD_UNREAD_CAP unread, the connection ends, and says so.
        write: (bytes) => {
          if (cut !== undefined) return;
          if (socket.writableLength + bytes.length <= FORWARD_UNREAD_CAP) return void socket.write(bytes);
          cut = { how: `closed: the seat left ${FORWARD_UNREAD_CAP / 1024 / 1024} MiB the owner's side sent unread`, ...counted() };
          socket.destroy();
        },
        // The owner's side finished sending: passed on, and the seat's answer still comes back.
        endInput: () => socket.end(),
        resize: () => undefined,
        ended,
        detach(how) {
          detached ??= (async () => {
            const { up, down } = cut ?? counted();
            socket.destroy();
            await record(RecordType.NOTICE, slot.view, "seat.forward-end", slot.view.runId, {
              by: "owner",
              port: String(port),
              how: cut?.how ?? how,
              up_bytes: String(up),
              down_bytes: String(down),
              ms: String(options.now() - started),
              forward_seq: String(recorded.seq),
            }).catch((error: unknown) => log(`seat ${slot.view.team}/${slot.view.seat}: forward's end not recorded: ${String(error)}`));
          })();
          return detached;
        },
      };
    },
    async freeze(team, seat, frozen, by = "owner") {
      const t = team ?? teamOf(seat, true);
      const slot = slots.get(key(t, seat));
      if (slot === undefined || slot.view.state !== "running") {
        throw new RefusalError("seat.not-running", `seat '${seat}' of team '${t}' is not running; there is nothing to ${frozen ? "freeze" : "thaw"}`);
      }
      const cgroup = slot.cgroup;
      if (cgroup?.plan.freeze === undefined) {
        const why = cgroup === undefined ? `it has no cgroup of its own (${slot.view.cgroup})` : "its cgroups are v1 only";
        throw new RefusalError(
          "containment.freeze",
          `seat '${seat}' of team '${t}' cannot be frozen: ${why}; fix: run the daemon as root (system mode) on a host with cgroup v2, or stop the seat instead (teamd stop ${seat}@${t})`,
        );
      }
      if ((slot.view.frozen === true) === frozen) return { view: slot.view, seq: 0 };
      // A ready exec would freeze with the seat: none is kept for a frozen one.
      if (frozen) await readyExecs.discard(key(t, seat));
      // Recorded before it happens: an owner act that cannot be recorded does not happen.
      const recorded = await record(RecordType.NOTICE, slot.view, frozen ? "seat.freeze" : "seat.thaw", slot.view.runId, {
        by,
        containment: slot.view.containment,
        strength: strength(slot),
      });
      try {
        await cgroup.setFrozen(frozen);
      } catch (error) {
        throw new RefusalError(
          "containment.freeze",
          `seat '${seat}' of team '${t}': ${(error as Error).message}; its state is unchanged (record ${recorded.seq} says it was asked)`,
        );
      }
      slot.view = { ...slot.view, frozen, paused: frozen && by === "runtime" };
      log(`seat ${t}/${seat}: ${frozen ? "frozen" : "thawed"} by ${by === "owner" ? "the owner" : "the envelope's runtime"} (record ${recorded.seq})`);
      return { view: slot.view, seq: recorded.seq };
    },
    list: () => [...[...slots.values()].map((s) => s.view), ...[...restarts.values()].map((r) => r.view)],
    async metered() {
      const waiting = [...restarts.values()].map((r) => r.view);
      const running = await Promise.all(
        [...slots.values()].map(async (s) => {
          if (s.view.state !== "running") return s.view;
          const usage =
            s.cgroup !== undefined
              ? await s.cgroup.usage()
              : s.pidNamespace
                ? await walkNamespaceUsage(s.pidNamespace)
                : uncontained(s)
                  ? await walkTreeUsage(s.view.initPid)
                  : {};
          const by = s.cgroup !== undefined ? "cgroup" : "proc walk";
          return {
            ...s.view,
            ...(usage.cpuMs !== undefined ? { cpuMs: usage.cpuMs } : {}),
            ...(usage.memoryBytes !== undefined ? { memoryBytes: usage.memoryBytes } : {}),
            meteredBy: by,
          };
        }),
      );
      return [...running, ...waiting];
    },
    async resumeRestartable() {
      const ledger = options.ledger();
      if (ledger === undefined) return [];
      const back: SeatView[] = [];
      for (const team of readyLedger(ledger).view.teams()) {
        if (ledger.view.policy(team.team) === undefined) continue;
        for (const [seat, declared] of Object.entries(policySeats(ledger, team.team))) {
          if (declared.start?.restart === undefined || slots.has(key(team.team, seat))) continue;
          const last = (await listRuns(home, team.team, seat)).at(-1);
          const lostWithTheDaemon =
            last !== undefined &&
            ((last.state === "stopped" && last.stoppedBy === "daemon" && last.reason === DAEMON_STOPPING) ||
              (last.state === "crashed" && (last.reason ?? "").startsWith(LOST_WITH_THE_DAEMON)));
          if (!lostWithTheDaemon) continue;
          try {
            back.push(await startChecked(startableSeat(ledger, team.team, seat), 0, false));
            log(`seat ${seat}@${team.team}: brought back after the daemon's restart (restart: ${declared.start.restart.when})`);
          } catch (error) {
            log(`seat ${seat}@${team.team}: not brought back after the daemon's restart: ${(error as Error).message}`);
          }
        }
      }
      return back;
    },
    async stopAll(why, by) {
      for (const pending of [...restarts.values()]) cancelRestart(pending.view.team, pending.view.seat);
      const all = [...slots.values()];
      await Promise.all(all.map((s) => teardown(s, why, by)));
      return all.map((s) => s.view);
    },
    async sweep() {
      // Read before the registry sweep removes the files: the cgroups each crashed seat had.
      const recorded = await registrations(home);
      const swept = await sweep(home, log);
      // Each run a crashed daemon left says so in its log's meta (it did not end by itself, nor was it stopped).
      for (const run of recorded) {
        await markRunLost(home, run.team, run.seat, run.runId, new Date(options.now()).toISOString()).catch((error: unknown) =>
          log(`seat ${run.team}/${run.seat}: its lost run ${run.runId} could not be marked: ${String(error)}`),
        );
      }
      await sweepSeatCgroups(home, recorded, log);
      return swept;
    },
  };
}

/** `containment: none` in the applied team file: the seat runs uncontained (launcher-none.ts). */
/**
 * A halt's SIGTERM: to the seat's command, the child of its pid-namespace init (uncontained: the
 * command is the init), then HALT_GRACE_MS for it to exit. A frozen seat cannot run a handler,
 * and a seat with no readable children list is killed at once: the grace is a courtesy, the kill
 * is the bound. Signalled by pid, read from the init's own children list, never by name.
 */
async function terminate(slot: Slot): Promise<void> {
  const proc = slot.process;
  if (proc === undefined || slot.view.frozen === true) return;
  let pids: number[] = [];
  if (uncontained(slot)) pids = [proc.initPid];
  else {
    try {
      const children = await readFile(`/proc/${proc.initPid}/task/${proc.initPid}/children`, "utf8");
      pids = children
        .split(/\s+/)
        .filter((p) => /^\d+$/.test(p))
        .map(Number);
    } catch {
      return;
    }
  }
  for (const pid of pids) {
    // A child read from the init's list may have exited and its pid been reused by then: only a
    // process still in the seat's own pid namespace is signalled (the window left is the one
    // between this check and the kill, which pidfd would close; Node has none).
    if (!uncontained(slot) && (slot.pidNamespace === undefined || (await pidNamespaceOf(pid)) !== slot.pidNamespace)) continue;
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      // Gone already.
    }
  }
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([proc.exit, new Promise<void>((resolve) => (timer = setTimeout(resolve, HALT_GRACE_MS)))]);
  clearTimeout(timer);
}

/** Read through a call: a halt can begin while an exit handler awaits (no narrowing across awaits). */
function isHalting(slot: Slot): boolean {
  return slot.halting === true;
}

function uncontained(slot: Slot): boolean {
  return slot.view.containment === "none";
}

/**
 * What the seat's records may claim: M (against a mistake only) uncontained; under bwrap, A
 * for what the escape suite attacks and no more (docs/enforcement.md says row by row), so the
 * record says so rather than a bare "A".
 */
function strength(slot: Slot): string {
  return uncontained(slot) ? "M" : "A (escape suite)";
}

/** What of the seat's limits holds, in words: "none", "applied: ...", or "partial: ..." (rlimits stand in). */
function describeLimits(asked: Limits, applied: SeatProcess["limits"]): string {
  if (asked === "none") return "none (the team file says limits: none)";
  if (Object.keys(asked).length === 0) return "none";
  return `${applied.partial ? "partial" : "applied"}: ${applied.notes.join("; ")}`;
}
