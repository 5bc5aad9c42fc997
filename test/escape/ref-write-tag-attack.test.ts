import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { evilGitPacking, helperPush } from "../support/evil-git.js";
import { rawPush } from "../support/raw-push.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * A push's ref written in line (src/effects/ref-write.ts writeRefInLine) is "only for a value the
 * caller knows is a commit the repository holds: git would check that, this does not". Found by
 * an attack on that change (issue 26's twenty-third round): the push of no pack
 * (daemon/seat/git.ts pushOne, q undefined) checked its tip with servedCommit, whose
 * `cat-file -e OID^{commit}` and `rev-list OID ^tips` peel an annotated tag to its commit. So a
 * seat that landed a tag object in the hub (an extra object in a pack whose commit is new: the
 * pack is migrated whole) and then pushed, with no pack, that tag's id as a branch's tip had the
 * hub's branch written to the tag object (`git update-ref` refuses that: "trying to write
 * non-commit object ... to branch"). servedCommit now asks the object's own type.
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

describe.runIf(process.platform === "linux")("in-line ref write: a tag pushed as a branch's tip", () => {
  let h: TeamdHarness;
  beforeAll(async () => {
    h = await appliedTeam("teamd-ref-write-tag-", TEAM_FILE, { "README.md": "hello\n", "src/a.txt": "a\n" });
    await h.ok(["start", "--team", "proj"]);
    // (Under root the harness's hub is a system one, shared with the owner's group; ref-write.ts
    // writes a push's ref in line there as in a user-mode hub.)
    expect((await h.inSeat("w1", "git fetch -q teamd 2>&1")).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("never points a hub branch at a non-commit", async () => {
    // A new commit on `a`, an annotated tag of it, and a pack of the commit's objects plus the tag.
    const made = await h.inSeat(
      "w1",
      "git checkout -q -b a teamd/main && echo a1 > src/a1.txt && git add -A && git commit -qm a1 && git tag -a -m v v1 && " +
        evilGitPacking("$(git rev-list --objects teamd/main..a | cut -c1-40) $(git rev-parse v1)") +
        " && " +
        helperPush("a"),
    );
    expect(made.code, made.stdout + made.stderr).toBe(0);
    const commit = (await h.inSeat("w1", "git rev-parse a")).stdout.trim();
    const tag = (await h.inSeat("w1", "git rev-parse v1")).stdout.trim();
    expect(h.hubRef("refs/heads/seat/w1/a"), made.stdout).toBe(commit);
    // The tag object travelled with the commit's pack: the hub holds it now.
    expect(h.hubGit("cat-file", "-t", tag)).toBe("tag");
    // git itself refuses a branch at a tag (the write this change replaced).
    expect(() => h.hubGit("update-ref", "refs/heads/seat/w1/control", tag, "0".repeat(40))).toThrow(/non-commit/);
    // The tag's id as the tip of a new branch, no pack.
    const raw = await h.inSeat("w1", rawPush("refs/heads/b", "-", tag));
    const landed = h.hubRef("refs/heads/seat/w1/b");
    const type = landed === undefined ? "none" : h.hubGit("cat-file", "-t", landed);
    expect({ landed, type }, raw.stdout + raw.stderr).not.toEqual({ landed: tag, type: "tag" });
    if (landed !== undefined) expect(type).toBe("commit");
  }, 120_000);
});
