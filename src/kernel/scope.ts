import { type DeclaredSets, DECLARED_SET_OF, isDeclared } from "./declared.js";
import { type Tri, globIntersection, globMatch, globsIncluded, simplifyGlobs } from "./glob.js";
import { ROOT, compareStrings, minimalPrefixes, pathCovers, prefixMeet, showPath } from "./paths.js";
import type { Dimension } from "./vocabulary.js";

/**
 * Scope (§6): a capability is bounded per dimension, and each dimension is in one of three
 * states kept distinct — unconstrained (the whole declared set on that axis, printed as `*`),
 * bounded (one or more canonical values) and empty (written `[]`: it grants nothing). The
 * functions here are the algebra §6 defines: what a scope covers, `within` (for attenuation
 * and the ceiling) and intersection, all evaluated against the declared sets.
 */
export type DimensionScope =
  { readonly state: "unconstrained" } | { readonly state: "bounded"; readonly values: readonly string[] } | { readonly state: "empty" };

/** A scope over some dimensions; a dimension not listed is unconstrained. */
export type Scope = { readonly [D in Dimension]?: DimensionScope };

export const UNCONSTRAINED: DimensionScope = Object.freeze({ state: "unconstrained" });
export const EMPTY: DimensionScope = Object.freeze({ state: "empty" });

/** The world a scope is read against: names outside the declared sets are outside every scope. */
export interface ScopeUniverse {
  readonly declared: DeclaredSets;
}

/**
 * A bounded dimension over canonical values, in canonical order; no values is the empty
 * state (an intersection with nothing in common is empty, §6).
 */
export function boundedScope(dimension: Dimension, values: readonly string[]): DimensionScope {
  const canonical =
    dimension === "path" ? minimalPrefixes(values) : dimension === "branch" ? [...simplifyGlobs(values)] : [...new Set(values)].sort(compareStrings);
  if (canonical.length === 0) return EMPTY;
  return Object.freeze({ state: "bounded", values: Object.freeze(canonical) });
}

export function dimensionOf(scope: Scope, dimension: Dimension): DimensionScope {
  return scope[dimension] ?? UNCONSTRAINED;
}

/** Whether one dimension of a scope covers one canonical value. */
export function dimensionCovers(dimension: Dimension, scope: DimensionScope, value: string, universe: ScopeUniverse): boolean {
  if (scope.state === "empty") return false;
  if (dimension !== "path" && !isDeclared(universe.declared, dimension, value)) return false;
  if (scope.state === "unconstrained") return true;
  const values = scope.values;
  switch (dimension) {
    case "path":
      for (const prefix of values) if (pathCovers(prefix, value)) return true;
      return false;
    case "branch":
      for (const pattern of values) if (globMatch(pattern, value)) return true;
      return false;
    case "env":
    case "account":
    case "task":
      return values.includes(value);
  }
}

/** Whether a dimension covers nothing at all (empty, or nothing declared that it names). */
export function dimensionVoid(dimension: Dimension, scope: DimensionScope, universe: ScopeUniverse): Tri {
  if (scope.state === "empty") return true;
  if (dimension === "path") return false;
  const declared = universe.declared[DECLARED_SET_OF[dimension]];
  if (dimension === "branch") return globsIncluded(scope.state === "unconstrained" ? ["*"] : scope.values, declared, []);
  if (scope.state === "unconstrained") return declared.length === 0;
  return !scope.values.some((v) => declared.includes(v));
}

/**
 * `a within b` on one dimension (§6): b unconstrained ⇒ within; a empty ⇒ within; otherwise
 * every value of a is covered by b — component-wise for paths, by language inclusion
 * restricted to the declared branch set for globs, by membership for names.
 */
export function dimensionWithin(dimension: Dimension, a: DimensionScope, b: DimensionScope, universe: ScopeUniverse): Tri {
  if (b.state === "unconstrained" || a.state === "empty") return true;
  if (dimension === "path") {
    if (b.state === "empty") return false;
    if (a.state === "unconstrained") return b.values.includes(ROOT);
    return a.values.every((av) => b.values.some((bv) => pathCovers(bv, av)));
  }
  const declared = universe.declared[DECLARED_SET_OF[dimension]];
  const right = b.state === "empty" ? [] : b.values;
  if (dimension === "branch") return globsIncluded(a.state === "unconstrained" ? ["*"] : a.values, declared, right);
  const left = a.state === "unconstrained" ? declared : a.values.filter((v) => declared.includes(v));
  return left.every((v) => right.includes(v));
}

/** Intersection on one dimension (§6): commutative; unconstrained ∩ X = X; empty ∩ X = empty. */
export function dimensionIntersect(dimension: Dimension, a: DimensionScope, b: DimensionScope): DimensionScope | "undecidable" {
  if (a.state === "empty" || b.state === "empty") return EMPTY;
  if (a.state === "unconstrained") return b;
  if (b.state === "unconstrained") return a;
  const values: string[] = [];
  for (const x of a.values) {
    for (const y of b.values) {
      if (dimension === "path") {
        const meet = prefixMeet(x, y);
        if (meet !== undefined) values.push(meet);
      } else if (dimension === "branch") {
        const meet = globIntersection(x, y);
        if (meet === "undecidable") return "undecidable";
        values.push(...meet);
      } else if (x === y) values.push(x);
    }
  }
  return boundedScope(dimension, values);
}

function dimensionsOf(a: Scope, b: Scope): Dimension[] {
  return [...new Set([...(Object.keys(a) as Dimension[]), ...(Object.keys(b) as Dimension[])])];
}

/** AND over three-valued answers: a definite no wins over an undecided one. */
function all(answers: readonly Tri[]): Tri {
  if (answers.includes(false)) return false;
  return answers.includes("undecidable") ? "undecidable" : true;
}

/** OR over three-valued answers: a definite yes wins over an undecided one. */
function any(answers: readonly Tri[]): Tri {
  if (answers.includes(true)) return true;
  return answers.includes("undecidable") ? "undecidable" : false;
}

/** Whether a scope covers nothing: some dimension of it covers nothing (it grants nothing). */
export function scopeVoid(scope: Scope, universe: ScopeUniverse): Tri {
  return any((Object.keys(scope) as Dimension[]).map((d) => dimensionVoid(d, dimensionOf(scope, d), universe)));
}

/**
 * `a within b` over whole scopes: per dimension, as §6 states — except that a scope one of
 * whose dimensions covers nothing covers nothing at all, and so is within every scope (the
 * per-dimension reading would otherwise call `{path: [a], branch: []}` not within `{path: [b]}`
 * although it grants nothing). This keeps `within` exactly inclusion of what each covers.
 */
export function scopeWithin(a: Scope, b: Scope, universe: ScopeUniverse): Tri {
  const perDimension = all(dimensionsOf(a, b).map((d) => dimensionWithin(d, dimensionOf(a, d), dimensionOf(b, d), universe)));
  if (perDimension === true) return true;
  const aVoid = scopeVoid(a, universe);
  if (aVoid === true) return true;
  return aVoid === false ? perDimension : "undecidable";
}

/** Per-dimension intersection of two scopes (§6). */
export function scopeIntersect(a: Scope, b: Scope): Scope | "undecidable" {
  const out: Partial<Record<Dimension, DimensionScope>> = {};
  for (const d of dimensionsOf(a, b)) {
    const meet = dimensionIntersect(d, dimensionOf(a, d), dimensionOf(b, d));
    if (meet === "undecidable") return "undecidable";
    out[d] = meet;
  }
  return Object.freeze(out);
}

/** Whether a scope covers a point (one canonical value per dimension named). */
export function scopeCovers(scope: Scope, point: Readonly<Partial<Record<Dimension, string>>>, universe: ScopeUniverse): boolean {
  for (const d of Object.keys(scope) as Dimension[]) if (dimensionOf(scope, d).state === "empty") return false;
  for (const d of Object.keys(point) as Dimension[]) {
    const value = point[d];
    if (value !== undefined && !dimensionCovers(d, dimensionOf(scope, d), value, universe)) return false;
  }
  return true;
}

/** How a dimension prints: `*`, `[]`, or the values (the root as `.`). */
export function formatDimension(dimension: Dimension, scope: DimensionScope): string {
  if (scope.state === "unconstrained") return "*";
  if (scope.state === "empty") return "[]";
  return `[${scope.values.map((v) => (dimension === "path" ? showPath(v) : v)).join(", ")}]`;
}

/** A scope as a person reads it; unconstrained is printed, never left assumed (§6). */
export function formatScope(scope: Scope, dimensions: readonly Dimension[]): string {
  return `{${dimensions.map((d) => `${d}: ${formatDimension(d, dimensionOf(scope, d))}`).join(", ")}}`;
}

/** The dimension's scope in the canonical data form: `"*"`, `[]` or the sorted values. */
export function canonicalDimension(scope: DimensionScope): "*" | readonly string[] {
  if (scope.state === "unconstrained") return "*";
  if (scope.state === "empty") return [];
  return scope.values;
}
