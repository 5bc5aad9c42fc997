import type { Authority } from "./authority.js";
import { refuse, type Refusal } from "./decision.js";
import { ROOT, showPath } from "./paths.js";
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

/**
 * A seat holding many authorities for one capability (a hundred leases) is decided without
 * trying each: the path prefixes its authorities are bounded to, indexed once per (frozen)
 * candidate list, give the few that can cover a path at all — its ancestors' prefixes, the
 * root, and the authorities unconstrained on path — in the list's order. What the index
 * answers is what the plain loops answer (the first authority that covers the whole effect;
 * whether any covers a value); only the work differs.
 */
interface PathIndex {
  readonly byPrefix: ReadonlyMap<string, readonly number[]>;
  readonly unbounded: readonly number[];
  readonly grants: readonly boolean[];
  readonly held: Map<Dimension, string>;
  /** The candidates that grant something (no empty dimension), in order. */
  readonly granting: readonly Authority[];
}

const INDEXED_FROM = 16;
// eslint-disable-next-line teamd/module-state -- a memo keyed by a frozen candidate list (checked above): the index is a function of that list alone; hot on every decision with many authorities
const pathIndexes = new WeakMap<readonly Authority[], PathIndex>();

function pathIndexOf(candidates: readonly Authority[], dimensions: readonly Dimension[]): PathIndex | undefined {
  if (candidates.length < INDEXED_FROM || !dimensions.includes("path") || !Object.isFrozen(candidates)) return undefined;
  const known = pathIndexes.get(candidates);
  if (known !== undefined) return known;
  const byPrefix = new Map<string, number[]>();
  const unbounded: number[] = [];
  const grants: boolean[] = [];
  candidates.forEach((a, i) => {
    grants.push(grantsSomething(a, dimensions));
    const scope = scopeOf(a, "path");
    if (scope.state === "unconstrained") unbounded.push(i);
    else if (scope.state === "bounded") {
      for (const prefix of new Set(scope.values)) {
        const list = byPrefix.get(prefix);
        if (list === undefined) byPrefix.set(prefix, [i]);
        else list.push(i);
      }
    }
  });
  const index: PathIndex = { byPrefix, unbounded, grants, held: new Map(), granting: candidates.filter((_, i) => grants[i] === true) };
  pathIndexes.set(candidates, index);
  return index;
}

/** The index lists of the candidates whose path dimension covers `path` (each in order; together possibly overlapping). */
function coveringLists(index: PathIndex, path: string): (readonly number[])[] {
  const lists: (readonly number[])[] = [];
  const add = (list: readonly number[] | undefined): void => {
    if (list !== undefined && list.length > 0) lists.push(list);
  };
  add(index.unbounded);
  if (path !== ROOT) add(index.byPrefix.get(ROOT));
  for (let at = path.indexOf("/"); at >= 0; at = path.indexOf("/", at + 1)) add(index.byPrefix.get(path.slice(0, at)));
  add(index.byPrefix.get(path));
  return lists;
}

/** `anyCovers` through the index where it applies: over all candidates, or only those that grant something. */
function anyCoversIndexed(
  index: PathIndex | undefined,
  pool: readonly Authority[],
  onlyGranting: boolean,
  dimension: Dimension,
  value: string | undefined,
  universe: ScopeUniverse,
): boolean {
  if (index === undefined || dimension !== "path" || value === undefined) return anyCovers(pool, dimension, value, universe);
  const lists = coveringLists(index, value);
  return onlyGranting ? lists.some((list) => list.some((i) => index.grants[i] === true)) : lists.length > 0;
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

function heldOnce(index: PathIndex | undefined, candidates: readonly Authority[], dimension: Dimension): string {
  if (index === undefined) return held(candidates, dimension);
  let shown = index.held.get(dimension);
  if (shown === undefined) index.held.set(dimension, (shown = held(candidates, dimension)));
  return shown;
}

/** The one authority that covers the whole effect, or the refusal that says why none does. */
export function coverByOne(
  capability: OperationalCapability,
  dimensions: readonly Dimension[],
  candidates: readonly Authority[],
  effect: CanonicalEffect,
  universe: ScopeUniverse,
): Authority | Refusal {
  const index = pathIndexOf(candidates, dimensions);
  const firstPath = effect.path?.[0];
  if (index !== undefined && firstPath !== undefined) {
    // Only an authority covering the first path can cover the whole effect; the first in the
    // list's order is the least of each index list's first that does.
    let best = -1;
    for (const list of coveringLists(index, firstPath)) {
      for (const i of list) {
        if (best !== -1 && i >= best) break;
        if (coversWhole(candidates[i] as Authority, dimensions, effect, universe)) {
          best = i;
          break;
        }
      }
    }
    if (best !== -1) return candidates[best] as Authority;
  } else {
    for (const a of candidates) if (coversWhole(a, dimensions, effect, universe)) return a;
  }
  const seat = candidates[0]?.seat ?? "?";
  // Two passes name the dimension that fails: first any authority's own dimension (an empty
  // `[]` covers nothing there), then only authorities that grant something at all — one
  // with an empty dimension elsewhere never makes a change look mixed.
  const live = index !== undefined ? index.granting : candidates.filter((a) => grantsSomething(a, dimensions));
  for (const pool of [candidates, live]) {
    for (const d of dimensions) {
      const values = effect[d];
      if (values === undefined) {
        if (!anyCoversIndexed(index, pool, pool === live, d, undefined, universe)) {
          return refuse(
            SCOPE_RULES[d],
            `the ${capability} names no ${d}, and every ${capability} authority of seat ${seat} is bounded on ${d} (${heldOnce(index, candidates, d)}); name the ${d}`,
          );
        }
        continue;
      }
      for (const value of values) {
        if (!anyCoversIndexed(index, pool, pool === live, d, value, universe)) {
          const empties = pool === live && live.length < candidates.length ? "; an authority with an empty dimension grants nothing" : "";
          return refuse(
            SCOPE_RULES[d],
            `${d} '${show(d, value)}' is outside every ${capability} scope of seat ${seat} (${d}: ${heldOnce(index, candidates, d)}${empties}); narrow the change or ask the owner for a grant that covers it`,
          );
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
