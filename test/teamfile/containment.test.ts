import { describe, expect, it } from "vitest";
import { type LoadResult, loadTeamFileData, loadTeamFileText } from "../../src/teamfile/index.js";
import { diffPolicies } from "../../src/kernel/policy-diff.js";

/**
 * start.containment (issue 7, "Fail closed"): `none` is the owner's explicit word that a seat
 * runs uncontained. It is part of the pinned execution context (§10) — a different hash, a
 * policy diff the owner applies — and anything but `bwrap` or `none` is refused at its line.
 */
const file = (extra: string) => `version: 1
team: web
seats:
  a:
    capabilities: { read: ~ }
    start:
      command: [claude]
${extra === "" ? "" : `      ${extra}\n`}`;

function loaded(result: LoadResult) {
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result;
}

describe("start.containment in the team file", () => {
  it("reads none; bwrap (the default) is the same as leaving it out", () => {
    expect(loaded(loadTeamFileText(file("containment: none"))).policy.seats.a?.start?.containment).toBe("none");
    expect(loaded(loadTeamFileText(file("containment: bwrap"))).policy.seats.a?.start?.containment).toBeUndefined();
    expect(loaded(loadTeamFileText(file(""))).policy.seats.a?.start?.containment).toBeUndefined();
  });

  it("is in the start-context hash, and survives the canonical form a signed apply carries", () => {
    const none = loaded(loadTeamFileText(file("containment: none")));
    const plain = loaded(loadTeamFileText(file("")));
    const bwrap = loaded(loadTeamFileText(file("containment: bwrap")));
    expect(none.hashes.seats.a?.context).not.toBe(plain.hashes.seats.a?.context);
    // The control: the default written out keeps the hash every existing seat has.
    expect(bwrap.hashes.seats.a?.context).toBe(plain.hashes.seats.a?.context);
    const canonical = JSON.parse(none.canonical) as { seats: { a: { start: { containment?: unknown } } } };
    expect(canonical.seats.a.start.containment).toBe("none");
    const reloaded = loaded(loadTeamFileData(canonical, { startFileHashes: {} }));
    expect(reloaded.policy.seats.a?.start?.containment).toBe("none");
    expect(reloaded.hashes.seats.a?.context).toBe(none.hashes.seats.a?.context);
  });

  it("shows dropping containment in the diff the owner reviews, and back", () => {
    const before = loaded(loadTeamFileText(file(""))).policy;
    const after = loaded(loadTeamFileText(file("containment: none"))).policy;
    const widened = JSON.stringify(diffPolicies(before, after));
    expect(widened).toContain("start containment: bwrap -> none");
    expect(widened).toContain("UNCONTAINED");
    expect(JSON.stringify(diffPolicies(after, before))).toContain("start containment: none -> bwrap");
    // The control: no change, no containment line.
    expect(JSON.stringify(diffPolicies(before, before))).not.toContain("containment");
  });

  it.each([
    ["another word", "containment: docker"],
    ["a boolean", "containment: false"],
    ["a map", "containment: { kind: none }"],
    ["the word in capitals", "containment: NONE"],
  ])("refuses %s, naming the field, the allowed values and its line", (_what, line) => {
    const result = loadTeamFileText(file(line));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const hit = result.errors.find((e) => /containment/.test(e.message));
    expect(hit, JSON.stringify(result.errors)).toBeDefined();
    expect(hit?.rule).toBe("teamfile.schema");
    expect(hit?.line).toBe(8);
    expect(hit?.fix).toContain("start.containment takes: bwrap, none");
  });

  it("is not a key of a deploy command (it runs under teamd's own containment)", () => {
    const result = loadTeamFileText(`version: 1
team: web
declare:
  branches: [main]
  envs: [staging]
deploy:
  staging:
    command: [./deploy.sh]
    containment: none
seats:
  a:
    capabilities: { read: ~ }
`);
    expect(result.ok).toBe(false);
  });
});
