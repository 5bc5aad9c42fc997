import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient } from "../../src/rpc/index.js";
import type { DaemonProcess } from "../support/programs.js";
import { createHarness, expectRefused, type TeamdHarness } from "../support/teamd-harness.js";
import { filesUnder } from "../support/files-under.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { holdsCanary, startFakeGithub, type FakeGithub } from "../broker/fake-github.js";

/**
 * The secret broker end to end (issue 11, §11): a real daemon, real contained seats, the real
 * SQLite ledger, and a fake GitHub API — a node:http server on 127.0.0.1 this test starts and
 * stops — which plants the tracker's token in its answers (fields, headers, nested bodies,
 * base64, hex). A seat holding use-broker over a task resource pulls, reads and claims through
 * `teamd-shim broker`; a seat without it, and one scoped to another resource, are refused, each
 * recorded. Then every byte the run produced — replies, the ledger's files, the daemon's log —
 * is searched for the token in every form.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

/** No known key shape: only the broker's credential scrub can keep it out. */
const TOKEN = "tkn-e2e-canary/4c1f+77ab=e90d2b51c3";
/** A second credential, in the daemon's environment only (tokenEnv of a tracker no task uses). */
const ENV_TOKEN = "tkn-env-canary-0b5e6f1d29a84c73";

const seat = (capabilities: string) => `    lab: anthropic\n    capabilities:\n${capabilities}    start:\n      command: [sleep, "3600"]\n`;
const TEAM_FILE = `version: 1
team: proj
declare:
  branches: [main]
  labs: [anthropic]
  tasks: ["gh:web", notes]
trackers:
  "gh:web": web
seats:
  plan:
${seat(`      read: ~\n      use-broker: { task: ["gh:web", notes] }\n`)}  notesonly:
${seat(`      read: ~\n      use-broker: { task: [notes] }\n`)}  nobroker:
${seat("      read: ~\n")}`;

describe.runIf(process.platform === "linux")("the secret broker through real seats", () => {
  let h: TeamdHarness;
  let daemon: DaemonProcess;
  let gh: FakeGithub;
  let daemonOut = "";
  /** Everything the seats were answered, for the final grep. */
  const produced: string[] = [];

  const ok = async (who: string, ...args: string[]) => {
    const r = await h.shim(who, ...args);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };
  const refused = (who: string, rule: string, ...args: string[]) => expectRefused(h.shim(who, ...args), rule);

  beforeAll(async () => {
    h = await createHarness("teamd-broker-", { onResult: (r) => produced.push(r.stdout, r.stderr) });
    gh = await startFakeGithub({ token: TOKEN, owner: "acme", repo: "web" });
    // The owner's tracker configuration: a 0600 file under TEAMD_HOME, outside every seat.
    mkdirSync(join(h.home, "broker", "tasks", "proj", "notes"), { recursive: true, mode: 0o700 });
    const config = join(h.home, "broker", "trackers.json");
    writeFileSync(
      config,
      JSON.stringify({
        trackers: {
          web: { kind: "github", repo: "acme/web", api: gh.url, token: TOKEN, assignee: "acme-bot" },
          ops: { kind: "github", repo: "acme/ops", tokenEnv: "TEAMD_TEST_OPS_TOKEN" },
        },
      }),
      { mode: 0o600 },
    );
    chmodSync(config, 0o600);
    // The embedded default tracker of `notes`: a folder of Markdown tasks; one of them carries the token.
    const notes = join(h.home, "broker", "tasks", "proj", "notes");
    writeFileSync(join(notes, "login.md"), "---\ntitle: Fix the login redirect\nlabels: [bug]\n---\nIt loops.\n");
    writeFileSync(join(notes, "leak.md"), `---\ntitle: Leaky ${Buffer.from(TOKEN).toString("hex")}\n---\nfirst line\ntoken=${TOKEN}\nlast line\n`);
    daemon = await h.startDaemon({ env: { TEAMD_TEST_OPS_TOKEN: ENV_TOKEN } });
    daemon.child.stdout?.on("data", (d: Buffer | string) => (daemonOut += String(d)));
    await h.ok(["init", "--yes"]);
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);

  afterAll(async () => {
    await h?.cleanup();
    await gh?.close();
  });

  it("pulls the open tasks of a GitHub resource, pull requests left out, the planted token scrubbed", async () => {
    const pulled = await ok("plan", "broker", "pull", "gh:web", "--json");
    const tasks = pulled.tasks as { id: string; title: string; labels: string[] }[];
    expect(tasks.map((t) => t.id)).toEqual(["1", "2", "4"]);
    expect(tasks[0]?.title).toBe("[scrubbed by teamd: carries the tracker's credential]");
    expect(tasks[1]).toMatchObject({ title: "Clean task", labels: ["web"] });
    expect(pulled.tracker).toBe("web");
    // The daemon made the call, with the token as a header; the seat never had it.
    expect(gh.seen.every((s) => s.authorized)).toBe(true);
  });

  it("reads one task's allowlisted fields, and claims it (a label naming the seat, the owner's assignee), each recorded", async () => {
    const read = (await ok("plan", "broker", "read", "gh:web", "1", "--json")).read as Record<string, unknown>;
    expect(Object.keys(read).sort()).toEqual(["assignee", "body", "claimed", "id", "labels", "state", "title", "url"]);
    expect(read.assignee).toBe("alice");
    expect(String(read.body).split("\n")).toContain("The rest of the task is fine.");
    const claimed = await ok("plan", "broker", "claim", "gh:web", "2", "--json");
    expect(claimed.claimed).toMatchObject({ id: "2", claimed: true, assignee: "acme-bot" });
    expect(gh.issues.get(2)?.labels.map((l) => l.name)).toContain("teamd-claimed:proj/plan");
    const log = await h.records();
    for (const [action, target] of [
      ["broker.pull", "gh:web"],
      ["broker.read", "gh:web#1"],
      ["broker.claim", "gh:web#2"],
    ] as const) {
      const intent = log.find((r) => r.type === "intent" && r.action === action && JSON.stringify(r).includes(target));
      expect(intent, action).toBeDefined();
      expect(
        log.find((r) => r.type === "outcome" && r.intentSeq === intent?.seq),
        action,
      ).toMatchObject({ result: "done" });
    }
    // Content is never recorded: not a title, not a body line.
    expect(JSON.stringify(log)).not.toContain("The rest of the task is fine");
    expect(JSON.stringify(log)).not.toContain("Clean task");
  });

  it("serves the embedded default file tracker: pull, read (scrubbed), claim into the task's front matter", async () => {
    const pulled = await ok("plan", "broker", "pull", "notes", "--json");
    expect((pulled.tasks as { id: string }[]).map((t) => t.id)).toEqual(["leak", "login"]);
    expect(pulled.tracker).toBe("(default)");
    const leak = (await ok("plan", "broker", "read", "notes", "leak", "--json")).read as { title: string; body: string };
    expect(leak.title).toBe("[scrubbed by teamd: carries the tracker's credential]");
    expect(leak.body).toBe("first line\n[scrubbed by teamd: carries the tracker's credential]\nlast line\n");
    await ok("notesonly", "broker", "claim", "notes", "login", "--json");
    expect(readFileSync(join(h.home, "broker/tasks/proj/notes/login.md"), "utf8")).toContain("claimed-by: proj/notesonly");
    await refused("plan", "broker.claimed", "broker", "claim", "notes", "login");
    await refused("plan", "broker.task", "broker", "read", "notes", "nope");
  });

  it("refuses, each recorded: no use-broker, use-broker over another resource, an undeclared resource, another operation, act-as", async () => {
    await refused("nobroker", "authority.none", "broker", "pull", "notes");
    await refused("notesonly", "scope.task", "broker", "pull", "gh:web");
    await refused("notesonly", "scope.task", "broker", "read", "gh:web", "1");
    await refused("plan", "scope.task", "broker", "pull", "gh:nope");
    // A claim runs under the tracker's credential: an account named on it is refused, never ignored.
    await refused("plan", "act-as.unmediated", "broker", "claim", "gh:web", "1", "--as", "owner-github");
    const client = createRpcClient(ShimService, h.seatSocket("plan"), { deadlineMs: 30_000 });
    try {
      const error = await client.broker({ requestId: "r-update", operation: "update", task: "gh:web", id: "1" }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(String(error)).toContain("broker.operation");
      // A comment is the owner's speech: without an account it is refused before anything.
      const bare = await client.broker({ requestId: "r-comment", operation: "comment", task: "gh:web", id: "1", body: "hi" }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(String(bare)).toContain("act-as.required");
    } finally {
      client.close();
    }
    const log = await h.records();
    const refusals = log.filter((r) => r.type === "refusal" && r.action.startsWith("broker"));
    for (const rule of ["authority.none", "scope.task", "act-as.unmediated", "act-as.required", "broker.operation", "broker.claimed", "broker.task"]) {
      expect(
        refusals.some((r) => JSON.stringify(r).includes(rule)),
        rule,
      ).toBe(true);
    }
    // No call reached GitHub for a refused seat: the fake saw only the allowed seat's requests.
    expect(gh.seen.filter((s) => s.path.includes("/issues/1")).length).toBe(1);
  });

  it("refuses with broker.tracker, naming chmod 600, while the owner's configuration is readable by others; a retried pull is answered with nothing (broker.replay)", async () => {
    const config = join(h.home, "broker", "trackers.json");
    chmodSync(config, 0o644);
    try {
      const r = await h.shim("plan", "broker", "pull", "gh:web");
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toContain("refused by broker.tracker");
      expect(r.stderr).toContain(`chmod 600 ${config}`);
      await refused("plan", "broker.tracker", "broker", "pull", "notes");
    } finally {
      chmodSync(config, 0o600);
    }
    const log = await h.records();
    expect(log.some((r) => r.type === "refusal" && r.action === "broker.pull" && JSON.stringify(r).includes("broker.tracker"))).toBe(true);
    const client = createRpcClient(ShimService, h.seatSocket("plan"), { deadlineMs: 30_000 });
    try {
      const first = await client.broker({ requestId: "r-twice", operation: "pull", task: "notes" });
      expect(first.tasks.length).toBe(2);
      const again = await client.broker({ requestId: "r-twice", operation: "pull", task: "notes" }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(String(again)).toContain("broker.replay");
    } finally {
      client.close();
    }
  });

  it("a claim the tracker did not answer is recorded unknown, and that task stays blocked until the owner resolves it", async () => {
    gh.dropPosts.add(4);
    const r = await h.shim("plan", "broker", "claim", "gh:web", "4");
    expect(r.code, r.stdout + r.stderr).toBe(3);
    expect(r.stderr).toContain("refused by broker.upstream");
    expect(r.stderr).toContain("may or may not have happened");
    const log = await h.records();
    const intent = log.find((x) => x.type === "intent" && x.action === "broker.claim" && JSON.stringify(x).includes("gh:web#4"));
    expect(log.find((x) => x.type === "outcome" && x.intentSeq === intent?.seq)).toMatchObject({ result: "unknown" });
    gh.dropPosts.delete(4);
    const again = await h.shim("plan", "broker", "claim", "gh:web", "4");
    expect(again.code).toBe(3);
    expect(again.stderr).toContain("refused by ledger.unknown-outcome");
  });

  it("a seat cannot read the owner's configuration, and its environment holds no credential", async () => {
    const cat = await h.run(["exec", "plan@proj", "--", "cat", join(h.home, "broker/trackers.json")]);
    expect(cat.code).not.toBe(0);
    const seen = await h.run(["exec", "plan@proj", "--", "env"]);
    expect(seen.code).toBe(0);
    expect(holdsCanary(seen.stdout, TOKEN)).toBeUndefined();
    expect(seen.stdout).not.toContain(ENV_TOKEN);
  });

  it("canaries: the token is in no reply, no ledger byte, no daemon log — everything the run produced is searched", async () => {
    const verify = await h.run(["verify", "--json"]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    await h.records();
    // Every file under TEAMD_HOME but the owner's configuration itself: the ledger's SQLite
    // files (database, WAL), its head, flags, seat homes and repositories, the task folder.
    const files = filesUnder(h.home).filter((p) => p !== join(h.home, "broker/trackers.json"));
    const ledgerFiles = files.filter((f) => f.includes("ledger"));
    expect(
      ledgerFiles.some((f) => f.endsWith(".db") || f.endsWith(".sqlite") || f.includes("sqlite")),
      ledgerFiles.join(", "),
    ).toBe(true);
    // The search reads real record bytes: the ledger's files hold the broker's records (target names in clear).
    expect(Buffer.concat(ledgerFiles.map((f) => readFileSync(f))).includes("gh:web#2")).toBe(true);
    // The task file the owner wrote carries the token on purpose; every other byte must not.
    const planted = join(h.home, "broker/tasks/proj/notes/leak.md");
    for (const f of files.filter((x) => x !== planted)) {
      const data = readFileSync(f);
      expect(holdsCanary(data, TOKEN), f).toBeUndefined();
      expect(data.includes(ENV_TOKEN), f).toBe(false);
    }
    const outputs = [...produced, daemon.stderr(), daemonOut].join("\n");
    expect(daemon.stderr().length + daemonOut.length).toBeGreaterThan(0);
    expect(holdsCanary(outputs, TOKEN)).toBeUndefined();
    expect(outputs).not.toContain(ENV_TOKEN);
  }, 60_000);
});
