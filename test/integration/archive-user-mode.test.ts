import { chownSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunAs } from "../support/programs.js";
import { createHarness, type LogRecord, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * `teamd ledger archive` with the daemon down (user mode, §15 archival; issue 25): the command
 * opens the ledger itself and carries the owner's act, its progress on stderr; the live store
 * and the archive verify, alone and as one history; a daemon started afterwards opens the live
 * store from its cut. As an ordinary user — a root test run becomes uid nobody (as root every
 * owner act goes through the daemon: test/integration/archive.test.ts).
 */
const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;
const owner: RunAs = asRoot ? { uid: NOBODY, gid: NOBODY } : {};

function chownTree(path: string): void {
  if (!asRoot) return;
  chownSync(path, NOBODY, NOBODY);
  if (statSync(path).isDirectory()) for (const name of readdirSync(path)) chownTree(join(path, name));
}

describe.runIf(process.platform === "linux")("archive with the daemon down (user mode)", () => {
  let h: TeamdHarness;

  beforeAll(async () => {
    h = await createHarness("teamd-archive-user-", { timeoutMs: 30_000, owner });
    chownTree(h.dir);
  });
  afterAll(async () => {
    await h?.cleanup();
  });

  it("archives directly with progress, verifies alone and whole, and a daemon opens the live store after it", async () => {
    expect((await h.run(["init", "--yes", "--json"])).code).toBe(0);
    for (let i = 0; i < 4; i++) {
      const applied = await h.run(["apply", "--yes"]);
      expect(applied.code, applied.stderr).toBe(0);
    }
    const before = await h.records<LogRecord>();
    const tip = Number(before.at(-1)?.seq);
    const file = join(h.dir, "archive-1.db");
    const refused = await h.run(["ledger", "archive", "--before", String(tip + 1), "--to", file, "--yes", "--json"]);
    expect(refused.code).toBe(3);
    expect(JSON.parse(refused.stdout)).toMatchObject({ rule: "ledger.archive-needed" });

    const direct = await h.run(["ledger", "archive", "--before", String(tip + 1), "--to", file, "--keep", "--yes"]);
    expect(direct.code, direct.stdout + direct.stderr).toBe(0);
    expect(direct.stderr).toMatch(/archive: reading 100%/);
    expect(direct.stdout).toMatch(/^archived \d+ record\(s\) from 0 to \d+ into /);
    expect(direct.stdout).toContain("the policy in force of team proj");

    const after = await h.records<LogRecord>();
    // The policies no longer in force left; the one in force (and the team, genesis) stayed.
    const policies = before.filter((r) => r.type === "policy").map((r) => r.seq);
    expect(after.filter((r) => r.type === "policy").map((r) => r.seq)).toEqual(policies.slice(-1));
    expect(after.map((r) => r.type)).toEqual(expect.arrayContaining(["genesis", "team", "policy", "archive"]));
    const alone = await h.run(["verify"], { cwd: process.cwd() });
    expect(alone.code, alone.stderr).toBe(0);
    expect(alone.stdout).toContain("the live store starts at the archive cut");
    const whole = await h.run(["verify", "--archive", file], { cwd: process.cwd() });
    expect(whole.code, whole.stderr).toBe(0);
    expect(whole.stdout).toContain("the whole history from genesis");

    // A daemon started now opens the live store from its cut, and owner acts go through it.
    await h.startDaemon();
    const applied = await h.run(["apply", "--yes"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect((await h.run(["verify", "--archive", file], { cwd: process.cwd() })).code).toBe(0);
  }, 120_000);
});
