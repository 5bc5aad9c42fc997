import type { Ledger } from "./index.js";
import type { Refusal } from "../kernel/decision.js";

/**
 * Is an owner's stop in force for this team (§11, §15)? The ledger's guard reads the local
 * flags before any record, so a stop holds with the store down; only the stop's own rules
 * are taken from it here (a flag that cannot be verified fails closed too) — whether the
 * store can record the act is each caller's own check. Every start and every owner act
 * other than resume and reconcile asks this first.
 */
export function stopRefusal(ledger: Ledger | undefined, team: string): Refusal | undefined {
  if (ledger === undefined) return undefined;
  const refusal = ledger.guard(team);
  return refusal !== undefined && (refusal.rule === "stop.active" || refusal.rule === "stop.team" || refusal.rule === "flag.unverifiable")
    ? refusal
    : undefined;
}
