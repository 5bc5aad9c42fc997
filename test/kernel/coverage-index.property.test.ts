import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Authority } from "../../src/kernel/authority.js";
import { type CanonicalEffect, coverByOne } from "../../src/kernel/coverage.js";
import { type DimensionScope, EMPTY, UNCONSTRAINED, boundedScope } from "../../src/kernel/scope.js";
import type { Dimension } from "../../src/kernel/vocabulary.js";
import { loadTeamFileData } from "../../src/teamfile/load.js";

/**
 * coverByOne indexes the path prefixes of a long, frozen candidate list (a seat's standing
 * grants plus a hundred live leases). The index changes only the work: the same authority
 * allowed, the same refusal — rule and reason — as the plain loop over an unfrozen copy of
 * the same list, over random path and branch scopes (bounded, unconstrained, empty, the root)
 * and effects touching several paths.
 */
const PATHS = ["", "src", "src/x", "src/x/y", "src/y", "docs", "docs/z", "a/b/c"];
const BRANCHES = ["main", "dev", "release/*"];
const loaded = loadTeamFileData({ version: 1, team: "t", declare: { branches: ["main", "dev", "release/*"] }, seats: { s: {} } });
if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
const universe = { declared: loaded.policy.declared };

const dimensionScope = (dimension: Dimension, values: readonly string[], empties: number): fc.Arbitrary<DimensionScope> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.subarray([...values], { minLength: 1, maxLength: 2 }).map((v) => boundedScope(dimension, v)) },
    { weight: 1, arbitrary: fc.constant(UNCONSTRAINED) },
    { weight: empties, arbitrary: fc.constant(EMPTY) },
  );

// Sometimes many empty dimensions, so that a value covered only by authorities granting nothing shows.
const authorities = fc.integer({ min: 1, max: 12 }).chain((empties) =>
  fc
    .array(fc.record({ path: dimensionScope("path", PATHS, 1), branch: dimensionScope("branch", BRANCHES, empties) }), { minLength: 16, maxLength: 40 })
    .map((scopes) =>
      scopes.map((scope, i): Authority => ({
        id: `s/direct/review/${i}`,
        seat: "s",
        capability: "review",
        scope,
        source: { kind: "direct" } as unknown as Authority["source"],
      })),
    ),
);

const effect: fc.Arbitrary<CanonicalEffect> = fc.record({
  path: fc.option(
    fc.uniqueArray(fc.constantFrom(...PATHS.filter((p) => p !== ""), "src/x/y/f.ts", "docs/f.md", "other/f", "a/b/c/d"), { minLength: 1, maxLength: 3 }),
    { nil: undefined },
  ),
  branch: fc.option(
    fc.constantFrom("main", "dev", "release/1").map((b) => [b]),
    { nil: undefined },
  ),
});

describe("coverage through the path index (§6)", () => {
  it("decides as the plain loop does, authority for authority and reason for reason", () => {
    fc.assert(
      fc.property(authorities, effect, fc.constantFrom<readonly Dimension[]>(["path", "branch"], ["path"]), (list, e, dimensions) => {
        const plain = coverByOne("review", dimensions, [...list], e, universe);
        const indexed = coverByOne("review", dimensions, Object.freeze([...list]), e, universe);
        expect(indexed).toEqual(plain);
        // A second use of the same frozen list answers from the kept index: still the same.
        expect(coverByOne("review", dimensions, Object.freeze(list), e, universe)).toEqual(plain);
      }),
      { numRuns: 1500 },
    );
  });
});
