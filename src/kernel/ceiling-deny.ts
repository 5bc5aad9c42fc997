import type { Authority, Grant } from "./authority.js";
import type { CanonicalEffect } from "./coverage.js";
import { type Refusal, refuse } from "./decision.js";
import type { Policy } from "./policy.js";
import { type Scope, type ScopeUniverse, dimensionCovers, dimensionOf, formatScope, scopeIntersect, scopeVoid, scopeWithin } from "./scope.js";
import type { Dimension, OperationalCapability } from "./vocabulary.js";

/**
 * The owner-sovereign boundary of §8 that free composition sits under: the ceiling (a
 * bounding set of capability-and-scope, and the lease-ttl) and the explicit deny. Both are
 * read at use time, on every effect, whatever authority covers it — a standing grant, a lease,
 * or the leads envelope a root lease is drawn from — so narrowing either only shadows (no
 * revocation is written; restoring it re-covers, §7), and deny wins through everything.
 *
 * Both are pointwise: an effect touching several paths is inside the ceiling only if every
 * path is, and denied if any one is. A dimension the effect leaves unnamed (deploy's optional
 * branch) is inside a ceiling entry only where that entry is unconstrained on it, and denied
 * by a deny entry that is not empty on it — what is unsaid is read fail closed both ways.
 */

type Point = Readonly<Partial<Record<Dimension, string | undefined>>>;

/** The effect's points: one per path (the other dimensions carry at most one value each). */
function points(dimensions: readonly Dimension[], effect: CanonicalEffect): Point[] {
  let out: Record<string, string | undefined>[] = [{}];
  for (const d of dimensions) {
    const values: readonly (string | undefined)[] = effect[d] ?? [undefined];
    const next: Record<string, string | undefined>[] = [];
    for (const p of out) for (const v of values) next.push({ ...p, [d]: v });
    out = next;
  }
  return out;
}

function pointIn(scope: Scope, dimensions: readonly Dimension[], point: Point, universe: ScopeUniverse, unnamed: "unconstrained" | "not-empty"): boolean {
  for (const d of dimensions) {
    const s = dimensionOf(scope, d);
    const v = point[d];
    if (v === undefined) {
      if (unnamed === "unconstrained" ? s.state !== "unconstrained" : s.state === "empty") return false;
    } else if (!dimensionCovers(d, s, v, universe)) return false;
  }
  return true;
}

function denyEntries(policy: Policy, capability: OperationalCapability): readonly Grant[] {
  return (policy.deny ?? []).filter((g) => g.capability === capability);
}

/** The refusal the deny or the ceiling makes of this effect, or undefined when both let it through. */
export function boundaryRefusal(
  policy: Policy,
  capability: OperationalCapability,
  dimensions: readonly Dimension[],
  effect: CanonicalEffect,
  universe: ScopeUniverse,
): Refusal | undefined {
  const denies = denyEntries(policy, capability);
  const bounds = policy.ceiling?.capabilities;
  if (denies.length === 0 && bounds === undefined) return undefined;
  const pts = points(dimensions, effect);
  for (const g of denies) {
    for (const p of pts) {
      if (pointIn(g.scope, dimensions, p, universe, "not-empty")) {
        return refuse(
          "deny.match",
          `the owner's deny ${capability}${formatScope(g.scope, dimensions)} covers this effect; deny wins through every role, lease and envelope (§8)`,
        );
      }
    }
  }
  if (bounds === undefined) return undefined;
  const entries = bounds[capability] ?? [];
  if (entries.length === 0) return refuse("ceiling.outside", `${capability} is outside the owner's ceiling; no role, lease or envelope reaches it (§8)`);
  for (const p of pts) {
    if (!entries.some((e) => pointIn(e, dimensions, p, universe, "unconstrained"))) {
      const shown = dimensions.map((d) => `${d}: ${p[d] ?? "(unnamed)"}`).join(", ");
      return refuse(
        "ceiling.outside",
        `{${shown}} is outside the owner's ceiling for ${capability} (${entries.map((e) => formatScope(e, dimensions)).join(", ")}); outside it is unreachable (§8)`,
      );
    }
  }
  return undefined;
}

/**
 * Whether a whole lease scope is inside the boundary, for issuing a lease: within one
 * ceiling entry, and meeting no deny entry at all. A lease that reaches past either is
 * refused rather than issued partly shadowed.
 */
export function leaseBoundaryRefusal(
  policy: Policy,
  capability: OperationalCapability,
  dimensions: readonly Dimension[],
  scope: Scope,
  universe: ScopeUniverse,
  /** What is being conferred, in words: a lease, or a delegate's grant (§10: within §8). */
  what = "the lease",
): Refusal | undefined {
  for (const g of denyEntries(policy, capability)) {
    const meet = scopeIntersect(scope, g.scope);
    if (meet === "undecidable" || scopeVoid(meet, universe) !== true) {
      return refuse(
        "deny.match",
        `${what}'s scope ${formatScope(scope, dimensions)} meets the owner's deny ${capability}${formatScope(g.scope, dimensions)}; deny wins (§8)`,
      );
    }
  }
  const bounds = policy.ceiling?.capabilities;
  if (bounds === undefined) return undefined;
  const entries = bounds[capability] ?? [];
  if (!entries.some((e) => scopeWithin(scope, e, universe) === true)) {
    return refuse(
      "ceiling.outside",
      `${what}'s ${capability}${formatScope(scope, dimensions)} is not within the owner's ceiling${entries.length === 0 ? ` (which names no ${capability})` : ` (${entries.map((e) => formatScope(e, dimensions)).join(", ")})`} (§8)`,
    );
  }
  return undefined;
}

/**
 * The use-time shadow of a held lease (§7): wholly outside the current ceiling, or wholly
 * inside one deny entry. Partly shadowed leases stay live; the effect check refuses the part.
 */
export function leaseShadow(policy: Policy, authority: Authority, dimensions: readonly Dimension[], universe: ScopeUniverse): Refusal | undefined {
  for (const g of denyEntries(policy, authority.capability)) {
    if (scopeWithin(authority.scope, g.scope, universe) === true)
      return refuse("deny.match", `the owner's deny covers the whole of ${authority.id}; it is shadowed while the deny stands (§7, §8)`);
  }
  const bounds = policy.ceiling?.capabilities;
  if (bounds === undefined) return undefined;
  const entries = bounds[authority.capability] ?? [];
  const reaches = entries.some((e) => {
    const meet = scopeIntersect(authority.scope, e);
    return meet === "undecidable" || scopeVoid(meet, universe) !== true;
  });
  return reaches
    ? undefined
    : refuse(
        "ceiling.outside",
        `${authority.id} lies wholly outside the owner's current ceiling for ${authority.capability} (${formatScope(authority.scope, dimensions)}); shadowed until the ceiling covers it again (§7, §8)`,
      );
}
