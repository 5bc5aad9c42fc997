import { describe, expect, it } from "vitest";
import { authorize } from "../../src/kernel/authorize.js";
import type { LeaseFact } from "../../src/kernel/facts.js";
import { decideLease } from "../../src/kernel/lease-choice.js";
import type { Policy } from "../../src/kernel/policy.js";
import { readIsUnbounded, readScope, readScopeKey } from "../../src/kernel/read-scope.js";
import { createKernelView } from "../../src/kernel/view.js";
import { loadTeamFileData } from "../../src/teamfile/load.js";

/**
 * The resource envelope's visibility (§8; issue 27): `ceiling: { visibility: { LAB: [PATH...] } }`
 * caps what the union of a lab's seats' reads may reach. As tables: read at load and refused where
 * a seat's standing read would pass it; held at use time on every read, a lease's too; a read
 * lease past it refused at issue; the filtered history narrowed by it.
 */
const NOW = 1_000_000;
const HOUR = 3_600_000;

function load(data: Record<string, unknown>): ReturnType<typeof loadTeamFileData> {
  return loadTeamFileData({
    version: 1,
    team: "t",
    declare: { labs: ["anthropic", "openai"] },
    review: { mode: "distinct-seat" },
    leads: { seat: "lead" },
    ...data,
  });
}

function policy(visibility: Record<string, unknown>): Policy {
  const loaded = load({
    ceiling: { "lease-ttl": "30d", visibility },
    seats: {
      lead: { lab: "anthropic", capabilities: { read: null } },
      o: { lab: "openai", capabilities: { read: { path: ["docs/", "src/api/"] } } },
      o2: { lab: "openai" },
      a: { lab: "anthropic", capabilities: { read: null } },
    },
  });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.policy;
}

const errors = (r: ReturnType<typeof loadTeamFileData>) => (r.ok ? "" : r.errors.map((e) => `${e.rule}: ${e.message}`).join("\n"));

describe("ceiling visibility", () => {
  it("loads a per-lab path cap, in the policy hash; refuses a seat whose standing read passes it, an undeclared lab, a non-list", () => {
    const p = policy({ openai: ["docs/", "src/"] });
    expect(p.ceiling?.visibility?.openai).toEqual({ state: "bounded", values: ["docs", "src"] });
    expect(policy({ openai: ["docs/", "src/api/"] }).hash).not.toBe(p.hash);
    const widens = load({
      ceiling: { visibility: { openai: ["docs/"] } },
      seats: { lead: { lab: "anthropic" }, o: { lab: "openai", capabilities: { read: { path: ["docs/", "src/"] } } } },
    });
    expect(errors(widens)).toMatch(/envelope\.visibility: read\{path: .*src.*\} for seat o would widen what lab openai sees past its cap/);
    const everything = load({
      ceiling: { visibility: { openai: ["docs/"] } },
      seats: { lead: { lab: "anthropic" }, o: { lab: "openai", capabilities: { read: null } } },
    });
    expect(errors(everything)).toMatch(/envelope\.visibility/);
    expect(errors(load({ ceiling: { visibility: { google: ["docs/"] } }, seats: { lead: {} } }))).toMatch(/lab 'google' is not declared/);
    expect(errors(load({ ceiling: { visibility: { openai: "docs/" } }, seats: { lead: {} } }))).toMatch(/a lab's visibility is a list of paths/);
  });

  it("holds at use time on every read, whatever covers it — a read lease issued before the cap included — and only for the capped lab", () => {
    const p = policy({ openai: ["docs/", "src/api/"] });
    const lease: LeaseFact = {
      id: "L",
      rootGrant: "lead/direct/read/0",
      issuer: "lead",
      holder: "o2",
      capability: "read",
      scope: { path: ["."] },
      issuedAt: NOW - HOUR,
      expiresAt: NOW + HOUR,
    };
    const view = createKernelView(p, { leases: { L: lease }, revokedLeases: [] });
    const read = (seat: string, path: string) => {
      const d = authorize(view, { seat, capability: "read", effect: { paths: [path] } }, NOW);
      return d.decision === "allow" ? "allow" : d.rule;
    };
    const CASES: [string, string, string, string][] = [
      ["inside the cap, by its grant", "o", "docs/a.md", "allow"],
      ["inside the cap, a deeper path", "o", "src/api/x.ts", "allow"],
      ["outside the cap (its grant does not reach it either)", "o", "src/core/x.ts", "envelope.visibility"],
      ["a lease to a seat of the capped lab: inside", "o2", "docs/a.md", "allow"],
      ["a lease to a seat of the capped lab: outside, though the lease covers it", "o2", "README.md", "envelope.visibility"],
      ["another lab is not capped", "a", "README.md", "allow"],
    ];
    for (const [name, seat, path, expected] of CASES) expect(read(seat, path), name).toBe(expected);
  });

  it("a read lease past the recipient's lab cap is refused at issue; within it, issued", () => {
    const p = policy({ openai: ["docs/", "src/api/"] });
    const view = createKernelView(p, { leases: {}, revokedLeases: [] });
    const issue = (scope: Record<string, string[]>) =>
      decideLease(view, { leaseId: "n", issuer: "lead", recipient: "o2", capability: "read", scope, expiresAt: NOW + HOUR }, NOW);
    expect(issue({ path: ["src/"] })).toMatchObject({ decision: "refuse", rule: "envelope.visibility" });
    expect(issue({})).toMatchObject({ decision: "refuse", rule: "envelope.visibility" });
    expect(issue({ path: ["docs/"] })).toMatchObject({ decision: "issue" });
  });

  it("a capped seat's history is filtered by the cap: never unbounded, the cap in its filter's key (held even past the load's check)", () => {
    // A seat reading everything, and a cap the load would have refused beside it: the use-time
    // hold and the filter do not rest on the load's check.
    const loaded = load({ seats: { lead: { lab: "anthropic" }, w: { lab: "openai", capabilities: { read: null } } } });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    const open = loaded.policy;
    const capped = (paths: string[]): Policy => ({
      ...open,
      ceiling: { ...(open.ceiling ?? { leaseTtlMs: HOUR }), visibility: { openai: { state: "bounded", values: paths } } },
    });
    const w = open.seats.w as NonNullable<Policy["seats"][string]>;
    expect(readIsUnbounded(open, w)).toBe(true);
    expect(readIsUnbounded(capped(["docs"]), w)).toBe(false);
    const scope = readScope(capped(["docs"]), w, NOW);
    expect([scope.file("docs/a.md"), scope.file("src/x.ts"), scope.file("README.md")]).toEqual([true, false, false]);
    expect(scope.dir("src")).not.toBe("all");
    expect(readScopeKey(capped(["docs"]), w)).not.toBe(readScopeKey(capped(["docs", "src"]), w));
    expect(readScopeKey(open, w)).not.toBe(readScopeKey(capped(["docs"]), w));
  });
});
