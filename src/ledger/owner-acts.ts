import { ReconcileDecision, RecordType } from "../gen/teamd/v1/ledger_pb.js";
import { refuse } from "../kernel/decision.js";
import { daemonPrincipal, toSafeNumber } from "./codec.js";
import type { AppendResult } from "./commit.js";
import { describeError, LedgerRefusal } from "./errors.js";
import type { Flags } from "./flags.js";
import type { PublicKey } from "./keys.js";
import { checkOwnerAct, isRefusal, type CheckedOwnerAct } from "./owner-act.js";
import { sameObservation } from "./open-check.js";
import { daemonRecord, flagRecord, ownerRecord, type PendingRecord } from "./record.js";
import type { LedgerState } from "./state.js";
import type { LedgerView } from "./view.js";

/**
 * The owner's entry points (§9–§11, §15). Each checks the act against the owner key pinned
 * at genesis before anything else, and each is idempotent: an act is recorded once, and a
 * replay of the same signed bytes returns the first record.
 *
 * - stop / revoke: the flag is written first, so the act is in force before (and without)
 *   the store; the record follows at once if the store allows, else later, marked late.
 * - resume: the only act that clears a stop; it names the stops it clears. It needs a ready
 *   ledger — a team resumes only after the head is reconciled.
 * - reconcile: accept the exact state a blocked ledger observed, or resolve an unknown
 *   outcome (accept as done, or repeat under a new request id). It never touches a stop or
 *   a revocation.
 */

export interface OwnerActDeps {
  readonly ownerKey: PublicKey;
  readonly flags: Flags;
  view(): LedgerView;
  state(): LedgerState;
  enqueue(pending: PendingRecord): Promise<AppendResult>;
  reopen(): Promise<LedgerState>;
  recordPendingFlags(): Promise<void>;
  maybeReopen(): Promise<void>;
}

export interface FlagResult {
  readonly flagId: string;
  readonly recorded: AppendResult | undefined;
  readonly reason?: string;
}

const DEDICATED = new Map<RecordType, string>([
  [RecordType.GENESIS, "init"],
  [RecordType.STOP, "stop()"],
  [RecordType.REVOCATION, "revoke()"],
  [RecordType.RESUME, "resume()"],
  [RecordType.RECONCILE, "reconcile()"],
  [RecordType.INTENT, "submit()"],
  [RecordType.GATE, "submit()"],
  [RecordType.REVIEW, "submit()"],
  [RecordType.OUTCOME, "submit()"],
  [RecordType.ARCHIVE, "archive()"],
]);

export function createOwnerActs(deps: OwnerActDeps) {
  function check(bytes: Uint8Array, type: RecordType | undefined): CheckedOwnerAct {
    const act = checkOwnerAct(bytes, deps.ownerKey);
    if (isRefusal(act)) throw LedgerRefusal.of(act);
    if (type !== undefined && act.proposal.type !== type)
      throw new LedgerRefusal("owner.act-invalid", `expected a ${RecordType[type]} act, got ${RecordType[act.proposal.type]}`);
    return act;
  }

  async function raise(bytes: Uint8Array, kind: "stop" | "revocation"): Promise<FlagResult> {
    const flag = await deps.flags.raise(bytes);
    if (flag.kind !== kind) throw new LedgerRefusal("owner.act-invalid", `expected a ${kind}, got a ${flag.kind}`);
    if (deps.state().status === "unavailable") await deps.maybeReopen();
    try {
      return { flagId: flag.id, recorded: await deps.enqueue(flagRecord(flag, false)) };
    } catch (error) {
      return { flagId: flag.id, recorded: undefined, reason: describeError(error) };
    }
  }

  return {
    async append(bytes: Uint8Array, companions: readonly PendingRecord[] = [], atCommit?: PendingRecord["check"]): Promise<AppendResult> {
      const act = check(bytes, undefined);
      const dedicated = DEDICATED.get(act.proposal.type);
      if (dedicated) throw new LedgerRefusal("owner.act-invalid", `a ${RecordType[act.proposal.type]} act goes through ${dedicated}`);
      return deps.enqueue(ownerRecord(act, { ...(companions.length > 0 ? { companions } : {}), ...(atCommit !== undefined ? { check: atCommit } : {}) }));
    },

    stop: (bytes: Uint8Array) => raise(bytes, "stop"),
    revoke: (bytes: Uint8Array) => raise(bytes, "revocation"),

    async resume(bytes: Uint8Array): Promise<AppendResult> {
      const act = check(bytes, RecordType.RESUME);
      const detail = act.payload.detail;
      if (detail.case !== "resume" || detail.value.flagIds.length === 0) throw new LedgerRefusal("owner.act-invalid", "a resume names the stops it clears");
      const ids = detail.value.flagIds;
      const prior = deps.view().ownerAct(act.id);
      if (prior === undefined) {
        // A stop only a flag holds yet is recorded first; then it can be cleared.
        await deps.recordPendingFlags();
        const unknown = ids.filter(
          (id) =>
            !deps
              .view()
              .activeStops()
              .some((s) => s.flagId === id),
        );
        if (unknown.length > 0) throw new LedgerRefusal("owner.act-invalid", `no active recorded stop ${unknown[0]}`);
      }
      const record = await deps.enqueue(
        ownerRecord(act, {
          check: (view) => {
            const gone = ids.find((id) => !view.activeStops().some((s) => s.flagId === id));
            return gone ? refuse("owner.act-invalid", `no active recorded stop ${gone}`) : undefined;
          },
        }),
      );
      // The stops are cleared by the record; a flag file left behind is ignored (and removed on the next open).
      await deps.flags.remove(ids).catch(() => undefined);
      return record;
    },

    async reconcile(bytes: Uint8Array): Promise<AppendResult> {
      const act = check(bytes, RecordType.RECONCILE);
      const detail = act.payload.detail;
      if (detail.case !== "reconcile") throw new LedgerRefusal("owner.act-invalid", "a reconcile act carries a reconcile detail");
      const subject = detail.value.subject;
      if (subject.case === "head") {
        const state = deps.state();
        if (state.status !== "blocked" || !state.observation) {
          throw new LedgerRefusal(
            "ledger.reconcile-stale",
            state.status === "blocked" ? "this block cannot be reconciled (restore a copy)" : "the ledger is not blocked; there is no head to reconcile",
          );
        }
        if (!sameObservation(subject.value, state.observation))
          throw new LedgerRefusal("ledger.reconcile-stale", "the act names another state than the one observed");
        const record = await deps.enqueue(ownerRecord(act, { reconcilesHead: subject.value }));
        await deps.reopen();
        return record;
      }
      if (subject.case !== "outcome") throw new LedgerRefusal("owner.act-invalid", "a reconcile act names a head or an outcome");
      const o = subject.value;
      const intentSeq = toSafeNumber(o.intentSeq, "intent seq");
      if (o.decision !== ReconcileDecision.ACCEPT_DONE && o.decision !== ReconcileDecision.REPEAT) {
        throw new LedgerRefusal("owner.act-invalid", "the owner accepts an unknown outcome as done, or repeats it");
      }
      if (o.decision === ReconcileDecision.REPEAT && !o.newRequestId) throw new LedgerRefusal("owner.act-invalid", "a repeat names its new request id");
      const unresolved = (view: LedgerView) => {
        const state = view.intent(intentSeq);
        if (!state || state.status !== "unknown") return refuse("owner.act-invalid", `intent ${intentSeq} has no unknown outcome`);
        if (state.resolution) return refuse("owner.act-invalid", `intent ${intentSeq} was reconciled by record ${state.resolution.seq}`);
        if (state.team !== act.proposal.team) return refuse("owner.act-invalid", `intent ${intentSeq} belongs to team ${state.team}`);
        return undefined;
      };
      const now = deps.view().ownerAct(act.id) === undefined ? unresolved(deps.view()) : undefined;
      if (now) throw LedgerRefusal.of(now);
      return deps.enqueue(ownerRecord(act, { check: unresolved }));
    },

    async resolveUnknown(intentSeq: number, done: boolean, note: string): Promise<AppendResult> {
      const state = deps.view().intent(intentSeq);
      if (!state || state.status !== "unknown" || state.resolution)
        throw new LedgerRefusal("owner.act-invalid", `intent ${intentSeq} has no unresolved unknown outcome`);
      return deps.enqueue({
        ...daemonRecord({
          type: RecordType.RECONCILE,
          team: state.team,
          actor: daemonPrincipal(),
          signer: daemonPrincipal(),
          action: done ? "reconcile.resolved-done" : "reconcile.resolved-not-done",
          payload: {
            requestId: state.requestId,
            fields: note ? [{ key: "note", value: note }] : [],
            detail: {
              case: "reconcile",
              value: {
                subject: {
                  case: "outcome",
                  value: { intentSeq: BigInt(intentSeq), decision: done ? ReconcileDecision.RESOLVED_DONE : ReconcileDecision.RESOLVED_NOT_DONE },
                },
              },
            },
          },
        }),
        once: { key: `resolve:${intentSeq}`, recorded: (view) => view.intent(intentSeq)?.resolution?.seq },
      });
    },
  };
}
