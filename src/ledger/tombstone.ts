import { RecordType, RevocationSubject, type RecordHeader, type RecordPayload } from "../gen/teamd/v1/ledger_pb.js";
import { refuse, type Refusal } from "../kernel/decision.js";
import { bytesEqual } from "./codec.js";
import { isTrunkRecord, READ_BY_STATE, READ_IN_FULL, unsettled } from "./gate-reads.js";
import type { LedgerView } from "./view.js";

/**
 * Tombstones (§15: "deletion is a signed tombstone"). An owner-signed TOMBSTONE record hides one
 * record's content — `teamd log` shows its stub, an archive leaves its payload out — and keeps
 * its header in the chain, so verification still passes. It may hide only what the gate never
 * reads in full: a refusal, a notice, a served read, a seat's stop, a settled start, a checkpoint,
 * a settled act that is no trunk act, and a revocation (its stub names what it revoked: a
 * tombstoned revocation still revokes). Everything the gate rests on stays whole: which is
 * which is gate-reads.ts's, shared with archival.
 */

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
  if (!READ_BY_STATE.has(header.type)) return kept(READ_IN_FULL[header.type] ?? "the gate reads it");
  // A refusal of a trunk act is only a refusal; an act's intent and outcome are what the facts read.
  if (isTrunkRecord(header)) return kept(`a ${header.action} record is what the trunk facts read (authorship, reviews, gates, passes)`);
  if ((header.type === RecordType.INTENT || header.type === RecordType.SEAT_START) && unsettled(view, seq)) return kept("its outcome is not settled yet");
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
