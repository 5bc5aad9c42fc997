import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { leadsWriterTeamFile } from "../support/team-file.js";
import { expectRefused, initTeam, type LogRecord, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Tombstones (§15: "deletion is a signed tombstone"; issue 25), through a real daemon, real
 * seats and the real ledger: `teamd ledger tombstone SEQ --reason TEXT` hides a record's
 * content — `teamd log` shows its stub and the reason, in table and JSON — while its header
 * stays in the chain (`teamd verify` passes). A tombstoned revocation still revokes, across a
 * daemon restart. What the gate reads in full is refused (`ledger.tombstone-kept`): the policy
 * in force, a live lease, a trunk act's record; and a stub that misnames its record is refused.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const SECRETISH = "tombstoned-path-4c1e";

const TEAM_FILE = leadsWriterTeamFile();

type Rec = LogRecord & { target?: string; tombstoned?: { by: number; reason: string }; detail?: unknown; fields?: unknown };

describe.runIf(process.platform === "linux")("tombstones: a record's content hidden, its stub kept (§15)", () => {
  let h: TeamdHarness;
  const tombstone = (seq: number, reason = "owner asked") => h.run(["ledger", "tombstone", String(seq), "--reason", reason, "--yes", "--json"]);

  beforeAll(async () => {
    h = await initTeam("teamd-tomb-", { files: { "README.md": "hello\n", "src/a.txt": "a\n" } });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a refusal's content is hidden: the log shows the stub and the reason; verify passes", async () => {
    await expectRefused(h.shim("w", "file", "write", `docs/${SECRETISH}.txt`, "--branch", "x", "-m", "x"), "scope.path");
    const refusal = (await h.records<Rec>()).filter((r) => r.type === "refusal").at(-1);
    expect(JSON.stringify(refusal)).toContain(SECRETISH); // control: the record holds it
    const done = await tombstone(Number(refusal?.seq), "a path the owner wants out of the log");
    expect(done.code, done.stdout + done.stderr).toBe(0);
    const stub = (await h.records<Rec>()).find((r) => r.seq === refusal?.seq);
    expect(stub).toMatchObject({ type: "refusal", actor: "seat:proj/w", tombstoned: { reason: "a path the owner wants out of the log" } });
    expect(stub?.detail).toBeUndefined();
    expect(JSON.stringify(stub)).not.toContain(SECRETISH);
    const table = await h.ok(["log"]);
    // (the owner's own exec of that command, a notice, still names it: only the refusal was hidden)
    expect(table.split("\n").filter((l) => l.includes(SECRETISH) && / refusal /.test(l))).toEqual([]);
    expect(table).toContain(`[tombstoned by record ${stub?.tombstoned?.by}: a path the owner wants out of the log]`);
    expect(await h.ok(["log", "--type", "tombstone", "--json"])).toContain(`"tombstone"`);
    const verify = await h.run(["verify", "--json"]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    // Twice is refused: it is already a stub.
    expect(JSON.parse((await tombstone(Number(refusal?.seq))).stdout)).toMatchObject({ rule: "ledger.tombstone-kept" });
  });

  it("a tombstoned revocation still revokes, after a restart too; the policy in force and a live lease stay whole", async () => {
    const issued = async () => {
      const r = await h.shim("w", "lease", "issue", "r", "write", "path=src/", "--ttl", "1h", "--json");
      expect(r.code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { leaseId: string }).leaseId;
    };
    const live = await issued();
    const revokedId = await issued();
    expect((await h.shim("w", "lease", "revoke", revokedId)).code).toBe(0);
    const records = await h.records<Rec>();
    const revocation = records.find((r) => r.type === "revocation" && r.target === `lease:${revokedId}`);
    expect((await tombstone(Number(revocation?.seq))).code).toBe(0);
    const held = async () => {
      const who = await h.shim("r", "whoami", "--json");
      expect(who.code, who.stdout + who.stderr).toBe(0);
      return JSON.parse(who.stdout) as { leases: { leaseId: string }[] };
    };
    expect((await held()).leases.map((l) => l.leaseId)).toEqual([live]);
    await h.daemon?.stop();
    await h.startDaemon();
    await h.ok(["start", "--team", "proj"]);
    expect((await held()).leases.map((l) => l.leaseId)).toEqual([live]);
    // Kept whole: the policy in force, a live lease's record, and the intent of a trunk act (a file write).
    const policy = records.filter((r) => r.type === "policy").at(-1);
    const lease = records.find((r) => r.type === "lease" && r.target === `lease:${live}`);
    expect((await h.shim("w", "file", "write", "src/t.txt", "--branch", "t", "-m", "t")).code).toBe(0);
    const write = (await h.records<Rec>()).filter((r) => r.type === "intent" && r.action === "file.write").at(-1);
    for (const seq of [policy?.seq, lease?.seq, write?.seq]) {
      const refused = await tombstone(Number(seq));
      expect(refused.code, `record ${seq}`).toBe(3);
      expect(JSON.parse(refused.stdout), `record ${seq}`).toMatchObject({ rule: "ledger.tombstone-kept" });
    }
    expect((await h.run(["verify", "--json"])).code).toBe(0);
  }, 120_000);
});
