import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * The helper's front (shim/git-remote-front.sh) hands the helper its pack's account on fd 4
 * (shim/push-pack.ts adoptFrontPack), and where the account's tip is what this repository's ref
 * file says (push-guess.ts localCommit: the file's id, its type never asked), the helper sends
 * that id as the push's tip (git-remote.ts namedByFront). A seat writes the account and the ref
 * file itself: here the ref file names an annotated tag and the pack carries the tag and its
 * commit. What matters is the daemon: it must refuse a tip that is no commit (checkedCommits'
 * type), leave the hub as it was, and read the pack file from its own path to the seat's tmp
 * only — this held on the commit attacked (the control of a crafted front: the helper did not take
 * the front's guess here and sent the tag's commit, which landed as a commit).
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

describe.runIf(process.platform === "linux")("the helper's front: a crafted account", () => {
  let h: TeamdHarness;
  beforeAll(async () => {
    h = await appliedTeam("teamd-front-account-", TEAM_FILE, { "README.md": "hello\n", "src/a.txt": "a\n" });
    await h.ok(["start", "--team", "proj"]);
    expect((await h.inSeat("w1", "git fetch -q teamd 2>&1")).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("never lands a tag sent as the tip through the front's account", async () => {
    const r = await h.inSeat(
      "w1",
      [
        "git checkout -q -b f teamd/main && echo f > src/f.txt && git add -A && git commit -qm f && git tag -a -m fv fv",
        "T=$(git rev-parse fv) && M=$(git rev-parse teamd/main)",
        "echo $T > .git/refs/heads/ft",
        "L=$(git ls-remote teamd | cut -f1 | sort -u)",
        "name=.teamd-pack-$(cat /proc/sys/kernel/random/uuid).pack",
        'printf "%s\\n--not\\n%s\\n" $T "$L" | git pack-objects --revs --stdout -q > "$TEAMD_TMP/$name"',
        'printf "pid 1\\n%s\\n--not\\n%s\\n.\\nexit 0\\n" $T "$L" > /tmp/acct',
        'printf "list for-push\\npush refs/heads/ft:refs/heads/ft\\n\\n" | GIT_DIR=$PWD/.git TEAMD_EARLY_PACK=$name node /run/teamd/shim --git-remote-helper teamd teamd::seat 4</tmp/acct 2>&1',
      ].join(" && "),
    );
    const landed = h.hubRef("refs/heads/seat/w1/ft");
    const tag = (await h.inSeat("w1", "git rev-parse fv")).stdout.trim();
    const commit = (await h.inSeat("w1", "git rev-parse f")).stdout.trim();
    console.log(r.stdout, r.stderr, { landed, tag, commit, type: landed === undefined ? "none" : h.hubGit("cat-file", "-t", landed) });
    // Never the tag: refused, or (as on the commit attacked: the helper made its own pack of the
    // tag's commit) the commit.
    expect(landed).not.toBe(tag);
    if (landed !== undefined) expect(h.hubGit("cat-file", "-t", landed)).toBe("commit");
  }, 120_000);
});
