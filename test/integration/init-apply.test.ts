import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { execFileSync, spawn } from "node:child_process";
import { join } from "node:path";
import Database from "better-sqlite3";
import { ROOT, TEAMD, type RunAs } from "../support/programs.js";
import { createHarness, type TeamdHarness } from "../support/teamd-harness.js";
import { makeRepo } from "../support/repo.js";
import { ensureOwnerKey } from "../../daemon/host/owner-key.js";
import { signOwnerAct } from "../../src/ledger/index.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { ControlService, OwnerActKind } from "../../src/gen/teamd/v1/control_pb.js";
import { RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { chownTreeToNobody, NOBODY } from "../support/ordinary-owner.js";

/**
 * teamd init, apply, log and verify end to end: real processes, a real git repository, a
 * real SQLite ledger. Two ways in: through a running daemon (the only way in system mode,
 * which is what a root test run is), and in user mode with the daemon down (the CLI writes
 * the ledger itself) — as an ordinary user, which a root test run becomes with uid nobody.
 */
const asRoot = process.getuid?.() === 0;
const owner: RunAs = asRoot ? { uid: NOBODY, gid: NOBODY } : {};

function chownTree(path: string): void {
  if (asRoot) chownTreeToNobody(path);
}

/** Poll a condition (bounded): for output that arrives from another process. */
async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

type LogLine = { seq: number; type: string; result: string; action: string; team: string };

/** `teamd log --follow ARGS` running beside the test: what it printed so far, and its exit. */
function followLog(h: TeamdHarness, args: string[]) {
  const child = spawn(process.execPath, [TEAMD, "log", "--follow", ...args], { env: { ...process.env, ...h.env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, exited, out: () => out };
}

describe.skipIf(!asRoot)("init and apply through the daemon (system mode)", () => {
  let h: TeamdHarness;

  beforeAll(async () => {
    h = await createHarness("teamd-init-", { timeoutMs: 30_000 });
    await h.startDaemon();
  });
  afterAll(async () => {
    await h?.cleanup();
  });

  it("creates the owner key, the ledger, the hub and an untracked team file", async () => {
    const result = await h.run(["init", "--yes", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({
      team: "proj",
      ownerKey: { created: true },
      ledger: { created: true, via: "daemon" },
      hub: { by: "daemon", remote: "added" },
      teamFile: { written: true, excluded: true },
    });
    expect(statSync(h.ownerKey).mode & 0o777).toBe(0o600);
    expect(existsSync(join(h.repo, "teamd.yaml"))).toBe(true);
    expect(execFileSync("git", ["status", "--porcelain"], { cwd: h.repo, encoding: "utf8" })).toBe("");
    expect(execFileSync("git", ["remote", "get-url", "teamd"], { cwd: h.repo, encoding: "utf8" }).trim()).toBe(report.hub.path);
    expect(execFileSync("git", ["--git-dir", report.hub.path, "rev-parse", "--is-bare-repository"], { encoding: "utf8" }).trim()).toBe("true");
  });

  it("is safe to run again and says what exists", async () => {
    const result = await h.run(["init", "--yes"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/owner key: exists/);
    expect(result.stdout).toMatch(/ledger: exists/);
    expect(result.stdout).toMatch(/already registered/);
    expect(result.stdout).toMatch(/teamd.yaml: exists/);
    const log = await h.records<LogLine>();
    expect(log.map((r) => r.type)).toEqual(["genesis", "team"]);
  });

  it("applies a valid team file as a signed policy record", async () => {
    const result = await h.run(["apply", "--yes", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ applied: true, team: "proj", seats: 1 });
    const log = await h.records<LogLine>();
    // The daemon tells of it (daemon/server/notices.ts): a notice may already follow the policy record.
    const policy = log.filter((r) => r.type !== "notice").at(-1);
    expect(policy).toMatchObject({ type: "policy", action: "policy.apply", team: "proj" });
  });

  it("follows the log as records are appended, and stops on SIGINT", async () => {
    const follow = followLog(h, ["--type", "policy"]);
    try {
      await waitFor(() => follow.out().split("\n").filter(Boolean).length === 1);
      const applied = await h.run(["apply", "--yes"]);
      expect(applied.code, applied.stderr).toBe(0);
      await waitFor(() => follow.out().split("\n").filter(Boolean).length === 2);
      expect(follow.out()).toMatch(/policy\s+proj\s+owner \(witnessed\)\s+policy\.apply/);
    } finally {
      follow.child.kill("SIGINT");
    }
    expect(await follow.exited).toBe(0);
  });

  it("filters the log by team, seat, time and count; --follow starts from the last 10, not the whole history (issue 23)", async () => {
    type Rec = { seq: number; team: string; actor: string; target: string; timeUnixMs: number };
    const all = await h.records<Rec>();
    expect(all.length).toBeGreaterThan(3);
    const lastTwo = await h.records<Rec>("-n", "2");
    expect(lastTwo.map((r) => r.seq)).toEqual(all.slice(-2).map((r) => r.seq));
    const team = await h.records<Rec>("--team", "proj");
    expect(team.length).toBeGreaterThan(0);
    expect(team.every((r) => r.team === "proj")).toBe(true);
    expect(team.length).toBeLessThan(all.length); // control: the genesis is no team's
    expect(await h.records<Rec>("--since", "1d")).toHaveLength(all.length);
    expect(await h.records<Rec>("--since", "2099-01-01T00:00:00Z")).toHaveLength(0);
    expect(await h.records<Rec>("--seat", "nosuchseat")).toHaveLength(0);
    for (const bad of [
      ["-n", "many"],
      ["--since", "soon"],
      ["--seat", "Bad_Name"],
    ])
      expect((await h.run(["log", ...bad])).code).toBe(2);
    // --follow: the last 10 first (here -n 1), then it would wait for more.
    const follow = followLog(h, ["-n", "1", "--json"]);
    try {
      await waitFor(() => follow.out().split("\n").filter(Boolean).length >= 1);
      await new Promise((r) => setTimeout(r, 700));
      expect(
        follow
          .out()
          .split("\n")
          .filter(Boolean)
          .map((l) => (JSON.parse(l) as Rec).seq),
      ).toEqual([all.at(-1)?.seq]);
    } finally {
      follow.child.kill("SIGINT");
    }
    expect(await follow.exited).toBe(0);
  });

  it("shows what a new file changes against the policy in force before it signs", async () => {
    const path = join(h.repo, "teamd.yaml");
    const original = readFileSync(path, "utf8");
    try {
      writeFileSync(path, original.replace("roles: [observer]", "roles: [executor]"));
      const result = await h.run(["apply", "--yes"]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toMatch(/Changes against the policy in force \(record \d+/);
      expect(result.stderr).toMatch(/seat scout:\n(.*\n)*\s+\+ write \{path: \*\}/);
      expect(result.stderr).toMatch(/~ roles: \[observer\] -> \[executor\]/);
      const again = await h.run(["apply", "--yes", "--json"]);
      expect(JSON.parse(again.stdout)).toMatchObject({ applied: true, diff: { unchanged: true, seats: [] } });
    } finally {
      writeFileSync(path, original);
      const back = await h.run(["apply", "--yes", "--json"]);
      expect(JSON.parse(back.stdout).diff.seats[0]).toMatchObject({ seat: "scout", losses: [expect.stringMatching(/^write \{path: \*\}/)] });
    }
  });

  it("refuses an invalid team file with its line and fix, and records nothing", async () => {
    const bad = join(h.dir, "bad.yaml");
    writeFileSync(bad, readFileSync(join(h.repo, "teamd.yaml"), "utf8") + "surprise: true\n");
    const before = await h.records<LogLine>();
    const result = await h.run(["apply", bad, "--yes"], { cwd: process.cwd() });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/bad\.yaml:\d+:1: unknown key 'surprise'/);
    expect(result.stderr).toMatch(/fix: /);
    expect(await h.records<LogLine>()).toEqual(before);
  });

  it("a failed first init removes the owner key it made (no ledger pinned it), so the next run does not find a stray key", async () => {
    // The ledger here pins h's owner key: a second owner's first init is refused at its genesis.
    const strayKey = join(h.dir, "second-owner.key");
    const failed = await h.run(["init", "--yes", "--json"], { env: { TEAMD_OWNER_KEY: strayKey } });
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toMatch(/the owner key this run made .* was removed/);
    expect(existsSync(strayKey)).toBe(false);
    // A key that existed before the run is never removed.
    expect(existsSync(h.ownerKey)).toBe(true);
  });

  it("refuses, and records, an apply signed by another key", async () => {
    execFileSync(process.execPath, [
      "-e",
      `import(${JSON.stringify(join(ROOT, "dist/daemon/host/owner-key.js"))}).then((m) => m.ensureOwnerKey(${JSON.stringify(join(h.dir, "intruder.key"))}))`,
    ]);
    const signed = await h.run(["apply", join(h.repo, "teamd.yaml"), "--yes", "--json"], {
      env: { TEAMD_OWNER_KEY: join(h.dir, "intruder.key") },
      cwd: process.cwd(),
    });
    expect(signed.code).toBe(3);
    expect(JSON.parse(signed.stdout)).toMatchObject({ error: "refused", rule: "owner.signature" });
    const log = await h.records<LogLine>();
    expect(log.at(-1)).toMatchObject({ type: "refusal", result: "owner.signature" });
    // The refusal is the daemon's record: no assent of the owner's is on record for that act.
    expect((log.at(-1) as { assent?: string }).assent).toBeUndefined();
  });

  it("refuses a team act naming a hub anywhere but TEAMD_HOME/hubs/<team>.git (the daemon writes only its own hubs)", async () => {
    const { key } = await ensureOwnerKey(h.ownerKey);
    const elsewhere = join(h.dir, "elsewhere.git");
    const act = await signOwnerAct(
      {
        type: RecordType.TEAM,
        team: "evil",
        action: "team.register",
        payload: {
          domain: { team: "evil", repositoryRoot: h.repo },
          target: { kind: TargetKind.TEAM, name: "evil" },
          detail: { case: "team", value: { repository: h.repo, hub: elsewhere } },
        },
      },
      key.seed,
    );
    const client = createRpcClient(ControlService, join(h.home, "run/control.sock"), { deadlineMs: 15_000 });
    try {
      await expect(client.ownerAct({ kind: OwnerActKind.TEAM, act })).rejects.toMatchObject({ rule: "owner.act-invalid" });
    } finally {
      client.close();
    }
    expect(existsSync(elsewhere)).toBe(false);
    expect(existsSync(join(h.home, "hubs/evil.git"))).toBe(false);
    expect((await h.records<LogLine>()).at(-1)).toMatchObject({ type: "refusal", result: "owner.act-invalid" });
  });

  it("refuses a team file tracked by git", async () => {
    const tracked = makeRepo(h.dir, "tracked", { "teamd.yaml": "version: 1\nteam: tracked\n" });
    const result = await h.run(["init", "--yes", "--json"], { cwd: tracked });
    expect(result.code).toBe(3);
    expect(JSON.parse(result.stdout)).toMatchObject({ rule: "teamfile.tracked" });
  });

  it("verifies the chain, and names the first bad seq after tampering", async () => {
    const ok = await h.run(["verify", "--json"], { timeoutMs: 15_000, cwd: process.cwd() });
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ ok: true });

    const db = join(h.home, "ledger/ledger.db");
    await h.stopDaemon();
    // An attacker with the file: drop the append-only triggers and rewrite record 1's payload.
    const sql = new Database(db);
    for (const { name } of sql.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all() as Array<{ name: string }>)
      sql.exec(`DROP TRIGGER "${name}"`);
    const columns = (sql.prepare("PRAGMA table_info(records)").all() as Array<{ name: string }>).map((c) => c.name);
    const payloadColumn = columns.find((c) => c.includes("payload")) as string;
    const row = sql.prepare(`SELECT ${payloadColumn} AS p FROM records WHERE seq = 1`).get() as { p: Buffer };
    const flipped = Buffer.from(row.p);
    flipped[flipped.length - 1] = (flipped[flipped.length - 1] as number) ^ 0x01;
    sql.prepare(`UPDATE records SET ${payloadColumn} = ? WHERE seq = 1`).run(flipped);
    sql.close();

    const bad = await h.run(["verify"], { timeoutMs: 15_000, cwd: process.cwd() });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/verify failed at seq 1/);
  });
});

describe("init and apply with the daemon down (user mode)", () => {
  let h: TeamdHarness;

  beforeAll(async () => {
    h = await createHarness("teamd-user-", { timeoutMs: 30_000, owner });
    chownTree(h.dir);
  });
  afterAll(async () => {
    await h?.cleanup();
  });

  it("writes the ledger itself, applies, logs and verifies", async () => {
    const first = await h.run(["init", "--yes", "--json"]);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ mode: "user", ledger: { created: true, via: "direct" } });

    const applied = await h.run(["apply", "--yes"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(/^applied: team 'proj' policy sha256:[0-9a-f]{64} \(1 seat\), record 2/);

    const log = await h.records<LogLine>();
    expect(log.map((r) => r.type)).toEqual(["genesis", "team", "policy"]);
    // Assent has provenance (§11): every owner act is on record as witnessed (the pinned key signed it).
    expect(log.map((r) => (r as { assent?: string }).assent)).toEqual(["witnessed", "witnessed", "witnessed"]);
    const verified = await h.run(["verify"], { timeoutMs: 15_000, cwd: process.cwd() });
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/^ok: 3 records/);
  });

  it("a later daemon opens the ledger the CLI wrote, and owner acts then go through it", async () => {
    // The owner's own daemon (user mode): as the same ordinary user.
    const daemon = await h.startDaemon();
    try {
      const again = await h.run(["apply", "--yes", "--json"]);
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ applied: true, via: "daemon" });
      const log = await h.records<LogLine>();
      // The policy the daemon applied is told as a notice (appended just after it, polled);
      // so is the one the CLI applied with the daemon down — told late, at the daemon's start.
      expect(log.filter((r) => r.type !== "notice").map((r) => r.type)).toEqual(["genesis", "team", "policy", "policy"]);
      let told = log;
      for (let i = 0; i < 50 && told.filter((r) => r.type === "notice").length < 2; i++) {
        await new Promise((r) => setTimeout(r, 100));
        told = await h.records<LogLine>();
      }
      expect(told.filter((r) => r.type === "notice")).toHaveLength(2);
      // The late one is told first, at the daemon's start, before the second apply.
      const notices = await h.run(["notices", "--all", "--json"], { timeoutMs: 15_000, cwd: process.cwd() });
      const lines = notices.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { about: number; text: string });
      const policies = told.filter((r) => r.type === "policy").map((r) => r.seq);
      expect(lines.map((l) => l.about)).toEqual(policies);
      expect(lines[0]?.text).toMatch(/told late/);
      expect(lines[1]?.text).not.toMatch(/told late/);
    } finally {
      await daemon.stop();
    }
  });
});
