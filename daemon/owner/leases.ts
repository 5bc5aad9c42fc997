import { create } from "@bufbuild/protobuf";
import { LeasesResponseSchema, type LeasesResponse } from "../../src/gen/teamd/v1/control_pb.js";
import { RecordType, RevocationSubject } from "../../src/gen/teamd/v1/ledger_pb.js";
import { cascade, issueLease, refuse, revokeLease, type LeaseRevocation, type Policy, type Refusal } from "../../src/kernel/index.js";
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
 * An owner-issued lease is a root lease from the leads envelope, issued as leads (the
 * envelope is leads', §9): the owner signs it, the kernel decides it exactly as it decides
 * leads' own — a present leads, the envelope entry covering it, the whole-chain ban, the
 * deny and the ceiling, the lease-ttl, §5.
 */
export function checkOwnerLease(ledger: Ledger, team: string, act: CheckedOwnerAct, now: number): Refusal | undefined {
  const fact = leaseFactOf({ header: { type: RecordType.LEASE, capability: act.proposal.capability, timeUnixMs: 0n }, payload: act.payload });
  if (fact === undefined) return refuse("owner.act-invalid", "a lease act carries a lease: id, holder, expiry, and the issuer, capability and scope fields");
  if (fact.parent !== undefined) return refuse("owner.act-invalid", "the owner issues root leases from the leads envelope; a re-lease is issued by the seat holding its parent");
  const view = currentView(ledger, team);
  if (view === undefined) return refuse("policy.unapplied", `team '${team}' has no applied policy: run teamd apply first`);
  if (view.policy.leads === undefined) return refuse("lease.no-leads", "the team has no leads; no lease of any origin issues without a present leads (§9)");
  if (fact.issuer !== view.policy.leads.seat) return refuse("lease.source", `the owner issues as leads (${view.policy.leads.seat}) from its envelope, not as ${fact.issuer}`);
  const decided = issueLease(view, { leaseId: fact.id, issuer: fact.issuer, recipient: fact.holder, capability: fact.capability, scope: fact.scope, expiresAt: fact.expiresAt, source: fact.rootGrant }, now);
  return decided.decision === "refuse" ? decided : undefined;
}

function revokedLeaseId(act: CheckedOwnerAct): string | undefined {
  const d = act.payload.detail;
  return d.case === "revocation" && d.value.subject === RevocationSubject.LEASE ? d.value.subjectId : undefined;
}

export function checkOwnerRevoke(ledger: Ledger, team: string, act: CheckedOwnerAct): Refusal | undefined {
  const id = revokedLeaseId(act);
  if (id === undefined) return refuse("owner.act-invalid", "teamd revoke names a lease");
  // With the store down the lease may not be readable: the flag is what holds (§15), so only a known lease of another team is refused.
  const owner = ledger.view.leaseFacts(team).leases;
  if (ledger.state.status === "ready" && !Object.prototype.hasOwnProperty.call(owner, id)) return refuse("lease.unknown", `lease ${id} is not a lease of team '${team}'`);
  return undefined;
}

/**
 * The owner's revocation: the flag first (in force at once, with or without the store), the
 * record when the store allows (else late, §15), then the revocations of every lease below it
 * — already dead at use time by the chain walk; the records make that durable.
 */
export async function ownerRevoke(ledger: Ledger, team: string, act: CheckedOwnerAct, bytes: Uint8Array): Promise<{ seq: number; created: boolean; recorded: boolean; reason: string }> {
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
