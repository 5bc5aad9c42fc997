import type { Refusal } from "../kernel/decision.js";
import type { RuleId } from "../kernel/rules.js";

/**
 * A refusal from containment: the kernel's refusal value (a rule id and a reason) plus what
 * the owner can do about it. §11: when the tool cannot establish what it needs it refuses
 * "and says why"; a seat that does not start must also say how to make it start.
 */
export interface ContainmentRefusal extends Refusal {
  readonly fix: string;
}

export function refuseContainment(rule: RuleId, reason: string, fix: string): ContainmentRefusal {
  return Object.freeze({ decision: "refuse", rule, reason, fix });
}

/** One line for a log or a terminal: rule, reason, fix. */
export function describeRefusal(refusal: ContainmentRefusal): string {
  return `refused by ${refusal.rule}: ${refusal.reason} (fix: ${refusal.fix})`;
}

/** A checked value, or the refusal that stopped it (for helpers whose value could itself look like a refusal). */
export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly refusal: Refusal };
