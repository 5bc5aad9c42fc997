import { describe, expect, it } from "vitest";
import {
  checkDispatch,
  reserve,
  revalidate,
  spendOverage,
  spendPeriod,
  spendRemainder,
  type SpendNode,
  type SpendTree,
} from "../../src/kernel/envelope-spend.js";

/**
 * The spend arithmetic (§8), as named cases: every worked example of §8, in cents, and the rules
 * around them (per-lab caps, a child's unnamed lab, a stale meter, two dispatches at once, a
 * period roll's re-validation).
 */
const $ = (dollars: number) => dollars * 100;
function node(id: string, total: number, more: Partial<SpendNode> = {}): SpendNode {
  return { id, caps: { total: $(total), labs: {} }, spent: {}, reserved: {}, meters: {}, ...more };
}
const tree = (...nodes: SpendNode[]): SpendTree => ({ currency: "USD", nodes: Object.fromEntries(nodes.map((n) => [n.id, n])) });
const ANY = "anthropic";
/** A child's slice names its labs: these examples put all of it in one. */
const slice = (id: string, parent: string, total: number, more: Partial<SpendNode> = {}) =>
  node(id, total, { parent, caps: { total: $(total), labs: { [ANY]: $(total) } }, ...more });

describe("§8's worked examples", () => {
  it("C carves D1 $300 and D1 carves G $50: at a new period C refills to its cap less $300, D1 to $300 less $50, G to $50 — the chain sums to C's cap", () => {
    const t = tree(node("C", 1000), slice("D1", "C", 300), slice("G", "D1", 50));
    expect(spendRemainder(t, "C", ANY)).toBe($(700));
    expect(spendRemainder(t, "D1", ANY)).toBe($(250));
    expect(spendRemainder(t, "G", ANY)).toBe($(50));
    expect(spendRemainder(t, "C", ANY) + spendRemainder(t, "D1", ANY) + spendRemainder(t, "G", ANY)).toBe($(1000));
  });

  it("C's cap $1,000 with $600 carved to D1 and $500 under D1 to G, lowered to $400: the whole branch commits at most $400, drawn from one budget in order", () => {
    let t = tree(node("C", 400), slice("D1", "C", 600), slice("G", "D1", 500));
    expect(spendRemainder(t, "C", ANY)).toBeLessThanOrEqual(0);
    expect(spendRemainder(t, "G", ANY)).toBe($(400));
    expect(checkDispatch(t, "G", ANY, $(401))?.rule).toBe("envelope.spend");
    t = reserve(t, "G", ANY, $(300));
    expect(spendRemainder(t, "D1", ANY)).toBe($(100));
    t = reserve(t, "D1", ANY, $(100));
    for (const at of ["C", "D1", "G"]) expect(spendRemainder(t, at, ANY)).toBeLessThanOrEqual(0);
    expect(spendOverage(t, "C")).toBe(0);
  });

  it("80 already spent and the cap lowered to 70: the 80 stands as a $10 overage and nothing more is authorized", () => {
    const t = tree(node("C", 70, { spent: { [ANY]: $(80) } }));
    expect(spendOverage(t, "C")).toBe($(10));
    expect(spendRemainder(t, "C", ANY)).toBe(-$(10));
    expect(checkDispatch(t, "C", ANY, 1)?.reason).toMatch(/has USD 0\.00 left/);
  });

  it("a cap lowered mid-period to 50, 20 metered and a 70 carve outstanding: the 20 stands, the carve is shadowed, 30 more across the descendants", () => {
    let t = tree(node("C", 50, { spent: { [ANY]: $(20) } }), slice("D", "C", 70));
    expect(spendRemainder(t, "C", ANY)).toBeLessThanOrEqual(0);
    expect(spendRemainder(t, "D", ANY)).toBe($(30));
    t = reserve(t, "D", ANY, $(30));
    expect(spendRemainder(t, "D", ANY)).toBe(0);
    expect(checkDispatch(t, "D", ANY, 1)?.rule).toBe("envelope.spend");
  });
});

describe("the rules around them", () => {
  it("a per-lab cap is a tighter floor that never replaces the aggregate: the least of the two binds", () => {
    let t = tree(node("C", 100, { caps: { total: $(100), labs: { [ANY]: $(60) } } }));
    expect(checkDispatch(t, "C", ANY, $(70))?.reason).toMatch(/for lab anthropic/);
    expect(checkDispatch(t, "C", "openai", $(70))).toBeUndefined(); // no cap for openai: the aggregate bounds it
    t = reserve(t, "C", "openai", $(70));
    expect(spendRemainder(t, "C", ANY)).toBe($(30));
  });

  it("a child dispatches only in the labs its slice names", () => {
    const t = tree(node("C", 100), slice("D", "C", 50));
    expect(checkDispatch(t, "D", "openai", 1)?.reason).toMatch(/names no amount for lab openai/);
    expect(spendRemainder(t, "D", "openai")).toBe(-Infinity);
  });

  it("usage that cannot be established counts as spent: a stale or missing report refuses, and a child's counts whole against its parent", () => {
    expect(checkDispatch(tree(node("C", 100, { meters: { [ANY]: "stale" } })), "C", ANY, 1)?.reason).toMatch(/older than the staleness limit/);
    expect(checkDispatch(tree(node("C", 100, { meters: { [ANY]: "unknown" } })), "C", ANY, 1)?.reason).toMatch(/missing/);
    // A child's unknown usage counts whole (its slice) against its parent.
    const t = tree(node("C", 100), slice("D", "C", 40, { meters: { [ANY]: "stale" } }));
    expect(spendRemainder(t, "C", ANY)).toBe($(60));
    // Another lab's unknown usage counts as spent in the aggregate: its lab cap, or the whole aggregate where it has none.
    const capped = tree(node("C", 100, { caps: { total: $(100), labs: { openai: $(30) } }, meters: { [ANY]: "fresh", openai: "unknown" } }));
    expect(spendRemainder(capped, "C", ANY)).toBe($(70));
    const uncapped = tree(node("C", 100, { meters: { [ANY]: "fresh", openai: "stale" } }));
    expect(checkDispatch(uncapped, "C", ANY, 1)?.reason).toMatch(/the usage of C\/openai cannot be established and counts as spent/);
  });

  it("two dispatches decided one after the other cannot together pass the remainder", () => {
    let t = tree(node("C", 100));
    expect(checkDispatch(t, "C", ANY, $(60))).toBeUndefined();
    t = reserve(t, "C", ANY, $(60));
    expect(checkDispatch(t, "C", ANY, $(60))?.rule).toBe("envelope.spend");
  });

  it("at a period roll or a lowered cap, the in-flight reservations are re-validated in their order, each that no longer fits dropped", () => {
    const reservations = [
      { id: "r1", node: "C", lab: ANY, amount: $(30) },
      { id: "r2", node: "D", lab: ANY, amount: $(30) },
      { id: "r3", node: "C", lab: ANY, amount: $(10) },
    ];
    let t = tree(node("C", 100), slice("D", "C", 50));
    for (const r of reservations) t = reserve(t, r.node, r.lab, r.amount);
    expect(revalidate(t, reservations)).toEqual([]);
    const lowered = (total: number): SpendTree => ({ ...t, nodes: { ...t.nodes, C: { ...(t.nodes.C as SpendNode), caps: { total: $(total), labs: {} } } } });
    // To $70: C's own remainder is 70 less D's $50 carve — r1's 30 no longer fits, r2 (D's) and r3 (10) do.
    expect(revalidate(lowered(70), reservations)).toEqual(["r1"]);
    // To $45, below the carve: C itself dispatches nothing; D's 30 still fits the tree's 45.
    expect(revalidate(lowered(45), reservations)).toEqual(["r1", "r3"]);
    // To $20: D's 30 passes the tree's budget too.
    expect(revalidate(lowered(20), reservations)).toEqual(["r1", "r2", "r3"]);
  });
});

describe("the spend period", () => {
  it.each([
    ["mid-month", "2026-12-04T15:00:00Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"],
    ["the first instant of a month", "2026-03-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"],
    ["the last instant of February in a leap year", "2028-02-29T23:59:59.999Z", "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z"],
    ["a century that is not a leap year", "2100-02-28T12:00:00Z", "2100-02-01T00:00:00Z", "2100-03-01T00:00:00Z"],
    ["before 1970", "1969-07-20T20:17:00Z", "1969-07-01T00:00:00Z", "1969-08-01T00:00:00Z"],
  ])("a calendar month (UTC), %s", (_name, at, start, end) => {
    expect(spendPeriod({ kind: "month" }, Date.parse(at))).toEqual({ start: Date.parse(start), end: Date.parse(end) });
  });

  it("a fixed length is aligned to the epoch: 1d is the UTC day", () => {
    expect(spendPeriod({ kind: "fixed", ms: 86_400_000 }, Date.parse("2026-12-04T15:00:00Z"))).toEqual({
      start: Date.parse("2026-12-04T00:00:00Z"),
      end: Date.parse("2026-12-05T00:00:00Z"),
    });
  });

  it("every month of four centuries agrees with the platform's calendar", () => {
    for (let y = 1900; y < 2300; y++)
      for (let m = 0; m < 12; m++) {
        const mid = Date.UTC(y, m, 15, 12);
        expect(spendPeriod({ kind: "month" }, mid)).toEqual({ start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) });
      }
  });
});
