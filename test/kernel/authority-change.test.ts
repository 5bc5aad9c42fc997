import { describe, expect, it } from "vitest";
import { checkTwoGranter } from "../../src/kernel/agreement.js";
import { type AuthorityChange, checkAuthorityChange } from "../../src/kernel/authority-change.js";
import type { Policy, Seat } from "../../src/kernel/policy.js";
import { createKernelView } from "../../src/kernel/view.js";
import type { AdministrativeCapability } from "../../src/kernel/vocabulary.js";
import { loadTeamFileData } from "../../src/teamfile/load.js";

/**
 * §9/§10 for principals the team file cannot write yet (grant and agree holders): the policy
 * is loaded by the real loader, then a seat is given an administrative capability as data —
 * exactly what the loader will set once the daemon's request path exists.
 */
const files = { "AGENTS.md": "You are a worker.\n" };
const start = (env: Record<string, string> = { MODE: "work" }): unknown => ({ command: ["codex"], env, files: ["AGENTS.md"] });

function team(seats: Record<string, unknown>, constraints?: unknown[], proposal = false): Policy {
  const loaded = loadTeamFileData(
    {
      version: 1,
      team: "web",
      declare: { branches: ["main"], labs: ["anthropic", "openai"] },
      review: { mode: "distinct-seat" },
      ...(constraints ? { constraints } : {}),
      seats,
    },
    { readStartFile: (p) => (p in files ? new TextEncoder().encode(files[p as keyof typeof files]) : undefined), proposal },
  );
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.policy;
}

function give(policy: Policy, seat: string, admin: AdministrativeCapability[]): Policy {
  const s = policy.seats[seat] as Seat;
  return { ...policy, seats: { ...policy.seats, [seat]: { ...s, admin } } };
}

const SEATS = {
  worker: { lab: "openai", roles: ["executor"], start: start() },
  boss: { lab: "anthropic", roles: ["observer"] },
  checker: { lab: "anthropic", roles: ["verifier"] },
};
const copyOf = (env?: Record<string, string>): Policy =>
  team({ ...SEATS, worker2: { lab: "openai", roles: ["executor"], start: start(env) } }, undefined, true);

const table: { description: string; holds: AdministrativeCapability[]; change: (before: Policy) => AuthorityChange; expect: string }[] = [
  {
    description: "an agree holder adds a same copy",
    holds: ["agree"],
    change: () => ({ kind: "add-seat", principal: { kind: "seat", seat: "boss" }, seat: "worker2", after: copyOf() }),
    expect: "commit agreement",
  },
  {
    description: "a same-copy add that differs in one environment binding is a grant, not an agreement",
    holds: ["agree"],
    change: () => ({ kind: "add-seat", principal: { kind: "seat", seat: "boss" }, seat: "worker2", after: copyOf({ MODE: "other" }) }),
    expect: "agree.not-same-copy",
  },
  {
    description: "a grant holder may add the differing seat (it is a grant)",
    holds: ["grant"],
    change: () => ({ kind: "add-seat", principal: { kind: "seat", seat: "boss" }, seat: "worker2", after: copyOf({ MODE: "other" }) }),
    expect: "commit",
  },
  {
    description: "a copy that would hold agree is refused",
    holds: ["agree"],
    change: () => {
      const after = copyOf();
      return { kind: "add-seat", principal: { kind: "seat", seat: "boss" }, seat: "worker2", after: give(after, "worker2", ["agree"]) };
    },
    expect: "agree.copy-holds-admin",
  },
  {
    description: "a grant holder edits capabilities inside §8",
    holds: ["grant"],
    change: () => ({
      kind: "edit",
      principal: { kind: "seat", seat: "boss" },
      after: team({ ...SEATS, checker: { lab: "anthropic", roles: ["verifier", "observer"] } }, undefined, true),
    }),
    expect: "commit",
  },
  {
    description: "a grant holder may not remove a seat (owner or leads)",
    holds: ["grant"],
    change: (b) => ({
      kind: "remove-seat",
      principal: { kind: "seat", seat: "boss" },
      seat: "checker",
      after: { ...b, seats: { worker: b.seats.worker as Seat, boss: b.seats.boss as Seat } },
    }),
    expect: "table.principal",
  },
];

describe("§9/§10 principals beyond the owner", () => {
  it.each(table)("$description", ({ holds, change, expect: expected }) => {
    const before = give(team(SEATS), "boss", holds);
    const decided = checkAuthorityChange(createKernelView(before), change(before));
    const got = decided.decision === "commit" ? `commit${decided.agreement ? " agreement" : ""}` : decided.rule;
    expect(got, decided.decision === "refuse" ? decided.reason : "").toBe(expected);
  });

  it("a grant holder's change that breaks a minimum is refused, while the owner's commits and pauses", () => {
    const constraints = [{ minimum: 1, of: "gate" }];
    const before = give(team(SEATS, constraints), "boss", ["grant"]);
    const after = team({ worker: SEATS.worker, boss: SEATS.boss, checker: { lab: "anthropic", roles: ["observer"] } }, constraints, true);
    const byDelegate = checkAuthorityChange(createKernelView(before), { kind: "edit", principal: { kind: "seat", seat: "boss" }, after });
    expect(byDelegate).toMatchObject({ decision: "refuse", rule: "constraint.minimum" });
    const byOwner = checkAuthorityChange(createKernelView(before), { kind: "edit", principal: { kind: "owner" }, after });
    expect(byOwner).toMatchObject({ decision: "commit" });
    expect(byOwner.decision === "commit" ? byOwner.paused.map((v) => v.rule) : []).toEqual(["constraint.minimum"]);
  });

  it("a removed seat holding grant is removed by the owner only", () => {
    const before = give(give(team(SEATS), "boss", ["grant"]), "checker", ["grant"]);
    const after = { ...before, seats: { worker: before.seats.worker as Seat, boss: before.seats.boss as Seat } };
    const decided = checkAuthorityChange(createKernelView(before), { kind: "remove-seat", principal: { kind: "seat", seat: "boss" }, seat: "checker", after });
    expect(decided).toMatchObject({ decision: "refuse", rule: "table.principal" });
    expect(decided.decision === "refuse" ? decided.reason : "").toMatch(/owner only/);
  });
});

describe("two-granter (§10)", () => {
  const sig = (signer: string, proposal = "p1", inputState = "s1") => ({ signer, proposal, inputState });
  it.each([
    ["both sign the same proposal over the current state", [sig("a"), sig("b")], "s1", undefined],
    ["the input state changed between the two signatures: void", [sig("a"), sig("b", "p1", "s2")], "s2", "twogranter.void"],
    ["the state changed after both signed: void", [sig("a"), sig("b")], "s2", "twogranter.void"],
    ["one signer twice is not two granters", [sig("a"), sig("a")], "s1", "twogranter.void"],
    ["another proposal: void", [sig("a"), sig("b", "p2")], "s1", "twogranter.void"],
    ["one signature is not enough", [sig("a")], "s1", "twogranter.void"],
  ] as const)("%s", (_d, signatures, state, rule) => {
    expect(checkTwoGranter("p1", state, signatures)?.rule).toBe(rule);
  });

  it("a co-signed change is checked against the input state the decision is given (the daemon's), not one the request names", () => {
    const before = team(SEATS);
    const change = (inputState: string | undefined) =>
      checkAuthorityChange(createKernelView(before), {
        kind: "edit",
        principal: { kind: "owner" },
        after: before,
        ...(inputState !== undefined ? { inputState } : {}),
        coSigned: { proposal: "p1", signatures: [sig("a"), sig("b")] },
      });
    expect(change("s2")).toMatchObject({ decision: "refuse", rule: "twogranter.void" });
    expect(change("s1")).toMatchObject({ decision: "commit" });
    // No state given: it cannot be compared, so it is refused (fail closed).
    expect(change(undefined)).toMatchObject({ decision: "refuse", rule: "twogranter.void" });
  });
});
