import { create } from "@bufbuild/protobuf";
import { LeasesResponseSchema, type LeasesResponse } from "../../src/gen/teamd/v1/control_pb.js";
import { RecordType, RevocationSubject } from "../../src/gen/teamd/v1/ledger_pb.js";
import { cascade, revokeLease, type LeaseRevocation, type Policy, type Refusal } from "../../src/kernel/index.js";
import { checkOwnerLease as decideOwnerLease, checkOwnerRevoke as decideOwnerRevoke } from "../../src/kernel/owner-lease.js";
import { daemonPrincipal, leaseFactOf, leaseRevocationDraft, LedgerRefusal, type CheckedOwnerAct, type Ledger } from "../../src/ledger/index.js";
import { RefusalError } from "../../src/rpc/index.js";
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

/** The revocations a policy change makes (§7): computed against the policy in force and every lease of the team. */
export function applyCascade(ledger: Ledger, team: string, next: Policy): LeaseRevocation[] {
  const view = currentView(ledger, team);
  return view === undefined ? [] : cascade(view, next);
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
