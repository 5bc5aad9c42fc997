import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { daemonIndexPacks, quarantineLeft, quarantineLeftAfterLanding, sampleReceives } from "../support/daemon-proc.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * A seat's listing for a push starts the push's receive in the daemon — its quarantine, a
 * contained index-pack and a read sandbox, in the seat's cgroups — before the push comes
 * (issue 26, src/effects/ready-receive.ts). A seat controls when it lists and whether it pushes
 * after, so from inside real seats, through the real remote helper:
 *
 * - a flood of listings (in turn and eight at once) never has the daemon hold more than one
 *   such receive for the seat, and none is left once its idle time has passed;
 * - a push refused before its pack stops the seat's receive before it answers: nothing is left;
 * - one seat's receive is never another's: w2's push leaves w1's as it was;
 * - two pushes of one seat at once, after one listing each: one takes the receive, the other
 *   starts its own, and both land what they sent;
 * - a receive no push took (a push of no pack, a listing and no push) is the seat's last until
 *   a push of its takes a pack in: listings and pushes of nothing in a loop had the daemon start
 *   and stop the two sandboxes a turn (found by an attack on this change, 25-28 ms a turn
 *   against 4).
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
  w2:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: [sleep, "3600"]
`);

/** The daemon's idle time for an untaken receive (READY_RECEIVE_IDLE_MS), and a margin for its stop. */
const IDLE_MS = 2_000 + 1_500;

/** One listing for a push, as git asks it of the helper, and nothing after. */
const LIST_FOR_PUSH = "printf 'list for-push\\n\\n' | git-remote-teamd teamd teamd::seat >/dev/null";

describe.runIf(process.platform === "linux")("seat git: the receive started at a listing for a push", () => {
  let h: TeamdHarness;
  const commitOn = (file: string) => `echo ${file} > src/${file}.txt && git add -A && git commit -qm ${file}`;
  const local = async (seat: string, rev: string) => (await h.inSeat(seat, `git rev-parse ${rev}`)).stdout.trim();

  beforeAll(async () => {
    h = await appliedTeam("teamd-ready-receive-", TEAM_FILE, { "README.md": "hello\n", "src/a.txt": "a\n" });
    await h.ok(["start", "--team", "proj"]);
    for (const seat of ["w1", "w2"]) expect((await h.inSeat(seat, "git fetch -q teamd 2>&1")).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("holds at most one receive for a seat through a flood of listings, and none once idle", async () => {
    const flood = await sampleReceives(
      h,
      h.inSeat("w1", `for i in $(seq 40); do ${LIST_FOR_PUSH}; done; for j in 1 2 3 4 5 6 7 8; do (for i in $(seq 5); do ${LIST_FOR_PUSH}; done) & done; wait`),
    );
    expect(flood.result.code, flood.result.stdout + flood.result.stderr).toBe(0);
    expect(flood.quarantines).toBeGreaterThanOrEqual(1);
    expect(flood.quarantines).toBeLessThanOrEqual(1);
    expect(flood.indexPacks).toBeGreaterThanOrEqual(1);
    expect(flood.indexPacks).toBeLessThanOrEqual(1);
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    expect(quarantineLeft(h)).toEqual([]);
    expect(daemonIndexPacks(h)).toBe(0);
  });

  it("stops the seat's receive before a push refused before its pack answers", async () => {
    // The trunk is not a seat's to push to: refused at the push's header, after git listed for it.
    const refused = await h.inSeat("w1", `git checkout -q -b r teamd/main && ${commitOn("r1")} && git push teamd HEAD:main 2>&1`);
    expect(refused.code).not.toBe(0);
    expect(quarantineLeft(h)).toEqual([]);
    expect(daemonIndexPacks(h)).toBe(0);
  });

  it("never gives one seat's receive to another seat's push", async () => {
    // w1's refused push left its receive untaken: a push of a pack first, so that its listings start one again.
    const armed = await h.inSeat("w1", `git checkout -q -b arm teamd/main && ${commitOn("arm1")} && git push -q teamd HEAD:arm 2>&1`);
    expect(armed.code, armed.stdout + armed.stderr).toBe(0);
    expect(await quarantineLeftAfterLanding(h, IDLE_MS)).toEqual([]);
    expect((await h.inSeat("w1", LIST_FOR_PUSH)).code).toBe(0);
    const w1Receive = quarantineLeft(h);
    expect(w1Receive).toHaveLength(1);
    const pushed = await h.inSeat("w2", `git checkout -q -b x teamd/main && ${commitOn("x1")} && git push -q teamd HEAD:x 2>&1`);
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    expect(h.hubRef("refs/heads/seat/w2/x")).toBe(await local("w2", "x"));
    // w2's own receive is gone once it landed; w1's is still the one it was, until its idle time.
    for (const until = Date.now() + 1_500; quarantineLeft(h).length > 1 && Date.now() < until;) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(quarantineLeft(h)).toEqual(w1Receive);
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    expect(quarantineLeft(h)).toEqual([]);
  });

  it("gives the receive to one of two pushes of a seat at once; the other starts its own, and both land", async () => {
    const pushed = await h.inSeat(
      "w1",
      `git checkout -q -b p teamd/main && ${commitOn("p1")} && git checkout -q -b q teamd/main && ${commitOn("q1")} && ` +
        `(git push -q teamd p:p 2>&1 & git push -q teamd q:q 2>&1 & wait %1 && wait %2)`,
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    expect(h.hubRef("refs/heads/seat/w1/p")).toBe(await local("w1", "p"));
    expect(h.hubRef("refs/heads/seat/w1/q")).toBe(await local("w1", "q"));
    expect(h.hubGit("show", `${await local("w1", "p")}:src/p1.txt`)).toBe("p1");
    expect(h.hubGit("show", `${await local("w1", "q")}:src/q1.txt`)).toBe("q1");
    expect(await quarantineLeftAfterLanding(h, IDLE_MS)).toEqual([]);
  });

  it("starts no receive for a seat whose last one no push took, until a push of its takes a pack in", async () => {
    // Eight branches at the trunk's commit (each a push of an empty pack, which takes its receive).
    const made = await h.inSeat("w1", "for i in 1 2 3 4 5 6 7 8; do git push -q teamd teamd/main:refs/heads/d$i 2>&1 || exit 9; done");
    expect(made.code, made.stdout + made.stderr).toBe(0);
    expect(await quarantineLeftAfterLanding(h, IDLE_MS)).toEqual([]);
    // Then each deleted: a listing and a push of no pack, eight times over. The first listing's
    // receive goes untaken; after it, the seat gets none.
    const deleted = await sampleReceives(h, h.inSeat("w1", "for i in 1 2 3 4 5 6 7 8; do git push -q teamd --delete seat/w1/d$i 2>&1 || exit 9; done"));
    expect(deleted.result.code, deleted.result.stdout + deleted.result.stderr).toBe(0);
    expect(deleted.names.size).toBeGreaterThanOrEqual(1);
    expect(deleted.names.size).toBeLessThanOrEqual(1);
    expect(quarantineLeft(h)).toEqual([]);
    // A push of a pack starts its own receive and the seat's listings start theirs again: the next push takes one.
    const again = await h.inSeat(
      "w1",
      `git checkout -q -b again teamd/main && ${commitOn("again1")} && git push -q teamd HEAD:again 2>&1 && ${commitOn("again2")} && git push -q teamd HEAD:again 2>&1`,
    );
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(h.hubRef("refs/heads/seat/w1/again")).toBe(await local("w1", "again"));
    expect(await quarantineLeftAfterLanding(h, IDLE_MS)).toEqual([]);
  });
});
