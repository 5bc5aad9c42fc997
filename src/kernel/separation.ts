import { candidateAuthorities } from "./authorities.js";
import { showMode } from "./constraints.js";
import { type CanonicalEffect, coverByOne } from "./coverage.js";
import { type Refusal, refuse } from "./decision.js";
import type { AuthorFact } from "./facts.js";
import { ownValue } from "./records.js";
import type { Seat } from "./policy.js";
import type { KernelView } from "./view.js";

/**
 * Separation of duties at act time (§5) and independent verification (ownership protocol),
 * over the ledger's full author set of the change (facts.authors, keyed by effect id).
 *
 * - The seats that wrote a change may not gate or merge it, nor deploy it where the owner
 *   bound deploy to the author-inequality. Unknown authorship refuses.
 * - Cross-lab review mode: for every author, lab(author) ≠ lab(gater) and ≠ lab(merger); a
 *   lab is the owner-signed binding in the policy in force (a seat-asserted label never
 *   reaches the kernel), and a missing one refuses — never a downgrade to distinct-seat.
 * - A verdict (review, gate) is refused when the verifying seat is an executing seat, or
 *   shares its run or its home with one: two identities in one execution context are not
 *   independent, because the verifier read the executor's reasoning on the way in.
 * - The review floor: N approving reviewer seats that still hold review over the effect,
 *   none an author, from distinct labs none of which is an author's (cross-lab) or simply
 *   distinct seats (distinct-seat).
 */

/** The change's full author set, or the refusal: unknown authorship is never "nobody". */
export function authorsOf(view: KernelView, effectId: string, act: string): readonly AuthorFact[] | Refusal {
  const authors = view.facts.authors === undefined ? undefined : ownValue(view.facts.authors, effectId);
  if (authors === undefined || authors.length === 0) {
    return refuse(
      "sod.authorship-unknown",
      `the author set of the change ${effectId} cannot be established from the ledger, so separation of duties cannot be checked; the ${act} is refused (fail closed)`,
    );
  }
  return authors;
}

function labOf(view: KernelView, seat: string): string | undefined {
  return ownValue(view.policy.seats, seat)?.lab;
}

/**
 * The author-inequality (§5) for the acting seat, and in cross-lab mode the lab predicate.
 * `labs` is false for a bound deploy: deploy is exempt from the lab predicate by design.
 */
export function checkAuthorInequality(view: KernelView, authors: readonly AuthorFact[], actor: Seat, act: string, labs: boolean): Refusal | undefined {
  const review = view.policy.constraints.review;
  for (const a of authors) {
    if (a.seat === actor.name) {
      const others = authors.length > 1 ? ` (one of ${authors.length} authors: ${[...new Set(authors.map((x) => x.seat))].join(", ")})` : "";
      return refuse(
        "sod.author",
        `seat ${actor.name} wrote this change${others}, and a seat that wrote a change may not ${act} it (${showMode(review)}); another seat must`,
      );
    }
  }
  if (!labs || review.mode !== "cross-lab") return undefined;
  if (actor.lab === undefined) {
    return refuse(
      "lab.binding-missing",
      `cross-lab review mode: seat ${actor.name} has no owner-signed lab binding, so lab inequality cannot be established; refused, not downgraded`,
    );
  }
  for (const a of authors) {
    const lab = labOf(view, a.seat);
    if (lab === undefined) {
      return refuse(
        "lab.binding-missing",
        `cross-lab review mode: author ${a.seat} has no owner-signed lab binding in the policy in force, so lab inequality cannot be established; refused, not downgraded`,
      );
    }
    if (lab === actor.lab) {
      return refuse(
        "lab.same",
        `cross-lab review mode: author ${a.seat} and seat ${actor.name}, which would ${act} the change, are both in lab ${lab}; a seat from another lab must ${act} it`,
      );
    }
  }
  return undefined;
}

/** Independent verification: not an executing seat, not its run, not its home (O). */
export function checkIndependence(view: KernelView, authors: readonly AuthorFact[], verifier: Seat, act: string): Refusal | undefined {
  for (const a of authors) {
    if (a.seat === verifier.name) {
      return refuse("verify.independence", `seat ${verifier.name} executed this change, and the executing seat may not ${act} its own work`);
    }
  }
  const mine = view.facts.runs === undefined ? undefined : ownValue(view.facts.runs, verifier.name);
  if (mine === undefined) {
    return refuse(
      "verify.unknown",
      `the run and home of seat ${verifier.name} are not known, so its independence from the executing seats cannot be established; the ${act} is refused`,
    );
  }
  for (const a of authors) {
    if (a.run === mine.run) {
      return refuse(
        "verify.independence",
        `seat ${verifier.name} runs in run ${mine.run}, the run in which seat ${a.seat} executed this change; two identities in one run are not independent`,
      );
    }
    if (a.home === mine.home) {
      return refuse(
        "verify.independence",
        `seat ${verifier.name} shares its home ${mine.home} with seat ${a.seat}, which executed this change; a shared home is not independent`,
      );
    }
  }
  return undefined;
}

/**
 * The review floor (§5): approving reviews on exactly this effect id, by seats that still
 * hold a review authority covering the effect, none an author; in cross-lab mode each
 * counted reviewer is lab-bound, in no author's lab, and the count is of distinct labs.
 */
export function checkReviewFloor(
  view: KernelView,
  effectId: string,
  authors: readonly AuthorFact[],
  effect: CanonicalEffect,
  act: string,
): Refusal | undefined {
  const review = view.policy.constraints.review;
  if (review.floor === 0) return undefined;
  const authorSeats = new Set(authors.map((a) => a.seat));
  const authorLabs = new Set<string>();
  let unboundAuthor = false;
  for (const a of authors) {
    const lab = labOf(view, a.seat);
    if (lab === undefined) unboundAuthor = true;
    else authorLabs.add(lab);
  }
  const counted = new Set<string>();
  const skipped: string[] = [];
  for (const r of view.facts.reviews ?? []) {
    if (r.effectId !== effectId || r.verdict !== "approve") continue;
    const seat = ownValue(view.policy.seats, r.seat);
    if (seat === undefined || authorSeats.has(r.seat)) {
      skipped.push(`${r.seat} (${seat === undefined ? "not a seat of the policy in force" : "an author"})`);
      continue;
    }
    const held = coverByOne("review", ["path", "branch"], candidateAuthorities(view, seat, "review"), effect, { declared: view.policy.declared });
    if ("decision" in held) {
      skipped.push(`${r.seat} (no longer holds review over the effect)`);
      continue;
    }
    if (review.mode === "cross-lab") {
      if (seat.lab === undefined || unboundAuthor || authorLabs.has(seat.lab)) {
        skipped.push(
          `${r.seat} (${seat.lab === undefined ? "no lab binding" : authorLabs.has(seat.lab) ? `in an author's lab, ${seat.lab}` : "an author has no lab binding"})`,
        );
        continue;
      }
      counted.add(seat.lab);
    } else counted.add(seat.name);
  }
  if (counted.size >= review.floor) return undefined;
  const unit = review.mode === "cross-lab" ? "reviewer seats from distinct labs, none an author's lab" : "distinct reviewer seats, none an author";
  const why = skipped.length > 0 ? `; not counted: ${skipped.join(", ")}` : "";
  return refuse("review.floor", `the ${act} needs ${review.floor} ${unit} approving effect ${effectId} (${showMode(review)}), and has ${counted.size}${why}`);
}
