import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsWithAncestors } from "../support/process-ancestry.js";
import { appliedTeam } from "../support/applied-team.js";
import { daemonMemory, quarantineLeft as leftIn, quarantineLeftAfterLanding, resetDaemonPeak } from "../support/daemon-proc.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";
import { evilGit } from "../support/evil-git.js";

/**
 * A hostile bounded-read seat against the replay of its push (src/effects/git-filter.ts): the
 * daemon rebuilds each pushed commit onto the real base, reading the seat's objects out of the
 * push's quarantine. What the seat controls there is every byte of those objects, their count
 * and their sizes. Found by this attack (fixed): the replay read them with plain
 * `git cat-file --batch` on the daemon's own account, outside bubblewrap and the seat's limits,
 * and held every new blob whole in the daemon's memory — eight 56 MiB blobs, sent as a pack of
 * a few hundred KiB, grew the daemon by ~0.9 GiB and held its one thread in `deflateSync`.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = teamFile(`  narrow:
    lab: anthropic
    capabilities:
      read: { path: [src/, README.md, vendor/NOTES.md] }
      write: { path: [src/, vendor/NOTES.md] }
    start:
      command: [sleep, "3600"]
`);

const MiB = 1024 * 1024;
/** A folder narrow reads one file of: 2,000 files it cannot read, long names, a tree of ~450 KB. */
const VENDOR = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`vendor/${"v".repeat(190)}${String(i).padStart(5, "0")}.txt`, "x\n"]));

describe.runIf(process.platform === "linux")("attack: the replay of a bounded seat's push", () => {
  let h: TeamdHarness;

  const hubRef = (ref: string) => h.hubRef(ref);
  const memory = () => daemonMemory(h);
  const resetPeak = () => resetDaemonPeak(h);
  const quarantineLeft = () => leftIn(h);
  /** Every git process reading this test's hub or quarantine, with its parent's command line, while `run` runs. */
  const watchGit = async <T>(run: () => Promise<T>): Promise<{ result: T; seen: Map<string, string> }> => {
    const seen = new Map<string, string>();
    const poll = setInterval(() => {
      const rows = rowsWithAncestors((l) => {
        const cmd = l.split(/\s+/)[2];
        return cmd !== undefined && /(^|\/)git$/.test(cmd) && /\b(cat-file|rev-list|pack-objects)\b/.test(l);
      });
      for (const [row, ancestors] of rows) seen.set(row, ancestors);
    }, 5);
    try {
      return { result: await run(), seen };
    } finally {
      clearInterval(poll);
    }
  };

  beforeAll(async () => {
    h = await appliedTeam("teamd-replay-attack-", TEAM_FILE, {
      "README.md": "hello\n",
      "src/a.txt": "a\n",
      "docs/secret.md": "not for narrow\n",
      "vendor/NOTES.md": "notes\n",
      ...VENDOR,
    });
    await h.ok(["start", "--team", "proj"]);
    expect((await h.inSeat("narrow", "git fetch -q teamd 2>&1 && git checkout -q --detach teamd/main")).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("eight distinct 56 MiB blobs in a pack of a few hundred KiB: they land, and the daemon never holds them (its peak grows < 160 MiB)", async () => {
    const made = await h.inSeat(
      "narrow",
      `git checkout -q -B big teamd/main && for i in 1 2 3 4 5 6 7 8; do (head -c ${56 * MiB} /dev/zero; echo $i) > src/big$i.bin; done && git add -A && git commit -qm big && git count-objects -vH | grep size-pack; rm -f src/big*.bin`,
    );
    expect(made.code, made.stdout + made.stderr).toBe(0);
    resetPeak();
    const before = memory();
    const { result: pushed, seen } = await watchGit(() => h.inSeat("narrow", "git push -q teamd big 2>&1"));
    const after = memory();
    const growth = after.peak - before.rss;
    console.log(`bounded push of 8 x 56 MiB blobs: the daemon's peak grew ${Math.round(growth / MiB)} MiB; git seen: ${seen.size}`);
    expect(pushed.code, pushed.stdout).toBe(0);
    // Control: the replayed commit is in the hub, with every blob and the path narrow cannot read kept.
    const landed = hubRef("refs/heads/seat/narrow/big");
    expect(landed).toBeDefined();
    expect(
      h
        .hubGit("ls-tree", "-r", "--name-only", landed as string, "--", "README.md", "docs", "src")
        .split("\n")
        .sort(),
    ).toEqual(["README.md", "docs/secret.md", "src/a.txt", ...Array.from({ length: 8 }, (_, i) => `src/big${i + 1}.bin`)]);
    expect(h.hubGit("cat-file", "-s", `${landed}:src/big3.bin`)).toBe(String(56 * MiB + 2));
    expect(growth).toBeLessThan(160 * MiB);
    expect(await quarantineLeftAfterLanding(h)).toEqual([]);
  }, 180_000);

  it("every git that reads the pushed objects runs in bubblewrap, never as plain git on the daemon's account", async () => {
    // A chain of commits, each adding a file: the replay reads each commit and its trees, with one
    // cat-file --batch over the seat's filtered repository for the whole chain.
    const made = await h.inSeat(
      "narrow",
      `git checkout -q -B chain teamd/main && for i in $(seq 1 150); do echo $i > src/f$i.txt && git add src/f$i.txt && git commit -qm c$i || exit 1; done`,
    );
    expect(made.code, made.stdout + made.stderr).toBe(0);
    const { result: pushed, seen } = await watchGit(() => h.inSeat("narrow", "git push -q teamd chain 2>&1"));
    expect(pushed.code, pushed.stdout).toBe(0);
    expect(hubRef("refs/heads/seat/narrow/chain")).toBeDefined();
    const onHub = [...seen].filter(([cmd]) => cmd.includes(h.hub) || cmd.includes(join(h.home, "git")));
    const replayReads = onHub.filter(([cmd]) => cmd.includes("/filtered/") && cmd.includes("cat-file --batch"));
    console.log(`git reading the push seen: ${onHub.length}, of them the replay's reader: ${replayReads.length}`);
    // Not vacuous: the replay's reader was seen (it lives for the whole chain).
    expect(replayReads.length).toBeGreaterThan(0);
    // Inside a sandbox: bwrap among its ancestors (its parent, or its git session's bash).
    for (const [cmd, ancestors] of onHub) expect(`${cmd}  <=  ${ancestors}`).toMatch(/bwrap/);
    expect(await quarantineLeftAfterLanding(h)).toEqual([]);
  }, 180_000);

  it("a file entry naming a tree the hub has, not sent (the replay would copy what the hub lacks): refused push.pack by the walk that checks what each pushed object names (index-pack --strict did, before round fourteen), nothing lands", async () => {
    const r = await h.inSeat(
      "narrow",
      [
        "git checkout -q -B confused teamd/main",
        // src/ is wholly readable, so its tree is the hub's own: name it where a file goes.
        "t=$(git rev-parse HEAD:src)",
        "git update-index --add --cacheinfo 100644,$t,src/confused.txt",
        "c=$(git commit-tree $(git write-tree) -p HEAD -m confused)",
        "git update-ref refs/heads/confused $c",
        // git's own pack-objects will not pack such a tree: the seat's git sends the commit and its two new trees.
        evilGit(
          "printf '%s\\n' $(/usr/bin/git rev-parse refs/heads/confused refs/heads/confused^{tree} refs/heads/confused:src) | /usr/bin/git pack-objects --stdout -q",
        ),
        "printf 'push refs/heads/confused:refs/heads/confused\\n\\n' | PATH=/tmp/evil:$PATH git-remote-teamd teamd teamd::seat 2>&1",
      ].join(" && "),
    );
    // In the words of an object named and not sent: git names the tree as it stops, and which
    // objects the walk met as what is not told apart from what the hub holds.
    expect(r.stdout).toMatch(/^error refs\/heads\/confused teamd: push\.pack: the pack lacks an object the push needs/m);
    expect(r.stdout).not.toMatch(/internal|unknown-outcome/);
    expect(hubRef("refs/heads/seat/narrow/confused")).toBeUndefined();
    expect(quarantineLeft()).toEqual([]);
    // Control: the same commit with a file there lands.
    const control = await h.inSeat(
      "narrow",
      "git reset -q && git checkout -q -B confused teamd/main && echo ok > src/confused.txt && git add -A && git commit -qm ok && git push -q teamd confused 2>&1",
    );
    expect(control.code, control.stdout).toBe(0);
    expect(hubRef("refs/heads/seat/narrow/confused")).toBeDefined();
  }, 120_000);

  it("300 commits each changing the one file narrow reads in a folder of 2,000 it cannot: the replay would build ~135 MB of trees the seat never sent; refused (push.object-size or push.paths), nothing lands", async () => {
    const made = await h.inSeat(
      "narrow",
      `git reset -q && git checkout -q -B notes teamd/main && for i in $(seq 1 300); do echo $i > vendor/NOTES.md && git commit -qam n$i || exit 1; done && git count-objects -v | grep -E '^(count|size-pack)'`,
    );
    expect(made.code, made.stdout + made.stderr).toBe(0);
    const r = await h.inSeat("narrow", "git push teamd notes 2>&1");
    expect(r.code, r.stdout).not.toBe(0);
    // Whichever of the replay's bounds it meets first: what it builds (128 MiB), what it compares (500,000 entries).
    expect(r.stdout).toMatch(
      /teamd: push\.(object-size: replaying the push onto the real trees builds more than|paths: replaying the push compares more than)/,
    );
    expect(hubRef("refs/heads/seat/narrow/notes")).toBeUndefined();
    expect(quarantineLeft()).toEqual([]);
    expect(h.daemon?.stderr() ?? "").not.toMatch(/internal|unhandled|TypeError/i);
    // Control: ten such commits land, the 2,000 files kept.
    const control = await h.inSeat(
      "narrow",
      "git checkout -q -B notes10 teamd/main && for i in $(seq 1 10); do echo $i > vendor/NOTES.md && git commit -qam n$i || exit 1; done && git push -q teamd notes10 2>&1",
    );
    expect(control.code, control.stdout).toBe(0);
    const landed = hubRef("refs/heads/seat/narrow/notes10");
    expect(landed).toBeDefined();
    expect(h.hubGit("show", `${landed}:vendor/NOTES.md`)).toBe("10");
    expect(h.hubGit("ls-tree", "--name-only", `${landed}:vendor`).split("\n")).toHaveLength(2001);
  }, 180_000);
});
