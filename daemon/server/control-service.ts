import type { ControlService } from "../../src/gen/teamd/v1/control_pb.js";
import { RefusalError } from "../../src/rpc/errors.js";
import { PROTOCOL_VERSION, TEAMD_VERSION } from "../../src/rpc/protocol.js";
import { type ServiceImpl } from "../../src/rpc/service-types.js";
import type { Mode, TeamdHome } from "../host/home.js";
import { handleOwnerAct, type LedgerSlot } from "../owner/acts.js";
import { describePolicyInForce } from "../owner/channel.js";
import { describeLeases } from "../owner/leases.js";
import { describeLedger } from "../host/ledger-host.js";
import type { SeatManager, SeatView } from "../lifecycle/manager.js";
import { checkName } from "../host/names.js";
import { handleStopAll } from "./stop-all-handler.js";
import { rememberedBwrapVersion } from "../host/selftest-record.js";
import { ledgerSummary, noticesUnseen, selftestStandingMessage, stopsInForce, teamsStatus } from "./status-report.js";
import { AsyncQueue } from "../../src/rpc/async-queue.js";
import { attachSession } from "./attach-session.js";
import type { SpendStatus } from "./spend-book.js";

export interface ControlState {
  readonly daemonInstance: string;
  readonly mode: Mode;
  readonly home: string;
  readonly teamdHome: TeamdHome;
  readonly ledger: LedgerSlot;
  readonly daemonPublicKey: Uint8Array;
  seats(): Promise<ReadonlyArray<{ seat: string; team: string; socket: string } & Partial<Omit<SeatView, "state">> & { state?: string }>>;
  seatManager(): SeatManager;
  /** The daemon acted on this stop flag in the owner's request: the flags watch leaves it. */
  stopHandled?(flagId: string): void;
  /** The daemon's clock, unix ms (from the composition root). */
  readonly now: () => number;
  /** A team's spend this period (daemon/server/spend-book.ts), undefined without a spend ceiling. */
  readonly spend?: (team: string) => SpendStatus | undefined;
  /** The daemon's log: a long owner act's progress (an archive) goes there. */
  readonly log?: (line: string) => void;
}

/** An optional name from a request: empty means "not named"; anything else must be a plain name. */
function named(kind: "team" | "seat", value: string): string | undefined {
  return value === "" ? undefined : checkName(kind, value);
}

/** The owner-facing service, served only on the control socket. */
export function createControlService(state: ControlState): ServiceImpl<typeof ControlService> {
  const bwrapVersion = rememberedBwrapVersion();
  return {
    async hello() {
      return { daemon: { protocol: PROTOCOL_VERSION, program: TEAMD_VERSION } };
    },
    async whoAmI() {
      return { principal: "owner", daemonInstance: state.daemonInstance };
    },
    async status() {
      return {
        daemon: { protocol: PROTOCOL_VERSION, program: TEAMD_VERSION },
        daemonInstance: state.daemonInstance,
        pid: process.pid,
        mode: state.mode,
        home: state.home,
        seats: (await state.seats()).map(seatStatus),
        ledger: ledgerSummary(state.ledger.get()),
        stops: stopsInForce(state.ledger.get()),
        teams: await teamsStatus(state.ledger.get(), state.now(), await state.seats(), (team) => state.spend?.(team)),
        // Counted and read here, so the owner's status loads no SQLite and runs no bubblewrap (issue 26).
        noticesUnseen: noticesUnseen(state.teamdHome, state.ledger.get()),
        selftest: selftestStandingMessage(state.teamdHome, bwrapVersion),
      };
    },
    async ownerAct(request) {
      const receipt = await handleOwnerAct(state.teamdHome, state.ledger, request.kind, request.act, state.now, (line) => state.log?.(`owner act: ${line}`));
      return { seq: BigInt(receipt.seq), created: receipt.created };
    },
    async ledgerStatus() {
      return describeLedger(state.ledger.get(), state.daemonPublicKey);
    },
    async policyInForce(request) {
      return describePolicyInForce(state.ledger.get(), request.team);
    },
    async leases(request) {
      return describeLeases(state.ledger.get(), request.team, state.now());
    },
    async startSeat(request) {
      const seats = await state.seatManager().start(named("team", request.team), named("seat", request.seat));
      return { seats: seats.map(seatStatus) };
    },
    async stopSeat(request) {
      const stopped = await state.seatManager().stop(named("team", request.team), named("seat", request.seat));
      return { stopped: stopped.map(seatStatus) };
    },
    async freezeSeat(request) {
      const seat = named("seat", request.seat);
      if (seat === undefined) throw new Error(`${request.thaw ? "thaw" : "freeze"} needs a seat: teamd ${request.thaw ? "thaw" : "freeze"} SEAT`);
      const { view, seq } = await state.seatManager().freeze(named("team", request.team), seat, !request.thaw);
      return { seat: seatStatus(view), seq: BigInt(seq) };
    },
    async haltSeat(request) {
      const team = named("team", request.team);
      const seat = named("seat", request.seat);
      const manager = state.seatManager();
      const why = haltReason(request.reason);
      // One seat (its team found from its name), or every running seat of the team — and a seat
      // between runs (ending, waiting out a restart's back-off, launching the restart): an owner's
      // halt of a crash-loop was refused as "not running", and its restart policy brought it back.
      const live = (v: { state: string }) => ["running", "restarting", "starting", "stopping"].includes(v.state);
      const targets =
        seat !== undefined
          ? manager.list().filter((v) => v.seat === seat && (team === undefined || v.team === team) && live(v))
          : team !== undefined
            ? manager.list().filter((v) => v.team === team && live(v))
            : [];
      if (seat === undefined && team === undefined) throw new Error("halt needs a seat or a team: teamd halt SEAT | --team TEAM");
      if (seat !== undefined && new Set(targets.map((v) => v.team)).size > 1)
        throw new Error(`seat '${seat}' runs in several teams (${targets.map((v) => v.team).join(", ")}); name one: teamd halt ${seat} --team TEAM`);
      if (seat !== undefined && targets.length === 0)
        throw new RefusalError(
          "seat.not-running",
          `no running seat is named '${seat}'${team !== undefined ? ` in team '${team}'` : ""} (teamd status lists them)`,
        );
      const halted = await Promise.all(targets.map((v) => manager.halt(v.team, v.seat, why, "owner")));
      return {
        halted: halted.filter((h) => h !== undefined).map((h) => ({ seat: seatStatus(h.view), checkpointSeq: BigInt(h.checkpointSeq) })),
      };
    },
    async stopAll(request) {
      const result = await handleStopAll(state.teamdHome, state.ledger, state.seatManager(), request.act, (flagId) => state.stopHandled?.(flagId));
      return { flagId: result.flagId, recorded: result.recorded, seq: BigInt(result.seq), reason: result.reason, stopped: result.stopped.map(seatStatus) };
    },
    async *exec(request, context) {
      const seat = named("seat", request.seat);
      if (seat === undefined) throw new Error("exec needs a seat: teamd exec SEAT -- CMD...");
      // Output is streamed as it comes; what waits for a slow owner is bounded by exec's cap.
      type Out = { event: { case: "stdout" | "stderr"; value: Uint8Array } };
      const queue = new AsyncQueue<Out>();
      const run = state
        .seatManager()
        .exec(
          named("team", request.team),
          seat,
          request.command,
          // An owner who cuts the call (Ctrl-C) ends the command: with no deadline nothing else would.
          { timeoutMs: request.noTimeout ? "none" : request.timeoutMs, stdin: request.stdin, signal: context.signal },
          (stream, chunk) => queue.push({ event: { case: stream, value: chunk } }),
        )
        .finally(() => queue.close());
      // A refusal before the run (not running, not recorded) must reach the caller as itself.
      run.catch(() => undefined);
      yield* queue.drain();
      const result = await run;
      if (result.reason !== undefined) yield { event: { case: "stderr", value: Buffer.from(`teamd: the seat could not be set up: ${result.reason}\n`) } };
      yield { event: { case: "done", value: { exitCode: result.exitCode, how: result.how, truncated: result.truncated, seq: BigInt(result.seq) } } };
    },
    attach(requests, context) {
      return attachSession(state.seatManager(), requests, context.signal);
    },
  };
}

/** The seat_stop's reason for an owner's halt: the owner's words, one bounded line. */
function haltReason(words: string): string {
  const line = words
    .replace(/[\u0000-\u001f\u007f]+/g, " ")
    .trim()
    .slice(0, 200);
  return line === "" ? "halted by the owner" : `halted by the owner: ${line}`;
}

/** A seat view as the proto's SeatStatus (the meters are uint64). */
function seatStatus<T extends { cpuMs?: number; memoryBytes?: number; paused?: boolean; state?: string }>({ cpuMs, memoryBytes, paused, ...s }: T) {
  // A run frozen by its team's spent runtime is `paused` (daemon/host/run-state.ts), not just frozen.
  return { ...s, ...(paused === true ? { state: "paused" } : {}), cpuMs: BigInt(cpuMs ?? 0), memoryBytes: BigInt(memoryBytes ?? 0) };
}
