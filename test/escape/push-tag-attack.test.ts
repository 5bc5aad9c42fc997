import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { evilGitPacking, helperPush } from "../support/evil-git.js";
import { rawPush } from "../support/raw-push.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * A branch names a commit, and "a seat cannot forge an unknown outcome — which blocks its target
 * and tells the owner — with input git would refuse" (test/escape/unknown-outcomes.test.ts).
 * Found by an attack (a helper told only what a seat reaches, issue 26's twenty-third round),
 * older than that round: a push of no pack whose tip is an annotated tag the hub holds (landed as
 * an extra object of an earlier pack: the pack is migrated whole) passed servedCommit
 * (daemon/seat/git.ts pushOne: `cat-file -e OID^{commit}` and `rev-list OID ^tips` peeled the tag
 * to its commit). With git's `update-ref` writing the ref, the intent was made and git then
 * refused it deterministically ("trying to write non-commit object ... to branch"), which
 * refusedOutcome did not know: three such pushes, three unknown outcomes and a blocked branch.
 * With the ref written in line (src/effects/ref-write.ts, "only for a value the caller knows is a
 * commit"), the hub's branch landed on the tag object. servedCommit now asks the object's own type.
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

describe.runIf(process.platform === "linux")("a tag pushed as a branch's tip, no pack", () => {
  let h: TeamdHarness;
  let tag: string;
  beforeAll(async () => {
    h = await appliedTeam("teamd-push-tag-", TEAM_FILE, { "README.md": "hello\n", "src/a.txt": "a\n" });
    await h.ok(["start", "--team", "proj"]);
    expect((await h.inSeat("w1", "git fetch -q teamd 2>&1")).code).toBe(0);
    // A new commit on `a`, an annotated tag of it, and a pack of the commit's objects plus the tag.
    const made = await h.inSeat(
      "w1",
      "git checkout -q -b a teamd/main && echo a1 > src/a1.txt && git add -A && git commit -qm a1 && git tag -a -m v v1 && " +
        evilGitPacking("$(git rev-list --objects teamd/main..a | cut -c1-40) $(git rev-parse v1)") +
        " && " +
        helperPush("a"),
    );
    expect(made.code, made.stdout + made.stderr).toBe(0);
    expect(h.hubRef("refs/heads/seat/w1/a"), made.stdout).toBe((await h.inSeat("w1", "git rev-parse a")).stdout.trim());
    tag = (await h.inSeat("w1", "git rev-parse v1")).stdout.trim();
    // The tag object travelled with the commit's pack: the hub holds it now.
    expect(h.hubGit("cat-file", "-t", tag)).toBe("tag");
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("never points a hub branch at a non-commit", async () => {
    // (Under root the harness's hub is a system one, shared with the owner's group; ref-write.ts
    // writes a push's ref in line there as in a user-mode hub.) git itself refuses a branch at a tag.
    expect(() => h.hubGit("update-ref", "refs/heads/seat/w1/control", tag, "0".repeat(40))).toThrow(/non-commit/);
    const raw = await h.inSeat("w1", rawPush("refs/heads/b", "-", tag));
    const landed = h.hubRef("refs/heads/seat/w1/b");
    const type = landed === undefined ? "none" : h.hubGit("cat-file", "-t", landed);
    expect({ landed, type }, raw.stdout + raw.stderr).not.toEqual({ landed: tag, type: "tag" });
    if (landed !== undefined) expect(type).toBe("commit");
  }, 120_000);

  it("refuses it cleanly: no unknown outcome, no notice, no blocked branch", async () => {
    const seq = Math.max(0, ...(await h.records<LogRecord>()).map((r) => r.seq));
    const said: string[] = [];
    for (let i = 0; i < 3; i++) said.push((await h.inSeat("w1", rawPush(`refs/heads/b${i}`, "-", tag))).stdout);
    const log = (await h.records<LogRecord>()).filter((r) => r.seq > seq);
    const unknown = log.filter((r) => r.type === "outcome" && r.result !== "done" && r.result !== "refused");
    const notices = log.filter((r) => r.type === "notice" && r.action !== "seat.exec");
    // No branch is blocked: a real commit to b0 lands.
    const next = await h.inSeat("w1", "git push teamd a:b0 2>&1");
    expect({ unknown: unknown.length, notices: notices.length, next: next.code }, said.join("\n") + next.stdout).toEqual({ unknown: 0, notices: 0, next: 0 });
    for (const s of said) expect(s).not.toContain("ledger.unknown-outcome");
  }, 120_000);
});
