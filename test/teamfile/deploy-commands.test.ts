import { describe, expect, it } from "vitest";
import { type LoadResult, loadTeamFileData, loadTeamFileText } from "../../src/teamfile/index.js";
import { diffPolicies, effectReservedReason } from "../../src/kernel/index.js";

/** The owner's deploy command per environment (§3, §10): its shape, its errors, its pins. */
const HEAD = "version: 1\nteam: web\ndeclare:\n  envs: [staging, prod]\n";
const DEPLOY = `${HEAD}deploy:\n  staging:\n    command: [sh, deploy/ship.sh]\n    files: [deploy/ship.sh]\n    env: { TARGET: staging.example.invalid }\n`;
const bytes = (text: string) => () => new TextEncoder().encode(text);

function loaded(result: LoadResult) {
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result;
}

function errors(result: LoadResult) {
  if (result.ok) throw new Error("expected the team file to be refused");
  return result.errors.map((e) => ({ rule: e.rule, line: e.line, at: e.at, fix: e.fix }));
}

describe("deploy commands in the team file", () => {
  it("reads one per declared environment, pinned and hashed like a start", () => {
    const r = loaded(loadTeamFileText(DEPLOY, { readStartFile: bytes("echo v1\n") }));
    const command = r.policy.deploys?.staging;
    expect(command?.context).toEqual({ command: ["sh", "deploy/ship.sh"], workdir: "", env: { TARGET: "staging.example.invalid" }, files: ["deploy/ship.sh"] });
    expect(command?.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(r.hashes.deploys?.staging).toBe(command?.hash);
    expect(r.startFiles["deploy/ship.sh"]).toMatch(/^sha256:/);
    expect(r.policy.deploys?.prod).toBeUndefined();
  });

  it("pins the script by content: another content, another command hash, the same policy hash", () => {
    const one = loaded(loadTeamFileText(DEPLOY, { readStartFile: bytes("echo v1\n") }));
    const two = loaded(loadTeamFileText(DEPLOY, { readStartFile: bytes("echo v2\n") }));
    expect(two.policy.deploys?.staging?.hash).not.toBe(one.policy.deploys?.staging?.hash);
    expect(two.hashes.policy).toBe(one.hashes.policy);
  });

  it("puts the argv in the policy hash: another command is another policy", () => {
    const one = loaded(loadTeamFileText(DEPLOY, { readStartFile: bytes("x") }));
    const other = loaded(loadTeamFileText(DEPLOY.replace("[sh, deploy/ship.sh]", "[bash, deploy/ship.sh]"), { readStartFile: bytes("x") }));
    expect(other.hashes.policy).not.toBe(one.hashes.policy);
  });

  it("leaves the policy hash of a file without deploy commands as it was", () => {
    const without = loaded(loadTeamFileText(HEAD));
    expect(JSON.parse(without.canonical)).not.toHaveProperty("deploy");
  });

  it("reserves the pinned deploy files: no seat changes what a deploy runs", () => {
    const r = loaded(loadTeamFileText(DEPLOY, { readStartFile: bytes("x") }));
    expect(r.policy.reserved.startFiles).toEqual(["deploy/ship.sh"]);
    expect(effectReservedReason(r.policy.reserved, "deploy/ship.sh")).toBeDefined();
  });

  it("restores from its record with the recorded pins, whatever is on disk now", () => {
    const applied = loaded(loadTeamFileText(DEPLOY, { readStartFile: bytes("v1") }));
    const restored = loaded(loadTeamFileData(JSON.parse(applied.canonical), { startFileHashes: applied.startFiles, readStartFile: bytes("v2") }));
    expect(restored.canonical).toBe(applied.canonical);
    expect(restored.policy.deploys).toEqual(applied.policy.deploys);
  });

  it("shows the owner a deploy command added, removed or re-pinned when the policy is applied", () => {
    const none = loaded(loadTeamFileText(HEAD));
    const v1 = loaded(loadTeamFileText(DEPLOY, { readStartFile: bytes("v1") }));
    const v2 = loaded(loadTeamFileText(DEPLOY, { readStartFile: bytes("v2") }));
    expect(diffPolicies(none.policy, v1.policy).team).toEqual(["deploy command added: staging"]);
    expect(diffPolicies(v1.policy, none.policy).team).toEqual(["deploy command removed: staging"]);
    const repinned = diffPolicies(v1.policy, v2.policy);
    expect(repinned.unchanged).toBe(false);
    expect(repinned.team).toEqual([`deploy command changed: staging (${v1.policy.deploys?.staging?.hash} -> ${v2.policy.deploys?.staging?.hash})`]);
  });

  const refusals: { description: string; yaml: string; rule: string; line: number; fix: RegExp }[] = [
    { description: "an undeclared environment", yaml: `${HEAD}deploy:\n  qa:\n    command: [x]\n`, rule: "teamfile.schema", line: 6, fix: /declare\.envs/ },
    { description: "no command", yaml: `${HEAD}deploy:\n  staging:\n    files: [a.sh]\n`, rule: "teamfile.schema", line: 6, fix: /command: \[program/ },
    { description: "a shell string instead of an argv", yaml: `${HEAD}deploy:\n  staging:\n    command: "sh deploy.sh && rm -rf /"\n`, rule: "teamfile.schema", line: 7, fix: /one `- item` per line/ },
    { description: "an unknown key", yaml: `${HEAD}deploy:\n  staging:\n    command: [x]\n    fiels: [a.sh]\n`, rule: "teamfile.schema", line: 8, fix: /did you mean 'files'/ },
    { description: "an account (act-as) is not supported yet", yaml: `${HEAD}deploy:\n  staging:\n    command: [x]\n    account: owner\n`, rule: "teamfile.unsupported", line: 8, fix: /refuses what it does not enforce/ },
    { description: "a pinned file inside .git", yaml: `${HEAD}deploy:\n  staging:\n    command: [x]\n    files: [.git/hooks/x]\n`, rule: "reserved.object", line: 8, fix: /working tree/ },
    { description: "a deploy map that is not a map", yaml: `${HEAD}deploy: [staging]\n`, rule: "teamfile.schema", line: 5, fix: /command/ },
  ];
  it.each(refusals)("refuses $description, at its line with a fix", ({ yaml, rule, line, fix }) => {
    const found = errors(loadTeamFileText(yaml, { readStartFile: bytes("x") }));
    const hit = found.find((e) => e.rule === rule);
    expect(hit, JSON.stringify(found)).toBeDefined();
    expect(hit?.line).toBe(line);
    expect(hit?.fix).toMatch(fix);
  });

  it("refuses a pinned file that cannot be read", () => {
    const found = errors(loadTeamFileText(DEPLOY, { readStartFile: () => undefined }));
    expect(found.map((e) => [e.rule, e.at])).toEqual([["teamfile.schema", "deploy.staging.files[0]"]]);
  });
});
