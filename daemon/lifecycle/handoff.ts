import { RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { runtimeLeftMs, runtimeWindowMs } from "../../src/kernel/envelope-runtime.js";
import { git } from "../../src/effects/git.js";
import { daemonPrincipal, type Ledger, type LedgerEntry } from "../../src/ledger/index.js";
import { composeHandoff, HANDOFF_LIMITS, runEvidence, type Handoff, type HaltedRun } from "../../src/ledger/handoff.js";
import { policyInForce } from "../../src/ledger/policy-in-force.js";

/**
 * The handoff checkpoint of a halted run, built and recorded (src/ledger/handoff.ts says what
 * it is): the seat's tips read from the hub, its run's records from the ledger, the envelope
 * from the policy in force and the daemon's clock — one CHECKPOINT record.
 */
/** The seat's branches in the hub, bounded, by name. */
async function seatTips(hub: string, seat: string): Promise<{ refs: { ref: string; commit: string }[]; total: number }> {
  const listed = await git(["for-each-ref", "--format=%(objectname) %(refname)", `refs/heads/seat/${seat}/`], { gitDir: hub });
  const all = listed.stdout
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => ({ commit: line.slice(0, line.indexOf(" ")), ref: line.slice(line.indexOf(" ") + 1) }));
  return { refs: all.slice(0, HANDOFF_LIMITS.tips), total: all.length };
}

/** Read the evidence, compose the handoff and record it: the CHECKPOINT record's seq. */
export async function recordHandoff(ledger: Ledger, run: HaltedRun, now: number): Promise<{ seq: number; handoff: Handoff }> {
  const hub = ledger.view.team(run.team)?.hub;
  const tips = hub === undefined ? { refs: [], total: 0 } : await seatTips(hub, run.seat);
  const tip = ledger.view.lastSeq;
  const from = Math.max(run.startSeq + 1, tip - HANDOFF_LIMITS.scan + 1);
  const evidence = runEvidence(pages(ledger, from, tip), run.team, run.seat);
  let runtime: Handoff["facts"]["envelope"]["runtime"] = null;
  try {
    const { policy } = policyInForce(ledger, run.team);
    const clock = ledger.view.runtimeClock(run.team);
    const left = runtimeLeftMs(policy, clock, now);
    if (left !== undefined)
      runtime = { limitMs: runtimeWindowMs(policy, clock) ?? 0, leftMs: Math.max(0, Math.ceil(left)), renewedAt: new Date(clock.renewedAt).toISOString() };
  } catch {
    // A team without a policy in force has no envelope to state.
  }
  const handoff = composeHandoff(run, now, tips, evidence, { from, to: tip }, runtime);
  const recorded = await ledger.append({
    type: RecordType.CHECKPOINT,
    team: run.team,
    actor: daemonPrincipal(),
    signer: daemonPrincipal(),
    action: "seat.handoff",
    payload: {
      target: { kind: TargetKind.SEAT, name: run.seat },
      requestId: run.runId,
      detail: { case: "checkpoint", value: { runId: run.runId, handoff: JSON.stringify(handoff) } },
    },
  });
  return { seq: recorded.seq, handoff };
}

function* pages(ledger: Ledger, from: number, to: number): Generator<LedgerEntry> {
  for (let at = from; at <= to;) {
    const page = ledger.entries(at, 500);
    if (page.length === 0) return;
    for (const entry of page) {
      if (entry.seq > to) return;
      yield entry;
      at = entry.seq + 1;
    }
  }
}
