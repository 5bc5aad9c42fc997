import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { freshFromTrunk } from "../support/evil-git.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { BLIND_WRITER_TEAM_FILE, blindWriterRepoFiles } from "../support/narrow-seat.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * A seat that writes where it may not read (§3: read is distinct from write), pushing from
 * inside its real seat, trying to learn what the hub holds where it cannot see: each pair of
 * pushes differs only in whether the hub holds something at the path, and must get the same
 * outcome in the same words (round fifteen; the hole was found by a sixth attacker in round
 * fourteen, test/escape/walk-attack-6.test.ts).
 *
 * Seat wo reads src/ and README.md and writes src/ and docs/; the owner denies write under
 * docs/a/keep/ and docs/b/keep/. The hub holds docs/secret.md and docs/sub/s.md (canaries) and
 * docs/a/keep/k.md; nothing at docs/nosub or docs/b. The rule under test (src/kernel/blind-write.ts,
 * apply() in src/effects/git-filter.ts): a name set blind goes over whatever is there when the
 * policy lets the write reach all it could take — a folder a file's name, a file a whole folder —
 * and is refused otherwise, either way before anything of the hub's there is looked at.
 *
 * Proves docs/enforcement.md's row "read / lab-visibility refusal (c5) (§3, §8)" for blind writes.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const CANARY = "CANARY-bw-7c21 never for wo";
const SUB_CANARY = "CANARY-bw-9e04 never for wo";

const TEAM_FILE = BLIND_WRITER_TEAM_FILE;

describe.runIf(process.platform === "linux")("blind writes: what a seat that writes where it cannot read learns from its pushes", () => {
  let h: TeamdHarness;
  let main: string;
  const hubRef = (ref: string) => h.hubRef(ref);

  beforeAll(async () => {
    h = await appliedTeam("teamd-blind-write-", TEAM_FILE, blindWriterRepoFiles(CANARY, SUB_CANARY));
    await h.ok(["start", "--team", "proj"]);
    main = hubRef("refs/heads/main") as string;
    expect((await h.inSeat("wo", "git fetch -q teamd 2>&1 && git checkout -q --detach teamd/main")).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  /** Pushes a branch from the trunk with `make` run in the seat's worktree; what the seat saw, names replaced, and whether it landed. */
  async function pushFrom(branch: string, make: string, names: readonly string[]): Promise<{ landed: boolean; said: string }> {
    const r = await h.inSeat(
      "wo",
      [
        freshFromTrunk(branch),
        make,
        `git add -A && git commit -qm ${branch}`,
        `git push teamd ${branch} 2>&1; echo push-exit $?`,
        "git checkout -q --detach teamd/main",
      ].join(" && "),
    );
    let said = (r.stdout + r.stderr)
      .replace(/\b[0-9a-f]{40}\b/g, "<oid>")
      .replace(/^teamd: pushed \d+ bytes to the daemon$/m, "")
      .replace(new RegExp(branch, "g"), "B");
    for (const name of names) said = said.split(name).join("N");
    return { landed: hubRef(`refs/heads/seat/wo/${branch}`) !== undefined, said: said.trim() };
  }

  it("a file at docs/sub (a folder the hub holds) and at docs/nosub (nothing): both land, in the same words; the folder goes on wo's branch only", async () => {
    const held = await pushFrom("file-held", "mkdir -p docs && printf 'f\\n' > docs/sub", ["docs/sub"]);
    const free = await pushFrom("file-free", "mkdir -p docs && printf 'f\\n' > docs/nosub", ["docs/nosub"]);
    console.log(`[held] ${held.said}\n[free] ${free.said}`);
    expect(held.said).toBe(free.said);
    expect([held.landed, free.landed]).toEqual([true, true]);
    const tip = hubRef("refs/heads/seat/wo/file-held") as string;
    expect(h.hubGit("ls-tree", "-r", "--name-only", tip, "docs/sub")).toBe("docs/sub");
    expect(h.hubGit("cat-file", "blob", `${main}:docs/sub/s.md`)).toBe(SUB_CANARY);
    // The rest of what wo cannot read stays as it was on its branch.
    expect(h.hubGit("cat-file", "blob", `${tip}:docs/secret.md`)).toBe(CANARY);
  }, 60_000);

  it("a file at docs/a (a folder holding what the deny keeps) and at docs/b (nothing, the deny reaching under it too): both refused, in the same words, naming the deny", async () => {
    // Both names replaced in both: the deny's own words name both folders.
    const held = await pushFrom("deny-held", "mkdir -p docs && printf 'f\\n' > docs/a", ["docs/a", "docs/b"]);
    const free = await pushFrom("deny-free", "mkdir -p docs && printf 'f\\n' > docs/b", ["docs/a", "docs/b"]);
    console.log(`[held] ${held.said}\n[free] ${free.said}`);
    expect(held.said).toBe(free.said);
    expect([held.landed, free.landed]).toEqual([false, false]);
    expect(held.said).toContain("push.bounded-merge");
    expect(held.said).toMatch(/you may not read all of this path.*deny write/s);
    expect(hubRef("refs/heads/main")).toBe(main);
  }, 60_000);

  it("a folder at docs/secret.md (a file the hub holds) and at docs/other.md (nothing): both land, in the same words", async () => {
    const held = await pushFrom("dir-held", "mkdir -p docs/secret.md && printf 'x\\n' > docs/secret.md/x.md", ["secret.md"]);
    const free = await pushFrom("dir-free", "mkdir -p docs/other.md && printf 'x\\n' > docs/other.md/x.md", ["other.md"]);
    console.log(`[held] ${held.said}\n[free] ${free.said}`);
    expect(held.said).toBe(free.said);
    expect([held.landed, free.landed]).toEqual([true, true]);
  }, 60_000);

  it("wo fetches its landed branches and finds none of what it cannot read", async () => {
    const r = await h.inSeat(
      "wo",
      [
        "git fetch -q teamd 2>&1",
        "git ls-tree -r --name-only teamd/seat/wo/file-held teamd/seat/wo/dir-held",
        "git cat-file --batch-all-objects --batch | grep -c 'CANARY-bw' || true",
      ].join(" && "),
    );
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain("secret");
    expect(r.stdout).not.toContain("s.md");
    expect(r.stdout.trim().split("\n").at(-1)).toBe("0");
  }, 60_000);

  it("control: the trunk untouched, the hub's objects whole", () => {
    expect(hubRef("refs/heads/main")).toBe(main);
    execFileSync("git", ["--git-dir", h.hub, "fsck", "--connectivity-only", "--no-dangling"], { stdio: "ignore" });
  });
});
