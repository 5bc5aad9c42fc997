import type { MessageInitShape } from "@bufbuild/protobuf";
import type { TargetSchema } from "../gen/teamd/v1/ledger_pb.js";
import { OutcomeResult, RecordType } from "../gen/teamd/v1/ledger_pb.js";
import { refuse, type Refusal } from "../kernel/decision.js";
import { daemonPrincipal, principalKey, sha256, toHex, type PrincipalInit, type RecordPayloadInit } from "./codec.js";
import { describeError, LedgerRefusal } from "./errors.js";
import { boundEchoes, boundText, RECORD_NAME_BYTES, RECORD_TEXT_BYTES } from "./bounded-text.js";
import type { CapabilityUseInit } from "./owner-act.js";
import { requestKey, targetKey, type LedgerView, type RequestState, type Resolution } from "./view.js";

/**
 * Intent, effect, outcome — with request ids that make a retry safe (§15 "Order and effect").
 *
 * - The intent is appended durably before the effect; if it cannot be, the effect never runs.
 * - Request ids are scoped per principal (per seat). A byte-identical retry returns the
 *   recorded state, or awaits the in-flight original — never a second dispatch. The same id
 *   with other bytes is refused. The same id from another seat is another request.
 * - A target with an unknown outcome refuses every new act until a recorded reconciliation.
 * - The effect's result is recorded as the outcome; an effect that throws is `unknown` (it may
 *   have happened), and so is one whose outcome could not be appended.
 *
 * The in-flight table is per dispatcher (per open ledger), never module state.
 */

export type TargetInit = MessageInitShape<typeof TargetSchema>;

/** The parts of an intent's payload the caller states; the dispatcher adds target, request id and digest. */
export interface IntentPayload {
  readonly domain?: RecordPayloadInit["domain"];
  readonly before?: RecordPayloadInit["before"];
  readonly after?: RecordPayloadInit["after"];
  readonly rootGrant?: string;
  readonly inputState?: RecordPayloadInit["inputState"];
  readonly effectId?: Uint8Array;
  readonly fields?: RecordPayloadInit["fields"];
  /** The typed detail of a GATE or REVIEW intent (its verdict); none for a plain intent. */
  readonly detail?: RecordPayloadInit["detail"];
}

/** The record types an act's intent is written as: the RFC's own where it has one (§15), else INTENT. */
export type IntentType = RecordType.INTENT | RecordType.GATE | RecordType.REVIEW;

export interface SubmitRequest {
  /** The seat, as authenticated by the socket its call arrived on. */
  readonly actor: PrincipalInit;
  /** Whose authority covered the act; the actor unless the kernel says otherwise. */
  readonly signer?: PrincipalInit;
  readonly team: string;
  /** The intent's record type: GATE for a gate decision, REVIEW for a review, INTENT otherwise. */
  readonly type?: IntentType;
  readonly requestId: string;
  /** The canonical request bytes; a retry must present exactly these. */
  readonly request: Uint8Array;
  readonly action: string;
  readonly target: TargetInit;
  readonly capability?: CapabilityUseInit;
  readonly claimedName?: string;
  /** Further payload of the intent: domain, before/after, root grant, input state, effect id, fields. */
  readonly payload?: IntentPayload;
  /**
   * Called once the intent holds its place in the chain (queued for the next group commit),
   * before it is durable: a caller serializing decisions may let the next one go then, and
   * concurrent intents share one fsync.
   */
  readonly onQueued?: () => void;
}

export interface EffectResult {
  readonly result: "done" | "refused";
  readonly note?: string;
  /** The executor's answer (e.g. the new ref), returned to every retry. */
  readonly reply?: Uint8Array;
}

export type Effect = (intent: { readonly seq: number }) => Promise<EffectResult>;

export interface SubmitReply {
  readonly requestId: string;
  readonly status: "done" | "refused" | "unknown";
  readonly intentSeq: number;
  readonly outcomeSeq: number | undefined;
  readonly note: string;
  readonly reply: Uint8Array;
  readonly resolution: Resolution | undefined;
}

export interface RecordDraftLike {
  readonly type: RecordType;
  readonly team: string;
  readonly actor: PrincipalInit;
  readonly signer: PrincipalInit;
  readonly claimedName?: string;
  readonly action: string;
  readonly capability?: CapabilityUseInit;
  readonly payload: RecordPayloadInit;
}

export interface DispatchDeps {
  view(): LedgerView;
  guard(team: string): Refusal | undefined;
  append(draft: RecordDraftLike): Promise<{ readonly seq: number }>;
}

export interface Dispatcher {
  submit(request: SubmitRequest, effect: Effect): Promise<SubmitReply>;
  /** Is this request (view key) being dispatched in this process? Recovery leaves those alone. */
  inFlight(requestKey: string): boolean;
}

export function replyOf(state: RequestState, inFlight = false): SubmitReply {
  const status = state.status === "pending" ? "unknown" : state.status;
  const note = state.status === "pending" && !inFlight ? state.note || "no outcome is recorded for this request" : state.note;
  return {
    requestId: state.requestId,
    status,
    intentSeq: state.intentSeq,
    outcomeSeq: state.outcomeSeq,
    note,
    reply: state.reply,
    resolution: state.resolution,
  };
}

export function createDispatcher(deps: DispatchDeps): Dispatcher {
  const inFlight = new Map<string, { digest: string; promise: Promise<SubmitReply> }>();

  async function refuseAndRecord(req: SubmitRequest, unbounded: Refusal): Promise<never> {
    // §15 records refused attempts too; when the store is what failed, it cannot (and says so).
    // What the caller sent (a request id, a target) is bounded in the record (bounded-text.ts).
    const refusal = refuse(
      unbounded.rule,
      boundText(boundEchoes(unbounded.reason, [req.requestId, req.target.name ?? ""], RECORD_NAME_BYTES), RECORD_TEXT_BYTES),
    );
    await deps
      .append({
        type: RecordType.REFUSAL,
        team: req.team,
        actor: req.actor,
        signer: daemonPrincipal(),
        claimedName: req.claimedName,
        action: req.action,
        payload: {
          target: { ...req.target, name: boundText(req.target.name ?? "", RECORD_NAME_BYTES) },
          requestId: boundText(req.requestId, RECORD_NAME_BYTES),
          requestDigest: sha256(req.request),
          detail: { case: "refusal", value: { rule: refusal.rule, reason: refusal.reason } },
        },
      })
      .catch(() => undefined);
    throw LedgerRefusal.of(refusal);
  }

  async function run(req: SubmitRequest, effect: Effect, requestDigest: Uint8Array): Promise<SubmitReply> {
    const appending = deps.append({
      type: req.type ?? RecordType.INTENT,
      team: req.team,
      actor: req.actor,
      signer: req.signer ?? req.actor,
      claimedName: req.claimedName,
      action: req.action,
      capability: req.capability,
      payload: { ...req.payload, target: req.target, requestId: req.requestId, requestDigest },
    });
    req.onQueued?.();
    const intent = await appending;
    let code: OutcomeResult;
    let result: EffectResult | undefined;
    try {
      result = await effect({ seq: intent.seq });
      code = result.result === "done" ? OutcomeResult.DONE : OutcomeResult.REFUSED;
    } catch (error) {
      code = OutcomeResult.UNKNOWN;
      result = { result: "refused", note: `the effect failed and may or may not have happened: ${describeError(error)}` };
    }
    try {
      await deps.append({
        type: RecordType.OUTCOME,
        team: req.team,
        actor: daemonPrincipal(),
        signer: req.signer ?? req.actor,
        action: req.action,
        payload: {
          domain: req.payload?.domain,
          target: req.target,
          requestId: req.requestId,
          effectId: req.payload?.effectId,
          // A note may echo the seat's input (git's stderr on a ref name): bounded like a reason.
          detail: {
            case: "outcome",
            value: { intentSeq: BigInt(intent.seq), result: code, note: boundText(result.note ?? "", RECORD_TEXT_BYTES), reply: result.reply },
          },
        },
      });
    } catch {
      // The intent stays without an outcome: recovery writes `unknown` on the next open.
    }
    const state = deps.view().intent(intent.seq);
    if (!state) throw new Error(`intent ${intent.seq} is missing from the view`);
    return replyOf(state);
  }

  return {
    inFlight: (key) => inFlight.has(key),
    async submit(req, effect) {
      if (!req.requestId) return refuseAndRecord(req, refuse("rpc.malformed", "a request id is required"));
      const principal = principalKey(req.actor);
      const key = requestKey(principal, req.requestId);
      const requestDigest = sha256(req.request);
      const digest = toHex(requestDigest);
      // Flags, stop and store state first: they are read before any record.
      const guarded = deps.guard(req.team);
      if (guarded) return refuseAndRecord(req, guarded);
      const flight = inFlight.get(key);
      if (flight) {
        if (flight.digest !== digest)
          return refuseAndRecord(req, refuse("request.replay-mismatch", `request id ${req.requestId} is in flight with another payload`));
        return flight.promise;
      }
      const view = deps.view();
      const recorded = view.request(principal, req.requestId);
      if (recorded) {
        if (recorded.digest !== digest)
          return refuseAndRecord(
            req,
            refuse("request.replay-mismatch", `request id ${req.requestId} was used with another payload (intent ${recorded.intentSeq})`),
          );
        return replyOf(recorded);
      }
      const target = targetKey(req.team, req.target);
      const orphan = view.pendingOn(target).find((s) => !inFlight.has(s.key));
      if (orphan) {
        return refuseAndRecord(
          req,
          refuse("ledger.unknown-outcome", `intent ${orphan.intentSeq} on this target has no outcome yet; recovery records it as unknown first`),
        );
      }
      const unknown = view.unknownOn(target).filter((s) => !s.resolution);
      if (unknown.length > 0) {
        const seqs = unknown.map((s) => s.intentSeq).join(", ");
        return refuseAndRecord(
          req,
          refuse("ledger.unknown-outcome", `the target has an unknown outcome (intent ${seqs}); it waits for a recorded reconciliation`),
        );
      }
      const promise = run(req, effect, requestDigest);
      inFlight.set(key, { digest, promise });
      const clear = () => void inFlight.delete(key);
      promise.then(clear, clear);
      return promise;
    },
  };
}
