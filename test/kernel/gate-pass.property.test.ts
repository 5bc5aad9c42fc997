import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { authorize } from "../../src/kernel/authorize.js";
import type { GateRecordFact, KernelFacts, OutcomeFact } from "../../src/kernel/facts.js";
import { createKernelView } from "../../src/kernel/view.js";
import { loadTeamFileData } from "../../src/teamfile/load.js";

/**
 * The algebra of §15 gate passes, over arbitrary ledgers: a pass is consumed at most once over
 * any sequence of merges, and voiding is monotone — adding outcomes, revocations or
 * consumptions never turns a refusal into an allow.
 */
const loaded = loadTeamFileData({
  version: 1,
  team: "web",
  review: { mode: "distinct-seat" },
  declare: { branches: ["main"], envs: ["staging"], labs: ["a", "b"] },
  seats: {
    exec: { lab: "a", roles: ["executor"] },
    g1: { lab: "b", roles: ["verifier"] },
    g2: { lab: "b", roles: ["verifier"] },
    ops: { lab: "b", roles: ["operator"] },
  },
});
if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
const policy = loaded.policy;
const EFFECTS = ["e1", "e2"];
const merge = (effectId: string) => ({ seat: "ops", capability: "merge", effect: { paths: ["src/a.ts"], branch: "main", effectId } });

const gateRecord: fc.Arbitrary<GateRecordFact> = fc.record({
  id: fc.constantFrom("p1", "p2", "p3", "p4"),
  effectId: fc.constantFrom(...EFFECTS),
  signer: fc.constantFrom("g1", "g2", "exec"),
  authority: fc.constantFrom("g1/role:verifier/gate/0", "g2/role:verifier/gate/0", "exec/role:executor/write/0"),
  result: fc.constantFrom("pass" as const, "refuse" as const),
});
const outcome: fc.Arbitrary<OutcomeFact> = fc.record({
  effectId: fc.constantFrom(...EFFECTS),
  act: fc.constantFrom("gate" as const, "merge" as const, "deploy" as const),
  result: fc.constantFrom("done" as const, "refused" as const, "unknown" as const),
});
const ledger = fc.record({
  gates: fc.uniqueArray(gateRecord, { selector: (g) => g.id, maxLength: 4 }),
  outcomes: fc.array(outcome, { maxLength: 3 }),
  revoked: fc.subarray(["g1/role:verifier/gate/0", "g2/role:verifier/gate/0"]),
  consumed: fc.subarray(["p1", "p2", "p3", "p4"]),
});
const authors = (): KernelFacts["authors"] => ({ e1: [{ seat: "exec", run: "r", home: "h" }], e2: [{ seat: "exec", run: "r", home: "h" }] });

describe("gate passes (§15), algebraically", () => {
  it("a pass is consumed at most once over any sequence of merges", () => {
    fc.assert(
      fc.property(ledger, fc.array(fc.constantFrom(...EFFECTS), { minLength: 1, maxLength: 8 }), (l, merges) => {
        const consumed = [...l.consumed];
        for (const effectId of merges) {
          const d = authorize(createKernelView(policy, { ...l, authors: authors(), consumed: [...consumed] }), merge(effectId), 0);
          if (d.decision === "allow") {
            expect(d.pass).toBeDefined();
            expect(consumed).not.toContain(d.pass);
            const record = l.gates.find((g) => g.id === d.pass);
            expect(record?.effectId).toBe(effectId);
            expect(record?.result).toBe("pass");
            consumed.push(d.pass as string);
          }
        }
        expect(new Set(consumed).size).toBe(consumed.length);
      }),
      { numRuns: 400 },
    );
  });

  it("voiding is monotone: more outcomes, revocations or consumptions never turn a refusal into an allow", () => {
    fc.assert(
      fc.property(ledger, ledger, fc.constantFrom(...EFFECTS), (l, more, effectId) => {
        const before: KernelFacts = { ...l, authors: authors() };
        const after: KernelFacts = {
          ...l,
          authors: authors(),
          outcomes: [...l.outcomes, ...more.outcomes],
          revoked: [...l.revoked, ...more.revoked],
          consumed: [...l.consumed, ...more.consumed],
        };
        const was = authorize(createKernelView(policy, before), merge(effectId), 0);
        const now = authorize(createKernelView(policy, after), merge(effectId), 0);
        if (was.decision === "refuse") expect(now.decision).toBe("refuse");
      }),
      { numRuns: 600 },
    );
  });

  it("an allowed merge's pass is never voided, revoked or consumed", () => {
    fc.assert(
      fc.property(ledger, fc.constantFrom(...EFFECTS), (l, effectId) => {
        const d = authorize(createKernelView(policy, { ...l, authors: authors() }), merge(effectId), 0);
        if (d.decision !== "allow") return;
        expect(l.outcomes.some((o) => o.effectId === effectId && o.result !== "done")).toBe(false);
        const record = l.gates.find((g) => g.id === d.pass);
        expect(l.revoked).not.toContain(record?.authority);
        expect(l.consumed).not.toContain(d.pass);
      }),
      { numRuns: 400 },
    );
  });
});
