import { describe, expect, it } from "vitest";
import { runtimeLeftMs, runtimeRefusal } from "../../src/kernel/envelope-runtime.js";
import { loadTeamFileData } from "../../src/teamfile/load.js";

/** The envelope's unattended runtime (§8; issue 27): read, canonical, and the pause at its limit, as a table. */
function load(runtime: unknown) {
  return loadTeamFileData({ version: 1, team: "t", declare: { labs: ["anthropic"] }, ceiling: { runtime }, seats: { a: { lab: "anthropic" } } });
}

describe("ceiling runtime", () => {
  it("reads a duration into the policy (and its hash); refuses what is not one", () => {
    const loaded = load("3h");
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    expect(loaded.policy.ceiling?.runtimeMs).toBe(3 * 3_600_000);
    const other = load("2h");
    expect(other.ok && other.hashes.policy).not.toEqual(loaded.hashes.policy);
    for (const bad of ["3 hours", 3, "0s", ""]) expect(load(bad).ok, String(bad)).toBe(false);
  });

  it("pauses from the instant the runtime since the last renewal is spent, and not before", () => {
    const loaded = load("10s");
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    const p = loaded.policy;
    const CASES: [string, number, number, string | undefined, number | undefined][] = [
      ["just renewed", 1_000, 1_000, undefined, 10_000],
      ["a millisecond before the limit", 1_000, 10_999, undefined, 1],
      ["at the limit", 1_000, 11_000, "envelope.runtime", 0],
      ["long past it", 1_000, 99_000, "envelope.runtime", -88_000],
      ["renewed since", 95_000, 99_000, undefined, 6_000],
    ];
    for (const [name, renewedAt, now, rule, left] of CASES) {
      expect(runtimeRefusal(p, { renewedAt }, now)?.rule, name).toBe(rule);
      expect(runtimeLeftMs(p, { renewedAt }, now), name).toBe(left);
    }
    const uncapped = loadTeamFileData({ version: 1, team: "t", seats: { a: {} } });
    if (!uncapped.ok) throw new Error("load");
    expect(runtimeRefusal(uncapped.policy, { renewedAt: 0 }, 1e12)).toBeUndefined();
  });

  it("a created team runs down the deadline it inherited (§8: a create mints no fresh runtime); its own limit only brings it nearer", () => {
    const own = load("10s");
    const uncapped = loadTeamFileData({ version: 1, team: "t", seats: { a: {} } });
    if (!own.ok || !uncapped.ok) throw new Error("load");
    const CASES: [string, typeof own.policy, { renewedAt: number; deadline?: number }, number, string | undefined, number | undefined][] = [
      ["inherited only, before it", uncapped.policy, { renewedAt: 1_000, deadline: 5_000 }, 4_000, undefined, 1_000],
      ["inherited only, at it", uncapped.policy, { renewedAt: 1_000, deadline: 5_000 }, 5_000, "envelope.runtime", 0],
      ["its own limit is later: the inherited deadline holds", own.policy, { renewedAt: 1_000, deadline: 5_000 }, 6_000, "envelope.runtime", -1_000],
      ["its own limit is nearer: it holds", own.policy, { renewedAt: 1_000, deadline: 50_000 }, 11_000, "envelope.runtime", 0],
      ["neither: no limit", uncapped.policy, { renewedAt: 1_000 }, 1e12, undefined, undefined],
    ];
    for (const [name, policy, clock, now, rule, left] of CASES) {
      expect(runtimeRefusal(policy, clock, now)?.rule, name).toBe(rule);
      expect(runtimeLeftMs(policy, clock, now), name).toBe(left);
    }
    expect(runtimeRefusal(uncapped.policy, { renewedAt: 1_000, deadline: 5_000 }, 5_000)?.reason).toMatch(/created by a seat/);
  });
});
