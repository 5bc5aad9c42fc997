import { describe, expect, it } from "vitest";
import { type LoadResult, loadTeamFileData, loadTeamFileText } from "../../src/teamfile/index.js";
import { diffPolicies, effectReservedReason } from "../../src/kernel/index.js";

/** The owner's deploy command per environment (§3, §10): its shape, its errors, its pins. */
const HEAD = "version: 1\nteam: web\ndeclare:\n  envs: [staging, prod]\n";
const DEPLOY = `${HEAD}deploy:\n  staging:\n    command: [sh, deploy/ship.sh]\n    files: [deploy/ship.sh]\n    env: { TARGET: staging.example.invalid }\n`;
const bytes = (text: string) => () => new TextEncoder().encode(text);
const PUSH_HEAD = "version: 1\nteam: web\ndeclare:\n  envs: [staging, prod]\n  accounts: [gh:bot]\n";
const PUSH = `${PUSH_HEAD}deploy:\n  prod:\n    push: { url: "https://git.example/acme/web.git", branch: main }\n    account: gh:bot\n`;

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

  it("reads a push to the owner's remote under a declared account, in the policy hash, shown on apply", () => {
    const r = loaded(loadTeamFileText(PUSH));
    expect(r.policy.pushes?.prod).toEqual({ env: "prod", url: "https://git.example/acme/web.git", branch: "main", account: "gh:bot" });
    expect(r.policy.deploys?.prod).toBeUndefined();
    expect(JSON.parse(r.canonical).deploy).toEqual({ prod: { push: { url: "https://git.example/acme/web.git", branch: "main" }, account: "gh:bot" } });
    const other = loaded(loadTeamFileText(PUSH.replace("branch: main", "branch: release")));
    expect(other.hashes.policy).not.toBe(r.hashes.policy);
    const restored = loaded(loadTeamFileData(JSON.parse(r.canonical), { startFileHashes: r.startFiles, readStartFile: bytes("x") }));
    expect(restored.canonical).toBe(r.canonical);
    const none = loaded(loadTeamFileText(PUSH_HEAD));
    expect(diffPolicies(none.policy, r.policy).team).toEqual(["deploy push added: prod -> https://git.example/acme/web.git main as gh:bot"]);
    expect(diffPolicies(r.policy, other.policy).team).toEqual([
      "deploy push changed: prod: https://git.example/acme/web.git main as gh:bot -> https://git.example/acme/web.git release as gh:bot",
    ]);
  });

  it("takes plain http to a loopback remote only (the tests' server)", () => {
    const r = loaded(loadTeamFileText(PUSH.replace("https://git.example/", "http://127.0.0.1:8080/")));
    expect(r.policy.pushes?.prod?.url).toBe("http://127.0.0.1:8080/acme/web.git");
  });

  const refusals: { description: string; yaml: string; rule: string; line: number; fix: RegExp }[] = [
    { description: "an undeclared environment", yaml: `${HEAD}deploy:\n  qa:\n    command: [x]\n`, rule: "teamfile.schema", line: 6, fix: /declare\.envs/ },
    { description: "no command", yaml: `${HEAD}deploy:\n  staging:\n    files: [a.sh]\n`, rule: "teamfile.schema", line: 6, fix: /command: \[program/ },
    {
      description: "a shell string instead of an argv",
      yaml: `${HEAD}deploy:\n  staging:\n    command: "sh deploy.sh && rm -rf /"\n`,
      rule: "teamfile.schema",
      line: 7,
      fix: /one `- item` per line/,
    },
    {
      description: "an unknown key",
      yaml: `${HEAD}deploy:\n  staging:\n    command: [x]\n    fiels: [a.sh]\n`,
      rule: "teamfile.schema",
      line: 8,
      fix: /did you mean 'files'/,
    },
    {
      description: "an account beside a command (a command gets no credential)",
      yaml: `${HEAD}deploy:\n  staging:\n    command: [x]\n    account: owner\n`,
      rule: "teamfile.schema",
      line: 8,
      fix: /make the environment a push/,
    },
    {
      description: "a push without an account",
      yaml: `${PUSH_HEAD}deploy:\n  prod:\n    push: { url: "https://git.example/acme/web.git", branch: main }\n`,
      rule: "teamfile.schema",
      line: 7,
      fix: /account: <a name of declare.accounts>/,
    },
    {
      description: "a push under an undeclared account",
      yaml: `${PUSH_HEAD}deploy:\n  prod:\n    push: { url: "https://git.example/acme/web.git", branch: main }\n    account: gh:other\n`,
      rule: "teamfile.schema",
      line: 9,
      fix: /declare\.accounts/,
    },
    {
      description: "a push over plain http to a remote host",
      yaml: `${PUSH_HEAD}deploy:\n  prod:\n    push: { url: "http://git.example/acme/web.git", branch: main }\n    account: gh:bot\n`,
      rule: "teamfile.schema",
      line: 8,
      fix: /https URL/,
    },
    {
      description: "a credential in the remote's URL",
      yaml: `${PUSH_HEAD}deploy:\n  prod:\n    push: { url: "https://bot:hunter22@git.example/acme/web.git", branch: main }\n    account: gh:bot\n`,
      rule: "teamfile.schema",
      line: 8,
      fix: /no credential/,
    },
    {
      description: "a push with a command beside it",
      yaml: `${PUSH_HEAD}deploy:\n  prod:\n    push: { url: "https://git.example/acme/web.git", branch: main }\n    account: gh:bot\n    command: [x]\n`,
      rule: "teamfile.unsupported",
      line: 10,
      fix: /second environment/,
    },
    {
      description: "a push to a branch pattern",
      yaml: `${PUSH_HEAD}deploy:\n  prod:\n    push: { url: "https://git.example/acme/web.git", branch: "release/*" }\n    account: gh:bot\n`,
      rule: "teamfile.schema",
      line: 8,
      fix: /branch: main/,
    },
    {
      description: "a pinned file inside .git",
      yaml: `${HEAD}deploy:\n  staging:\n    command: [x]\n    files: [.git/hooks/x]\n`,
      rule: "reserved.object",
      line: 8,
      fix: /working tree/,
    },
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
