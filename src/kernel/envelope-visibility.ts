import { refuse, type Refusal } from "./decision.js";
import type { Policy } from "./policy.js";
import { dimensionCovers, formatScope, scopeWithin, type DimensionScope, type Scope, type ScopeUniverse } from "./scope.js";

/**
 * The resource envelope's per-lab visibility (§8): the union of a lab's seats' read scopes,
 * standing and leased, may not exceed the owner's path cap for that lab. Held at use time on
 * every read (a read of a path outside the cap is refused whatever covers it — so a lease
 * issued before the cap was lowered, or a filtered history, cannot reach past it), and refused
 * early where it would be widened: a team file granting a seat of the lab a read past the cap
 * (policy-compile.ts) and a read lease to one (lease-issue.ts).
 */
/** What the cap reads of a policy: the ceiling, and each seat's lab (a compiled seat or a resolved one). */
export interface VisibilityPolicy {
  readonly ceiling?: Pick<NonNullable<Policy["ceiling"]>, "visibility">;
  readonly seats: Readonly<Record<string, { readonly lab?: string }>>;
}

export function visibilityCap(policy: VisibilityPolicy, seat: string): { readonly lab: string; readonly cap: DimensionScope } | undefined {
  const lab = Object.prototype.hasOwnProperty.call(policy.seats, seat) ? policy.seats[seat]?.lab : undefined;
  const cap = lab === undefined ? undefined : policy.ceiling?.visibility?.[lab];
  return lab === undefined || cap === undefined ? undefined : { lab, cap };
}

/** A read of these paths by this seat, at use time: refused when one lies outside its lab's cap. */
export function visibilityRefusal(
  policy: Pick<Policy, "ceiling" | "seats">,
  seat: string,
  paths: readonly string[],
  universe: ScopeUniverse,
): Refusal | undefined {
  const capped = visibilityCap(policy, seat);
  if (capped === undefined) return undefined;
  const outside = paths.find((p) => !dimensionCovers("path", capped.cap, p, universe));
  if (outside === undefined) return undefined;
  return refuse(
    "envelope.visibility",
    `${outside} is outside what lab ${capped.lab} may see (the ceiling's visibility: ${formatScope({ path: capped.cap }, ["path"])}); no grant or lease of a seat of ${capped.lab} reaches past it (§8)`,
  );
}

/** A read scope (a grant's or a lease's) for a seat: refused when it is not within its lab's cap. */
export function visibilityWidens(policy: VisibilityPolicy, seat: string, scope: Scope, universe: ScopeUniverse): Refusal | undefined {
  const capped = visibilityCap(policy, seat);
  if (capped === undefined) return undefined;
  if (scopeWithin({ path: scope.path ?? { state: "unconstrained" } }, { path: capped.cap }, universe) === true) return undefined;
  return refuse(
    "envelope.visibility",
    `read${formatScope({ path: scope.path ?? { state: "unconstrained" } }, ["path"])} for seat ${seat} would widen what lab ${capped.lab} sees past its cap ${formatScope({ path: capped.cap }, ["path"])} (§8)`,
  );
}
