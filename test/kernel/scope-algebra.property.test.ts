import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type DeclaredSets, NO_DECLARED_SETS } from "../../src/kernel/declared.js";
import { globIntersection, globsIncluded } from "../../src/kernel/glob.js";
import {
  type DimensionScope,
  type Scope,
  type ScopeUniverse,
  EMPTY,
  UNCONSTRAINED,
  boundedScope,
  dimensionIntersect,
  dimensionWithin,
  scopeIntersect,
  scopeWithin,
} from "../../src/kernel/scope.js";
import type { Dimension } from "../../src/kernel/vocabulary.js";

/**
 * §6's algebra against a brute-force reference over small universes. The reference below is
 * written independently of the kernel (regular expressions for globs, string prefixes for
 * paths, set membership for names): what a scope covers is enumerated, and `within` must be
 * exactly inclusion of what is covered, intersection exactly the common part.
 */

// ---- universes -------------------------------------------------------------------------
// `a` and `ab` share a prefix that is not a component boundary: `a` must not cover `ab` (§6).
// Scopes name `a`, `ab` and `b`; the universe also holds `z`, which no scope names, as the
// rest of the tree does (a scope of every component named is still not the root).
const COMPONENTS = ["a", "ab", "b"];
const UNIVERSE_COMPONENTS = [...COMPONENTS, "z"];
const PATHS: string[] = [];
for (const x of UNIVERSE_COMPONENTS) {
  PATHS.push(x);
  for (const y of UNIVERSE_COMPONENTS) {
    PATHS.push(`${x}/${y}`);
    for (const z of UNIVERSE_COMPONENTS) PATHS.push(`${x}/${y}/${z}`);
  }
}
/** Names over {a, b, c} of length 1..6: `c` stands for every character no pattern names. */
function namesUpTo(length: number): string[] {
  const out: string[] = [];
  let layer = [""];
  for (let n = 1; n <= length; n++) {
    layer = layer.flatMap((p) => ["a", "b", "c"].map((ch) => p + ch));
    out.push(...layer);
  }
  return out;
}
const NAMES = namesUpTo(6);
/** For the two-dimension tests: short enough to enumerate, long enough for globs of two symbols. */
const SMALL_NAMES = namesUpTo(4);
const ENVS = ["e1", "e2", "e3", "e4"];

// ---- the reference ---------------------------------------------------------------------
const REGEXES = new Map<string, RegExp>();
function globRegex(pattern: string): RegExp {
  const known = REGEXES.get(pattern);
  if (known !== undefined) return known;
  const made = new RegExp(
    `^${pattern
      .split("*")
      .map((part) => part.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"))
      .join(".*")}$`,
  );
  REGEXES.set(pattern, made);
  return made;
}
function refCovers(dimension: Dimension, scope: DimensionScope, value: string, declared: DeclaredSets): boolean {
  if (scope.state === "empty") return false;
  if (dimension === "path") {
    if (scope.state === "unconstrained") return true;
    return scope.values.some((v) => v === "" || value === v || value.startsWith(`${v}/`));
  }
  if (dimension === "branch") {
    if (!declared.branches.some((d) => globRegex(d).test(value))) return false;
    return scope.state === "unconstrained" || scope.values.some((v) => globRegex(v).test(value));
  }
  if (!declared.envs.includes(value)) return false;
  return scope.state === "unconstrained" || scope.values.includes(value);
}
function covered(dimension: Dimension, scope: DimensionScope, universe: readonly string[], declared: DeclaredSets): Set<string> {
  return new Set(universe.filter((v) => refCovers(dimension, scope, v, declared)));
}
function subset(a: Set<string>, b: Set<string>): boolean {
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

// ---- generators ------------------------------------------------------------------------
const pathValue = fc.oneof(
  { weight: 1, arbitrary: fc.constant("") },
  { weight: 9, arbitrary: fc.array(fc.constantFrom(...COMPONENTS), { minLength: 1, maxLength: 3 }).map((c) => c.join("/")) },
);
const glob = (max: number): fc.Arbitrary<string> =>
  fc.array(fc.constantFrom("a", "b", "*"), { minLength: 1, maxLength: max }).map((c) => c.join("").replace(/\*+/g, "*"));
function dimensionScope(dimension: Dimension, value: fc.Arbitrary<string>): fc.Arbitrary<DimensionScope> {
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant(UNCONSTRAINED) },
    { weight: 1, arbitrary: fc.constant(EMPTY) },
    { weight: 4, arbitrary: fc.array(value, { minLength: 1, maxLength: 3 }).map((vs) => boundedScope(dimension, vs)) },
  );
}
const declaredBranches = fc.array(glob(3), { minLength: 0, maxLength: 3 }).map((branches): DeclaredSets => ({ ...NO_DECLARED_SETS, branches }));
const declaredEnvs = fc.subarray(ENVS).map((envs): DeclaredSets => ({ ...NO_DECLARED_SETS, envs }));

interface Case {
  readonly dimension: Dimension;
  readonly universe: readonly string[];
  readonly declared: fc.Arbitrary<DeclaredSets>;
  readonly scope: fc.Arbitrary<DimensionScope>;
}
const CASES: readonly Case[] = [
  { dimension: "path", universe: PATHS, declared: fc.constant(NO_DECLARED_SETS), scope: dimensionScope("path", pathValue) },
  { dimension: "branch", universe: NAMES, declared: declaredBranches, scope: dimensionScope("branch", glob(4)) },
  { dimension: "env", universe: ENVS, declared: declaredEnvs, scope: dimensionScope("env", fc.constantFrom(...ENVS)) },
];
const RUNS = { numRuns: 300 };

describe.each(CASES)("§6 on the $dimension dimension, against brute force", ({ dimension, universe, declared, scope }) => {
  const u = (d: DeclaredSets): ScopeUniverse => ({ declared: d });

  it("within is exactly inclusion of what each scope covers", () => {
    fc.assert(
      fc.property(declared, scope, scope, (d, a, b) => {
        const answer = dimensionWithin(dimension, a, b, u(d));
        expect(answer).not.toBe("undecidable");
        expect(answer).toBe(subset(covered(dimension, a, universe, d), covered(dimension, b, universe, d)));
      }),
      RUNS,
    );
  });

  it("within is reflexive and transitive (a preorder; antisymmetric up to what is covered)", () => {
    fc.assert(
      fc.property(declared, scope, scope, scope, (d, a, b, c) => {
        expect(dimensionWithin(dimension, a, a, u(d))).toBe(true);
        if (dimensionWithin(dimension, a, b, u(d)) === true && dimensionWithin(dimension, b, c, u(d)) === true) {
          expect(dimensionWithin(dimension, a, c, u(d))).toBe(true);
        }
        if (dimensionWithin(dimension, a, b, u(d)) === true && dimensionWithin(dimension, b, a, u(d)) === true) {
          expect(covered(dimension, a, universe, d)).toEqual(covered(dimension, b, universe, d));
        }
      }),
      RUNS,
    );
  });

  it("intersection covers exactly the common part, and is commutative", () => {
    fc.assert(
      fc.property(declared, scope, scope, (d, a, b) => {
        const ab = dimensionIntersect(dimension, a, b);
        const ba = dimensionIntersect(dimension, b, a);
        if (ab === "undecidable" || ba === "undecidable") throw new Error("small globs must be decidable");
        const inB = covered(dimension, b, universe, d);
        const common = [...covered(dimension, a, universe, d)].filter((x) => inB.has(x));
        expect([...covered(dimension, ab, universe, d)].sort()).toEqual(common.sort());
        expect(covered(dimension, ba, universe, d)).toEqual(covered(dimension, ab, universe, d));
        // The meet is within both sides, and every scope within both is within the meet.
        expect(dimensionWithin(dimension, ab, a, u(d))).toBe(true);
        expect(dimensionWithin(dimension, ab, b, u(d))).toBe(true);
      }),
      RUNS,
    );
  });

  it("unconstrained and empty behave as §6 says", () => {
    fc.assert(
      fc.property(declared, scope, (d, x) => {
        expect(dimensionIntersect(dimension, UNCONSTRAINED, x)).toBe(x);
        expect(dimensionIntersect(dimension, x, UNCONSTRAINED)).toBe(x);
        expect(dimensionIntersect(dimension, EMPTY, x)).toEqual(EMPTY);
        expect(dimensionIntersect(dimension, x, EMPTY)).toEqual(EMPTY);
        expect(dimensionWithin(dimension, x, UNCONSTRAINED, u(d))).toBe(true);
        expect(dimensionWithin(dimension, EMPTY, x, u(d))).toBe(true);
        expect(covered(dimension, EMPTY, universe, d).size).toBe(0);
        // Unconstrained is the whole declared set on the axis (every path for paths).
        const whole = dimension === "path" ? universe.length : universe.filter((v) => refCovers(dimension, UNCONSTRAINED, v, d)).length;
        expect(covered(dimension, UNCONSTRAINED, universe, d).size).toBe(whole);
      }),
      RUNS,
    );
  });
});

describe("§6 over whole scopes (path × branch), against brute force", () => {
  // Globs of at most two symbols, so every name that separates two scopes is at most four
  // characters long and SMALL_NAMES holds it.
  const scope: fc.Arbitrary<Scope> = fc.record({ path: dimensionScope("path", pathValue), branch: dimensionScope("branch", glob(2)) });
  const declaredSmall = fc.array(glob(2), { minLength: 0, maxLength: 3 }).map((branches): DeclaredSets => ({ ...NO_DECLARED_SETS, branches }));
  const points = PATHS.flatMap((path) => SMALL_NAMES.map((branch) => ({ path, branch })));
  const coveredPoints = (s: Scope, d: DeclaredSets): Set<string> =>
    new Set(
      points
        .filter((p) => refCovers("path", s.path ?? UNCONSTRAINED, p.path, d) && refCovers("branch", s.branch ?? UNCONSTRAINED, p.branch, d))
        .map((p) => `${p.path}@${p.branch}`),
    );

  it("within is inclusion of covered points, even when one dimension covers nothing", () => {
    fc.assert(
      fc.property(declaredSmall, scope, scope, (d, a, b) => {
        const answer = scopeWithin(a, b, { declared: d });
        expect(answer).not.toBe("undecidable");
        expect(answer).toBe(subset(coveredPoints(a, d), coveredPoints(b, d)));
      }),
      { numRuns: 150 },
    );
  });

  it("intersection covers exactly the common points", () => {
    fc.assert(
      fc.property(declaredSmall, scope, scope, (d, a, b) => {
        const meet = scopeIntersect(a, b);
        if (meet === "undecidable") throw new Error("small globs must be decidable");
        const inB = coveredPoints(b, d);
        const common = [...coveredPoints(a, d)].filter((p) => inB.has(p));
        expect([...coveredPoints(meet, d)].sort()).toEqual(common.sort());
      }),
      { numRuns: 150 },
    );
  });
});

describe("globs, directly", () => {
  it("the intersection of two globs matches exactly the names both match", () => {
    fc.assert(
      fc.property(glob(5), glob(5), (a, b) => {
        const meet = globIntersection(a, b);
        if (meet === "undecidable") throw new Error("small globs must be decidable");
        const [ra, rb, rm] = [globRegex(a), globRegex(b), meet.map(globRegex)];
        const wrong = NAMES.filter((name) => rm.some((r) => r.test(name)) !== (ra.test(name) && rb.test(name)));
        expect(wrong, `${a} ∩ ${b} = ${meet.join(" | ")}`).toEqual([]);
      }),
      RUNS,
    );
  });

  it("inclusion restricted to a declared set agrees with enumeration", () => {
    fc.assert(
      fc.property(
        fc.array(glob(4), { minLength: 1, maxLength: 2 }),
        fc.array(glob(3), { maxLength: 2 }),
        fc.array(glob(4), { maxLength: 2 }),
        (left, restrict, right) => {
          const answer = globsIncluded(left, restrict, right);
          const brute = NAMES.every(
            (n) => !(left.some((g) => globRegex(g).test(n)) && restrict.some((g) => globRegex(g).test(n))) || right.some((g) => globRegex(g).test(n)),
          );
          expect(answer).toBe(brute);
        },
      ),
      RUNS,
    );
  });

  it("a search that exhausts its budget answers undecidable, never yes", () => {
    expect(globsIncluded(["*a*b*a*b*"], undefined, ["*b*a*b*a*"], 3)).toBe("undecidable");
    // With room to finish, the same question has a definite answer.
    expect(globsIncluded(["*a*b*a*b*"], undefined, ["*b*a*b*a*"])).toBe(false);
  });
});
