import { RecordType, type RecordHeader } from "../gen/teamd/v1/ledger_pb.js";
import { TRUNK_ACTIONS } from "./trunk-facts.js";
import type { LedgerView } from "./view.js";

/**
 * What the gate reads of the records, in one place: tombstones (tombstone.ts) may hide only what
 * it never reads in full, and archival (archive-plan.ts) keeps in the live store what it still
 * reads. Both ask the same three questions here — is this a type the gate reads in full, is it a
 * trunk act's record, is its intent still unsettled — and then narrow by their own purpose: a
 * tombstone keeps every record of a type the gate reads (an older policy is still history it
 * reads whole); an archive keeps only the one the gate reads now (the policy in force).
 */

/** Why the gate (or the view it decides with) reads every record of this type in full. */
export const READ_IN_FULL: Partial<Record<RecordType, string>> = {
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
  [RecordType.ARCHIVE]: "an archive's records say where the live chain resumes",
  [RecordType.CREATE_BOUND]: "a create-bound is what a seat's create is decided against",
};

/** The types whose records the gate reads only through their state (settled or not) or never. */
export const READ_BY_STATE: ReadonlySet<RecordType> = new Set([
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

/** An intent or outcome of a trunk act (push, file write, review, gate, merge, deploy): the trunk facts read it (trunk-facts.ts). */
export function isTrunkRecord(header: Pick<RecordHeader, "type" | "action">): boolean {
  const intentLike = header.type === RecordType.INTENT || header.type === RecordType.GATE || header.type === RecordType.REVIEW;
  return (intentLike || header.type === RecordType.OUTCOME) && Object.prototype.hasOwnProperty.call(TRUNK_ACTIONS, header.action);
}

/** An intent (or seat start) whose outcome is not settled: pending, or unknown and not reconciled. */
export function unsettled(view: LedgerView, seq: number): boolean {
  const state = view.intent(seq);
  return state !== undefined && (state.status === "pending" || (state.status === "unknown" && state.resolution === undefined));
}
