import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { evilGitPacking, helperPush } from "../support/evil-git.js";
import { rawPush } from "../support/raw-push.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * "A seat cannot forge an unknown outcome — which blocks its target and tells the owner — with
 * input git would refuse" (test/escape/unknown-outcomes.test.ts). Found by an attack (a helper
 * told only what a seat reaches, issue 26's twenty-third round), older than that round: a push of
 * no pack whose tip is an annotated tag the hub holds (landed as an extra object of an earlier
 * pack) passed servedCommit (daemon/seat/git.ts pushOne: `cat-file -e OID^{commit}` peeled the
 * tag), so the intent was made and `git update-ref` then refused it deterministically ("trying
 * to write non-commit object ... to branch"), which refusedOutcome did not know: three such
 * pushes, three unknown outcomes and a blocked branch. servedCommit now asks the object's own
 * type. (Where the ref is written in line, the same push landed the tag instead:
 * ref-write-tag-attack.test.ts.)
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

describe.runIf(process.platform === "linux")("a tag pushed as a branch's tip, no pack: no unknown outcome", () => {
  let h: TeamdHarness;
  beforeAll(async () => {
    h = await appliedTeam("teamd-push-tag-unknown-", TEAM_FILE, { "README.md": "hello\n", "src/a.txt": "a\n" });
    await h.ok(["start", "--team", "proj"]);
    expect((await h.inSeat("w1", "git fetch -q teamd 2>&1")).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("refuses it cleanly: no unknown outcome, no blocked branch", async () => {
    const made = await h.inSeat(
      "w1",
      "git checkout -q -b a teamd/main && echo a1 > src/a1.txt && git add -A && git commit -qm a1 && git tag -a -m v v1 && " +
        evilGitPacking("$(git rev-list --objects teamd/main..a | cut -c1-40) $(git rev-parse v1)") +
        " && " +
        helperPush("a"),
    );
    expect(made.code, made.stdout + made.stderr).toBe(0);
    const tag = (await h.inSeat("w1", "git rev-parse v1")).stdout.trim();
    expect(h.hubGit("cat-file", "-t", tag)).toBe("tag");
    const seq = Math.max(0, ...(await h.records<LogRecord>()).map((r) => r.seq));
    const rounds = 3;
    const said: string[] = [];
    for (let i = 0; i < rounds; i++) said.push((await h.inSeat("w1", rawPush(`refs/heads/b${i}`, "-", tag))).stdout);
    const log = (await h.records<LogRecord>()).filter((r) => r.seq > seq);
    const unknown = log.filter((r) => r.type === "outcome" && r.result !== "done" && r.result !== "refused");
    const notices = log.filter((r) => r.type === "notice" && r.action !== "seat.exec");
    // No branch is blocked: a real commit to b0 lands.
    const next = await h.inSeat("w1", "git push teamd a:b0 2>&1");
    expect({ unknown: unknown.length, notices: notices.length, next: next.code }, said.join("\n") + next.stdout).toEqual({ unknown: 0, notices: 0, next: 0 });
    for (const s of said) expect(s).not.toContain("ledger.unknown-outcome");
  }, 120_000);
});
