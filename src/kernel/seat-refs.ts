import { type Refusal, refuse } from "./decision.js";
import type { Policy, Seat } from "./policy.js";
import { refNameProblem } from "./git-names.js";
import { leaseShadow } from "./ceiling-deny.js";
import { scopeVoid } from "./scope.js";
import type { Dimension } from "./vocabulary.js";

/** The dimensions review and gate take. */
const TRUNK_DIMENSIONS: readonly Dimension[] = ["path", "branch"];

/**
 * The hub refs a seat reaches through `git fetch teamd` and `git push teamd` (DESIGN.md
 * "Repositories"): which refs it may read, and where a ref it pushes lands. Both are pure
 * decisions over the seat, the policy in force and the trunk's name (the hub's HEAD, read by
 * the caller); the daemon's git handler asks them before it serves or receives anything.
 */

const HEADS = "refs/heads/";
const SEATS = "refs/heads/seat/";

/**
 * May this seat fetch this hub ref? The trunk, its own `seat/<name>/` branches, and — for a
 * seat holding review or gate over any destination — every seat's branches (it must read what
 * it reviews or gates); nothing else — no tag, no other branch. Review and gate are scoped on
 * the destination the change would land on (§6: the real destination ref), and a seat branch
 * names no destination until an act does (`--into`), so no branch scope can narrow which seat
 * branches a reviewer reads; its read scope filters what a fetch serves, as for every fetch.
 */
export function mayFetch(policy: Policy, seat: Seat, ref: string, trunk: string): boolean {
  if (ref === trunk) return true;
  const own = `${SEATS}${seat.name}/`;
  if (ref.startsWith(own)) return true;
  if (!ref.startsWith(SEATS)) return false;
  const universe = { declared: policy.declared };
  for (const capability of ["review", "gate"] as const) {
    for (const authority of seat.byCapability[capability] ?? []) {
      // An authority that covers nothing (an empty or undeclared scope) opens nothing; nor
      // does one the owner's deny covers whole or that lies wholly outside the ceiling (§8:
      // the deny wins over every grant — found by an attack: a denied reviewer fetched all).
      if (scopeVoid(authority.scope, universe) === false && leaseShadow(policy, authority, TRUNK_DIMENSIONS, universe) === undefined) return true;
    }
  }
  return false;
}

/**
 * Where a pushed destination lands in the hub, or why it may not (`push.ref`): a seat pushes
 * branches only, never the trunk (it changes through a gated merge) nor another seat's
 * branch; its own `seat/<name>/…` lands as named, and any other branch name lands under it.
 * A name git would not take (`git.ref-name`) is refused first, so it never reaches an intent.
 */
export function destination(seat: string, ref: string, trunk: string): { readonly hubRef: string } | Refusal {
  const landing = landingOf(seat, ref, trunk);
  if ("decision" in landing) return landing;
  const problem = refNameProblem(landing.hubRef);
  return problem === undefined ? landing : refuse("git.ref-name", `${JSON.stringify(ref)} lands on ${JSON.stringify(landing.hubRef)}: ${problem}`);
}

function landingOf(seat: string, ref: string, trunk: string): { readonly hubRef: string } | Refusal {
  const own = `seat/${seat}/`;
  if (!ref.startsWith(HEADS)) return refuse("push.ref", `${ref} is not a branch; a seat pushes branches only (git push teamd <branch>)`);
  const branch = ref.slice(HEADS.length);
  if (ref === trunk)
    return refuse("push.ref", `${branch} is the trunk; it changes only through a gated merge (push to a branch of your own: git push teamd HEAD:${own}<name>)`);
  if (branch.startsWith(own)) return { hubRef: ref };
  if (branch.startsWith("seat/")) return refuse("push.ref", `${branch} belongs to another seat; your branches are ${own}*`);
  return { hubRef: `${HEADS}${own}${branch}` };
}
