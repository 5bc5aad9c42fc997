import { RecordType, RevocationSubject, type RecordHeader, type RecordPayload } from "../gen/teamd/v1/ledger_pb.js";
import { refuse, type Refusal } from "../kernel/decision.js";
import { bytesEqual } from "./codec.js";
import { TRUNK_ACTIONS } from "./trunk-facts.js";
import type { LedgerView } from "./view.js";

/**
 * Tombstones (§15: "deletion is a signed tombstone"). An owner-signed TOMBSTONE record hides one
 * record's content — `teamd log` shows its stub, an archive leaves its payload out — and keeps
 * its header in the chain, so verification still passes. It may hide only what the gate never
 * reads in full: a refusal, a notice, a served read, a seat's stop, a settled start, a checkpoint,
 * a settled act that is no trunk act, and a revocation (its stub names what it revoked: a
 * tombstoned revocation still revokes). Everything the gate rests on stays whole.
 */
const HIDEABLE: ReadonlySet<RecordType> = new Set([
  RecordType.REFUSAL,
  RecordType.NOTICE,
  RecordType.SERVED,
  RecordType.SEAT_STOP,
  RecordType.CHECKPOINT,
  RecordType.REVOCATION,
  RecordType.SEAT_START,
  RecordType.INTENT,
  RecordType.OUTCOME,
]);

const KEPT_WHY: Partial<Record<RecordType, string>> = {
  [RecordType.GENESIS]: "genesis pins the keys every record is checked against",
  [RecordType.TEAM]: "a team's record names its repository and hub",
  [RecordType.POLICY]: "a policy record is what a policy in force is rebuilt from",
  [RecordType.LEASE]: "a lease record is what a lease, and every lease below it, rests on",
  [RecordType.STOP]: "a stop holds until an owner act clears it",
  [RecordType.RESUME]: "a resume names the stops it cleared",
  [RecordType.RECONCILE]: "a reconciliation settles an outcome or a head",
  [RecordType.GATE]: "a gate's record is a pass the gate reads",
  [RecordType.REVIEW]: "a review counts toward a floor",
  [RecordType.TOMBSTONE]: "a tombstone is itself the stub",
  [RecordType.GRANT]: "a grant is authority in force",
  [RecordType.AGREEMENT]: "an agreement is authority in force",
};

/** The record a tombstone would hide, as the store holds it. */
export interface TombstoneSubject {
  readonly seq: number;
  readonly header: RecordHeader;
  readonly payload: RecordPayload | undefined;
  readonly payloadDigest: Uint8Array;
}

/** Why this record must stay whole, or undefined when a tombstone may hide it. */
export function tombstoneKept(subject: TombstoneSubject, view: LedgerView): Refusal | undefined {
  const { seq, header } = subject;
  const kept = (why: string) => refuse("ledger.tombstone-kept", `record ${seq} (${RecordType[header.type]?.toLowerCase() ?? header.type}) stays whole: ${why}`);
  if (view.tombstoneOf(seq) !== undefined) return refuse("ledger.tombstone-kept", `record ${seq} is already tombstoned (record ${view.tombstoneOf(seq)})`);
  if (!HIDEABLE.has(header.type)) return kept(KEPT_WHY[header.type] ?? "the gate reads it");
  // A refusal of a trunk act is only a refusal; an act's intent and outcome are what the facts read.
  if ((header.type === RecordType.INTENT || header.type === RecordType.OUTCOME) && Object.prototype.hasOwnProperty.call(TRUNK_ACTIONS, header.action)) {
    return kept(`a ${header.action} record is what the trunk facts read (authorship, reviews, gates, passes)`);
  }
  if (header.type === RecordType.INTENT || header.type === RecordType.SEAT_START) {
    const state = view.intent(seq);
    if (state !== undefined && (state.status === "pending" || (state.status === "unknown" && state.resolution === undefined))) {
      return kept("its outcome is not settled yet");
    }
  }
  return undefined;
}

/** The tombstone's stub must name the record exactly: its type, target, payload digest, and for a revocation what it revoked. */
export function stubMismatch(
  subject: TombstoneSubject,
  stub: { type: RecordType; target?: { kind: number; name: string }; payloadDigest: Uint8Array; revokedSubject: RevocationSubject; revokedId: string },
): string | undefined {
  if (stub.type !== subject.header.type)
    return `the tombstone says record ${subject.seq} is a ${RecordType[stub.type]}; it is a ${RecordType[subject.header.type]}`;
  if (!bytesEqual(stub.payloadDigest, subject.payloadDigest)) return `the tombstone's payload digest is not record ${subject.seq}'s`;
  const target = subject.payload?.target;
  if ((stub.target?.kind ?? 0) !== (target?.kind ?? 0) || (stub.target?.name ?? "") !== (target?.name ?? ""))
    return `the tombstone's target is not record ${subject.seq}'s`;
  const revoked = subject.payload?.detail.case === "revocation" ? subject.payload.detail.value : undefined;
  if ((revoked?.subject ?? RevocationSubject.UNSPECIFIED) !== stub.revokedSubject || (revoked?.subjectId ?? "") !== stub.revokedId)
    return `the tombstone's stub does not name what record ${subject.seq} revoked`;
  return undefined;
}
