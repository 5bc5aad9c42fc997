import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient } from "../../src/rpc/index.js";
import type { DaemonProcess } from "../support/programs.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { createHarness, expectRefused, type LogRecord, type TeamdHarness } from "../support/teamd-harness.js";
import { filesUnder } from "../support/files-under.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { holdsCanary, startFakeGithub, type FakeGithub } from "../broker/fake-github.js";

/**
 * act-as end to end (issue 11, §3, §11): a real daemon, real contained seats of two labs, the
 * real SQLite ledger, a real git smart-HTTP remote on loopback (git http-backend behind
 * node:http, Basic auth with the account's canary token) and a fake GitHub API on loopback.
 *
 * Publish: a gated change, merged onto the trunk, is pushed by `teamd-shim deploy github` to
 * the owner's remote branch under the declared account — the daemon pushes with the account's
 * credential; the seat never holds it. Refused, each recorded: a seat without act-as, one with
 * act-as over another account, an artifact no pass covers, an account without a credential; a
 * credential the remote refuses is a refused outcome (deploy.push) that voids the pass; a daemon
 * killed mid-push leaves the outcome unknown.
 *
 * Comment: `teamd-shim broker comment` posts under the account's token (GitHub) or appends to
 * the task (file tracker); recorded by length and hash, never the text.
 *
 * Then every byte the run produced is searched for each token (raw, base64, hex, URL-encoded).
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

/** The push account's token, in the accounts file. No known key shape: only teamd's handling keeps it out. */
const GIT_TOKEN = "acct-git-canary-5d2e9b7c41f08a36";
/** The comment account's token, in the daemon's environment only (tokenEnv). */
const GH_TOKEN = "acct-gh-canary-93c1a7e0b25d6f48";
/** The tracker's own token: a comment must not be made with it. */
const TRACKER_TOKEN = "trk-canary-0e4b71c95a2d38f6";

const seat = (lab: string, capabilities: string) => `    lab: ${lab}\n    capabilities:\n${capabilities}    start:\n      command: [sleep, "3600"]\n`;
const TEAM_FILE = (remote: string) => `version: 1
team: proj
declare:
  branches: [main]
  envs: [github, mirror]
  accounts: ["git:release", "git:other", "gh:bot"]
  tasks: ["gh:web", notes]
  labs: [anthropic, openai]
review:
  mode: cross-lab
  floor: 1
trackers:
  "gh:web": web
deploy:
  github:
    push: { url: "${remote}/web.git", branch: main }
    account: "git:release"
  mirror:
    push: { url: "${remote}/web.git", branch: mirror }
    account: "git:other"
seats:
  exec:
${seat("anthropic", "      read: ~\n      write: { path: src/ }\n")}  rev:
    lab: openai
    roles: [verifier]
    start:
      command: [sleep, "3600"]
  mrg:
${seat("openai", "      read: ~\n      merge: ~\n")}  pub:
${seat("openai", `      read: ~\n      deploy: { env: [github, mirror] }\n      act-as: { account: ["git:release", "git:other"] }\n`)}  noas:
${seat("openai", "      read: ~\n      deploy: { env: [github] }\n")}  otheras:
${seat("openai", `      read: ~\n      deploy: { env: [github] }\n      act-as: { account: "git:other" }\n`)}  talk:
${seat("anthropic", `      read: ~\n      use-broker: { task: ["gh:web", notes] }\n      act-as: { account: "gh:bot" }\n`)}  talknoas:
${seat("anthropic", `      read: ~\n      use-broker: { task: ["gh:web", notes] }\n`)}`;

describe.runIf(process.platform === "linux")("act-as: the owner's account, used only through a command the daemon performs", () => {
  let h: TeamdHarness;
  let daemon: DaemonProcess;
  let server: GitHttpServer;
  let gh: FakeGithub;
  let remote: string;
  let accounts: string;
  let daemonOut = "";
  const produced: string[] = [];

  const remoteRef = (branch: string) => {
    try {
      return execFileSync("git", ["--git-dir", remote, "rev-parse", "--verify", "--quiet", `refs/heads/${branch}`], { encoding: "utf8" }).trim();
    } catch {
      return "";
    }
  };
  const refusalRecorded = async (action: string, rule: string) =>
    expect(
      (await h.records()).some((r) => r.type === "refusal" && r.action === action && JSON.stringify(r).includes(rule)),
      rule,
    ).toBe(true);
  const writeAccounts = (gitToken: string) => {
    writeFileSync(accounts, JSON.stringify({ accounts: { "git:release": { token: gitToken }, "gh:bot": { tokenEnv: "TEAMD_TEST_GH_BOT" } } }), { mode: 0o600 });
    chmodSync(accounts, 0o600);
  };
  /** A change on a new branch, reviewed and gated by the other lab, merged: the trunk's new head. */
  const gatedMerge = async (branch: string, file: string, content: string): Promise<{ commit: string; effectId: string }> => {
    const pushed = await h.inSeat(
      "exec",
      `git fetch -q teamd && git checkout -q -B ${branch} teamd/main && mkdir -p src && printf '${content}' > ${file} && git add -A && git commit -qm ${branch} && git push -q teamd HEAD:${branch}`,
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    expect((await h.shim("rev", "review", `seat/exec/${branch}`, "--approve")).code).toBe(0);
    expect((await h.shim("rev", "gate", `seat/exec/${branch}`, "--pass")).code).toBe(0);
    const merged = await h.shim("mrg", "merge", `seat/exec/${branch}`, "--json");
    expect(merged.code, merged.stderr).toBe(0);
    return JSON.parse(merged.stdout) as { commit: string; effectId: string };
  };
  /** The ledger's files, raw (database and WAL): a record's payload fields are there in clear, `teamd log` shows none. */
  const ledgerBytes = (): Buffer =>
    Buffer.concat(
      filesUnder(h.home)
        .filter((p) => p.includes("ledger"))
        .map((p) => readFileSync(p)),
    );
  const lastDeploy = async () => {
    const log = await h.records();
    const intent = log.filter((r) => r.type === "intent" && r.action === "deploy").at(-1) as LogRecord;
    return { intent, outcome: log.find((r) => r.type === "outcome" && r.intentSeq === intent.seq) };
  };

  beforeAll(async () => {
    h = await createHarness("teamd-actas-", {
      files: { "README.md": "hello\n", "src/a.txt": "a\n" },
      daemonEnv: { TEAMD_TEST_GH_BOT: GH_TOKEN },
      onResult: (r) => produced.push(r.stdout, r.stderr),
    });
    const remotes = join(h.dir, "remotes");
    mkdirSync(remotes);
    remote = join(remotes, "web.git");
    execFileSync("git", ["init", "-q", "--bare", "-b", "main", remote]);
    server = await startGitHttpServer({ root: remotes, token: GIT_TOKEN });
    gh = await startFakeGithub({ token: TRACKER_TOKEN, owner: "acme", repo: "web", commentTokens: [GH_TOKEN] });
    // The owner's configuration: trackers and accounts, 0600 files under TEAMD_HOME, outside every seat.
    mkdirSync(join(h.home, "broker", "tasks", "proj", "notes"), { recursive: true, mode: 0o700 });
    const trackers = join(h.home, "broker", "trackers.json");
    writeFileSync(trackers, JSON.stringify({ trackers: { web: { kind: "github", repo: "acme/web", api: gh.url, token: TRACKER_TOKEN } } }), { mode: 0o600 });
    chmodSync(trackers, 0o600);
    writeFileSync(join(h.home, "broker/tasks/proj/notes/login.md"), "---\ntitle: Fix the login redirect\n---\nIt loops.\n");
    accounts = join(h.home, "broker", "accounts.json");
    writeAccounts(GIT_TOKEN);
    daemon = await h.startDaemon();
    daemon.child.stdout?.on("data", (d: Buffer | string) => (daemonOut += String(d)));
    await h.ok(["init", "--yes"]);
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE(server.url));
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);

  afterAll(async () => {
    await h?.cleanup();
    await server?.close();
    await gh?.close();
  });

  it("refuses an artifact no gate pass covers (the owner's own commit on the trunk): nothing reaches the remote", async () => {
    const git = (...args: string[]) => execFileSync("git", ["-c", "user.name=o", "-c", "user.email=o@x", ...args], { cwd: h.repo, encoding: "utf8" });
    writeFileSync(join(h.repo, "README.md"), "hello again\n");
    git("commit", "-qam", "owner edit");
    git("push", "-q", "teamd", "main");
    await expectRefused(h.shim("pub", "deploy", "github"), "pass.missing");
    await refusalRecorded("deploy", "pass.missing");
    expect(remoteRef("main")).toBe("");
    expect(server.seen.length).toBe(0);
  }, 120_000);

  it("pushes the gated trunk to the owner's remote branch under the declared account; recorded, the credential only in the header", async () => {
    const merged = await gatedMerge("feature", "src/f.txt", "f\\n");
    const r = await h.shim("pub", "deploy", "github", "--as", "git:release", "--json");
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const reply = JSON.parse(r.stdout) as { artifact: string; effectId: string; pushedTo: string; account: string };
    expect(reply).toMatchObject({ artifact: merged.commit, effectId: merged.effectId, pushedTo: `${server.url}/web.git main`, account: "git:release" });
    expect(remoteRef("main")).toBe(merged.commit);
    expect(h.hubGit("rev-parse", "refs/heads/main")).toBe(merged.commit);
    // The daemon pushed with the account's token, as HTTP Basic; no process held it on its command line.
    expect(server.seen.some((s) => s.authorized && s.method === "POST" && s.path.endsWith("/git-receive-pack"))).toBe(true);
    expect(server.seen.filter((s) => s.authorized).every((s) => s.user === "x-access-token")).toBe(true);
    expect(server.seen.every((s) => s.argvHolding === 0)).toBe(true);
    const { intent, outcome } = await lastDeploy();
    expect(intent.effectId).toBe(merged.effectId);
    // The intent names the remote, the branch and the account (the owner's, from the team file).
    const recorded = ledgerBytes();
    for (const field of [`${server.url}/web.git`, "git:release"]) expect(recorded.includes(field), field).toBe(true);
    expect(outcome).toMatchObject({ result: "done" });
    // Without --as, the environment's own account is used (the owner's declaration decides it).
    expect((await h.shim("pub", "deploy", "github")).code).toBe(0);
  }, 180_000);

  it("refuses, each recorded: a seat without act-as, act-as over another account, --as naming another account, an account with no credential", async () => {
    const before = remoteRef("main");
    const seen = server.seen.length;
    await expectRefused(h.shim("noas", "deploy", "github"), "authority.none");
    await expectRefused(h.shim("otheras", "deploy", "github"), "scope.account");
    await expectRefused(h.shim("pub", "deploy", "github", "--as", "git:other"), "act-as.required");
    // mirror pushes under git:other: declared, act-as held, and no credential configured.
    const missing = await expectRefused(h.shim("pub", "deploy", "mirror"), "act-as.credential");
    expect(missing.stderr).toContain("account 'git:other' has no credential");
    for (const rule of ["authority.none", "scope.account", "act-as.required", "act-as.credential"]) await refusalRecorded("deploy", rule);
    expect(remoteRef("main")).toBe(before);
    expect(remoteRef("mirror")).toBe("");
    expect(server.seen.length).toBe(seen);
  }, 120_000);

  it("refuses with act-as.credential, naming chmod 600, while the accounts file is readable by others", async () => {
    chmodSync(accounts, 0o644);
    try {
      const r = await expectRefused(h.shim("pub", "deploy", "github"), "act-as.credential");
      expect(r.stderr).toContain(`chmod 600 ${accounts}`);
    } finally {
      chmodSync(accounts, 0o600);
    }
  }, 60_000);

  it("uses the credential only for the identity the team file signs (accounts:): one the accounts file names for another identity, or for none, is refused", async () => {
    const signed = TEAM_FILE(server.url).replace("trackers:\n", 'accounts:\n  "git:release": acme-bot\ntrackers:\n');
    writeFileSync(join(h.repo, "teamd.yaml"), signed);
    await h.ok(["apply", "--yes"]);
    try {
      await gatedMerge("identity", "src/i.txt", "i\n");
      const before = remoteRef("main");
      const seen = server.seen.length;
      const unnamed = await expectRefused(h.shim("pub", "deploy", "github"), "act-as.credential");
      expect(unnamed.stderr).toContain('the owner adds "identity": "acme-bot"');
      writeFileSync(
        accounts,
        JSON.stringify({ accounts: { "git:release": { token: GIT_TOKEN, identity: "someone-else" }, "gh:bot": { tokenEnv: "TEAMD_TEST_GH_BOT" } } }),
        { mode: 0o600 },
      );
      const other = await expectRefused(h.shim("pub", "deploy", "github"), "act-as.credential");
      expect(other.stderr).toContain("its credential is for identity 'someone-else', and the team file's accounts: names 'acme-bot'");
      expect(remoteRef("main")).toBe(before);
      expect(server.seen.length).toBe(seen);
    } finally {
      writeAccounts(GIT_TOKEN);
      writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE(server.url));
      await h.ok(["apply", "--yes"]);
    }
  }, 180_000);

  it("a credential the remote refuses is a refused outcome (deploy.push) that voids the pass; the remote is unchanged", async () => {
    const merged = await gatedMerge("second", "src/s.txt", "s\\n");
    const before = remoteRef("main");
    writeAccounts("wrong-token-for-the-remote-000");
    try {
      const r = await expectRefused(h.shim("pub", "deploy", "github"), "deploy.push");
      expect(r.stderr).toContain("credential refused");
    } finally {
      writeAccounts(GIT_TOKEN);
    }
    expect(remoteRef("main")).toBe(before);
    const { intent, outcome } = await lastDeploy();
    expect(intent.effectId).toBe(merged.effectId);
    expect(outcome).toMatchObject({ result: "refused" });
    // The failed publish voided the pass, as a failed deploy command does (§15).
    await expectRefused(h.shim("pub", "deploy", "github"), "pass.voided");
  }, 180_000);

  it("a daemon killed after the intent leaves the push's outcome unknown; the environment is blocked", async () => {
    await gatedMerge("third", "src/t.txt", "t\\n");
    const before = remoteRef("main");
    await h.stopDaemon();
    daemon = await h.startDaemon({ env: { TEAMD_TEST_CRASH_IN_DEPLOY: "1" } });
    expect((await h.run(["start", "--team", "proj"])).code).toBe(0);
    const client = createRpcClient(ShimService, h.seatSocket("pub"), { deadlineMs: 60_000 });
    try {
      await expect(client.deploy({ requestId: "push-crash-1", env: "github" })).rejects.toThrow();
    } finally {
      client.close();
    }
    daemon = await h.startDaemon();
    daemon.child.stdout?.on("data", (d: Buffer | string) => (daemonOut += String(d)));
    expect((await h.run(["start", "--team", "proj"])).code).toBe(0);
    const { outcome } = await lastDeploy();
    expect(outcome).toMatchObject({ result: "unknown" });
    // The unknown voids the artifact's pass, and blocks the environment for any other artifact.
    await expectRefused(h.shim("pub", "deploy", "github"), "pass.voided");
    await gatedMerge("fourth", "src/u.txt", "u\\n");
    await expectRefused(h.shim("pub", "deploy", "github"), "ledger.unknown-outcome");
    expect(remoteRef("main")).toBe(before);
  }, 240_000);

  it("comments on a GitHub issue under the account's token (never the tracker's), recorded by length and hash only", async () => {
    const text = "Picked this up: the redirect loops on /login. -- a seat";
    // Straight on the seat's socket, as teamd-shim sends it: `teamd exec` (the owner's tool) records
    // its own command line in a notice, so a text given there as -m would be in the ledger by the owner's act.
    const client = createRpcClient(ShimService, h.seatSocket("talk"), { deadlineMs: 60_000 });
    let reply;
    try {
      reply = await client.broker({ requestId: "comment-gh-1", operation: "comment", task: "gh:web", id: "2", asAccount: "gh:bot", body: text });
    } finally {
      client.close();
    }
    produced.push(JSON.stringify(reply, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v)));
    expect(reply.tasks.map((t) => t.id)).toEqual(["2"]);
    expect(gh.comments).toHaveLength(1);
    expect(gh.comments[0]).toMatchObject({ issue: 2, body: text, authorization: `Bearer ${GH_TOKEN}` });
    const log = await h.records();
    const intent = log.find((x) => x.type === "intent" && x.action === "broker.comment") as LogRecord;
    expect(log.find((x) => x.type === "outcome" && x.intentSeq === intent.seq)).toMatchObject({ result: "done" });
    // The record holds the account and the text's hash — and not the text.
    const recorded = ledgerBytes();
    expect(recorded.includes("gh:bot")).toBe(true);
    expect(recorded.includes(createHash("sha256").update(text).digest("hex"))).toBe(true);
    expect(recorded.includes("redirect loops")).toBe(false);
    expect(JSON.stringify(log)).not.toContain("redirect loops");
  }, 60_000);

  it("comments on a file tracker's task: appended under a heading naming the account and the seat", async () => {
    const r = await h.run([
      "exec",
      "talk@proj",
      "--",
      "sh",
      "-c",
      "printf 'Found it: a missing trailing slash.\\n' > /tmp/comment.txt && teamd-shim broker comment notes login --as gh:bot --file /tmp/comment.txt",
    ]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const task = readFileSync(join(h.home, "broker/tasks/proj/notes/login.md"), "utf8");
    expect(task).toBe("---\ntitle: Fix the login redirect\n---\nIt loops.\n\n### Comment as gh:bot (from proj/talk)\n\nFound it: a missing trailing slash.\n");
  }, 60_000);

  it("refuses a comment, each recorded: no act-as, act-as over another account, a key-shaped text, an empty text", async () => {
    const posted = gh.comments.length;
    await expectRefused(h.shim("talknoas", "broker", "comment", "gh:web", "1", "--as", "gh:bot", "-m", "hi"), "authority.none");
    await expectRefused(h.shim("talk", "broker", "comment", "gh:web", "1", "--as", "git:release", "-m", "hi"), "scope.account");
    await expectRefused(h.shim("talk", "broker", "comment", "gh:web", "1", "--as", "gh:bot", "-m", `key: ghp_${"B".repeat(36)}`), "secret.shape");
    await expectRefused(h.shim("talk", "broker", "comment", "gh:web", "1", "--as", "gh:bot", "-m", "  "), "request.malformed");
    for (const rule of ["authority.none", "scope.account", "secret.shape"]) await refusalRecorded("broker.comment", rule);
    expect(gh.comments.length).toBe(posted);
  }, 120_000);

  it("canaries: no token in any reply, ledger byte, daemon log, seat home or repository — everything the run produced is searched", async () => {
    const verify = await h.run(["verify", "--json"]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    const seatEnv = await h.run(["exec", "pub@proj", "--", "env"]);
    expect(seatEnv.code).toBe(0);
    const files = filesUnder(h.home).filter((p) => p !== accounts && p !== join(h.home, "broker/trackers.json"));
    const ledgerFiles = files.filter((f) => f.includes("ledger"));
    // The search reads real record bytes: the ledger's files hold the publish and comment records.
    expect(Buffer.concat(ledgerFiles.map((f) => readFileSync(f))).includes("git:release")).toBe(true);
    expect(
      files.some((f) => f.includes("/seats/") || f.includes("seat")),
      "seat homes are searched",
    ).toBe(true);
    const basic = Buffer.from(`x-access-token:${GIT_TOKEN}`).toString("base64");
    for (const f of files) {
      const data = readFileSync(f);
      for (const token of [GIT_TOKEN, GH_TOKEN, TRACKER_TOKEN]) expect(holdsCanary(data, token), `${f} holds ${token}`).toBeUndefined();
      expect(data.includes(basic), f).toBe(false);
    }
    const outputs = [...produced, daemon.stderr(), daemonOut].join("\n");
    expect(outputs.length).toBeGreaterThan(0);
    for (const token of [GIT_TOKEN, GH_TOKEN, TRACKER_TOKEN]) expect(holdsCanary(outputs, token), token).toBeUndefined();
    expect(outputs).not.toContain(basic);
  }, 60_000);
});
