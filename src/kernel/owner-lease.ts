import { type Refusal, refuse } from "./decision.js";
import type { LeaseFact } from "./facts.js";
import { issueLease } from "./lease-issue.js";
import type { KernelView } from "./view.js";

/**
 * An owner-issued lease (§7, §9) is a root lease from the leads envelope, issued as leads (the
 * envelope is leads'): the owner signs it, and it is decided exactly as leads' own — a present
 * leads, the envelope entry covering it, the whole-chain ban, the deny and the ceiling, the
 * lease-ttl, §5. `fact` is the lease the act carries (undefined: it carries none readable);
 * `view` the team's policy in force with its leases (undefined: no policy applied yet).
 * Undefined when the lease may issue. Pure and total.
 */
export function checkOwnerLease(view: KernelView | undefined, team: string, fact: LeaseFact | undefined, now: number): Refusal | undefined {
  if (fact === undefined) return refuse("owner.act-invalid", "a lease act carries a lease: id, holder, expiry, and the issuer, capability and scope fields");
  if (fact.parent !== undefined)
    return refuse("owner.act-invalid", "the owner issues root leases from the leads envelope; a re-lease is issued by the seat holding its parent");
  if (view === undefined) return refuse("policy.unapplied", `team '${team}' has no applied policy: run teamd apply first`);
  if (view.policy.leads === undefined) return refuse("lease.no-leads", "the team has no leads; no lease of any origin issues without a present leads (§9)");
  if (fact.issuer !== view.policy.leads.seat)
    return refuse("lease.source", `the owner issues as leads (${view.policy.leads.seat}) from its envelope, not as ${fact.issuer}`);
  const decided = issueLease(
    view,
    {
      leaseId: fact.id,
      issuer: fact.issuer,
      recipient: fact.holder,
      capability: fact.capability,
      scope: fact.scope,
      expiresAt: fact.expiresAt,
      source: fact.rootGrant,
    },
    now,
  );
  return decided.decision === "refuse" ? decided : undefined;
}

/**
 * The owner's revocation of a lease (§7): it names one (`leaseId` undefined: it names none), and
 * a lease known to be another team's is refused. `teamLeases` are the team's leases as the
 * ledger reads them, undefined when the store is down — then the lease may not be readable and
 * the flag is what holds (§15), so nothing more is refused. Pure and total.
 */
export function checkOwnerRevoke(team: string, leaseId: string | undefined, teamLeases: Readonly<Record<string, LeaseFact>> | undefined): Refusal | undefined {
  if (leaseId === undefined) return refuse("owner.act-invalid", "teamd revoke names a lease");
  if (teamLeases !== undefined && !Object.prototype.hasOwnProperty.call(teamLeases, leaseId))
    return refuse("lease.unknown", `lease ${leaseId} is not a lease of team '${team}'`);
  return undefined;
}
