import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { expectRefused, initTeam, type LogRecord, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Deploy end to end (issue 9): a real hub, real contained seats of two labs, and a real deploy
 * command — a shell script in the repository, pinned by the owner, that writes what it was
 * given (the sha-256 of every file of its working folder, the artifact, its environment) to a
 * folder outside. The executor pushes, a verifier of the other lab reviews and gates, a merger
 * merges, a deployer deploys the trunk's head; each refusal is checked with its rule.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const SHIP = `#!/bin/sh
set -e
out="$DEPLOY_OUT/$TEAMD_DEPLOY_ENV"
find . -type f | LC_ALL=C sort | while IFS= read -r f; do printf '%s  %s\\n' "$(sha256sum < "$f" | cut -d' ' -f1)" "$f"; done > "$out.files"
printf '%s\\n' "$TEAMD_DEPLOY_ARTIFACT" > "$out.artifact"
env | LC_ALL=C sort > "$out.env"
if [ -f src/FAIL ]; then echo "deploy failing as the tree asks" >&2; exit 3; fi
echo "shipped $TEAMD_DEPLOY_ARTIFACT to $TEAMD_DEPLOY_ENV"
echo "debug: token ghp_0123456789abcdefghijABCDEFGHIJ012345"
`;

const seat = (lab: string, capabilities: string) => `    lab: ${lab}\n    capabilities:\n${capabilities}    start:\n      command: [sleep, "3600"]\n`;
const TEAM_FILE = (out: string) => `version: 1
team: proj
declare:
  branches: [main]
  envs: [staging, prod, qa]
  labs: [anthropic, openai]
review:
  mode: cross-lab
  floor: 1
deploy:
  staging:
    command: [sh, deploy/ship.sh]
    files: [deploy/ship.sh]
    env: { DEPLOY_OUT: "${out}" }
  prod:
    command: [sh, deploy/ship.sh]
    files: [deploy/ship.sh]
    env: { DEPLOY_OUT: "${out}" }
seats:
  exec:
${seat("anthropic", "      read: ~\n      write: { path: src/ }\n")}  rev:
    lab: openai
    roles: [verifier]
    start:
      command: [sleep, "3600"]
  mrg:
${seat("openai", "      read: ~\n      merge: ~\n")}  dep:
${seat("openai", "      read: ~\n      deploy: { env: [staging, prod, qa] }\n")}  narrow:
${seat("openai", "      read: { path: src/ }\n      deploy: { env: [staging] }\n")}`;

describe.runIf(process.platform === "linux")("deploy: the owner's pinned command on a gated artifact", () => {
  let h: TeamdHarness;
  let out: string;
  /** A variable of the daemon's own environment: a deploy command must never see it. */
  const CANARY = "DEPLOY_CANARY_SECRET";

  const refusalRecorded = async (rule: string) =>
    expect(
      (await h.records()).some((r) => r.type === "refusal" && r.action === "deploy" && JSON.stringify(r).includes(rule)),
      rule,
    ).toBe(true);
  /** Push a change on a new branch from the trunk (never carrying an earlier src/FAIL), have it reviewed and gated by the other lab, and merged. */
  const gatedMerge = async (branch: string, file: string, content: string): Promise<{ commit: string; effectId: string }> => {
    const pushed = await h.inSeat(
      "exec",
      `git fetch -q teamd && git checkout -q -B ${branch} teamd/main && mkdir -p src && rm -f src/FAIL && printf '${content}' > ${file} && git add -A && git commit -qm ${branch} && git push -q teamd HEAD:${branch}`,
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    expect((await h.shim("rev", "review", `seat/exec/${branch}`, "--approve")).code).toBe(0);
    const gate = await h.shim("rev", "gate", `seat/exec/${branch}`, "--pass", "--json");
    expect(gate.code, gate.stderr).toBe(0);
    const merged = await h.shim("mrg", "merge", `seat/exec/${branch}`, "--json");
    expect(merged.code, merged.stderr).toBe(0);
    const m = JSON.parse(merged.stdout) as { commit: string; effectId: string };
    expect(m.effectId).toBe((JSON.parse(gate.stdout) as { effectId: string }).effectId);
    return m;
  };
  /** What the script must have seen: the sha-256 of every file of the commit's tree, as `find` names them. */
  const expectedFiles = (commit: string): string => {
    const paths = h.hubGit("ls-tree", "-r", "--name-only", commit).split("\n").sort();
    const lines = paths.map(
      (p) =>
        `${createHash("sha256")
          .update(execFileSync("git", ["--git-dir", h.hub, "cat-file", "blob", `${commit}:${p}`]))
          .digest("hex")}  ./${p}`,
    );
    return lines.sort((a, b) => (a.slice(66) < b.slice(66) ? -1 : 1)).join("\n") + "\n";
  };
  const rpcDeploy = async (requestId: string, environment: string) => {
    const client = createRpcClient(ShimService, h.seatSocket("dep"), { deadlineMs: 60_000 });
    try {
      return await client.deploy({ requestId, env: environment });
    } finally {
      client.close();
    }
  };

  beforeAll(async () => {
    h = await initTeam("teamd-deploy-", {
      files: { "README.md": "hello\n", "src/a.txt": "a\n", "deploy/ship.sh": SHIP },
      daemonEnv: { [CANARY]: "canary-value-never-shown" },
    });
    out = join(h.dir, "out");
    execFileSync("mkdir", ["-p", out]);
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE(out));
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("refuses an artifact no pass covers: the root commit (deploy.artifact), an owner's commit on the trunk (pass.missing)", async () => {
    await expectRefused(h.shim("dep", "deploy", "staging"), "deploy.artifact");
    const git = (...args: string[]) => execFileSync("git", ["-c", "user.name=o", "-c", "user.email=o@x", ...args], { cwd: h.repo, encoding: "utf8" });
    writeFileSync(join(h.repo, "README.md"), "hello again\n");
    git("commit", "-qam", "owner edit");
    git("push", "-q", "teamd", "main");
    await expectRefused(h.shim("dep", "deploy", "staging"), "pass.missing");
    await refusalRecorded("pass.missing");
    expect(existsSync(join(out, "staging.artifact"))).toBe(false);
  });

  it("deploys the gated trunk head to a declared env: the command ran on exactly the gated tree, with a minimal environment", async () => {
    const merged = await gatedMerge("fix", "src/x.txt", "x\\n");
    const deployed = await h.shim("dep", "deploy", "staging", "--json");
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
    const reply = JSON.parse(deployed.stdout) as {
      effectId: string;
      artifact: string;
      tree: string;
      exitCode: number;
      outputTail: string;
      intentSeq: number;
      outcomeSeq: number;
    };
    expect(reply).toMatchObject({ effectId: merged.effectId, artifact: merged.commit, exitCode: 0 });
    expect(reply.tree).toBe(h.hubGit("rev-parse", `${merged.commit}^{tree}`));
    expect(reply.outputTail).toContain(`shipped ${merged.commit} to staging`);
    // Key shapes in the command's output are scrubbed before the seat sees them (issue 24, item 10).
    expect(reply.outputTail).not.toContain("ghp_0123456789abcdefghij");
    // A deployer whose read scope is bounded gets a summary, never the output: the command ran on
    // the whole artifact (README.md, deploy/ included), which its read scope does not cover.
    const narrow = await h.shim("narrow", "deploy", "staging", "--json");
    expect(narrow.code, narrow.stdout + narrow.stderr).toBe(0);
    const narrowReply = JSON.parse(narrow.stdout) as { outputTail: string; exitCode: number };
    expect(narrowReply.exitCode).toBe(0);
    expect(narrowReply.outputTail).not.toContain("shipped");
    expect(narrowReply.outputTail).toMatch(/^\(\d+ bytes of output withheld: .*read scope does not cover the whole repository\)$/);
    expect(readFileSync(join(out, "staging.artifact"), "utf8").trim()).toBe(merged.commit);
    expect(readFileSync(join(out, "staging.files"), "utf8")).toBe(expectedFiles(merged.commit));
    // Nothing of the daemon's environment, nothing but what teamd and the owner bound.
    const seen = readFileSync(join(out, "staging.env"), "utf8");
    expect(seen).not.toContain(CANARY);
    expect(seen).not.toContain("TEAMD_HOME");
    expect(seen).toContain(`TEAMD_DEPLOY_EFFECT_ID=${merged.effectId}`);
    expect(seen).toMatch(/^PATH=\/usr\/local\/bin:\/usr\/bin:\/bin$/m);
    // Intent and outcome carry the artifact's effect id; the output is in neither.
    const log = await h.records();
    const intent = log.find((r) => r.type === "intent" && r.action === "deploy" && r.seq === reply.intentSeq) as LogRecord;
    expect(intent.effectId).toBe(merged.effectId);
    expect(log.find((r) => r.type === "outcome" && r.intentSeq === intent.seq)).toMatchObject({ effectId: merged.effectId, result: "done" });
    expect(JSON.stringify(log)).not.toContain("shipped ");
    const verify = await h.run(["verify", "--json"]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    // The deploy folder under TEAMD_HOME is gone with the outcome.
    expect(execFileSync("ls", ["-A", join(h.home, "deploys")], { encoding: "utf8" }).trim()).toBe("");
  }, 120_000);

  it("refuses, each recorded: an undeclared env, an env without a command, a seat without deploy, an account on a command", async () => {
    await expectRefused(h.shim("dep", "deploy", "nowhere"), "scope.env");
    await expectRefused(h.shim("dep", "deploy", "qa"), "deploy.command");
    await expectRefused(h.shim("mrg", "deploy", "staging"), "authority.none");
    // staging runs a command: no owner's account is used, so naming one is refused, not ignored.
    await expectRefused(h.shim("dep", "deploy", "staging", "--as", "owner-github"), "act-as.unmediated");
    for (const rule of ["scope.env", "deploy.command", "authority.none", "act-as.unmediated"]) await refusalRecorded(rule);
  }, 120_000);

  it("refuses a deploy whose pinned script changed on disk since teamd apply (deploy.unpinned)", async () => {
    const script = join(h.repo, "deploy/ship.sh");
    writeFileSync(script, SHIP.replace("set -e", 'set -e\ntouch "$DEPLOY_OUT/tampered"'));
    try {
      await expectRefused(h.shim("dep", "deploy", "prod"), "deploy.unpinned");
      await refusalRecorded("deploy.unpinned");
      expect(existsSync(join(out, "tampered"))).toBe(false);
      expect(existsSync(join(out, "prod.artifact"))).toBe(false);
    } finally {
      writeFileSync(script, SHIP);
    }
  });

  it("refuses a deploy whose pinned script is reached through a symbolic link in the owner's tree, even with the pinned bytes (deploy.unpinned)", async () => {
    // The owner's deploy/ becomes a link to a folder outside the repository (as a `deploy`
    // symlink a seat got merged into the trunk would, after the owner's pull), holding the very
    // bytes that were pinned: the daemon must not read a host file as the pinned script.
    const folder = join(h.repo, "deploy");
    const outside = join(h.dir, "outside-deploy");
    renameSync(folder, outside);
    symlinkSync(outside, folder);
    try {
      const refused = await expectRefused(h.shim("dep", "deploy", "prod"), "deploy.unpinned");
      expect(refused.stderr).toContain("deploy/ship.sh is under a symbolic link (deploy), which teamd does not follow");
      expect(refused.stderr).toContain("the owner replaces the link with the file or folder itself");
      await refusalRecorded("deploy.unpinned");
      expect(existsSync(join(out, "prod.artifact"))).toBe(false);
    } finally {
      unlinkSync(folder);
      renameSync(outside, folder);
    }
  });

  it("refuses a merge touching the pinned deploy script (reserved.object), even one the owner put on a seat branch", async () => {
    const git = (...args: string[]) => execFileSync("git", ["-c", "user.name=o", "-c", "user.email=o@x", ...args], { cwd: h.repo, encoding: "utf8" });
    git("checkout", "-q", "-b", "evil", "main");
    git("pull", "-q", "--ff-only", "teamd", "main");
    writeFileSync(join(h.repo, "deploy/ship.sh"), `${SHIP}touch "$DEPLOY_OUT/evil"\n`);
    git("commit", "-qam", "ship more");
    git("push", "-q", "teamd", "evil:seat/exec/evil");
    git("checkout", "-q", "main");
    writeFileSync(join(h.repo, "deploy/ship.sh"), SHIP);
    const trunk = h.hubGit("rev-parse", "refs/heads/main");
    await expectRefused(h.shim("mrg", "merge", "seat/exec/evil"), "reserved.object");
    expect(h.hubGit("rev-parse", "refs/heads/main")).toBe(trunk);
  }, 120_000);

  it("a failed deploy (non-zero exit) is a refused outcome that voids the pass: a second env is refused (pass.voided)", async () => {
    const merged = await gatedMerge("failing", "src/FAIL", "fail\\n");
    const failed = await expectRefused(h.shim("dep", "deploy", "staging"), "deploy.failed");
    // The seat sees the end of the output; the ledger records the exit status only.
    expect(failed.stderr).toContain("deploy failing as the tree asks");
    const log = await h.records();
    const intent = log.filter((r) => r.type === "intent" && r.action === "deploy").at(-1) as LogRecord;
    expect(intent.effectId).toBe(merged.effectId);
    const outcome = log.find((r) => r.type === "outcome" && r.intentSeq === intent.seq) as LogRecord;
    expect(outcome).toMatchObject({ effectId: merged.effectId, result: "refused" });
    expect(JSON.stringify(log)).not.toContain("deploy failing as the tree asks");
    await expectRefused(h.shim("dep", "deploy", "prod"), "pass.voided");
    await refusalRecorded("pass.voided");
    expect(existsSync(join(out, "prod.artifact"))).toBe(false);
  }, 120_000);

  it("a daemon killed after the intent leaves the outcome unknown: the env is blocked, a retry returns that, and only the owner's resolution unblocks it", async () => {
    const crashed = await gatedMerge("crash", "src/c.txt", "c\\n");
    await h.stopDaemon();
    await h.startDaemon({ env: { TEAMD_TEST_CRASH_IN_DEPLOY: "1" } });
    expect((await h.run(["start", "--team", "proj"])).code).toBe(0);
    await expect(rpcDeploy("deploy-crash-1", "prod")).rejects.toThrow();
    expect(existsSync(join(out, "prod.artifact"))).toBe(false);

    // The killed daemon left its prepared deploy folder; the next one removes it at start.
    expect(execFileSync("ls", ["-A", join(h.home, "deploys")], { encoding: "utf8" }).trim()).not.toBe("");
    await h.startDaemon();
    expect(execFileSync("ls", ["-A", join(h.home, "deploys")], { encoding: "utf8" }).trim()).toBe("");
    expect((await h.run(["start", "--team", "proj"])).code).toBe(0);
    let log = await h.records();
    const intent = log.filter((r) => r.type === "intent" && r.action === "deploy").at(-1) as LogRecord;
    expect(intent.effectId).toBe(crashed.effectId);
    expect(log.some((r) => r.type === "outcome" && r.intentSeq === intent.seq && r.result === "unknown")).toBe(true);
    // The retry is never re-dispatched: it answers with the recorded state.
    await expect(rpcDeploy("deploy-crash-1", "prod")).rejects.toThrow(/ledger\.unknown-outcome/);
    // The unknown voids the artifact's pass everywhere, and blocks prod for any artifact.
    await expectRefused(h.shim("dep", "deploy", "staging"), "pass.voided");
    const next = await gatedMerge("next", "src/n.txt", "n\\n");
    await expectRefused(h.shim("dep", "deploy", "prod"), "ledger.unknown-outcome");
    expect(existsSync(join(out, "prod.artifact"))).toBe(false);
    expect((await h.shim("dep", "deploy", "staging")).code).toBe(0);

    // The owner, who can look at prod, says what happened: accepted as done.
    const resolved = await h.run(["ledger", "resolve", String(intent.seq), "--team", "proj", "--done"]);
    expect(resolved.code, resolved.stdout + resolved.stderr).toBe(0);
    const again = await rpcDeploy("deploy-crash-1", "prod");
    expect(again.act?.effectId).toBe(crashed.effectId);
    expect(again.outputTail).toBe("");
    expect(existsSync(join(out, "prod.artifact"))).toBe(false);
    const shipped = await h.shim("dep", "deploy", "prod", "--json");
    expect(shipped.code, shipped.stdout + shipped.stderr).toBe(0);
    expect(readFileSync(join(out, "prod.artifact"), "utf8").trim()).toBe(next.commit);
    log = await h.records();
    expect(log.some((r) => r.type === "reconcile" && String(r.action).includes("accept-done"))).toBe(true);
    expect((await h.run(["verify", "--json"])).code).toBe(0);
  }, 240_000);
});
