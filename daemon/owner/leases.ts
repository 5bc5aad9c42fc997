import { create } from "@bufbuild/protobuf";
import { LeasesResponseSchema, type LeasesResponse } from "../../src/gen/teamd/v1/control_pb.js";
import { RecordType, RevocationSubject } from "../../src/gen/teamd/v1/ledger_pb.js";
import { type ChangeDecision, checkAuthorityChange, effectiveSeats, lostMinimums, revokeLease, type Policy, type Refusal } from "../../src/kernel/index.js";
import { checkOwnerLease as decideOwnerLease, checkOwnerRevoke as decideOwnerRevoke } from "../../src/kernel/owner-lease.js";
import { daemonPrincipal, leaseFactOf, leaseRevocationDraft, LedgerRefusal, type CheckedOwnerAct, type Ledger } from "../../src/ledger/index.js";
import { RefusalError } from "../../src/rpc/errors.js";
import { decisionView, leaseFactsFor } from "../../src/ledger/decision-view.js";
import { leaseEntry } from "../../src/rpc/lease-entry.js";
import { policyInForce } from "../../src/ledger/policy-in-force.js";

/**
 * The owner's side of leases (§7, §9): the cascade an apply appends with its policy record,
 * a lease the owner issues, a revocation the owner signs, and the team's leases as the owner
 * reads them. The kernel decides each (`cascade`, `issueLease`, `revokeLease`); this wires it
 * to the ledger.
 */

/** The view of the policy in force with the team's leases; undefined when no policy is applied yet. */
function currentView(ledger: Ledger, team: string) {
  if (ledger.view.policy(team) === undefined) return undefined;
  return decisionView(policyInForce(ledger, team).policy, undefined, leaseFactsFor(ledger, team));
}

/**
 * The owner's apply over the policy in force, decided by the kernel (§5, §7): the constraints
 * over standing plus live leased authority — a maximum or an exclusion it would break is
 * refused, a minimum it leaves unmet commits and pauses the acts it gates — and the cascade
 * of revocations that commits with it. Undefined for a team's first policy: nothing is in
 * force and no lease can exist; the loader's launch check (§5, static) decides that one.
 */
export function decideApply(ledger: Ledger, team: string, next: Policy, now: number): ChangeDecision | undefined {
  const view = currentView(ledger, team);
  return view === undefined ? undefined : checkAuthorityChange(view, { kind: "edit", principal: { kind: "owner" }, after: next }, now);
}

/** The minimums the team's policy in force leaves unmet now, over standing plus live leases (§5, §11): what pauses, in words. */
export function unmetFloors(ledger: Ledger, team: string, now: number): string[] {
  const view = currentView(ledger, team);
  if (view === undefined) return [];
  return lostMinimums(view.policy.constraints, effectiveSeats(view, now), view.facts).map(
    (v) => `${v.message}; ${v.constraint.kind === "minimum" ? v.constraint.pauses.join(", ") : "its acts"} pause until it is restored`,
  );
}

/**
 * An owner-issued lease: the kernel decides it (src/kernel/owner-lease.ts) over the lease the
 * act carries and the team's policy in force with its leases.
 */
export function checkOwnerLease(ledger: Ledger, team: string, act: CheckedOwnerAct, now: number): Refusal | undefined {
  const fact = leaseFactOf({ header: { type: RecordType.LEASE, capability: act.proposal.capability, timeUnixMs: 0n }, payload: act.payload });
  // The view is read only for a lease the act carries (the kernel refuses one without first).
  return decideOwnerLease(fact === undefined || fact.parent !== undefined ? undefined : currentView(ledger, team), team, fact, now);
}

function revokedLeaseId(act: CheckedOwnerAct): string | undefined {
  const d = act.payload.detail;
  return d.case === "revocation" && d.value.subject === RevocationSubject.LEASE ? d.value.subjectId : undefined;
}

/** The owner's revocation, decided by the kernel; with the store down the team's leases are not read (the flag holds, §15). */
export function checkOwnerRevoke(ledger: Ledger, team: string, act: CheckedOwnerAct): Refusal | undefined {
  return decideOwnerRevoke(team, revokedLeaseId(act), ledger.state.status === "ready" ? ledger.view.leaseFacts(team).leases : undefined);
}

/**
 * The owner's revocation: the flag first (in force at once, with or without the store), the
 * record when the store allows (else late, §15), then the revocations of every lease below it
 * — already dead at use time by the chain walk; the records make that durable.
 */
export async function ownerRevoke(
  ledger: Ledger,
  team: string,
  act: CheckedOwnerAct,
  bytes: Uint8Array,
): Promise<{ seq: number; created: boolean; recorded: boolean; reason: string }> {
  const before = ledger.view.ownerAct(act.id);
  const flag = await ledger.revoke(bytes);
  if (flag.recorded === undefined) return { seq: 0, created: true, recorded: false, reason: flag.reason ?? "the store is not writable" };
  const id = revokedLeaseId(act) as string;
  const view = currentView(ledger, team);
  const decided = view === undefined ? undefined : revokeLease(view, { kind: "owner" }, id);
  const below = decided !== undefined && decided.decision === "revoke" ? decided.revocations.filter((r) => r.lease !== id) : [];
  if (below.length > 0) {
    await ledger.appendBatch(below.map((r) => leaseRevocationDraft(team, r.lease, r.reason, daemonPrincipal()))).catch((error: unknown) => {
      if (!(error instanceof LedgerRefusal)) throw error;
    });
  }
  return { seq: flag.recorded.seq, created: before === undefined, recorded: true, reason: "" };
}

/** The team's leases with their liveness now (teamd lease list; teamd apply computes its cascade from these). */
export function describeLeases(ledger: Ledger | undefined, team: string, now: number): LeasesResponse {
  if (ledger === undefined) throw new RefusalError("ledger.unavailable", "this machine has no ledger yet: run teamd init");
  const view = currentView(ledger, team);
  if (view === undefined) return create(LeasesResponseSchema, {});
  const leases = Object.values(view.facts.leases ?? {}).sort((a, b) => a.issuedAt - b.issuedAt || (a.id < b.id ? -1 : 1));
  return create(LeasesResponseSchema, { leases: leases.map((l) => leaseEntry(view, l, now)), revoked: [...(view.facts.revokedLeases ?? [])] });
}
