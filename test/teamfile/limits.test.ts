import { describe, expect, it } from "vitest";
import { type LoadResult, loadTeamFileData, loadTeamFileText } from "../../src/teamfile/index.js";
import { parseBytes } from "../../src/kernel/start-limits.js";
import { diffPolicies } from "../../src/kernel/policy-diff.js";

/**
 * start.limits (§10, §11): a seat's resource limits are part of its pinned execution context —
 * validated with the line and a fix, canonical, and inside the start-context hash, so lifting
 * a cap is a different seat. `limits: none` is the owner's explicit word.
 */
const file = (limits: string) => `version: 1
team: web
seats:
  a:
    capabilities: { read: ~ }
    start:
      command: [claude]
${limits
  .split("\n")
  .filter((l) => l !== "")
  .map((l) => `      ${l}`)
  .join("\n")}
`;

function loaded(result: LoadResult) {
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result;
}

describe("start.limits in the team file", () => {
  it("is read into bytes, processes, CPUs and open files", () => {
    const result = loaded(loadTeamFileText(file(`limits:\n  memory: 512M\n  processes: 256\n  cpus: 1.5\n  open-files: 1024`)));
    expect(result.policy.seats.a?.start?.limits).toEqual({ memoryBytes: 512 * 1024 ** 2, processes: 256, cpus: 1.5, openFiles: 1024 });
    expect(loaded(loadTeamFileText(file(`limits: none`))).policy.seats.a?.start?.limits).toBe("none");
    // The canonical form (what a signed apply carries) loads back to the same limits.
    const canonical = JSON.parse(result.canonical) as { seats: { a: { start: { limits: unknown } } } };
    expect(canonical.seats.a.start.limits).toEqual({ memory: 512 * 1024 ** 2, processes: 256, cpus: "1.5", "open-files": 1024 });
    const reloaded = loaded(loadTeamFileData(canonical, { startFileHashes: {} }));
    expect(reloaded.policy.seats.a?.start?.limits).toEqual(result.policy.seats.a?.start?.limits);
    expect(reloaded.hashes.seats.a?.context).toBe(result.hashes.seats.a?.context);
    expect(loaded(loadTeamFileText(file(""))).policy.seats.a?.start?.limits).toBeUndefined();
  });

  it("is in the start-context hash; a seat without limits keeps the hash it had before", () => {
    const hash = (limits: string) => loaded(loadTeamFileText(file(limits))).hashes.seats.a?.context;
    const hashes = [
      hash(""),
      hash("limits: none"),
      hash("limits:\n  memory: 512M"),
      hash("limits:\n  memory: 1G"),
      hash("limits:\n  memory: 512M\n  processes: 64"),
    ];
    expect(new Set(hashes).size).toBe(hashes.length);
    // Same value, other spelling: same hash.
    expect(hash("limits:\n  memory: 512M")).toBe(hash("limits:\n  memory: 536870912"));
  });

  it("shows a lifted limit in the diff the owner reviews", () => {
    const before = loaded(loadTeamFileText(file("limits:\n  memory: 512M"))).policy;
    const after = loaded(loadTeamFileText(file("limits: none"))).policy;
    expect(JSON.stringify(diffPolicies(before, after))).toContain("start limits: memory 512M -> none");
  });

  it.each([
    ["a size without a unit it knows", `limits:\n  memory: 512X`, /not a size/, 9],
    ["a size too small to start a seat", `limits:\n  memory: 512`, /below 16M/, 9],
    ["processes that are not whole", `limits:\n  processes: 2.5`, /whole number/, 9],
    ["processes as text", `limits:\n  processes: "64"`, /whole number/, 9],
    ["cpus of zero", `limits:\n  cpus: 0`, /number of CPUs/, 9],
    ["an unknown limit", `limits:\n  disk: 1G`, /unknown limit 'disk'/, 9],
    ["a list", `limits: [memory]`, /none` or a map/, 8],
    ["a word other than none", `limits: unlimited`, /none` or a map/, 8],
  ])("refuses %s, with its line and a fix", (_what, limits, message, line) => {
    const result = loadTeamFileText(file(limits));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const hit = result.errors.find((e) => message.test(e.message));
    expect(hit, JSON.stringify(result.errors)).toBeDefined();
    expect(hit?.rule).toBe("teamfile.schema");
    expect(hit?.line).toBe(line);
    expect(hit?.fix.length).toBeGreaterThan(0);
  });

  it("parses sizes in powers of 1024", () => {
    expect(parseBytes("1K")).toBe(1024);
    expect(parseBytes("2G")).toBe(2 * 1024 ** 3);
    expect(parseBytes("512MiB")).toBe(512 * 1024 ** 2);
    expect(parseBytes("1.5G")).toBeUndefined();
    expect(parseBytes(-1)).toBeUndefined();
  });
});
