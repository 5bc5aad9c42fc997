import { pausingMinimum } from "./constraints.js";
import { effectiveSeats } from "./lease-issue.js";
import type { CanonicalEffect } from "./coverage.js";
import { type Allow, type Decision, allowWith, refuse } from "./decision.js";
import type { AuthorFact } from "./facts.js";
import { choosePass } from "./gate-pass.js";
import type { Seat } from "./policy.js";
import { ownValue } from "./records.js";
import { authorsOf, checkAuthorInequality, checkIndependence, checkReviewFloor } from "./separation.js";
import type { KernelView } from "./view.js";

/**
 * The act-time stage: what an operation needs beyond its scope, decided after one authority
 * covered the effect (authorize.ts), against the ledger's facts (facts.ts).
 *
 * - Every act: a minimum that revocation, expiry or stop left unmet pauses the acts it gates
 *   (`constraint.paused`, §5).
 * - review (a verdict): independent of every executing seat — not it, not its run, not its
 *   home (ownership protocol).
 * - gate: the author-inequality and, in cross-lab mode, the lab predicate (§5); independence;
 *   the review floor.
 * - merge: the author-inequality and lab predicate for the merger; the review floor; and it
 *   consumes exactly one still-valid gate pass bound to the same effect id (§15).
 * - deploy: ships under a still-valid pass for the artifact's effect id (§3, §15); the author-
 *   inequality only where the owner bound deploy to it, never the lab predicate. The env and
 *   the account were already authorized from the seat's own deploy(env) and act-as(account).
 *
 * write, read, use-broker and act-as take no effect id and need nothing more. The order of the
 * checks decides the rule a refusal names; docs/kernel-cases.md lists it.
 */
export interface ActContext {
  readonly seat: Seat;
  readonly effect: CanonicalEffect;
  readonly effectId: string | undefined;
}

export function actTime(view: KernelView, covered: Allow, context: ActContext): Decision {
  const capability = covered.capability;
  const { seat, effect, effectId } = context;
  const trunk = capability === "review" || capability === "gate" || capability === "merge" || capability === "deploy";
  if (!trunk && effectId !== undefined) return refuse("request.malformed", `effect.effectId belongs to review, gate, merge and deploy, not ${capability}`);
  if (trunk && effectId === undefined) {
    return refuse(
      "act.effect-id",
      `a ${capability} names the effect id of the change it acts on (effect.effectId, §15); without it nothing binds the ${capability} to an artifact`,
    );
  }
  const program = view.policy.constraints;
  if (program.constraints.length > 0) {
    // Counted over standing plus live leases (§5): a floor a lease meets holds while it lives, and its expiry pauses.
    const now = view.now;
    const unmet = pausingMinimum(program, () => (now === undefined ? view.policy.seats : effectiveSeats(view, now)), view.facts, capability);
    if (unmet !== undefined) return refuse("constraint.paused", `${unmet.message}; the ${capability} pauses until it is restored (the owner has been told)`);
  }
  if (!trunk || effectId === undefined) return covered;
  const reviewMode = program.review.mode;
  switch (capability) {
    case "review": {
      const authors = authorsOf(view, effectId, "review");
      if ("decision" in authors) return authors;
      return checkIndependence(view, authors, seat, "review") ?? allowWith(covered, { reviewMode });
    }
    case "gate": {
      const authors = authorsOf(view, effectId, "gate");
      if ("decision" in authors) return authors;
      return (
        checkAuthorInequality(view, authors, seat, "gate", true) ??
        checkIndependence(view, authors, seat, "gate") ??
        checkReviewFloor(view, effectId, authors, effect, "gate") ??
        allowWith(covered, { reviewMode })
      );
    }
    case "merge": {
      const authors = authorsOf(view, effectId, "merge");
      if ("decision" in authors) return authors;
      const refused = checkAuthorInequality(view, authors, seat, "merge", true) ?? checkReviewFloor(view, effectId, authors, effect, "merge");
      if (refused !== undefined) return refused;
      const chosen = choosePass(view, effectId, "merge", authors, effect);
      if ("decision" in chosen) return chosen;
      return allowWith(covered, { pass: chosen.pass.id, reviewMode });
    }
    case "deploy": {
      let authors: readonly AuthorFact[] | undefined;
      if (program.deployAuthorInequality) {
        const known = authorsOf(view, effectId, "deploy");
        if ("decision" in known) return known;
        const refused = checkAuthorInequality(view, known, seat, "deploy", false);
        if (refused !== undefined) return refused;
        authors = known;
      } else {
        const known = view.facts.authors === undefined ? undefined : ownValue(view.facts.authors, effectId);
        authors = known !== undefined && known.length > 0 ? known : undefined;
      }
      const chosen = choosePass(view, effectId, "deploy", authors, undefined);
      if ("decision" in chosen) return chosen;
      return allowWith(covered, { pass: chosen.pass.id });
    }
    default:
      return covered;
  }
}
