import { RevocationSubject } from "../gen/teamd/v1/ledger_pb.js";
import { deepFreeze, type KernelFacts, type KernelView, type Policy } from "../kernel/index.js";
import type { Ledger } from "./ledger-api.js";

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
 * The kernel's view for one decision: the policy in force and the facts, with the team's
 * leases always among them — every capability a seat uses may rest on a lease. The policy
 * comes deep-frozen from policyInForce (once per applied policy, in the ledger's decision
 * cache); one not frozen at all is frozen here. Frozen at the top only: its parts are frozen
 * where they are made (deepFreeze over 10,000 leases per request would cost more than the
 * decision).
 */
export function decisionView(policy: Policy, facts: KernelFacts | undefined, leases: Pick<KernelFacts, "leases" | "revokedLeases">): KernelView {
  return Object.freeze({ policy: Object.isFrozen(policy) ? policy : deepFreeze(policy), facts: Object.freeze({ ...(facts ?? {}), ...leases }) });
}
