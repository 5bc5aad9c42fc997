import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * The remote helper packs a push's guess while the daemon answers the listing (issue 26,
 * shim/push-guess.ts): HEAD less what the daemon was last seen to hold. Inside a real seat,
 * through the real helper, daemon and hub: the guess is sent when it is the push's pack, and
 * when it is not — a note naming a commit the daemon lacks, a branch that is not HEAD — the pack
 * is made afresh, and the push lands what it would have without a guess. Each of those would be
 * refused (the pack lacking objects the push names) if the helper sent the guess there.
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

const GUESSED = "teamd: the pack was made on the push's guess";

describe.runIf(process.platform === "linux")("seat git: a push packed on its guess", () => {
  let h: TeamdHarness;
  const commitOn = (file: string) => `echo ${file} > src/${file}.txt && git add -A && git commit -qm ${file}`;
  const local = async (rev: string) => (await h.inSeat("w1", `git rev-parse ${rev}`)).stdout.trim();

  beforeAll(async () => {
    h = await appliedTeam("teamd-push-guess-", TEAM_FILE, { "README.md": "hello\n", "src/a.txt": "a\n" });
    await h.ok(["start", "--team", "proj"]);
    expect((await h.inSeat("w1", "git fetch -q teamd 2>&1")).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("sends the guessed pack for the next push of HEAD, once a push through the helper left its note", async () => {
    const first = await h.inSeat("w1", `git checkout -q -b g teamd/main && ${commitOn("g1")} && git push -v teamd HEAD:g 2>&1`);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const note = await h.inSeat("w1", "cat .git/teamd-push-guess");
    expect(note.stdout.split("\n")[0]).toBe("# teamd push guess 1");
    expect(note.stdout).toContain(await local("HEAD"));

    const second = await h.inSeat("w1", `${commitOn("g2")} && git push -v teamd HEAD:g 2>&1`);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    // Started by the helper's front before the helper loaded: its parent's parent is this `git push`.
    expect(second.stdout).toContain(`${GUESSED}, from the helper's front`);
    expect(h.hubRef("refs/heads/seat/w1/g")).toBe(await local("HEAD"));
    expect(h.hubGit("show", `${await local("HEAD")}:src/g2.txt`)).toBe("g2");

    // The same branch again: the note names the branch's commit now, not the one it moved from,
    // which the daemon no longer lists (the note had kept it, and no later guess matched).
    const moved = await local("HEAD~1");
    const noted = await h.inSeat("w1", "cat .git/teamd-push-guess");
    expect(noted.stdout).toContain(await local("HEAD"));
    expect(noted.stdout).not.toContain(moved);
    const third = await h.inSeat("w1", `${commitOn("g3")} && git push -v teamd HEAD:g 2>&1`);
    expect(third.code, third.stdout + third.stderr).toBe(0);
    expect(third.stdout).toContain(`${GUESSED}, from the helper's front`);
    expect(h.hubRef("refs/heads/seat/w1/g")).toBe(await local("HEAD"));
  });

  it("makes the pack afresh when the note names a commit the daemon does not hold", async () => {
    // h1 is this repository's alone; a pack that left it out (as the note says the daemon holds
    // it) would lack h1's commit and blob, which the push names.
    const pushed = await h.inSeat(
      "w1",
      `git checkout -q -b h teamd/main && ${commitOn("h1")} && ${commitOn("h2")} && ` +
        `printf '# teamd push guess 1\\n%s\\n%s\\n' "$(git rev-parse HEAD~1)" "$(git rev-parse teamd/main)" > .git/teamd-push-guess && ` +
        `git push -v teamd HEAD:h 2>&1`,
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    expect(pushed.stdout).not.toContain(GUESSED);
    expect(h.hubRef("refs/heads/seat/w1/h")).toBe(await local("h"));
    expect(h.hubGit("show", `${await local("h")}:src/h1.txt`)).toBe("h1");
  });

  it("makes the pack afresh when the push is of a branch that is not HEAD", async () => {
    const pushed = await h.inSeat(
      "w1",
      `git checkout -q -b other teamd/main && ${commitOn("o1")} && git checkout -q h && ${commitOn("h3")} && git push -v teamd other:other 2>&1`,
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    expect(pushed.stdout).not.toContain(GUESSED);
    expect(h.hubRef("refs/heads/seat/w1/other")).toBe(await local("other"));
    expect(h.hubGit("show", `${await local("other")}:src/o1.txt`)).toBe("o1");
    // The guess's pack and its file are gone with it: nothing of either push is left in the seat's tmp.
    const left = await h.inSeat("w1", 'ls -A "$TEAMD_TMP" | grep -c "^.teamd-pack-" || true');
    expect(left.stdout.trim()).toBe("0");
  });

  it("pushes as before when the note is not a file this reads (a link, a folder)", async () => {
    for (const [i, plant] of ["ln -sf /etc/passwd .git/teamd-push-guess", "mkdir .git/teamd-push-guess"].entries()) {
      const pushed = await h.inSeat(
        "w1",
        `rm -rf .git/teamd-push-guess && ${plant} && ${commitOn(`l${i}`)} && git push -v teamd HEAD:h 2>&1; s=$?; rm -rf .git/teamd-push-guess; exit $s`,
      );
      expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
      expect(pushed.stdout).not.toContain(GUESSED);
      expect(h.hubRef("refs/heads/seat/w1/h")).toBe(await local("h"));
    }
  });
});
