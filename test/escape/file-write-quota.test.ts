import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * `teamd-shim file write` from inside a real seat meets the objects quota a push meets (§11;
 * found by an attack, round twelve: six writes landed 36 objects on a seat's branches under a
 * quota of 4 — a write counted its file's bytes only). Each write makes its blob, a tree for each
 * folder of its path and the root's, and its commit; a write past the quota is refused
 * `push.quota` before anything is made, and deleting the branch frees its share (control).
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

/** What the daemon runs with: 12 objects only the seat's branches reach. */
const QUOTA_OBJECTS = 12;

const TEAM_FILE = teamFile(`  w:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: [sleep, "3600"]
`);

describe.runIf(process.platform === "linux")("a file write meets the seat's objects quota", () => {
  let h: TeamdHarness;
  const seatObjects = () =>
    Number(h.hubGit("rev-list", "--count", "--objects", "--glob=refs/heads/seat/w/*", "--not", "--exclude=refs/heads/seat/w/*", "--glob=refs/*"));

  beforeAll(async () => {
    h = await appliedTeam(
      "teamd-fw-quota-",
      TEAM_FILE,
      { "README.md": "hello\n", "src/a.txt": "a\n" },
      {
        daemonEnv: { TEAMD_SEAT_GIT_BOUNDS: `objects=${QUOTA_OBJECTS}` },
      },
    );
    await h.ok(["start", "w"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("writes until the next would pass the quota, then refuses it before anything is made; a delete frees the share", async () => {
    // src/dN/fN.txt on one branch: a blob, the dN, src and root trees, a commit — 5 objects each.
    const write = (n: number) => h.sh("w", `printf 'file ${n}\\n' | teamd-shim file write src/d${n}/f${n}.txt --branch fill`);
    for (const n of [1, 2]) {
      const landed = await write(n);
      expect(landed.code, landed.stdout + landed.stderr).toBe(0);
    }
    expect(seatObjects()).toBe(10);
    const refused = await write(3);
    expect(refused.code, refused.stdout + refused.stderr).toBe(3);
    expect(refused.stdout + refused.stderr).toMatch(/push\.quota/);
    expect(refused.stdout + refused.stderr).toMatch(/your branches hold 10 objects in the hub and this write makes 5; a seat may hold at most 12/);
    expect(seatObjects()).toBe(10);
    expect(() => h.hubGit("cat-file", "-e", "refs/heads/seat/w/fill:src/d3/f3.txt")).toThrow();
    // Control: with the branch deleted, the same write lands.
    expect((await h.sh("w", "git push -q teamd --delete refs/heads/seat/w/fill 2>&1")).code).toBe(0);
    const again = await write(3);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(seatObjects()).toBe(5);
  }, 60_000);
});
