import type { RuleId } from "./rules.js";

/**
 * A refusal is a value inside the kernel: the rule that refused and a reason an agent can
 * act on (refuse and replan). It becomes an exception only at the edges (RefusalError in
 * src/rpc/), and a gRPC status only on the wire.
 */
export interface Refusal {
  readonly decision: "refuse";
  readonly rule: RuleId;
  readonly reason: string;
}

export function refuse(rule: RuleId, reason: string): Refusal {
  return Object.freeze({ decision: "refuse", rule, reason });
}
