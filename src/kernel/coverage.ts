import type { Authority } from "./authority.js";
import { refuse, type Refusal } from "./decision.js";
import { showPath } from "./paths.js";
import type { RuleId } from "./rules.js";
import { type DimensionScope, type ScopeUniverse, UNCONSTRAINED, dimensionCovers, formatDimension } from "./scope.js";
import type { Dimension, OperationalCapability } from "./vocabulary.js";

/**
 * Authorities are alternatives, never merged (§6): an effect is covered only when one single
 * authority covers all of it — every path it touches, its ref, its environment, its account.
 * When none does, the refusal says why: a value no authority covers names that dimension's
 * rule; an effect whose every value is covered by some authority but by no one of them whole
 * is a mixed-scope change (`scope.mixed`), refused, never partially applied.
 *
 * This is the decision's hot loop, so it is written with plain loops and no allocation on
 * the path to an allow; the reason of a refusal is built only once a refusal is certain.
 */

/** The effect in canonical form: per dimension the values it touches; undefined = not named. */
export type CanonicalEffect = Readonly<Partial<Record<Dimension, readonly string[]>>>;

export const SCOPE_RULES: Readonly<Record<Dimension, RuleId>> = Object.freeze({
  path: "scope.path",
  branch: "scope.branch",
  env: "scope.env",
  account: "scope.account",
  task: "scope.task",
});

function scopeOf(authority: Authority, dimension: Dimension): DimensionScope {
  return authority.scope[dimension] ?? UNCONSTRAINED;
}

/**
 * Whether an authority covers one value — or, for `undefined`, a dimension the effect leaves
 * unnamed (deploy's optional branch): only an unconstrained scope covers what the effect does
 * not say, because nothing unsaid can be checked against a bound.
 */
function coversValue(authority: Authority, dimension: Dimension, value: string | undefined, universe: ScopeUniverse): boolean {
  const scope = scopeOf(authority, dimension);
  if (value === undefined) return scope.state === "unconstrained";
  return dimensionCovers(dimension, scope, value, universe);
}

/** A capability with an empty dimension grants nothing (§6). */
function grantsSomething(authority: Authority, dimensions: readonly Dimension[]): boolean {
  for (const d of dimensions) if (scopeOf(authority, d).state === "empty") return false;
  return true;
}

function coversWhole(authority: Authority, dimensions: readonly Dimension[], effect: CanonicalEffect, universe: ScopeUniverse): boolean {
  if (!grantsSomething(authority, dimensions)) return false;
  for (const d of dimensions) {
    const values = effect[d];
    if (values === undefined) {
      if (!coversValue(authority, d, undefined, universe)) return false;
      continue;
    }
    for (const v of values) if (!coversValue(authority, d, v, universe)) return false;
  }
  return true;
}

function anyCovers(pool: readonly Authority[], dimension: Dimension, value: string | undefined, universe: ScopeUniverse): boolean {
  for (const a of pool) if (coversValue(a, dimension, value, universe)) return true;
  return false;
}

function show(dimension: Dimension, value: string): string {
  return dimension === "path" ? showPath(value) : value;
}

/** The scopes a seat holds on one dimension, for a reason a person can act on. */
function held(candidates: readonly Authority[], dimension: Dimension): string {
  const scopes: string[] = [];
  for (const a of candidates) {
    const shown = formatDimension(dimension, scopeOf(a, dimension));
    if (!scopes.includes(shown)) scopes.push(shown);
    if (scopes.length > 4) return `${scopes.slice(0, 4).join(", ")} and more`;
  }
  return scopes.join(", ");
}

/** The one authority that covers the whole effect, or the refusal that says why none does. */
export function coverByOne(
  capability: OperationalCapability,
  dimensions: readonly Dimension[],
  candidates: readonly Authority[],
  effect: CanonicalEffect,
  universe: ScopeUniverse,
): Authority | Refusal {
  for (const a of candidates) if (coversWhole(a, dimensions, effect, universe)) return a;
  const seat = candidates[0]?.seat ?? "?";
  // Two passes name the dimension that fails: first any authority's own dimension (an empty
  // `[]` covers nothing there), then only authorities that grant something at all — one
  // with an empty dimension elsewhere never makes a change look mixed.
  const live = candidates.filter((a) => grantsSomething(a, dimensions));
  for (const pool of [candidates, live]) {
    for (const d of dimensions) {
      const values = effect[d];
      if (values === undefined) {
        if (!anyCovers(pool, d, undefined, universe)) {
          return refuse(SCOPE_RULES[d], `the ${capability} names no ${d}, and every ${capability} authority of seat ${seat} is bounded on ${d} (${held(candidates, d)}); name the ${d}`);
        }
        continue;
      }
      for (const value of values) {
        if (!anyCovers(pool, d, value, universe)) {
          const empties = pool === live && live.length < candidates.length ? "; an authority with an empty dimension grants nothing" : "";
          return refuse(SCOPE_RULES[d], `${d} '${show(d, value)}' is outside every ${capability} scope of seat ${seat} (${d}: ${held(candidates, d)}${empties}); narrow the change or ask the owner for a grant that covers it`);
        }
      }
    }
  }
  const pieces = live.filter((a) => dimensions.some((d) => (effect[d] ?? []).some((v) => coversValue(a, d, v, universe)))).map((a) => a.id);
  return refuse(
    "scope.mixed",
    `no single ${capability} authority of seat ${seat} covers the whole effect; it is covered only by several together (${pieces.join(", ")}), and authorities are never merged — split the change so each part fits one authority`,
  );
}
