import { deepFreeze } from "./freeze.js";
import type { Policy } from "./policy.js";

/**
 * What the ledger would hold that a decision reads: the act-time issue (#5) adds the author
 * sets, gate records and outcomes keyed by effect id; the delegation issue (#6) adds leases
 * and revocations. This release decides from the policy alone, so the facts carry nothing —
 * the type admits no field, and the case runner refuses a fact it cannot use.
 */
export type KernelFacts = { readonly [key: string]: never };

/**
 * The kernel's view of the world at one decision: the policy in force (the last applied one,
 * §10) and the facts projected from the ledger (src/ledger/). Frozen when made.
 */
export interface KernelView {
  readonly policy: Policy;
  readonly facts: KernelFacts;
}

export function createKernelView(policy: Policy, facts: KernelFacts = {}): KernelView {
  return deepFreeze({ policy, facts });
}
