import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsWithAncestors } from "../support/process-ancestry.js";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";
import { evilGit } from "../support/evil-git.js";

/**
 * A hostile seat against the fast-forward check of a push (commitAncestry: contained
 * `git merge-base --is-ancestor` over the push's quarantine, or over the hub for a push that
 * sends nothing) and the helper's one `cat-file --batch-check`. Every case asserts the secure
 * outcome: refused, nothing landed, no process or quarantine folder left, no internal error.
 * Found by this attack (fixed): a push that sent no pack had its walks run as plain git on the
 * daemon's own account — 32 refs moved sideways to a 60,000-commit branch ran 32 of them.
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

// Deep enough that each walk takes a visible while (the process poll sees them), light enough for a suite that runs files side by side.
const DEEP = 20_000;

describe.runIf(process.platform === "linux")("attack: the fast-forward check of a push", () => {
  let h: TeamdHarness;
  let ff: string;

  const hubRef = (ref: string) => h.hubRef(ref);
  const commitOn = (file: string) => `echo ${file} > src/${file}.txt && git add -A && git commit -qm ${file}`;
  const helper = (lines: string, pathPrefix = "") =>
    `printf '${lines}' | ${pathPrefix}git-remote-teamd teamd teamd::seat 2>&1; s=$?; git checkout -q --detach teamd/main; exit $s`;

  /** bwrap or git processes naming this test's hub or quarantine (not its seats' own bwrap; other test files run beside this one). */
  const strays = () =>
    execFileSync("ps", ["-eo", "pid,ppid,cmd"], { encoding: "utf8" })
      .split("\n")
      .filter((l) => /\b(bwrap|git)\b/.test(l) && (l.includes(h.hub) || l.includes(join(h.home, "git", "quarantine"))));
  const quarantineLeft = () => {
    const dir = join(h.home, "git", "quarantine");
    return existsSync(dir) ? readdirSync(dir) : [];
  };
  const settledClean = async (waits = 20) => {
    for (let i = 0; i < waits && (strays().length > 0 || quarantineLeft().length > 0); i++) await new Promise((r) => setTimeout(r, 250));
    expect(strays()).toEqual([]);
    expect(quarantineLeft()).toEqual([]);
    expect(h.daemon?.stderr() ?? "").not.toMatch(/internal|unhandled|TypeError|at async/i);
  };

  beforeAll(async () => {
    h = await appliedTeam("teamd-ancestry-attack-", TEAM_FILE, { "README.md": "hello\n", "src/a.txt": "a\n" });
    await h.ok(["start", "--team", "proj"]);
    expect((await h.inSeat("w1", "git fetch -q teamd 2>&1")).code).toBe(0);
    const first = await h.inSeat(
      "w1",
      `git checkout -q -b ff teamd/main && ${commitOn("ff1")} && git push -q teamd ff 2>&1; s=$?; git checkout -q --detach teamd/main; exit $s`,
    );
    expect(first.code, first.stdout).toBe(0);
    ff = (await h.inSeat("w1", "git rev-parse ff")).stdout.trim();
    expect(hubRef("refs/heads/seat/w1/ff")).toBe(ff);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("lies that the branch does not exist (no listing: old value empty): refused push.stale, nothing moved", async () => {
    const r = await h.inSeat("w1", `git checkout -q -b lie1 teamd/main && ${commitOn("lie1")} && ${helper("push refs/heads/lie1:refs/heads/ff\\n\\n")}`);
    expect(r.stdout).toMatch(/^error refs\/heads\/ff teamd: push\.stale/m);
    expect(hubRef("refs/heads/seat/w1/ff")).toBe(ff);
    // And with --force-less "+"-less push of a non-ff to a name given in full (seat/w1/ff).
    const r2 = await h.inSeat("w1", `git checkout -q lie1 && ${helper("push refs/heads/lie1:refs/heads/seat/w1/ff\\n\\n")}`);
    expect(r2.stdout).toMatch(/push\.stale/);
    expect(hubRef("refs/heads/seat/w1/ff")).toBe(ff);
    await settledClean();
  });

  it("sideways commits dated far in the future and in the past (clock skew in the walk): refused push.stale", async () => {
    for (const date of ["4000000000 +0000", "100000000 +0000"]) {
      const r = await h.inSeat(
        "w1",
        `git checkout -q -B skew teamd/main && echo s > src/skew.txt && git add -A && GIT_COMMITTER_DATE='${date}' GIT_AUTHOR_DATE='${date}' git commit -qm skew && ${helper("list for-push\\npush refs/heads/skew:refs/heads/ff\\n\\n")}`,
      );
      expect(r.stdout, r.stderr).toMatch(/^error refs\/heads\/ff teamd: push\.stale/m);
      expect(hubRef("refs/heads/seat/w1/ff")).toBe(ff);
    }
    await settledClean();
  });

  it("a hand-made commit naming the daemon's tip as a second parent after a missing one: refused, nothing landed", async () => {
    const r = await h.inSeat(
      "w1",
      [
        `tree=$(git rev-parse ff^{tree})`,
        `c=$(printf 'tree %s\\nparent %s\\nparent %s\\nauthor a <a@a> 1 +0000\\ncommitter a <a@a> 1 +0000\\n\\nm\\n' $tree 1111111111111111111111111111111111111111 ${ff} | git hash-object --literally -t commit -w --stdin)`,
        `git update-ref refs/heads/miss $c`,
        evilGit(`echo $(git rev-parse miss) | /usr/bin/git pack-objects --stdout -q`),
        helper("list for-push\\npush refs/heads/miss:refs/heads/ff\\n\\n", "PATH=/tmp/evil:$PATH "),
      ].join("\n"),
    );
    expect(r.stdout).toMatch(/^error refs\/heads\/ff teamd: push\.(pack|stale)/m);
    expect(hubRef("refs/heads/seat/w1/ff")).toBe(ff);
    await settledClean();
  });

  it("a commit whose parent is a tag of the daemon's tip (not a commit): refused, nothing landed", async () => {
    const r = await h.inSeat(
      "w1",
      [
        `tree=$(git rev-parse ff^{tree})`,
        `t=$(printf 'object %s\\ntype commit\\ntag x\\ntagger a <a@a> 1 +0000\\n\\nx\\n' ${ff} | git hash-object -t tag -w --stdin)`,
        `c=$(printf 'tree %s\\nparent %s\\nauthor a <a@a> 1 +0000\\ncommitter a <a@a> 1 +0000\\n\\nm\\n' $tree $t | git hash-object --literally -t commit -w --stdin)`,
        `git update-ref refs/heads/viatag $c`,
        evilGit(`printf '%s\\n%s\\n' $(git rev-parse viatag) ${"$"}(git cat-file -p viatag | sed -n 's/^parent //p') | /usr/bin/git pack-objects --stdout -q`),
        helper("list for-push\\npush refs/heads/viatag:refs/heads/ff\\n\\n", "PATH=/tmp/evil:$PATH "),
      ].join("\n"),
    );
    expect(r.stdout).toMatch(/^error refs\/heads\/ff teamd: push\.(pack|stale)/m);
    expect(hubRef("refs/heads/seat/w1/ff")).toBe(ff);
    await settledClean();
  });

  it(`a sideways history ${DEEP} commits deep: refused within bounded time, nothing left running`, async () => {
    const made = await h.inSeat(
      "w1",
      [
        `base=$(git rev-parse teamd/main)`,
        `awk -v n=${DEEP} -v base=$base 'BEGIN{for(i=1;i<=n;i++){m="c" i; printf "commit refs/heads/deep\\ncommitter x <x@x> %d +0000\\ndata %d\\n%s\\n", 1000000000+i, length(m), m; if(i==1) printf "from %s\\n", base; printf "\\n"}}' | git fast-import --quiet`,
        `git rev-list --count deep`,
      ].join("\n"),
    );
    expect(made.code, made.stdout + made.stderr).toBe(0);
    const started = Date.now();
    const r = await h.inSeat("w1", helper("list for-push\\npush refs/heads/deep:refs/heads/ff\\n\\n"));
    const took = Date.now() - started;
    console.log(`deep sideways push: ${took} ms`);
    expect(r.stdout).toMatch(/^error refs\/heads\/ff teamd: push\.(stale|pack)/m);
    expect(hubRef("refs/heads/seat/w1/ff")).toBe(ff);
    await settledClean();
  }, 120_000);

  it("nothing sent (evil pack-objects prints nothing), sideways to a deep branch landed earlier: refused, bounded", async () => {
    // The deep history lands as a new branch (no walk); the later cases walk it.
    const landed = await h.inSeat("w1", `git push -q teamd deep 2>&1`);
    expect(landed.code, landed.stdout).toBe(0);
    const deep = (await h.inSeat("w1", "git rev-parse deep")).stdout.trim();
    expect(hubRef("refs/heads/seat/w1/deep")).toBe(deep);
    const refs = Array.from({ length: 8 }, (_, i) => `push refs/heads/deep:refs/heads/ff${i}`);
    // ff0..ff7: branches the daemon holds, at ff, each moved sideways to deep with no pack.
    const made = await h.inSeat("w1", `for i in 0 1 2 3 4 5 6 7; do git push -q teamd ff:ff$i 2>&1 || exit 1; done`);
    expect(made.code, made.stdout).toBe(0);
    const started = Date.now();
    const r = await h.inSeat("w1", [evilGit(":"), helper(`list for-push\\n${refs.join("\\n")}\\n\\n`, "PATH=/tmp/evil:$PATH ")].join("\n"));
    const took = Date.now() - started;
    console.log(`nothing-sent sideways x8: ${took} ms`);
    for (let i = 0; i < 8; i++) {
      expect(r.stdout).toMatch(new RegExp(`^error refs/heads/ff${i} teamd: push\\.stale`, "m"));
      expect(hubRef(`refs/heads/seat/w1/ff${i}`)).toBe(ff);
    }
    await settledClean();
  }, 180_000);

  it("the helper's batch-check: a revision that expands to several lines cannot shift another ref's tip", async () => {
    // --batch-check answers one line a revision; names git cannot parse or that are ambiguous must not misalign.
    const r = await h.inSeat(
      "w1",
      `git checkout -q -B al teamd/main && ${commitOn("al1")} && ${helper("list for-push\\npush 0000:refs/heads/x1\\npush refs/heads/al:refs/heads/al\\npush HEAD@{9999}:refs/heads/x2\\n\\n")}`,
    );
    const al = (await h.inSeat("w1", "git rev-parse al")).stdout.trim();
    const landed = hubRef("refs/heads/seat/w1/al");
    expect(landed === undefined || landed === al).toBe(true);
    expect(hubRef("refs/heads/seat/w1/x1")).toBeUndefined();
    expect(hubRef("refs/heads/seat/w1/x2")).toBeUndefined();
    console.log(`batch-check alignment: ${r.stdout.trim()}`);
    await settledClean();
  });
  it("two fast-forwards of one branch at once, diverging: one lands, the other is refused, never a non-ff result", async () => {
    const made = await h.inSeat(
      "w1",
      `git push -q teamd ff:race 2>&1 && git checkout -q -B r1 ff && ${commitOn("r1")} && git checkout -q -B r2 ff && ${commitOn("r2")} && git checkout -q --detach teamd/main`,
    );
    expect(made.code, made.stdout).toBe(0);
    const [a, b] = await Promise.all([
      h.inSeat("w1", helper("list for-push\\npush refs/heads/r1:refs/heads/race\\n\\n")),
      h.inSeat("w1", helper("list for-push\\npush refs/heads/r2:refs/heads/race\\n\\n")),
    ]);
    const oks = [a, b].filter((r) => /^ok refs\/heads\/race/m.test(r.stdout)).length;
    expect(oks, a.stdout + b.stdout).toBeLessThanOrEqual(1);
    const tip = hubRef("refs/heads/seat/w1/race");
    expect(() => h.hubGit("merge-base", "--is-ancestor", ff, tip ?? "")).not.toThrow();
    expect(h.hubGit("rev-list", "--count", `${ff}..${tip}`)).toMatch(/^[01]$/);
    await settledClean();
  }, 60_000);

  it("the pusher goes away while the deep sideways walk runs: no bwrap/git or quarantine left behind", async () => {
    const r = await h.inSeat(
      "w1",
      `awk -v n=${DEEP} -v base=$(git rev-parse teamd/main) 'BEGIN{for(i=1;i<=n;i++){m="d" i; printf "commit refs/heads/deep2\\ncommitter x <x@x> %d +0000\\ndata %d\\n%s\\n", 1000000000+i, length(m), m; if(i==1) printf "from %s\\n", base; printf "\\n"}}' | git fast-import --quiet && ` +
        `(printf 'list for-push\\npush refs/heads/deep2:refs/heads/ff\\n\\n' | git-remote-teamd teamd teamd::seat >/tmp/out 2>&1 & p=$!; sleep 1.5; kill -9 $p; wait $p; echo killed)`,
    );
    expect(r.stdout, r.stderr).toContain("killed");
    await new Promise((res) => setTimeout(res, 3000));
    expect(hubRef("refs/heads/seat/w1/ff")).toBe(ff);
    // The daemon may finish the checks of a push whose pusher left; they must end (within the 30 s diff bound).
    const t0 = Date.now();
    await settledClean(240);
    console.log(`after the pusher left, the push's contained runs ended within ${Date.now() - t0 + 3000} ms`);
  }, 90_000);
  it("nothing sent, 32 refs moved sideways to a deep branch: every fast-forward walk runs contained (bwrap), never plain git on the daemon's account", async () => {
    const names = Array.from({ length: 32 }, (_, i) => `g${i}`);
    const made = await h.inSeat("w1", `git push -q teamd ${names.map((n) => `ff:${n}`).join(" ")} 2>&1`);
    expect(made.code, made.stdout).toBe(0);
    const seen = new Map<string, string>();
    const poll = setInterval(() => {
      for (const [row, ancestors] of rowsWithAncestors((l) => l.includes("merge-base --is-ancestor") && l.includes(h.hub))) seen.set(row, ancestors);
    }, 10);
    const started = Date.now();
    let r;
    try {
      r = await h.inSeat(
        "w1",
        [evilGit(":"), helper(`list for-push\\n${names.map((n) => `push refs/heads/deep:refs/heads/${n}`).join("\\n")}\\n\\n`, "PATH=/tmp/evil:$PATH ")].join(
          "\n",
        ),
      );
    } finally {
      clearInterval(poll);
    }
    const took = Date.now() - started;
    console.log(`nothing-sent sideways x32 over ${DEEP} commits: ${took} ms; ${seen.size} merge-base processes seen`);
    for (const n of names) {
      expect(r.stdout).toMatch(new RegExp(`^error refs/heads/${n} teamd: push\\.stale`, "m"));
      expect(hubRef(`refs/heads/seat/w1/${n}`)).toBe(ff);
    }
    // Not vacuous: the walks were seen (each takes a good part of a second over this history).
    expect(seen.size).toBeGreaterThan(0);
    // Inside a sandbox: bwrap among its ancestors (its parent, or its git session's bash).
    for (const [cmd, ancestors] of seen) expect(`${cmd}  <=  ${ancestors}`).toMatch(/bwrap/);
    await settledClean();
  }, 180_000);
});
