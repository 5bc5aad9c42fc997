import type { Authority } from "./authority.js";
import type { RuleId } from "./rules.js";
import type { OperationalCapability } from "./vocabulary.js";

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

/**
 * An allow names the single authority that covered the whole effect (§6: authorities are
 * never merged), so the ledger records which standing grant — later which lease — was used.
 * `actAs` is the act-as authority that covered the account when the effect runs under the
 * owner's identity: required in addition to, never instead of, the operational one (§3).
 */
export interface Allow {
  readonly decision: "allow";
  readonly capability: OperationalCapability;
  readonly authority: Authority;
  readonly actAs?: Authority;
  /**
   * For a merge, the id of the gate record it consumes (the daemon records it consumed, so it
   * is never consumed twice); for a deploy, the still-valid pass it ships under (§15).
   */
  readonly pass?: string;
  /**
   * For review, gate and merge: the review mode the act was decided under (§5), so the record
   * names it — distinct-seat is never called cross-lab.
   */
  readonly reviewMode?: "cross-lab" | "distinct-seat";
}

export function allow(capability: OperationalCapability, authority: Authority, actAs?: Authority): Allow {
  return Object.freeze(actAs === undefined ? { decision: "allow", capability, authority } : { decision: "allow", capability, authority, actAs });
}

/** An allow with what the act-time stage adds: the pass it consumes, the review mode it ran under. */
export function allowWith(covered: Allow, extra: { readonly pass?: string; readonly reviewMode?: "cross-lab" | "distinct-seat" }): Allow {
  return Object.freeze({ ...covered, ...extra });
}

/** What `authorize` returns: always one of the two, never an exception. */
export type Decision = Allow | Refusal;
