import { describe, expect, it } from "vitest";
import { loadTeamFileData, loadTeamFileText, type LoadResult } from "../../src/teamfile/index.js";

/** The team file's `trackers:` map (§11): task resource → the owner's tracker, by name only. */
const FILE = (trackers: string) => `version: 1
team: web
declare:
  tasks: ["gh:web", notes]
${trackers}seats:
  plan:
    capabilities:
      use-broker: { task: ["gh:web"] }
`;

function errors(result: LoadResult) {
  if (result.ok) throw new Error("expected the team file to be refused");
  return result.errors;
}

describe("trackers: which owner-configured tracker serves each task resource", () => {
  it("loads into the policy, and the canonical form loads again to the same policy hash", () => {
    const loaded = loadTeamFileText(FILE(`trackers:\n  "gh:web": web\n`));
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    expect(loaded.policy.trackers).toEqual({ "gh:web": "web" });
    const again = loadTeamFileData(JSON.parse(loaded.canonical) as unknown);
    if (!again.ok) throw new Error(JSON.stringify(again.errors));
    expect(again.policy.trackers).toEqual({ "gh:web": "web" });
    expect(again.policy.hash).toBe(loaded.policy.hash);
  });

  it("leaves a file without trackers as it was (no key in the canonical form: the hash does not move)", () => {
    const loaded = loadTeamFileText(FILE(""));
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    expect(loaded.policy.trackers).toBeUndefined();
    expect(loaded.canonical).not.toContain("trackers");
  });

  it("refuses an undeclared task resource and a value that is not a tracker name, each with its line and fix", () => {
    const e = errors(loadTeamFileText(FILE(`trackers:\n  nope: web\n  notes: "Not A Name"\n`)));
    expect(e.map((x) => [x.rule, x.line])).toEqual([
      ["teamfile.schema", 6],
      ["teamfile.schema", 7],
    ]);
    expect(e[0]?.fix).toMatch(/declare\.tasks/);
    expect(e[1]?.fix).toMatch(/credential stays there/);
    expect(errors(loadTeamFileText(FILE(`trackers: [web]\n`)))[0]?.message).toMatch(/map of task resource/);
  });

  it("refuses a credential written where a tracker name goes (the key-shape check)", () => {
    const e = errors(loadTeamFileText(FILE(`trackers:\n  notes: ghp_${"x".repeat(36)}\n`)));
    expect(e.map((x) => x.rule)).toContain("secret.shape");
  });
});

describe("teamd apply shows a tracker change", () => {
  it("names each task resource whose tracker moves, the default included", async () => {
    const { diffPolicies } = await import("../../src/kernel/index.js");
    const before = loadTeamFileText(FILE(""));
    const after = loadTeamFileText(FILE(`trackers:\n  "gh:web": web\n`));
    if (!before.ok || !after.ok) throw new Error("expected both to load");
    expect(diffPolicies(before.policy, after.policy).team).toContain("tracker of task gh:web: the default file tracker -> web");
    expect(diffPolicies(after.policy, before.policy).team).toContain("tracker of task gh:web: web -> the default file tracker");
    expect(diffPolicies(after.policy, after.policy).unchanged).toBe(true);
  });
});
