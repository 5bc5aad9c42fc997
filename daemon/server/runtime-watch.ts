import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { runtimeLeftMs, runtimeWindowMs } from "../../src/kernel/envelope-runtime.js";
import { showDuration } from "../../src/kernel/delegation-input.js";
import { daemonPrincipal, type Ledger } from "../../src/ledger/index.js";
import { describeError } from "../../src/ledger/errors.js";
import { policyInForce } from "../../src/ledger/policy-in-force.js";
import { RefusalError } from "../../src/rpc/errors.js";
import type { SeatManager } from "../lifecycle/manager.js";

/**
 * The envelope's unattended runtime at its limit (§8, §11): the kernel refuses every gated act
 * and start of a paused team at its next decision; this watch does the rest, by the daemon's
 * clock, every second. A team newly past its runtime: the owner is told once (a notice), and its
 * running seats are frozen where they have a v2 cgroup of their own (cgroup.freeze: they carry on
 * where they stood once renewed; their runs are `paused`) and halted otherwise (the run ends
 * `suspended`, into the handoff checkpoint its next run is given: daemon/lifecycle/handoff.ts).
 * A team renewed (an apply, teamd renew): the seats this watch froze are thawed.
 */
export interface RuntimeWatch {
  check(): Promise<void>;
  close(): void;
}

const SUBJECT = (team: string) => `runtime spent (team ${team}): paused`;

/** Whether a pause notice for this team is on record since its last renewal (the newest notices first, a bounded look). */
function toldSince(ledger: Ledger, team: string, renewedAt: number): boolean {
  const tip = ledger.view.lastSeq;
  for (let from = Math.max(0, tip - 10_000); from <= tip;) {
    const page = ledger.entries(from, 500, RecordType.NOTICE);
    if (page.length === 0) break;
    for (const entry of page) {
      from = entry.seq + 1;
      const detail = entry.payload?.detail;
      if (entry.team === team && entry.timeUnixMs >= renewedAt && detail?.case === "notice" && detail.value.subject === SUBJECT(team)) return true;
    }
  }
  return false;
}

export function watchRuntime(options: {
  readonly ledger: () => Ledger | undefined;
  readonly seats: () => SeatManager | undefined;
  readonly now: () => number;
  readonly log: (line: string) => void;
  readonly intervalMs?: number;
}): RuntimeWatch {
  /** Per paused team: the renewal it was paused under, and the seats this watch froze. */
  const paused = new Map<string, { renewedAt: number; frozen: Set<string> }>();
  let busy = false;

  /**
   * Hold every running seat of a paused team that is not held yet: frozen, or halted without a
   * cgroup. Run at the pause and at every look while it lasts: a seat whose launch passed the
   * start's check just before the limit and was still `starting` at the pause came up after it,
   * and ran on unfrozen through the whole pause (an owner's start, or a restart by the seat's
   * policy, timed across the limit: test/escape/envelope-attack.test.ts).
   */
  async function hold(team: string, frozen: Set<string>, seats: SeatManager): Promise<string[]> {
    const running = seats.list().filter((v) => v.team === team && v.state === "running" && !frozen.has(v.seat) && v.frozen !== true);
    const done: string[] = [];
    for (const view of running) {
      try {
        await seats.freeze(team, view.seat, true, "runtime");
        frozen.add(view.seat);
        done.push(`${view.seat} frozen`);
      } catch (error) {
        // No v2 cgroup of its own: it cannot stand still, so it stops (its gated acts are refused already).
        if (!(error instanceof RefusalError) || error.rule !== "containment.freeze") throw error;
        await seats.halt(team, view.seat, "halted: runtime spent (no cgroup to freeze it)");
        done.push(`${view.seat} halted (no cgroup to freeze)`);
      }
    }
    return done;
  }

  async function pause(ledger: Ledger, team: string, renewedAt: number, limitMs: number, seats: SeatManager): Promise<void> {
    const frozen = new Set<string>();
    paused.set(team, { renewedAt, frozen });
    const done = await hold(team, frozen, seats);
    // Told once per pause: a daemon restarted during it (which renews nothing) says nothing again.
    if (toldSince(ledger, team, renewedAt)) {
      options.log(`team ${team}: runtime spent, still paused${done.length > 0 ? ` (${done.join(", ")})` : ""}`);
      return;
    }
    await ledger.append({
      type: RecordType.NOTICE,
      team,
      actor: daemonPrincipal(),
      action: "notice",
      payload: {
        detail: {
          case: "notice",
          value: {
            subject: SUBJECT(team),
            text: `team ${team} has run unattended for its runtime (${showDuration(limitMs)} since the owner's last renewal); every gated act and start is refused until you renew it (teamd renew --team ${team}, or teamd apply)${done.length > 0 ? `; seats: ${done.join(", ")}` : ""}`,
          },
        },
      },
    });
    options.log(`team ${team}: runtime spent, paused${done.length > 0 ? ` (${done.join(", ")})` : ""}`);
  }

  async function resume(team: string, state: { frozen: Set<string> }, seats: SeatManager): Promise<void> {
    paused.delete(team);
    for (const seat of state.frozen) {
      await seats.freeze(team, seat, false, "runtime").catch((error: unknown) => options.log(`team ${team}: seat ${seat} not thawed: ${describeError(error)}`));
    }
    options.log(`team ${team}: renewed; ${state.frozen.size} seat(s) thawed`);
  }

  const check = async (): Promise<void> => {
    const ledger = options.ledger();
    const seats = options.seats();
    if (busy || ledger === undefined || seats === undefined || ledger.state.status !== "ready") return;
    busy = true;
    try {
      for (const { team } of ledger.view.teams()) {
        if (ledger.view.policy(team) === undefined) continue;
        let policy;
        try {
          policy = policyInForce(ledger, team).policy;
        } catch {
          continue;
        }
        const clock = ledger.view.runtimeClock(team);
        const left = runtimeLeftMs(policy, clock, options.now());
        const state = paused.get(team);
        if (left !== undefined && left <= 0 && state === undefined) await pause(ledger, team, clock.renewedAt, runtimeWindowMs(policy, clock) ?? 0, seats);
        else if (left !== undefined && left <= 0 && state !== undefined) {
          const done = await hold(team, state.frozen, seats);
          if (done.length > 0) options.log(`team ${team}: runtime spent, still paused (${done.join(", ")}: came up during the pause)`);
        } else if (state !== undefined && (left === undefined || left > 0)) await resume(team, state, seats);
      }
    } catch (error) {
      options.log(`runtime watch: ${describeError(error)}`);
    } finally {
      busy = false;
    }
  };

  const timer = setInterval(() => void check(), options.intervalMs ?? 1_000);
  timer.unref();
  return { check, close: () => clearInterval(timer) };
}
