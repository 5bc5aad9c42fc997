import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { evilGitPacking, freshFromTrunk } from "../support/evil-git.js";
import { NARROW_TEAM_FILE, narrowRepoFiles, refusalWords } from "../support/narrow-seat.js";
import { spread, timeGuesses } from "../support/guess-timing.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * A hostile bounded-read seat against the daemon's handling of pushed git data (round
 * fourteen, a second attacker, against the fixes of test/escape/walk-attack.test.ts):
 * the walk from each pushed tip (checkSelfContained), the reads that run beside it (the listing,
 * the commit text, the changed paths: checkedCommits' `next`), the check of special files, and
 * the replay (git-filter.ts).
 *
 * The seat `narrow` may read src/ and README.md and write src/ only; the hub holds
 * docs/secret.md with a canary. Each case asserts the SECURE outcome: a failing case is a hole.
 *
 * Proves docs/enforcement.md's rows "read / lab-visibility refusal (c5) (§3, §8)" (an object
 * named and not sent: one refusal whether the hub holds it or not) and "Capability vocabulary +
 * gate (§3)" (the write scope through the replay's reading of modes).
 *
 * Found when written (git 2.39.5):
 * - a word oracle (checkSelfContained): a guess S (docs/secret.md's blob, or the docs/ tree
 *   holding it) named in one pushed tree as a file (src/x) and as a folder (src/y), S not sent.
 *   Right guess: "the pack lacks an object the push needs…"; wrong guess: "pack is corrupt:
 *   object <S> is a blob, not a tree; entry 'y' in tree <t> has tree mode, but is not a tree".
 *   rev-list prints S at the file entry only when the hub holds it, then dies at the folder
 *   entry before printing its missing objects ("?S" comes at the end), and STOPPED_AT does not
 *   read "object S is a …": nothing unsent is seen, and checkTypes calls it corrupt. The same
 *   with the folder first (src/a folder, src/b file: "is a tree, not a blob"), and in a push of
 *   two refs (both refused either way, in the two different words).
 * - a timing oracle (checkedCommits' `next`): changedPaths' diff-tree runs whatever the walk
 *   finds and is waited for; two trees of 400 entries (a ~2 KiB pack) name the guessed docs/
 *   tree 160,000 times. Right: diff-tree lists 160,000 paths, ~2.5 s (median; 1.75–2.97 s);
 *   wrong: it dies at the first, ~0.24 s (0.15–0.32 s). Same words.
 * - false refusals of honest pushes: a rename (git mv), a copy, or a change-then-revert of a
 *   .gitattributes the trunk holds is refused (checkSpecialFiles: git's pack-objects does not
 *   send a blob the hub has, and the check demands it travel in the pack).
 * Each fixed (src/effects/git-receive.ts): every object git's errors name is looked up as the
 * listed ones are (unsent when the pack lacks it); the walk refusing stops the reads beside it
 * (an AbortSignal to contained git), so the refusal takes the walk's time; and a .gitattributes
 * or .gitmodules the pack does not carry is read by git's fsck over a tree naming it and it
 * (checkAsSpecialFile), not refused.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const CANARY = "CANARY-walk2-5b7e never for narrow";
const WRONG = "CANARY-walk2-0000 never for narrow";

const TEAM_FILE = NARROW_TEAM_FILE;

describe.runIf(process.platform === "linux")("attack 2: the walk, the reads beside it and the special files of a bounded seat's push", () => {
  let h: TeamdHarness;
  let main: string;

  const hubRef = (ref: string) => h.hubRef(ref);
  const fresh = freshFromTrunk;
  const evilGit = evilGitPacking;
  const helperPushRefs = (refs: readonly string[]) =>
    `printf '${refs.map((r) => `push refs/heads/${r}:refs/heads/${r}\\n`).join("")}\\n' | PATH=/tmp/evil:$PATH git-remote-teamd teamd teamd::seat 2>&1`;
  const helperPush = (ref: string) => helperPushRefs([ref]);
  /** The probe's push, then its local ref deleted (a ref naming what the seat lacks, or as two types, breaks its own later fetches). */
  const evilPush = (ref: string, objects: string) => `${evilGit(objects)} && ${helperPush(ref)}; git update-ref -d refs/heads/${ref}`;
  const normal = refusalWords;
  /** In the seat: S (the guess's blob id, never written) and D (a docs/ tree holding it, written to a scratch repository only). */
  const guess = (content: string) =>
    [
      `S=$(printf '%s\\n' '${content}' | git hash-object --stdin)`,
      "rm -rf /tmp/scratch.git && git init -q --bare /tmp/scratch.git",
      "D=$(printf '100644 blob %s\\tsecret.md\\n' $S | GIT_DIR=/tmp/scratch.git git mktree --missing)",
    ].join(" && ");
  /** In the seat: commit c on top of the trunk whose src/ tree is the trunk's plus the mktree lines `format` makes of `args` (shell words): t, s, c. */
  const withSrc = (branch: string, format: string, args: string) =>
    [
      `s=$({ git ls-tree HEAD:src; printf '${format}' ${args}; } | git mktree --missing)`,
      "t=$(git ls-tree HEAD | grep -v '\tsrc$' | { cat; printf '040000 tree %s\\tsrc\\n' $s; } | git mktree --missing)",
      `c=$(git commit-tree $t -p HEAD -m ${branch})`,
      `git update-ref refs/heads/${branch} $c`,
    ].join(" && ");
  const fsckHub = () => {
    try {
      return execFileSync("git", ["--git-dir", h.hub, "fsck", "--no-dangling", "--connectivity-only"], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      });
    } catch (error) {
      return `FAILED: ${String((error as { stderr?: string }).stderr ?? error)}`;
    }
  };

  beforeAll(async () => {
    h = await appliedTeam("teamd-walk-attack2-", TEAM_FILE, { ...narrowRepoFiles(CANARY), "src/.gitattributes": "*.txt text\n" });
    await h.ok(["start", "--team", "proj"]);
    main = hubRef("refs/heads/main") as string;
    expect((await h.inSeat("narrow", "git fetch -q teamd 2>&1 && git checkout -q --detach teamd/main")).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  // -------------------------------------------------------------------------------------------
  // A word oracle: one object named twice in a tree, as a file and as a folder. rev-list creates
  // its in-memory object at the first entry (a blob), so the second (a tree) dies with "object X
  // is a blob, not a tree" before the missing objects are printed at the end. When the hub holds
  // X, the walk printed it at the file entry (it exists) — refused as unsent; when it does not,
  // nothing unsent was printed, STOPPED_AT does not read "object X is a …", and the refusal is
  // checkTypes' "pack is corrupt".

  for (const [label, at] of [
    ["blob of docs/secret.md", "$S"],
    ["docs/ tree holding it", "$D"],
  ] as const) {
    it(`a guess (the ${label}) named at src/x as a file and at src/y as a folder: the refusal is the same whether the hub holds it or not`, async () => {
      const probe = async (content: string, branch: string) => {
        const r = await h.inSeat(
          "narrow",
          [fresh(branch), guess(content), withSrc(branch, "100644 blob %s\\tx\\n040000 tree %s\\ty\\n", `${at} ${at}`), evilPush(branch, "$c $t $s")].join(
            " && ",
          ),
        );
        expect(hubRef(`refs/heads/seat/narrow/${branch}`)).toBeUndefined();
        return normal(r.stdout, branch);
      };
      const tag = at === "$S" ? "b" : "t";
      const right = await probe(CANARY, `two-${tag}-right`);
      const wrong = await probe(WRONG, `two-${tag}-wrong`);
      console.log(`[file+folder oracle, ${label}] right guess: ${right}\n[file+folder oracle, ${label}] wrong guess: ${wrong}`);
      expect(right).toMatch(/^error refs\/heads\/X0 /m);
      expect(wrong).toMatch(/^error refs\/heads\/X0 /m);
      expect(right).toBe(wrong);
    }, 60_000);
  }

  it("the same probe beside an honest ref in one push of two refs: which refs land, and the words, are the same whether the hub holds the guess or not", async () => {
    const probe = async (content: string, branch: string) => {
      const honest = `${branch}-ok`;
      const r = await h.inSeat(
        "narrow",
        [
          fresh(honest),
          `echo ${honest} > src/${honest}.txt && git add src/${honest}.txt && git commit -qm ${honest}`,
          "h=$(git rev-parse HEAD) && ht=$(git rev-parse HEAD^{tree}) && hs=$(git rev-parse HEAD:src) && hb=$(git rev-parse HEAD:src/" + honest + ".txt)",
          fresh(branch),
          guess(content),
          withSrc(branch, "100644 blob %s\\tx\\n040000 tree %s\\ty\\n", "$S $S"),
          `${evilGit("$c $t $s $h $ht $hs $hb")} && ${helperPushRefs([honest, branch])}; git update-ref -d refs/heads/${branch}`,
        ].join(" && "),
      );
      const landed = [honest, branch].filter((b) => hubRef(`refs/heads/seat/narrow/${b}`) !== undefined).map((b) => b.replace(branch, "X"));
      return { said: normal(r.stdout, `${branch}-ok`, branch), landed };
    };
    const right = await probe(CANARY, "pair-right");
    const wrong = await probe(WRONG, "pair-wrong");
    console.log(
      `[two refs] right: landed ${JSON.stringify(right.landed)}; ${right.said}\n[two refs] wrong: landed ${JSON.stringify(wrong.landed)}; ${wrong.said}`,
    );
    expect(right.landed).toEqual(wrong.landed);
    expect(right.said).toBe(wrong.said);
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // Other places git reads what the seat only names: each probe's refusal with a right and a
  // wrong guess must be the same (soft: all are tried).

  it("probes of many shapes (folder mode on the blob, file and link modes on the tree, a commit's tree, a merge's parent, a gitlink, .gitmodules/.gitattributes aliases): the same outcome for a right and a wrong guess", async () => {
    const LIT = "author n <n@seat.invalid> 1700000000 +0000\\ncommitter n <n@seat.invalid> 1700000000 +0000";
    const shapes: Record<string, string> = {
      treeModeBlob: `${withSrc("@BR@", "040000 tree %s\\tx\\n", "$S")} && o="$c $t $s"`,
      fileModeTree: `${withSrc("@BR@", "100644 blob %s\\tx\\n", "$D")} && o="$c $t $s"`,
      linkModeTree: `${withSrc("@BR@", "120000 blob %s\\tx\\n", "$D")} && o="$c $t $s"`,
      folderThenFile: `${withSrc("@BR@", "040000 tree %s\\ta\\n100644 blob %s\\tb\\n", "$S $S")} && o="$c $t $s"`,
      commitTreeIsBlob: `c=$(printf "tree %s\\nparent %s\\n${LIT}\\n\\nB\\n" $S $(git rev-parse HEAD) | git hash-object -t commit -w --stdin --literally) && git update-ref refs/heads/@BR@ $c && o="$c"`,
      mergeParentBlob: `c=$(printf "tree %s\\nparent %s\\nparent %s\\n${LIT}\\n\\nB\\n" $(git rev-parse HEAD^{tree}) $(git rev-parse HEAD) $S | git hash-object -t commit -w --stdin --literally) && git update-ref refs/heads/@BR@ $c && o="$c"`,
      mergeParentTree: `c=$(printf "tree %s\\nparent %s\\nparent %s\\n${LIT}\\n\\nB\\n" $(git rev-parse HEAD^{tree}) $(git rev-parse HEAD) $D | git hash-object -t commit -w --stdin --literally) && git update-ref refs/heads/@BR@ $c && o="$c"`,
      gitlinkBlob: `${withSrc("@BR@", "160000 commit %s\\tsub\\n", "$S")} && o="$c $t $s"`,
      gitmodulesUpper: `${withSrc("@BR@", "100644 blob %s\\t.GITMODULES\\n", "$S")} && o="$c $t $s"`,
      gitmodShort: `${withSrc("@BR@", "100644 blob %s\\tgitmod~1\\n", "$S")} && o="$c $t $s"`,
      gitattrDot: `${withSrc("@BR@", "100644 blob %s\\t.gitattributes.\\n", "$S")} && o="$c $t $s"`,
      gitmodulesTree: `${withSrc("@BR@", "040000 tree %s\\t.gitmodules\\n", "$D")} && o="$c $t $s"`,
      gitmodulesLink: `${withSrc("@BR@", "120000 blob %s\\t.gitmodules\\n", "$S")} && o="$c $t $s"`,
    };
    const outcomes: string[] = [];
    for (const [name, shape] of Object.entries(shapes)) {
      const said: Record<string, string> = {};
      for (const [which, content] of [
        ["right", CANARY],
        ["wrong", WRONG],
      ] as const) {
        const branch = `sh-${name}-${which}`.toLowerCase();
        const r = await h.inSeat("narrow", [fresh(branch), guess(content), shape.replaceAll("@BR@", branch), evilPush(branch, "$o")].join(" && "));
        const landed = hubRef(`refs/heads/seat/narrow/${branch}`);
        said[which] = `${landed === undefined ? "refused" : "LANDED"}: ${normal(r.stdout + r.stderr, branch)}`;
      }
      outcomes.push(`[shape ${name}] right: ${said.right}\n[shape ${name}] wrong: ${said.wrong}`);
      expect.soft(said.right, name).toBe(said.wrong);
      expect.soft(said.right, name).not.toMatch(/internal|unknown-outcome/);
    }
    console.log(outcomes.join("\n"));
  }, 240_000);

  // -------------------------------------------------------------------------------------------
  // A timing oracle through the reads beside the walk: changedPaths' diff-tree runs whatever the
  // walk found (settled waits for it) and recurses into every folder entry the hub can read.
  // Two trees of 400 entries (a pack of ~2 KiB) name the guessed docs/ tree 160,000 times: when
  // the hub holds it, diff-tree lists 160,000 paths (and the daemon parses them); when it does
  // not, diff-tree dies at the first. Both are refused as unsent.

  it("timing: a guess of the docs/ tree named 160,000 times through two small trees — the refusal's time with a right and a wrong guess (reported, not asserted)", async () => {
    const N = 400;
    const made = await h.inSeat(
      "narrow",
      [
        fresh("amp-base"),
        "mkdir -p /tmp/evil",
        ...(
          [
            ["right", CANARY],
            ["wrong", WRONG],
          ] as const
        ).map(([which, content]) =>
          [
            guess(content),
            `l1=$(i=0; while [ $i -lt ${N} ]; do printf '040000 tree %s\\td%05d\\n' $D $i; i=$((i+1)); done | git mktree --missing)`,
            `l2=$(i=0; while [ $i -lt ${N} ]; do printf '040000 tree %s\\te%05d\\n' $l1 $i; i=$((i+1)); done | git mktree --missing)`,
            withSrc(`amp-${which}`, "040000 tree %s\\tzz\\n", "$l2"),
            `printf '%s\\n' $c $t $s $l1 $l2 | git pack-objects --stdout -q > /tmp/evil/pack-${which}`,
          ].join(" && "),
        ),
        `printf '#!/bin/sh\\nif [ "$1" = pack-objects ]; then exec cat /tmp/evil/pack-cur; fi\\nexec /usr/bin/git "$@"\\n' > /tmp/evil/git && chmod +x /tmp/evil/git`,
        "ls -l /tmp/evil/pack-right /tmp/evil/pack-wrong",
      ].join(" && "),
    );
    expect(made.code, made.stdout + made.stderr).toBe(0);
    console.log(made.stdout.trim());
    const { times, said } = await timeGuesses(h, { seat: "narrow", prefix: "amp", rounds: 8, budgetMs: 45_000, push: helperPush, words: normal });
    await h.sh("narrow", "git update-ref -d refs/heads/amp-right; git update-ref -d refs/heads/amp-wrong");
    console.log(
      `[diff-tree timing oracle] right guess: ${spread(times.right)}\n[diff-tree timing oracle] wrong guess: ${spread(times.wrong)}\n${[...said].join("\n")}`,
    );
    expect(hubRef("refs/heads/seat/narrow/amp-right")).toBeUndefined();
    expect(hubRef("refs/heads/seat/narrow/amp-wrong")).toBeUndefined();
  }, 90_000);

  // -------------------------------------------------------------------------------------------
  // A gitlink naming the secret's blob id: git never follows it, so nothing is read; what lands
  // must not make a fetch serve the blob.

  it("src/sub as a gitlink (160000) to docs/secret.md's blob id: if it lands, a fresh fetch never serves the blob", async () => {
    const r = await h.inSeat(
      "narrow",
      [fresh("glink"), guess(CANARY), withSrc("glink", "160000 commit %s\\tsub\\n", "$S"), evilPush("glink", "$c $t $s")].join(" && "),
    );
    const landed = hubRef("refs/heads/seat/narrow/glink");
    console.log(
      `[gitlink to the secret] code ${r.code}: ${(r.stdout + r.stderr).trim()}; landed: ${landed ?? "no"}${landed ? `; ls-tree: ${h.hubGit("ls-tree", landed, "src/sub")}` : ""}`,
    );
    const f = await h.inSeat(
      "narrow",
      [
        "rm -rf /tmp/clone && git init -q /tmp/clone && cd /tmp/clone && git remote add teamd teamd::seat 2>/dev/null; git fetch -q teamd 2>&1",
        `S=$(printf '%s\\n' '${CANARY}' | git hash-object --stdin) && (git cat-file -t $S 2>/dev/null || echo absent)`,
      ].join("; "),
    );
    console.log(`[gitlink to the secret] fresh fetch: ${f.stdout.trim()}`);
    expect(f.stdout).not.toMatch(/^blob$/m);
    expect(fsckHub()).not.toMatch(/^FAILED/);
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // Honest pushes: ordinary git, ordinary content. The trunk holds src/.gitattributes.

  it("honest: a new src/lib/.gitattributes with new content lands (control)", async () => {
    const r = await h.inSeat(
      "narrow",
      [
        fresh("ga-new"),
        "mkdir -p src/lib && printf '*.bin binary\\n' > src/lib/.gitattributes && git add src/lib && git commit -qm ga-new",
        "git push teamd ga-new 2>&1",
      ].join(" && "),
    );
    console.log(`[honest new .gitattributes] code ${r.code}: ${(r.stdout + r.stderr).trim()}`);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(hubRef("refs/heads/seat/narrow/ga-new")).toBeDefined();
  }, 60_000);

  it("honest: git mv src/.gitattributes src/lib/.gitattributes (a rename) lands", async () => {
    const r = await h.inSeat(
      "narrow",
      [fresh("ga-mv"), "mkdir -p src/lib && git mv src/.gitattributes src/lib/.gitattributes && git commit -qm ga-mv", "git push teamd ga-mv 2>&1"].join(
        " && ",
      ),
    );
    console.log(`[honest rename of .gitattributes] code ${r.code}: ${(r.stdout + r.stderr).trim()}`);
    expect(r.stdout).not.toMatch(/internal|unknown-outcome/);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  }, 60_000);

  it("honest: cp src/.gitattributes src/lib/.gitattributes (a copy) lands", async () => {
    const r = await h.inSeat(
      "narrow",
      [
        fresh("ga-cp"),
        "mkdir -p src/lib && cp src/.gitattributes src/lib/.gitattributes && git add src/lib && git commit -qm ga-cp",
        "git push teamd ga-cp 2>&1",
      ].join(" && "),
    );
    console.log(`[honest copy of .gitattributes] code ${r.code}: ${(r.stdout + r.stderr).trim()}`);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  }, 60_000);

  it("honest: change src/.gitattributes, then git revert it, pushed together, lands", async () => {
    const r = await h.inSeat(
      "narrow",
      [
        fresh("ga-rev"),
        "printf '*.txt text eol=lf\\n' > src/.gitattributes && git commit -qam change",
        "git revert --no-edit HEAD >/dev/null",
        "git push teamd ga-rev 2>&1",
      ].join(" && "),
    );
    console.log(`[honest change + revert of .gitattributes] code ${r.code}: ${(r.stdout + r.stderr).trim()}`);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  }, 60_000);

  it("honest: a submodule under src/ (.gitmodules and its gitlink) lands", async () => {
    const r = await h.inSeat(
      "narrow",
      [
        fresh("submod"),
        "printf '[submodule \"lib\"]\\n\\tpath = src/lib\\n\\turl = https://example.invalid/lib.git\\n' > .gitmodules.tmp",
        // A bounded seat writes src/ only: the .gitmodules lives at src/.gitmodules (ordinary content for the test).
        "mv .gitmodules.tmp src/.gitmodules && git add src/.gitmodules",
        "git update-index --add --cacheinfo 160000,1111111111111111111111111111111111111111,src/lib && git commit -qm submod",
        "git push teamd submod 2>&1",
      ].join(" && "),
    );
    console.log(`[honest submodule] code ${r.code}: ${(r.stdout + r.stderr).trim()}`);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  }, 60_000);

  // -------------------------------------------------------------------------------------------

  it("control, after the attacks: an honest push lands, a fresh fetch works, the trunk is untouched, the hub's objects are whole", async () => {
    const r = await h.inSeat(
      "narrow",
      [
        fresh("honest"),
        "echo honest > src/honest.txt && git add src/honest.txt && git commit -qm honest",
        "git push teamd honest 2>&1",
        "git fetch teamd 2>&1",
      ].join(" && "),
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const landed = hubRef("refs/heads/seat/narrow/honest") as string;
    expect(h.hubGit("cat-file", "blob", `${landed}:src/honest.txt`)).toBe("honest");
    expect(hubRef("refs/heads/main")).toBe(main);
    const fsck = fsckHub();
    console.log(`[hub fsck] ${fsck.trim() || "clean"}`);
    expect(fsck).not.toMatch(/^FAILED/);
  }, 60_000);
});
