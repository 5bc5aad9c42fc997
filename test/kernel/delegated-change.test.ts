import { describe, expect, it } from "vitest";
import { applyDelegatedChange, checkDelegatedChange, type DelegatedChange } from "../../src/kernel/delegated-change.js";
import { createKernelView } from "../../src/kernel/view.js";
import type { KernelFacts } from "../../src/kernel/facts.js";
import { loadTeamFileData } from "../../src/teamfile/load.js";

/**
 * The grant rows of §9's table and the bounds of §8 and §10, as the daemon asks them: the change
 * applied to the policy in force's canonical data (one agreement is a whole file), loaded by the
 * owner's loader, and decided by `checkDelegatedChange`. Each refusal is named.
 */
const files = { "AGENTS.md": "You are a worker.\n" };
const start = { command: ["codex"], env: { MODE: "work" }, files: ["AGENTS.md"] };
const readStartFile = (p: string) => (p in files ? new TextEncoder().encode(files[p as keyof typeof files]) : undefined);

const TEAM = {
  version: 1,
  team: "web",
  declare: { branches: ["main"], labs: ["anthropic", "openai", "google"] },
  review: { mode: "distinct-seat" },
  constraints: [{ maximum: 1, of: "gate" }],
  ceiling: { capabilities: { read: null, write: { path: ["src/", "docs/"] }, gate: null, merge: null, review: null } },
  deny: { write: { path: ["docs/private/"] } },
  "two-granter": { capabilities: ["merge"], labs: "distinct" },
  leads: { seat: "lead", envelope: { gate: null } },
  roles: { helper: { capabilities: { read: null } } },
  seats: {
    admin: { lab: "anthropic", capabilities: { read: null, grant: null } },
    admin2: { lab: "openai", capabilities: { read: null, grant: null } },
    admin3: { lab: "anthropic", capabilities: { grant: null } },
    clerk: { lab: "google", capabilities: { agree: null } },
    lead: { lab: "google", capabilities: { read: null } },
    worker: { lab: "openai", capabilities: { read: null, write: { path: "docs/" } }, start },
    gater: { lab: "anthropic", capabilities: { gate: null } },
    merger: { lab: "anthropic", capabilities: { merge: null }, start },
  },
};

function loaded(data: unknown) {
  const l = loadTeamFileData(data, { readStartFile, proposal: true });
  if (!l.ok) throw new Error(JSON.stringify(l.errors));
  return l;
}

const base = loaded(TEAM);
const canonical = JSON.parse(base.canonical) as unknown;

function decide(asker: string, change: DelegatedChange, options: { facts?: KernelFacts; confirmations?: { signer: string; inputState?: string }[] } = {}) {
  const applied = applyDelegatedChange(canonical, change);
  if ("decision" in applied) return applied.rule;
  const after = loadTeamFileData(applied.data, { startFileHashes: base.startFiles, proposal: true });
  if (!after.ok) return after.errors[0]?.rule ?? "?";
  const view = createKernelView(base.policy, options.facts);
  const decided = checkDelegatedChange(
    view,
    {
      principal: asker,
      change,
      after: after.policy,
      inputState: "s1",
      proposal: "p1",
      ...(options.confirmations
        ? { confirmations: options.confirmations.map((c) => ({ signer: c.signer, proposal: "p1", inputState: c.inputState ?? "s1" })) }
        : {}),
    },
    1_000,
  );
  return decided.decision === "commit" ? `commit${decided.agreement ? " agreement" : ""}` : decided.decision === "propose" ? "propose" : decided.rule;
}

const grant = (seat: string, capability: string, scope: unknown, name?: string): DelegatedChange => ({
  kind: "grant",
  seat,
  capability,
  scope,
  ...(name ? { name } : {}),
});

describe("delegated changes: the grant rows of §9 and the bounds of §8, §10", () => {
  it.each([
    ["a grant holder grants inside the ceiling", "admin", grant("worker", "write", { path: ["src/"] }, "src"), "commit"],
    ["past the ceiling", "admin", grant("worker", "write", { path: ["secret/"] }, "x"), "ceiling.outside"],
    ["meeting the deny (a scope reaching into it is refused whole)", "admin", grant("gater", "write", { path: ["docs/"] }), "deny.match"],
    ["a branch the owner did not declare (a declared set is owner-sovereign)", "admin", grant("worker", "review", { branch: ["prod"] }), "scope.branch"],
    ["an administrative capability (no agent holds grant unless the owner writes it)", "admin", grant("worker", "grant", {}), "grant.administrative"],
    ["agree, likewise", "admin", grant("worker", "agree", {}), "grant.administrative"],
    ["breaking a maximum", "admin", grant("worker", "gate", {}), "constraint.maximum"],
    ["a seat holding agree only may not grant", "clerk", grant("worker", "read", {}), "table.principal"],
    ["leads has no grant power (§9)", "lead", grant("worker", "write", { path: ["src/"] }, "s"), "table.principal"],
    ["a seat holding nothing administrative", "worker", grant("gater", "read", {}), "table.principal"],
    ["a two-granter capability alone: a proposal", "admin", grant("worker", "merge", {}), "propose"],
    ["take back a direct grant", "admin", { kind: "ungrant", seat: "worker", capability: "write" } as DelegatedChange, "commit"],
    ["take back one the seat does not hold", "admin", { kind: "ungrant", seat: "worker", capability: "merge" } as DelegatedChange, "grant.absent"],
    ["an agree holder adds a same copy", "clerk", { kind: "add-seat", seat: "worker2", like: "worker" } as DelegatedChange, "commit agreement"],
    [
      "a copy with a role more is a grant: refused to agree",
      "clerk",
      { kind: "add-seat", seat: "w3", like: "worker", roles: ["helper"] } as DelegatedChange,
      "agree.not-same-copy",
    ],
    ["a grant holder adds it", "admin", { kind: "add-seat", seat: "w3", like: "worker", roles: ["helper"] } as DelegatedChange, "commit"],
    [
      "a seat without a pinned start has no execution context to compare: never a same copy",
      "clerk",
      { kind: "add-seat", seat: "a4", like: "admin3" } as DelegatedChange,
      "agree.not-same-copy",
    ],
    ["leads removes a seat (§9)", "lead", { kind: "remove-seat", seat: "worker" } as DelegatedChange, "commit"],
    ["leads may not remove a grant holder (the owner's)", "lead", { kind: "remove-seat", seat: "admin" } as DelegatedChange, "table.principal"],
    ["leads may not remove itself", "lead", { kind: "remove-seat", seat: "lead" } as DelegatedChange, "table.principal"],
    ["a grant holder is not leads: it removes no seat", "admin", { kind: "remove-seat", seat: "worker" } as DelegatedChange, "table.principal"],
  ] as const)("%s", (_d, asker, change, expected) => {
    expect(decide(asker, change)).toBe(expected);
  });

  it("a second grant that re-keys the seat's unnamed grant would revoke its leases as a side effect: refused (grant.rekeys)", () => {
    const lease = {
      id: "L1",
      rootGrant: "worker/direct/write/0",
      issuer: "worker",
      holder: "gater",
      capability: "write" as const,
      scope: { path: ["docs"] },
      issuedAt: 0,
      expiresAt: 10_000,
    };
    const facts = { leases: { L1: lease }, revokedLeases: [] };
    expect(decide("admin", grant("worker", "write", { path: ["src/"] }, "src"), { facts })).toBe("grant.rekeys");
    // Control: with no lease rooted in it, the same grant commits.
    expect(decide("admin", grant("worker", "write", { path: ["src/"] }, "src"))).toBe("commit");
  });

  it("a scope or name with a control or bidirectional-text character is refused before it reaches a reader", () => {
    expect(decide("admin", grant("worker", "write", { path: ["src/\u202etxt.exe"] }, "x"))).toBe("request.malformed");
    expect(decide("admin", grant("worker", "write", { path: ["src/a\u0007"] }, "x"))).toBe("request.malformed");
    expect(decide("admin", grant("worker", "write", { path: ["src/"] }, "x"))).toBe("commit");
  });

  it("the loader refuses grant on the leads seat (§9: leads has no grant power)", () => {
    const data = JSON.parse(JSON.stringify(TEAM)) as { seats: { lead: { capabilities: Record<string, unknown> } } };
    data.seats.lead.capabilities.grant = null;
    const l = loadTeamFileData(data, { readStartFile, proposal: true });
    expect(l.ok).toBe(false);
    expect(l.ok ? [] : l.errors.map((e) => e.message)).toEqual(expect.arrayContaining([expect.stringMatching(/leads has no grant power/)]));
  });

  it("two-granter holds for a same copy too (§10: two can be asked to agree): the agree holder's copy of a two-granter holder waits", () => {
    // merger holds merge (behind two-granter); clerk (agree) copies it.
    expect(decide("clerk", { kind: "add-seat", seat: "m2", like: "merger" })).toBe("propose");
    expect(decide("clerk", { kind: "add-seat", seat: "m2", like: "merger" }, { confirmations: [{ signer: "clerk" }, { signer: "admin2" }] })).toBe(
      "commit agreement",
    );
  });

  it("a copy never carries grant or agree", () => {
    const applied = applyDelegatedChange(canonical, { kind: "add-seat", seat: "a4", like: "admin" });
    expect("data" in applied && (applied.data as { seats: Record<string, { capabilities: object }> }).seats.a4?.capabilities).toEqual({
      read: [{ path: "*" }],
    });
  });

  describe("two-granter (§10): the asker and a second granter over one proposal and the current input state", () => {
    const merge = grant("worker", "merge", {});
    it.each([
      ["a grant holder of another lab confirms", [{ signer: "admin" }, { signer: "admin2" }], "commit"],
      ["the same lab, where the owner requires distinct labs", [{ signer: "admin" }, { signer: "admin3" }], "twogranter.labs"],
      ["leads is never a granter", [{ signer: "admin" }, { signer: "lead" }], "twogranter.standing"],
      ["a seat without grant is no granter", [{ signer: "admin" }, { signer: "worker" }], "twogranter.standing"],
      ["the asker twice", [{ signer: "admin" }, { signer: "admin" }], "twogranter.void"],
      ["the first confirmation over an older state: void", [{ signer: "admin", inputState: "s0" }, { signer: "admin2" }], "twogranter.void"],
      ["the asker is the first", [{ signer: "admin2" }, { signer: "admin" }], "twogranter.void"],
      ["the owner as the second", [{ signer: "admin" }, { signer: "owner" }], "commit"],
    ] as const)("%s", (_d, confirmations, expected) => {
      expect(decide("admin", merge, { confirmations: [...confirmations] })).toBe(expected);
    });
  });
});
