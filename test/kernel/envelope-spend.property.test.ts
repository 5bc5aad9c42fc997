import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkDispatch, reserve, spendRemainder, type SpendNode, type SpendTree } from "../../src/kernel/envelope-spend.js";

/**
 * The spend arithmetic (§8) against a brute-force model of its rules, over arbitrary carve trees:
 * the model checks each rule straight from §8's words on the whole tree after a dispatch (every
 * node's own spend plus what it carved within its cap; every subtree's spend within its root's
 * cap, in the aggregate and each capped lab), and finds the largest dispatch by trying every
 * amount. Conservation: over any sequence of dispatches decided one at a time, no rule is ever
 * broken; a lowered cap only tightens (no dispatch is allowed past it).
 */
const LABS = ["a", "b"];

/** §8 in the plainest form: does the whole tree keep every rule? (Fresh meters: the model of usage is reported + reserved.) */
function keepsEveryRule(tree: SpendTree): boolean {
  const nodes = Object.values(tree.nodes);
  const used = (n: SpendNode, lab?: string) =>
    lab === undefined
      ? Object.values(n.spent).reduce((a, b) => a + b, 0) + Object.values(n.reserved).reduce((a, b) => a + b, 0)
      : (n.spent[lab] ?? 0) + (n.reserved[lab] ?? 0);
  const within = (root: SpendNode, x: SpendNode): boolean => {
    for (let at: SpendNode | undefined = x; at !== undefined; at = at.parent === undefined ? undefined : tree.nodes[at.parent])
      if (at.id === root.id) return true;
    return false;
  };
  for (const n of nodes) {
    const kids = nodes.filter((k) => k.parent === n.id);
    if (used(n) + kids.reduce((a, k) => a + k.caps.total, 0) > n.caps.total) return false;
    if (nodes.filter((x) => within(n, x)).reduce((a, x) => a + used(x), 0) > n.caps.total) return false;
    for (const lab of LABS) {
      const cap = n.caps.labs[lab];
      if (cap === undefined) continue;
      if (used(n, lab) + kids.reduce((a, k) => a + (k.caps.labs[lab] ?? 0), 0) > cap) return false;
      if (nodes.filter((x) => within(n, x)).reduce((a, x) => a + used(x, lab), 0) > cap) return false;
    }
  }
  return true;
}

/** A carve tree of up to five nodes (each node's parent an earlier one), caps in small whole units, nothing spent yet. */
const trees: fc.Arbitrary<SpendTree> = fc
  .array(
    fc.record({
      parent: fc.nat(4),
      total: fc.integer({ min: 0, max: 40 }),
      labA: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
      labB: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
    }),
    { minLength: 1, maxLength: 5 },
  )
  .map((specs) => {
    const nodes: Record<string, SpendNode> = {};
    specs.forEach((s, i) => {
      const labs: Record<string, number> = {};
      if (s.labA !== undefined || i > 0) labs.a = s.labA ?? 0;
      if (s.labB !== undefined) labs.b = s.labB;
      nodes[`n${i}`] = {
        id: `n${i}`,
        ...(i === 0 ? {} : { parent: `n${s.parent % i}` }),
        caps: { total: s.total, labs },
        spent: {},
        reserved: {},
        meters: {},
      };
    });
    return { currency: "USD", nodes };
  });

const dispatches = fc.array(fc.record({ node: fc.nat(4), lab: fc.constantFrom(...LABS), amount: fc.integer({ min: 1, max: 30 }) }), { maxLength: 25 });

describe("spend against the brute-force model of §8", () => {
  it("the remainder is exactly the largest dispatch the model allows", () => {
    fc.assert(
      fc.property(trees, dispatches, fc.nat(4), fc.constantFrom(...LABS), (tree, before, at, lab) => {
        let t = tree;
        for (const d of before) {
          const id = `n${d.node % Object.keys(t.nodes).length}`;
          if (checkDispatch(t, id, d.lab, d.amount) === undefined) t = reserve(t, id, d.lab, d.amount);
        }
        if (!keepsEveryRule(t)) return; // a tree whose carves overrun their caps from the start: covered below
        const id = `n${at % Object.keys(t.nodes).length}`;
        const remainder = spendRemainder(t, id, lab);
        let largest = 0;
        const named = t.nodes[id]?.parent === undefined || Object.prototype.hasOwnProperty.call(t.nodes[id]?.caps.labs ?? {}, lab);
        for (let r = 1; r <= 200 && named; r++) if (keepsEveryRule(reserve(t, id, lab, r))) largest = r;
        if (!named) expect(remainder).toBe(-Infinity);
        else expect(Math.max(0, remainder)).toBe(largest);
      }),
      { numRuns: 400 },
    );
  });

  it("conservation: dispatches decided one at a time never break a rule, in the aggregate or any lab", () => {
    fc.assert(
      fc.property(trees, dispatches, (tree, ds) => {
        fc.pre(keepsEveryRule(tree));
        let t = tree;
        for (const d of ds) {
          const id = `n${d.node % Object.keys(t.nodes).length}`;
          if (checkDispatch(t, id, d.lab, d.amount) === undefined) t = reserve(t, id, d.lab, d.amount);
          expect(keepsEveryRule(t)).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
  });

  it("a lowered cap only tightens: after it, no dispatch raises the root's tree past the lower of the old use and the new cap", () => {
    fc.assert(
      fc.property(trees, dispatches, dispatches, fc.integer({ min: 0, max: 40 }), (tree, first, after, lowered) => {
        let t = tree;
        for (const d of first) {
          const id = `n${d.node % Object.keys(t.nodes).length}`;
          if (checkDispatch(t, id, d.lab, d.amount) === undefined) t = reserve(t, id, d.lab, d.amount);
        }
        const root = t.nodes.n0 as SpendNode;
        const rootCap = Math.min(root.caps.total, lowered);
        t = { ...t, nodes: { ...t.nodes, n0: { ...root, caps: { ...root.caps, total: rootCap } } } };
        const total = (x: SpendTree) => Object.values(x.nodes).reduce((a, n) => a + Object.values(n.reserved).reduce((p, q) => p + q, 0), 0);
        const before = total(t);
        for (const d of after) {
          const id = `n${d.node % Object.keys(t.nodes).length}`;
          if (checkDispatch(t, id, d.lab, d.amount) === undefined) t = reserve(t, id, d.lab, d.amount);
          expect(total(t)).toBeLessThanOrEqual(Math.max(before, rootCap));
        }
      }),
      { numRuns: 400 },
    );
  });
});
