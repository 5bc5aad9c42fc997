import type { KernelFacts } from "./facts.js";
import { NO_FACTS } from "./facts.js";
import { deepFreeze } from "./freeze.js";
import type { Policy } from "./policy.js";

export type { KernelFacts } from "./facts.js";

/**
 * The kernel's view of the world at one decision: the policy in force (the last applied one,
 * §10) and the facts projected from the ledger (src/ledger/) — author sets, gate and review
 * records, outcomes, revocations (facts.ts). Frozen when made.
 */
export interface KernelView {
  readonly policy: Policy;
  readonly facts: KernelFacts;
  /**
   * The decision time, epoch ms. `authorize` sets it for the stages it calls; lease liveness
   * exists only at a time, so a view without one sees no lease (fail closed).
   */
  readonly now?: number;
}

export function createKernelView(policy: Policy, facts: KernelFacts = NO_FACTS): KernelView {
  return deepFreeze({ policy, facts });
}
