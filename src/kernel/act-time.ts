import { describeAuthority } from "./authority.js";
import { type Allow, type Decision, refuse } from "./decision.js";
import type { KernelView } from "./view.js";

/**
 * The act-time stage: what an operation needs beyond its scope, decided after the scope is
 * covered. The act-time issue (#5) fills it — separation of duties over the ledger's author
 * set and the review mode (§5), independent verification (O), and for merge and deploy the
 * consumption of a still-valid gate pass bound to the same effect id (§15).
 *
 * Until then those operations are refused here with `act.unsupported`, naming the authority
 * that did cover the scope: allowing them on scope alone would be a gate that reads stronger
 * than it is. write, read, use-broker and act-as need nothing beyond scope (and the reserved
 * set) in this release, so their allow passes through.
 */
export function actTime(view: KernelView, covered: Allow): Decision {
  // Built only on the refusing branches: an allow costs no formatting.
  const by = (): string => describeAuthority(covered.authority, view.policy.vocabulary);
  switch (covered.capability) {
    case "review":
      return refuse("act.unsupported", `the scope is covered by ${by()}, but independent verification and review records (§5, O) are not built yet; a review is refused rather than recorded unchecked`);
    case "gate":
      return refuse("act.unsupported", `the scope is covered by ${by()}, but separation of duties over the author set (§5) is not built yet; a gate is refused rather than passed unchecked`);
    case "merge":
    case "deploy":
      return refuse("act.unsupported", `the scope is covered by ${by()}, but the gate pass a ${covered.capability} consumes (§15) and separation of duties (§5) are not built yet; refused rather than allowed unchecked`);
    case "write":
    case "read":
    case "use-broker":
    case "act-as":
      return covered;
  }
}
