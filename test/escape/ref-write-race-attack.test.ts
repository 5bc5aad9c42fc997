import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { rawPushRounds } from "../support/raw-push.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Two pushes of one seat at once, making `x` and `x/y` (a ref and a folder of refs of one
 * name), in a hub whose refs ref-write.ts writes in line. The git path was made to refuse such a
 * race cleanly (src/effects/ref-lock.ts CONFLICTS: "found by an outside attack racing pushes of x
 * and x/y"). Found by an attack on the in-line writer (issue 26's twenty-third round): it checks
 * under `x.lock` that `x` is no folder, then writes and fsyncs, then renames — and the other
 * push's writeRefInLine made the folder `x` (mkdirSync, before its own lock) meanwhile: the rename
 * failed with EISDIR, a plain Node error that refusedOutcome and retryRefLock do not know, so the
 * outcome was unknown (the branch blocked, the owner told) where it should be a refusal
 * (git.ref-name): 9, 14 and 12 of 40 rounds. A rename that fails is now git's to meet, and git's
 * words for the conflict are the refusal's.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = teamFile(`  w1:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: [sleep, "3600"]
`);

interface LogRecord {
  seq: number;
  type: string;
  action: string;
  result?: string;
  [key: string]: unknown;
}

const ROUNDS = 40;

describe.runIf(process.platform === "linux")("in-line ref write: pushes of x and x/y at once", () => {
  let h: TeamdHarness;
  beforeAll(async () => {
    h = await appliedTeam("teamd-ref-write-race-", TEAM_FILE, { "README.md": "hello\n", "src/a.txt": "a\n" });
    await h.ok(["start", "--team", "proj"]);
    expect((await h.inSeat("w1", "git fetch -q teamd 2>&1")).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("refuses the loser of each race cleanly: never an unknown outcome", async () => {
    const trunk = h.hubRef("refs/heads/main") as string;
    const seq = Math.max(0, ...(await h.records<LogRecord>()).map((r) => r.seq));
    const raced = await h.inSeat("w1", rawPushRounds(ROUNDS, trunk, "refs/heads/r%", "refs/heads/r%/y"));
    const lines = raced.stdout.split("\n").filter((l) => /^\d+ /.test(l));
    expect(lines.length, raced.stdout + raced.stderr).toBe(2 * ROUNDS);
    const log = (await h.records<LogRecord>()).filter((r) => r.seq > seq);
    const unknown = log.filter((r) => r.type === "outcome" && r.result !== "done" && r.result !== "refused");
    const saidUnknown = lines.filter((l) => l.includes("ledger.unknown-outcome"));
    const landedBoth = Array.from({ length: ROUNDS }, (_, i) => i).filter(
      (i) => h.hubRef(`refs/heads/seat/w1/r${i}`) !== undefined && h.hubRef(`refs/heads/seat/w1/r${i}/y`) !== undefined,
    );
    const left = h.hubGit("for-each-ref", "--format=%(refname)", "refs/heads/seat/w1/").split("\n").filter(Boolean).length;
    const locks = execFileSync("find", [join(h.hub, "refs"), "-name", "*.lock"], { encoding: "utf8" })
      .split("\n")
      .filter(Boolean);
    console.log(`rounds ${ROUNDS}: unknown outcomes ${unknown.length}, answered unknown ${saidUnknown.length}, refs ${left}, locks left ${locks.length}`);
    expect(locks).toEqual([]);
    expect({ unknown: unknown.length, saidUnknown: saidUnknown.length, landedBoth }, saidUnknown.slice(0, 3).join("\n")).toEqual({
      unknown: 0,
      saidUnknown: 0,
      landedBoth: [],
    });
  }, 300_000);
});
