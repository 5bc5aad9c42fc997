import type { RuleId } from "../kernel/rules.js";
import type { HeadObservation } from "./owner-act.js";

/**
 * The ledger's state. `ready` appends. `blocked` failed closed on the chain or the head (§15):
 * nothing is appended but the owner's signed reconciliation of exactly the observed state.
 * `unavailable` cannot reach the store (gone, unreadable, locked, a failed write): acts are
 * refused, stops and revocations still hold through their flags, and the ledger reopens —
 * through every open-time check — when the store returns.
 */
export type LedgerState =
  | { readonly status: "ready" }
  | {
      readonly status: "blocked";
      readonly rule: RuleId;
      readonly reason: string;
      /** The first bad seq, where one is known. */
      readonly seq: number | undefined;
      /** What the owner signs to reconcile (undefined when no reconciliation can help). */
      readonly observation: HeadObservation | undefined;
    }
  | { readonly status: "unavailable"; readonly reason: string };
