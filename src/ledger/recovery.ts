import { OutcomeResult, RecordType, type RecordHeader, type RecordPayload } from "../gen/teamd/v1/ledger_pb.js";
import { daemonPrincipal, decodeHeader, decodePayload } from "./codec.js";
import type { AppendResult } from "./commit.js";
import { describeError } from "./errors.js";
import { daemonRecord, type PendingRecord } from "./record.js";
import type { LedgerStore } from "./store.js";
import type { LedgerView } from "./view.js";

/**
 * Recovery (§15 "Order and effect"): an intent with no outcome means the daemon died between
 * intent and outcome, so whether the effect happened is unknown. Recovery writes an `unknown`
 * outcome for each such intent — before any new act on that target, because the dispatcher
 * also refuses a target that has an intent pending from an earlier run — and the target and
 * the request id stay blocked until a recorded reconciliation. An effect already made is
 * never "undone"; the record only says it is not known.
 *
 * Intents whose effect is still running in this process (a reopen after the store came
 * back) are left alone: their own outcome is on its way.
 */
export const UNKNOWN_NOTE = "no outcome was recorded before the daemon stopped; the effect may or may not have happened";

/**
 * A seat start whose daemon stopped before its outcome: the run never became live. A contained
 * seat dies with its daemon (bwrap --die-with-parent), and the next start-up sweeps what a run
 * left (daemon/lifecycle/registry.ts), so the start is settled as not done.
 */
export const START_LOST_NOTE =
  "the daemon stopped before this start was published; the run is not live (a seat dies with its daemon; the start-up sweep ends what it left)";

export async function recoverIntents(deps: {
  readonly view: () => LedgerView;
  readonly store: () => LedgerStore | undefined;
  readonly running: (requestKey: string) => boolean;
  readonly enqueue: (pending: PendingRecord) => Promise<AppendResult>;
  readonly log: (line: string) => void;
}): Promise<void> {
  const orphans = deps
    .view()
    .pendingIntents()
    .filter((s) => !deps.running(s.key));
  if (orphans.length === 0) return;
  const items: PendingRecord[] = [];
  for (const state of orphans) {
    const row = deps.store()?.record(state.intentSeq);
    let header: RecordHeader | undefined;
    let payload: RecordPayload | undefined;
    try {
      header = row ? decodeHeader(row.header) : undefined;
      payload = row?.payload ? decodePayload(row.payload) : undefined;
    } catch {
      // The walk that built the view decoded it; a store changed since is caught by the tip check.
    }
    const seq = state.intentSeq;
    // A seat's start is settled, not unknown: no run outlives the daemon that launched it.
    const start = header?.type === RecordType.SEAT_START;
    items.push({
      ...daemonRecord({
        type: RecordType.OUTCOME,
        team: state.team,
        actor: daemonPrincipal(),
        signer: header?.signer ?? daemonPrincipal(),
        action: header?.action ?? "",
        payload: {
          domain: payload?.domain,
          target: payload?.target,
          requestId: state.requestId,
          effectId: payload?.effectId,
          detail: {
            case: "outcome",
            value: {
              intentSeq: BigInt(seq),
              result: start ? OutcomeResult.REFUSED : OutcomeResult.UNKNOWN,
              note: start ? START_LOST_NOTE : UNKNOWN_NOTE,
            },
          },
        },
      }),
      once: { key: `outcome:${seq}`, recorded: (view) => view.intent(seq)?.outcomeSeq },
    });
  }
  const results = await Promise.allSettled(items.map(deps.enqueue));
  const failed = results.filter((r) => r.status === "rejected");
  if (failed.length > 0)
    deps.log(`recovery could not record ${failed.length} unknown outcome(s): ${describeError((failed[0] as PromiseRejectedResult).reason)}`);
  else deps.log(`recovery recorded ${items.length} unknown outcome(s)`);
}
