import { existsSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { leadsWriterTeamFile } from "../support/team-file.js";
import { expectRefused, initTeam, type LogRecord, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Archival (§15 "archival moves records and keeps the head commitment"; issue 25) through a
 * real daemon, real seats and the real ledger: `teamd ledger archive --before SEQ --to FILE`
 * refuses a cut through a live lease (and the policy in force) naming the records and the fix;
 * with --keep it moves the rest into the archive and keeps those in the live store; `teamd
 * verify` passes on the live store alone and, with `--archive FILE`, on both as one history;
 * the lease granted before the cut still works, and still does after a daemon restart.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

type Rec = LogRecord & { target?: string };

describe.runIf(process.platform === "linux")("archive: the live store keeps what the gate reads (§15)", () => {
  let h: TeamdHarness;

  beforeAll(async () => {
    h = await initTeam("teamd-archive-", { files: { "README.md": "hello\n", "src/a.txt": "a\n" } });
    writeFileSync(join(h.repo, "teamd.yaml"), leadsWriterTeamFile());
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("refuses a cut through a live lease; with --keep archives the rest, verifies alone and whole, and the lease still works across a restart", async () => {
    const issued = await h.shim("w", "lease", "issue", "r", "write", "path=src/", "--ttl", "1h", "--json");
    expect(issued.code, issued.stderr).toBe(0);
    const leaseId = (JSON.parse(issued.stdout) as { leaseId: string }).leaseId;
    // History the gate no longer reads: refusals, whoami calls, a settled write.
    for (let i = 0; i < 5; i++) await expectRefused(h.shim("w", "file", "write", `docs/n${i}.txt`, "--branch", "x", "-m", "x"), "scope.path");
    expect((await h.shim("r", "file", "write", "src/before.txt", "--branch", "b1", "-m", "before")).code).toBe(0);
    const records = await h.records<Rec>();
    const tip = Number(records.at(-1)?.seq);
    const leaseRecord = records.find((r) => r.type === "lease" && r.target === `lease:${leaseId}`);
    const policy = records.filter((r) => r.type === "policy").at(-1);
    const file = join(h.dir, "ledger-archive-1.db");

    const refused = await h.run(["ledger", "archive", "--before", String(tip + 1), "--to", file, "--yes", "--json"]);
    expect(refused.code, refused.stdout + refused.stderr).toBe(3);
    const why = JSON.parse(refused.stdout) as { rule: string; reason: string };
    expect(why.rule).toBe("ledger.archive-needed");
    expect(why.reason).toContain(`record ${leaseRecord?.seq}: lease ${leaseId}`);
    expect(why.reason).toContain(`record ${policy?.seq}: the policy in force of team proj`);
    expect(why.reason).toContain("--keep");
    expect(existsSync(file)).toBe(false);

    const done = await h.json<{ archived: number; cutSeq: number; kept: { seq: number; why: string }[]; file: string; liveRecords: number }>([
      "ledger",
      "archive",
      "--before",
      String(tip + 1),
      "--to",
      file,
      "--keep",
      "--yes",
      "--json",
    ]);
    expect(done.archived).toBeGreaterThan(5);
    expect(done.kept.map((k) => k.seq)).toEqual(expect.arrayContaining([Number(leaseRecord?.seq), Number(policy?.seq)]));
    expect(done.liveRecords).toBeLessThan(tip);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // The refused attempt is itself on record.
    expect((await h.records<Rec>("--type", "refusal")).some((r) => r.action === "archive")).toBe(true);

    const alone = await h.json<{ ok: boolean; cut?: { cutSeq: number } }>(["verify", "--json"]);
    expect(alone).toMatchObject({ ok: true, cut: { cutSeq: done.cutSeq } });
    const whole = await h.json<{ ok: boolean; archives?: unknown[] }>(["verify", "--archive", file, "--json"]);
    expect(whole.ok).toBe(true);
    expect(whole.archives).toHaveLength(1);

    // teamd log says where the rest is.
    const shown = await h.run(["log", "-n", "1"]);
    expect(shown.stderr).toContain(`the records before ${done.cutSeq} are archived in ${file}`);
    // The lease granted before the cut still works: r writes under it.
    const held = async () => (JSON.parse((await h.shim("r", "whoami", "--json")).stdout) as { leases: { leaseId: string }[] }).leases.map((l) => l.leaseId);
    expect(await held()).toEqual([leaseId]);
    expect((await h.shim("r", "file", "write", "src/after.txt", "--branch", "b2", "-m", "after")).code).toBe(0);
    // …and after a restart, when the daemon rebuilds its view from the live store alone.
    await h.daemon?.stop();
    await h.startDaemon();
    await h.ok(["start", "--team", "proj"]);
    expect(await held()).toEqual([leaseId]);
    expect((await h.shim("r", "file", "write", "src/restart.txt", "--branch", "b3", "-m", "restart")).code).toBe(0);
    await expectRefused(h.shim("w", "file", "write", "docs/after.txt", "--branch", "x", "-m", "x"), "scope.path");
    expect((await h.json<{ ok: boolean }>(["verify", "--archive", file, "--json"])).ok).toBe(true);
    // A second archive, cut by time (what is older than a second): it starts where the first ended; both verify with the live store.
    const second = join(h.dir, "ledger-archive-2.db");
    const next = await h.json<{ fromSeq: number; cutSeq: number }>(["ledger", "archive", "--before", "1s", "--to", second, "--keep", "--yes", "--json"]);
    expect(next.fromSeq).toBe(done.cutSeq);
    expect(next.cutSeq).toBeGreaterThan(done.cutSeq);
    expect((await h.json<{ ok: boolean }>(["verify", "--archive", file, "--archive", second, "--json"])).ok).toBe(true);
    const partial = await h.run(["verify", "--archive", second, "--json"]);
    expect(partial.code).not.toBe(0);
    expect(partial.stdout).toContain("in an archive not given");
    // A second archive with the same name is refused before anything is signed.
    const again = await h.run(["ledger", "archive", "--before", "5", "--to", file, "--keep", "--yes"]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("exists already");
  }, 180_000);
});
