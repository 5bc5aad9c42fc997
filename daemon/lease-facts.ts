import { create } from "@bufbuild/protobuf";
import { RevocationSubject } from "../src/gen/teamd/v1/ledger_pb.js";
import { LeaseEntrySchema, type LeaseEntry } from "../src/gen/teamd/v1/shim_pb.js";
import { canonicalJson, deepFreeze, formatScope, leaseLiveness, type Capability, type CanonicalValue, type KernelFacts, type KernelView, type LeaseFact, type Policy } from "../src/kernel/index.js";
import type { Ledger } from "../src/ledger/index.js";

/**
 * The leases a decision reads (§7): the team's lease records and revocations from the
 * ledger's projection, plus every revocation only a flag holds yet — a revocation is in force
 * from its flag, before (and without) the store (§15). The projection's object is handed over
 * as is (frozen once per change), so a request does not copy the team's leases.
 */
const LEASE_FLAG_PREFIX = `${RevocationSubject.LEASE}:`;

export function leaseFactsFor(ledger: Ledger, team: string): Pick<KernelFacts, "leases" | "revokedLeases"> {
  const recorded = ledger.view.leaseFacts(team);
  const flagged = ledger
    .revocationFlags()
    .filter((s) => s.startsWith(LEASE_FLAG_PREFIX))
    .map((s) => s.slice(LEASE_FLAG_PREFIX.length))
    .filter((id) => Object.prototype.hasOwnProperty.call(recorded.leases, id) && !recorded.revokedLeases.includes(id));
  if (flagged.length === 0) return recorded;
  return Object.freeze({ leases: recorded.leases, revokedLeases: Object.freeze([...recorded.revokedLeases, ...flagged]) });
}

/**
 * The kernel's view for one decision: the policy in force (frozen when loaded) and the facts,
 * with the team's leases always among them — every capability a seat uses may rest on a lease.
 * Frozen at the top only: its parts are frozen where they are made (deepFreeze over 10,000
 * leases per request would cost more than the decision).
 */
export function decisionView(policy: Policy, facts: KernelFacts | undefined, leases: Pick<KernelFacts, "leases" | "revokedLeases">): KernelView {
  return Object.freeze({ policy: deepFreezeOnce(policy), facts: Object.freeze({ ...(facts ?? {}), ...leases }) });
}

const frozenPolicies = new WeakSet<object>();
function deepFreezeOnce(policy: Policy): Policy {
  if (!frozenPolicies.has(policy)) {
    deepFreeze(policy);
    frozenPolicies.add(policy);
  }
  return policy;
}

/** One lease as a seat or the owner reads it, with its liveness walked at `now`. */
export function leaseEntry(view: KernelView, lease: LeaseFact, now: number): LeaseEntry {
  const walked = leaseLiveness(view, lease.id, now);
  const caps = view.policy.vocabulary.capabilities;
  const spec = Object.prototype.hasOwnProperty.call(caps, lease.capability) ? caps[lease.capability as Capability] : undefined;
  const scope = walked.authority !== undefined && spec?.kind === "operational" ? formatScope(walked.authority.scope, spec.dimensions) : JSON.stringify(lease.scope);
  return create(LeaseEntrySchema, {
    leaseId: lease.id,
    parent: lease.parent ?? "",
    rootGrant: lease.rootGrant,
    issuer: lease.issuer,
    holder: lease.holder,
    capability: lease.capability,
    scope,
    scopeJson: canonicalJson(lease.scope as unknown as CanonicalValue),
    issuedUnixMs: BigInt(lease.issuedAt),
    expiresUnixMs: BigInt(lease.expiresAt),
    live: walked.live,
    deadRule: walked.live ? "" : walked.refusal.rule,
    deadReason: walked.live ? "" : walked.refusal.reason,
  });
}

/** Back from an entry to the kernel's fact (the owner's CLI computes apply's cascade from these). */
export function leaseFactOfEntry(entry: LeaseEntry): LeaseFact {
  return deepFreeze({
    id: entry.leaseId,
    ...(entry.parent ? { parent: entry.parent } : {}),
    rootGrant: entry.rootGrant,
    issuer: entry.issuer,
    holder: entry.holder,
    capability: entry.capability,
    scope: JSON.parse(entry.scopeJson) as LeaseFact["scope"],
    issuedAt: Number(entry.issuedUnixMs),
    expiresAt: Number(entry.expiresUnixMs),
  });
}
