import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";
import { evilGit } from "../support/evil-git.js";

/**
 * One `git push teamd` of several refs whose commits share new objects, from inside real
 * seats started by `teamd start`, through the seat's remote helper, a real daemon, hub and
 * ledger. The daemon takes the one pack into one holding area and moves the refs one by one:
 * the first ref's move must not leave the next ref's check without the objects the pack
 * carried (it used to be refused `push.pack`, "the pack lacks object …"). And what the pack
 * did not carry is still refused on the second ref as on the first: the control at the end.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const CANARY = "MULTI-REF-CANARY-51c2";
/** Content only seat/narrow/good holds: w1 may not fetch that branch, so it was never served it. */
const NARROW_ONLY = "NARROW-ONLY-9d04";

const TEAM_FILE = teamFile(`  w1:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: [sleep, "3600"]
  narrow:
    lab: anthropic
    capabilities:
      read: { path: [src/, README.md] }
      write: { path: src/ }
    start:
      command: [sleep, "3600"]
`);

interface LogRecord {
  type: string;
  action: string;
  [key: string]: unknown;
}

describe.runIf(process.platform === "linux")("seat git: one push of several refs sharing new objects", () => {
  let h: TeamdHarness;

  const hubRef = (ref: string) => h.hubRef(ref);
  const local = async (seat: string, ...refs: string[]) => (await h.inSeat(seat, `git rev-parse ${refs.join(" ")}`)).stdout.trim().split("\n");
  const commitOn = (file: string) => `echo ${file} > src/${file}.txt && git add -A && git commit -qm ${file}`;

  beforeAll(async () => {
    h = await appliedTeam("teamd-push-multi-", TEAM_FILE, {
      "README.md": "hello\n",
      "src/a.txt": "a\n",
      "docs/secret.md": `${CANARY}\n`,
    });
    await h.ok(["start", "--team", "proj"]);
    // Every case branches from the trunk as the seat fetched it (teamd/main).
    for (const seat of ["w1", "narrow"]) expect((await h.inSeat(seat, "git fetch -q teamd 2>&1")).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("lands two new branches in one push when the second branches from the first", async () => {
    const pushed = await h.inSeat(
      "w1",
      `git checkout -q -b a teamd/main && ${commitOn("a1")} && git checkout -q -b b && ${commitOn("b1")} && git push teamd a b 2>&1; s=$?; git checkout -q --detach teamd/main; exit $s`,
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    const [a, b] = await local("w1", "a", "b");
    expect(hubRef("refs/heads/seat/w1/a")).toBe(a);
    expect(hubRef("refs/heads/seat/w1/b")).toBe(b);
    // No phantom tracking ref for a name the hub does not have (issue 22): a and b landed under seat/w1/,
    // and that is what the seat's remote-tracking refs say once it fetches.
    const tracking = await h.inSeat("w1", "git fetch -q teamd && git for-each-ref --format='%(refname)' refs/remotes/teamd");
    expect(tracking.stdout.trim().split("\n").sort()).toEqual(["refs/remotes/teamd/main", "refs/remotes/teamd/seat/w1/a", "refs/remotes/teamd/seat/w1/b"]);
    expect(h.hubGit("show", `${b}:src/a1.txt`)).toBe("a1");
    expect(h.hubGit("show", `${b}:src/b1.txt`)).toBe("b1");
    expect(() => h.hubGit("fsck", "--strict", "--no-dangling")).not.toThrow();
    const log = await h.records<LogRecord>();
    expect(log.filter((r) => r.type === "outcome" && r.action === "git.push" && JSON.stringify(r).includes("done")).length).toBeGreaterThanOrEqual(2);
  });

  it("lands an update of an existing branch and a new branch sharing its new commits, in one push", async () => {
    const first = await h.inSeat(
      "w1",
      `git checkout -q -b u teamd/main && ${commitOn("u0")} && git push teamd u 2>&1; s=$?; git checkout -q --detach teamd/main; exit $s`,
    );
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const pushed = await h.inSeat(
      "w1",
      `git checkout -q u && ${commitOn("u1")} && git branch v && ${commitOn("u2")} && git push teamd v u 2>&1; s=$?; git checkout -q --detach teamd/main; exit $s`,
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    const [u, v] = await local("w1", "u", "v");
    expect(hubRef("refs/heads/seat/w1/u")).toBe(u);
    expect(hubRef("refs/heads/seat/w1/v")).toBe(v);
    expect(h.hubGit("rev-parse", `${u}~1`)).toBe(v);
    expect(() => h.hubGit("fsck", "--strict", "--no-dangling")).not.toThrow();
  });

  it("sends only what the hub lacks: a one-line commit on a branch the daemon holds travels in a pack of a few hundred bytes", async () => {
    // The helper excludes what the daemon's listed refs hold that this repository has (one
    // `git cat-file --batch-check` with the pushed tips): without it the second pack carries the 256 KiB again.
    const first = await h.inSeat(
      "w1",
      `git checkout -q -b big teamd/main && head -c 262144 /dev/urandom > src/big.bin && git add -A && git commit -qm big && git push teamd big 2>&1; s=$?; git checkout -q --detach teamd/main; exit $s`,
    );
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const second = await h.inSeat(
      "w1",
      `git checkout -q big && ${commitOn("small")} && git push -v teamd big 2>&1; s=$?; git checkout -q --detach teamd/main; exit $s`,
    );
    expect(second.code, second.stdout + second.stderr).toBe(0);
    const sent = /pushed (\d+) bytes to the daemon/.exec(second.stdout);
    expect(sent, second.stdout).not.toBeNull();
    expect(Number(sent?.[1])).toBeLessThan(4096);
    expect(hubRef("refs/heads/seat/w1/big")).toBe((await local("w1", "big"))[0]);
  });

  it("lands a fast-forward of a branch the daemon holds, and refuses one that is not (push.stale), told by contained git over the pack", async () => {
    const first = await h.inSeat("w1", `git checkout -q -b ff teamd/main && ${commitOn("ff1")} && git push -q teamd ff 2>&1`);
    expect(first.code, first.stdout).toBe(0);
    const forward = await h.inSeat("w1", `${commitOn("ff2")} && git push -q teamd ff 2>&1; s=$?; git checkout -q --detach teamd/main; exit $s`);
    expect(forward.code, forward.stdout).toBe(0);
    const [ff] = await local("w1", "ff");
    expect(hubRef("refs/heads/seat/w1/ff")).toBe(ff);
    // git refuses a non-fast-forward itself before its helper runs; the helper, driven by hand
    // after a listing, sends the daemon's own tip as the old one — only the daemon can refuse it.
    const sideways = await h.inSeat(
      "w1",
      `git checkout -q -b side teamd/main && ${commitOn("side1")} && printf 'list for-push\npush refs/heads/side:refs/heads/ff\n\n' | git-remote-teamd teamd teamd::seat 2>&1; s=$?; git checkout -q --detach teamd/main; exit $s`,
    );
    expect(sideways.stdout).toMatch(/^error refs\/heads\/ff teamd: push\.stale: .*not a fast-forward/m);
    expect(hubRef("refs/heads/seat/w1/ff")).toBe(ff);
  });

  it("lands nothing for a push whose source is no commit (a blob)", async () => {
    const pushed = await h.inSeat("w1", `git push teamd $(git rev-parse HEAD:README.md):refs/heads/blob 2>&1`);
    expect(pushed.code).not.toBe(0);
    expect(hubRef("refs/heads/seat/w1/blob")).toBeUndefined();
  });

  it("lands three refs of one line of history in one push", async () => {
    const pushed = await h.inSeat(
      "w1",
      `git checkout -q -b x teamd/main && ${commitOn("x1")} && git branch y0 && ${commitOn("y1")} && git branch z0 && ${commitOn("z1")} && git push teamd y0:y x z0:z 2>&1; s=$?; git checkout -q --detach teamd/main; exit $s`,
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    const [x, y, z] = await local("w1", "x", "y0", "z0");
    expect(hubRef("refs/heads/seat/w1/x")).toBe(x);
    expect(hubRef("refs/heads/seat/w1/y")).toBe(y);
    expect(hubRef("refs/heads/seat/w1/z")).toBe(z);
    expect(() => h.hubGit("fsck", "--strict", "--no-dangling")).not.toThrow();
  });

  it("refuses both refs when the first leaves the write scope: the second's shared commits are judged, not taken as landed", async () => {
    const pushed = await h.inSeat(
      "w1",
      `git checkout -q -b out teamd/main && echo d > docs/d.md && git add -A && git commit -qm out && git checkout -q -b out2 && ${commitOn("o2")} && git push teamd out out2 2>&1; s=$?; git checkout -q --detach teamd/main; exit $s`,
    );
    expect(pushed.code).not.toBe(0);
    expect(pushed.stdout).toMatch(/\[remote rejected\] out -> out .*scope\.path/);
    expect(pushed.stdout).toMatch(/\[remote rejected\] out2 -> out2 .*scope\.path/);
    expect(hubRef("refs/heads/seat/w1/out")).toBeUndefined();
    expect(hubRef("refs/heads/seat/w1/out2")).toBeUndefined();
  });

  it("lands two new branches of a bounded-read seat in one push when the second branches from the first", async () => {
    const pushed = await h.inSeat(
      "narrow",
      `git checkout -q -b na teamd/main && ${commitOn("na1")} && git checkout -q -b nb && ${commitOn("nb1")} && git push teamd na nb 2>&1; s=$?; git checkout -q --detach teamd/main; exit $s`,
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    const na = hubRef("refs/heads/seat/narrow/na");
    const nb = hubRef("refs/heads/seat/narrow/nb");
    expect(na).toBeDefined();
    expect(nb).toBeDefined();
    expect(h.hubGit("rev-parse", `${nb}~1`)).toBe(na);
    expect(h.hubGit("show", `${nb}:docs/secret.md`)).toBe(CANARY); // replayed onto the real base
    expect(h.hubGit("show", `${nb}:src/na1.txt`)).toBe("na1");
  });

  it("refuses a push whose second ref names an unread blob by id and never sends it, whole: its first ref does not land either (as when the hub lacks the blob)", async () => {
    const secretBlob = h.hubGit("rev-parse", "main:docs/secret.md");
    expect(h.hubGit("cat-file", "-p", secretBlob)).toBe(CANARY); // control: the hub has it, by that id
    const attack = await h.inSeat(
      "narrow",
      [
        "git checkout -q -b good teamd/main",
        `echo ${NARROW_ONLY} > src/good.txt && git add -A && git commit -qm good`,
        `git update-index --add --cacheinfo 100644,${secretBlob},src/stolen.md`,
        "tree=$(git write-tree --missing-ok)",
        "commit=$(git commit-tree $tree -p HEAD -m stolen)",
        "git update-ref refs/heads/stolen $commit",
        "git reset -q",
        // good's objects and stolen's commit and two trees: the blob stays behind, named but never sent.
        evilGit(
          "{ /usr/bin/git rev-list --objects --no-object-names refs/heads/good --not refs/remotes/teamd/main; /usr/bin/git rev-parse refs/heads/stolen refs/heads/stolen^{tree} refs/heads/stolen:src; } | /usr/bin/git pack-objects --stdout",
        ),
        "printf 'push refs/heads/good:refs/heads/good\\npush refs/heads/stolen:refs/heads/stolen\\n\\n' | PATH=/tmp/evil:$PATH git-remote-teamd teamd teamd::seat 2>&1",
      ].join(" && "),
    );
    // Whole: had the first ref landed, the seat would learn that the hub holds the blob (a
    // push naming one the hub lacks fails whole at index-pack: checkPushSelfContained).
    expect(attack.stdout).toMatch(/^error refs\/heads\/good teamd: push\.pack: the pack lacks an object the push needs/m);
    expect(attack.stdout).toMatch(/^error refs\/heads\/stolen teamd: push\.pack: the pack lacks an object the push needs/m);
    expect(hubRef("refs/heads/seat/narrow/good")).toBeUndefined();
    expect(hubRef("refs/heads/seat/narrow/stolen")).toBeUndefined();
    // Control: the good ref alone lands.
    const alone = await h.inSeat("narrow", "git push -q teamd good 2>&1");
    expect(alone.code, alone.stdout).toBe(0);
    expect(hubRef("refs/heads/seat/narrow/good")).toBeDefined();
    const fetched = await h.inSeat("narrow", `git fetch -q teamd; git cat-file -e ${secretBlob} && echo LEAKED || echo absent`);
    expect(fetched.stdout.trim().split("\n").pop()).toBe("absent");
    await h.inSeat("narrow", "git checkout -q --detach teamd/main; git update-ref -d refs/heads/stolen");
  });

  it("refuses an unbounded seat's push whose second ref names a blob it was never served, whole: neither ref lands", async () => {
    const unserved = h.hubGit("rev-parse", "refs/heads/seat/narrow/good:src/good.txt");
    expect(h.hubGit("cat-file", "-p", unserved)).toBe(NARROW_ONLY); // control: the hub has it, by that id
    expect((await h.inSeat("w1", "git ls-remote teamd")).stdout).not.toContain("seat/narrow/"); // and w1 may not fetch it
    const attack = await h.inSeat(
      "w1",
      [
        "git checkout -q -b first teamd/main",
        commitOn("first"),
        `blob=$(echo ${NARROW_ONLY} | git hash-object --stdin)`,
        "test $blob = " + unserved,
        "git update-index --add --cacheinfo 100644,$blob,src/taken.md",
        "tree=$(git write-tree --missing-ok)",
        "commit=$(git commit-tree $tree -p HEAD -m taken)",
        "git update-ref refs/heads/taken $commit",
        "git reset -q",
        evilGit(
          "{ /usr/bin/git rev-list --objects --no-object-names refs/heads/first --not refs/remotes/teamd/main; /usr/bin/git rev-parse refs/heads/taken refs/heads/taken^{tree} refs/heads/taken:src; } | /usr/bin/git pack-objects --stdout",
        ),
        "printf 'push refs/heads/first:refs/heads/first\\npush refs/heads/taken:refs/heads/taken\\n\\n' | PATH=/tmp/evil:$PATH git-remote-teamd teamd teamd::seat 2>&1",
      ].join(" && "),
    );
    expect(attack.stdout).toMatch(/^error refs\/heads\/first teamd: push\.pack/m);
    expect(attack.stdout).toMatch(/^error refs\/heads\/taken teamd: push\.pack/m);
    // Named in no words (which object the walk meets first depends on what the hub holds).
    expect(attack.stdout).toContain("the pack lacks an object the push needs, which the pusher was never served");
    expect(hubRef("refs/heads/seat/w1/first")).toBeUndefined();
    expect(hubRef("refs/heads/seat/w1/taken")).toBeUndefined();
    // Control: the first ref alone lands.
    const alone = await h.inSeat("w1", "git push -q teamd first 2>&1");
    expect(alone.code, alone.stdout).toBe(0);
    expect(hubRef("refs/heads/seat/w1/first")).toBe((await local("w1", "first"))[0]);
    await h.inSeat("w1", "git checkout -q --detach teamd/main; git update-ref -d refs/heads/taken");
  });
});
