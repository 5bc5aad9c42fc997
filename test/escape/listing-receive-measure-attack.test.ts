import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { daemonIndexPacks, quarantineLeft, sampleReceives } from "../support/daemon-proc.js";
import { rawPush } from "../support/raw-push.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * daemon/seat/git.ts listRefs now starts a push's ready receive (a quarantine, a contained
 * index-pack and a read sandbox) before the listing's served record — so also for a listing the
 * served rate then refuses. Measured from the host: a seat past its served rate (TEAMD_SERVED_RATE
 * 1/0), listing for a push in a loop and from eight processes at once, each listing distinct
 * (a branch made between them by a raw push of no pack), never has the daemon hold more than one
 * receive, nor start more than one in all (the unused-receive rule), and leaves none after idle.
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
const IDLE_MS = 2_000 + 1_500;
const LIST_FOR_PUSH = "printf 'list for-push\\n\\n' | git-remote-teamd teamd teamd::seat >/dev/null 2>&1";

describe.runIf(process.platform === "linux")("seat git: receives started by refused listings", () => {
  let h: TeamdHarness;

  beforeAll(async () => {
    h = await appliedTeam("teamd-listing-receive-", TEAM_FILE, { "README.md": "hello\n", "src/a.txt": "a\n" }, { daemonEnv: { TEAMD_SERVED_RATE: "2/0" } });
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("starts at most one receive for a seat whose listings are refused", async () => {
    const trunk = h.hubRef("refs/heads/main") as string;
    // Spend the rate: distinct listings (a new branch before each) until one is refused.
    const spend = await h.inSeat(
      "w1",
      `for i in 1 2 3 4; do ${rawPush(`refs/heads/s$i`, "-", trunk)} >/dev/null; printf 'list for-push\\n\\n' | git-remote-teamd teamd teamd::seat 2>&1 | tail -1; done`,
    );
    expect(spend.stdout + spend.stderr).toContain("seat.served-rate");
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    // K turns of: a push of a pack with no listing (git-remote-teamd by hand: it takes a pack in,
    // which lets the seat's next listing start a receive again), then eight refused listings at once.
    const K = 6;
    const flood = await sampleReceives(
      h,
      h.inSeat(
        "w1",
        `git checkout -q -b k ${trunk} && for i in $(seq ${K}); do echo $i > src/k$i.txt && git add -A && git commit -qm k$i && ` +
          `out=$(printf "push refs/heads/k:refs/heads/k$i\\n\\n" | git-remote-teamd teamd teamd::seat 2>&1); case $out in *"ok refs/heads/k$i"*) ;; *) echo "$out"; exit 9;; esac; ` +
          `for j in 1 2 3 4 5 6 7 8; do (${LIST_FOR_PUSH}) & done; wait; done`,
      ),
    );
    expect(flood.result.code, flood.result.stdout + flood.result.stderr).toBe(0);
    console.log(
      `refused listings, ${K} turns: most quarantines at once ${flood.quarantines}, index-packs ${flood.indexPacks}, distinct quarantines ${flood.names.size}`,
    );
    // A push's own quarantine and at most one ready receive at a time; at most one receive a turn.
    expect(flood.quarantines).toBeLessThanOrEqual(2);
    expect(flood.indexPacks).toBeLessThanOrEqual(2);
    expect(flood.names.size).toBeLessThanOrEqual(2 * K);
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    expect(quarantineLeft(h)).toEqual([]);
    expect(daemonIndexPacks(h)).toBe(0);
  }, 240_000);
});
