import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { evilGitPacking, freshFromTrunk } from "../support/evil-git.js";
import { NARROW_TEAM_FILE, narrowRepoFiles } from "../support/narrow-seat.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * A hostile bounded-read seat against the daemon's handling of pushed git data (round
 * fourteen, a third attacker, against the fixes of walk-attack.test.ts and walk-attack-2.test.ts):
 * above all the newest path, checkSpecialFiles / checkAsSpecialFile, which reads a
 * .gitattributes or .gitmodules the pack does not carry by packing it with contained git over
 * the quarantine and the hub — and what reaches it past the walk.
 *
 * The seat `narrow` may read src/ and README.md and write src/ only; the hub holds
 * docs/secret.md with a canary. Each case asserts the SECURE outcome: a failing case is a hole.
 *
 * Proves docs/enforcement.md's row "read / lab-visibility refusal (c5) (§3, §8)" (an object
 * named and not sent: one refusal whether the hub holds it or not).
 *
 * Found when written: a submodule link (160000) at src/.gitmodules (or .gitattributes, or a
 * nested alias such as src/lib/GITMOD~1) naming a guessed docs/ tree, not sent. The walk never
 * follows a link; the special-files check read its target, and git's fsck said "non-blob found"
 * when the hub held the tree, while a wrong guess landed. Fixed (src/effects/git-receive.ts):
 * a .gitattributes or .gitmodules that is a submodule link is refused, whatever it names.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const CANARY = "CANARY-walk3-71c4 never for narrow";
const WRONG = "CANARY-walk3-0000 never for narrow";
const GITMODULES = '[submodule "lib"]\n\tpath = src/lib\n\turl = https://example.invalid/lib.git\n';

const TEAM_FILE = NARROW_TEAM_FILE;

describe.runIf(process.platform === "linux")("attack 3: special files the pack does not carry, thin packs, histories that name and unname a guess", () => {
  let h: TeamdHarness;
  let main: string;

  const hubRef = (ref: string) => h.hubRef(ref);
  const fresh = freshFromTrunk;
  const evilGit = evilGitPacking;
  const helperPush = (ref: string) => `printf 'push refs/heads/${ref}:refs/heads/${ref}\\n\\n' | PATH=/tmp/evil:$PATH git-remote-teamd teamd teamd::seat 2>&1`;
  /** The probe's push, then its local ref deleted (a ref naming what the seat lacks breaks its own later fetches). */
  const evilPush = (ref: string, objects: string) => `${evilGit(objects)} && ${helperPush(ref)}; echo "helper-exit $?"; git update-ref -d refs/heads/${ref}`;
  /** What a refusal says, without what differs by construction (ids, branch names, the pack's size). */
  const normal = (text: string, ...branches: string[]) => {
    let out = text
      .replace(/\b[0-9a-f]{40}\b/g, "<oid>")
      .replace(/^teamd: pushed \d+ bytes to the daemon$/m, "")
      .replace(/\b(?:request|req)[-_ ]?id[:= ][^\s]+/gi, "<req>")
      .trim();
    for (const [i, b] of branches.entries()) out = out.replaceAll(b, `X${i}`);
    return out;
  };
  /** In the seat: S (the guess's blob id, never written) and D (a docs/ tree holding it, written to a scratch repository only). */
  const guess = (content: string) =>
    [
      `S=$(printf '%s\\n' '${content}' | git hash-object --stdin)`,
      "rm -rf /tmp/scratch.git && git init -q --bare /tmp/scratch.git",
      "D=$(printf '100644 blob %s\\tsecret.md\\n' $S | GIT_DIR=/tmp/scratch.git git mktree --missing)",
    ].join(" && ");
  /** In the seat: commit c on top of HEAD whose src/ tree is HEAD's plus the mktree lines `format` makes of `args` (shell words): t, s, c. */
  const withSrc = (branch: string, format: string, args: string) =>
    [
      `s=$({ git ls-tree HEAD:src | grep -v '\t\\.gitmodules$' | grep -v '\t\\.gitattributes$'; printf '${format}' ${args}; } | git mktree --missing)`,
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
  /** Run one probe shape with the right and the wrong guess; what each said and whether it landed. */
  const rightWrong = async (name: string, shape: string) => {
    const said: Record<string, string> = {};
    for (const [which, content] of [
      ["right", CANARY],
      ["wrong", WRONG],
    ] as const) {
      const branch = `${name}-${which}`.toLowerCase();
      const r = await h.inSeat("narrow", [fresh(branch), guess(content), shape.replaceAll("@BR@", branch)].join(" && "));
      const landed = hubRef(`refs/heads/seat/narrow/${branch}`);
      said[which] = `${landed === undefined ? "refused" : "LANDED"}: ${normal(r.stdout + r.stderr, branch)}`;
      if (landed !== undefined) console.log(`[${branch}] landed tree: ${h.hubGit("ls-tree", "-r", landed).replace(/\n/g, " | ")}`);
    }
    return { right: said.right as string, wrong: said.wrong as string };
  };

  beforeAll(async () => {
    h = await appliedTeam("teamd-walk-attack3-", TEAM_FILE, {
      ...narrowRepoFiles(CANARY),
      "src/.gitattributes": "*.txt text\n",
      "src/.gitmodules": GITMODULES,
    });
    await h.ok(["start", "--team", "proj"]);
    main = hubRef("refs/heads/main") as string;
    expect((await h.inSeat("narrow", "git fetch -q teamd 2>&1 && git checkout -q --detach teamd/main")).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  // -------------------------------------------------------------------------------------------
  // A special name whose entry is a gitlink (160000): the walk (rev-list --objects) never
  // follows a gitlink, so a guess there passes it unsent. But the diff lists the path, and
  // checkSpecialFiles, finding the oid not in the pack, has contained pack-objects pack it from
  // the quarantine AND THE HUB (checkAsSpecialFile): git's fsck puts a gitlink's oid named
  // .gitmodules / .gitattributes among the blobs it reads. Right guess: pack-objects packs the
  // hub's blob; wrong guess: pack-objects dies "unable to read" — a GitError nothing catches.

  it("a gitlink named .gitmodules / .gitattributes (and aliases, nested) to a guess: the same outcome whether the hub holds it or not, never internal", async () => {
    const shapes: Record<string, string> = {
      gmLinkBlob: `${withSrc("@BR@", "160000 commit %s\\t.gitmodules\\n", "$S")} && ${evilPush("@BR@", "$c $t $s")}`,
      gaLinkBlob: `${withSrc("@BR@", "160000 commit %s\\t.gitattributes\\n", "$S")} && ${evilPush("@BR@", "$c $t $s")}`,
      gmLinkTree: `${withSrc("@BR@", "160000 commit %s\\t.gitmodules\\n", "$D")} && ${evilPush("@BR@", "$c $t $s")}`,
      gaLinkTree: `${withSrc("@BR@", "160000 commit %s\\t.gitattributes\\n", "$D")} && ${evilPush("@BR@", "$c $t $s")}`,
      nestedAliasTree: `l=$(printf '160000 commit %s\\tGITMOD~1\\n' $D | git mktree --missing) && ${withSrc("@BR@", "040000 tree %s\\tlib\\n", "$l")} && ${evilPush("@BR@", "$c $t $s $l")}`,
      nestedAlias: `l=$(printf '160000 commit %s\\tGITMOD~1\\n' $S | git mktree --missing) && ${withSrc("@BR@", "040000 tree %s\\tlib\\n", "$l")} && ${evilPush("@BR@", "$c $t $s $l")}`,
      nestedUpper: `l=$(printf '160000 commit %s\\t.GITATTRIBUTES\\n' $S | git mktree --missing) && ${withSrc("@BR@", "040000 tree %s\\tdeep\\n", "$l")} && ${evilPush("@BR@", "$c $t $s $l")}`,
    };
    const outcomes: string[] = [];
    for (const [name, shape] of Object.entries(shapes)) {
      const { right, wrong } = await rightWrong(`gl-${name}`, shape);
      outcomes.push(`[gitlink special ${name}] right: ${right}\n[gitlink special ${name}] wrong: ${wrong}`);
      expect.soft(right, name).toBe(wrong);
      expect.soft(right, name).not.toMatch(/internal|unknown-outcome/);
      expect.soft(wrong, name).not.toMatch(/internal|unknown-outcome/);
    }
    console.log(outcomes.join("\n"));
  }, 150_000);

  // -------------------------------------------------------------------------------------------
  // Several commits in one push: the first names the guess at src/x (not sent), the second takes
  // it away again (the tip's tree is the trunk's). And one whose early commit names the guess at
  // src/.gitmodules as a gitlink, the later one removing it.

  it("a history that names the guess in an early commit and removes it in the next: the same outcome whether the hub holds it or not", async () => {
    const shapes: Record<string, string> = {
      nameThenDrop: [
        withSrc("@BR@", "100644 blob %s\\tx\\n", "$S"),
        "c1=$c && t1=$t && s1=$s",
        `c=$(git commit-tree $(git rev-parse HEAD^{tree}) -p $c1 -m drop) && git update-ref refs/heads/@BR@ $c`,
        evilPush("@BR@", "$c $c1 $t1 $s1"),
      ].join(" && "),
      linkThenDrop: [
        withSrc("@BR@", "160000 commit %s\\tx.gitmodules\\n160000 commit %s\\t.gitmodules\\n", "$S $S"),
        "c1=$c && t1=$t && s1=$s",
        `c=$(git commit-tree $(git rev-parse HEAD^{tree}) -p $c1 -m drop) && git update-ref refs/heads/@BR@ $c`,
        evilPush("@BR@", "$c $c1 $t1 $s1"),
      ].join(" && "),
    };
    const outcomes: string[] = [];
    for (const [name, shape] of Object.entries(shapes)) {
      const { right, wrong } = await rightWrong(`hist-${name}`, shape);
      outcomes.push(`[history ${name}] right: ${right}\n[history ${name}] wrong: ${wrong}`);
      expect.soft(right, name).toBe(wrong);
      expect.soft(right, name).not.toMatch(/internal|unknown-outcome/);
    }
    console.log(outcomes.join("\n"));
  }, 90_000);

  // -------------------------------------------------------------------------------------------
  // A thin pack: src/y's blob sent as a REF_DELTA against the guess's id (the seat writes the
  // guess locally only to make the delta; it is never sent).

  it("a thin pack whose blob is a delta against the guess's id: the same refusal whether the hub holds it or not", async () => {
    const shape = [
      "mkdir -p /tmp/evil",
      // The guess, written locally, and a commit X naming it (the thin pack's base side).
      `Sw=$(printf '%s\\n' "$GUESS" | git hash-object -w --stdin)`,
      "sx=$({ git ls-tree HEAD:src; printf '100644 blob %s\\ty\\n' $Sw; } | git mktree)",
      "tx=$(git ls-tree HEAD | grep -v '\tsrc$' | { cat; printf '040000 tree %s\\tsrc\\n' $sx; } | git mktree)",
      "X=$(git commit-tree $tx -p HEAD -m base)",
      // src/y: the guess's line a hundred times, a delta of copies from it.
      `Y2=$(i=0; while [ $i -lt 100 ]; do printf '%s\\n' "$GUESS"; i=$((i+1)); done | git hash-object -w --stdin)`,
      "s=$({ git ls-tree HEAD:src; printf '100644 blob %s\\ty\\n' $Y2; } | git mktree)",
      "t=$(git ls-tree HEAD | grep -v '\tsrc$' | { cat; printf '040000 tree %s\\tsrc\\n' $s; } | git mktree)",
      "c=$(git commit-tree $t -p HEAD -m thin) && git update-ref refs/heads/@BR@ $c",
      "printf '%s\\n^%s\\n' $c $X | git pack-objects --revs --thin --stdout -q > /tmp/evil/thin.pack",
      "rm -rf /tmp/thin.git && git init -q --bare /tmp/thin.git && (GIT_DIR=/tmp/thin.git git index-pack --stdin < /tmp/evil/thin.pack 2>&1 | tail -1; true)",
      `printf '#!/bin/sh\\nif [ "$1" = pack-objects ]; then exec cat /tmp/evil/thin.pack; fi\\nexec /usr/bin/git "$@"\\n' > /tmp/evil/git && chmod +x /tmp/evil/git`,
      `${helperPush("@BR@")}; echo "helper-exit $?"; git update-ref -d refs/heads/@BR@`,
    ].join(" && ");
    const said: Record<string, string> = {};
    for (const [which, content] of [
      ["right", CANARY],
      ["wrong", WRONG],
    ] as const) {
      const branch = `thin-${which}`;
      const r = await h.inSeat("narrow", [fresh(branch), guess(content), `GUESS='${content}'`, shape.replaceAll("@BR@", branch)].join(" && "));
      const landed = hubRef(`refs/heads/seat/narrow/${branch}`);
      said[which] = `${landed === undefined ? "refused" : "LANDED"}: ${normal(r.stdout + r.stderr, branch)}`;
    }
    console.log(`[thin pack] right: ${said.right}\n[thin pack] wrong: ${said.wrong}`);
    expect(said.right).toMatch(/unresolved delta|refused/);
    expect(said.right).toBe(said.wrong);
    expect(said.right).not.toMatch(/internal|unknown-outcome/);
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // Honest pushes of special files the trunk holds (src/.gitattributes and src/.gitmodules):
  // ordinary git, whose pack-objects does not send a blob the hub has.

  const honest = (name: string, steps: string) => async () => {
    const r = await h.inSeat("narrow", [fresh(name), steps, `git push teamd ${name} 2>&1`].join(" && "));
    console.log(`[honest ${name}] code ${r.code}: ${(r.stdout + r.stderr).trim()}`);
    expect(r.stdout + r.stderr).not.toMatch(/internal|unknown-outcome/);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(hubRef(`refs/heads/seat/narrow/${name}`)).toBeDefined();
  };

  it(
    "honest: git mv src/.gitmodules src/lib/.gitmodules lands",
    honest("gm-mv", "mkdir -p src/lib && git mv src/.gitmodules src/lib/.gitmodules && git commit -qm gm-mv"),
    60_000,
  );
  it(
    "honest: a copy of src/.gitmodules to src/lib/.gitmodules lands",
    honest("gm-cp", "mkdir -p src/lib && cp src/.gitmodules src/lib/.gitmodules && git add src/lib && git commit -qm gm-cp"),
    60_000,
  );
  it(
    "honest: change src/.gitmodules, then git revert it, pushed together, lands",
    honest(
      "gm-rev",
      "printf '[submodule \"lib\"]\\n\\tpath = src/lib\\n\\turl = https://example.invalid/other.git\\n' > src/.gitmodules && git commit -qam change && git revert --no-edit HEAD >/dev/null",
    ),
    60_000,
  );
  it(
    "honest: chmod +x src/.gitattributes (mode only, the blob not sent) lands",
    honest("ga-x", "git update-index --chmod=+x src/.gitattributes && git commit -qm ga-x"),
    60_000,
  );
  it("honest: git rm src/.gitmodules lands", honest("gm-rm", "git rm -q src/.gitmodules && git commit -qm gm-rm"), 60_000);
  it("honest: swap src/.gitattributes and src/.gitmodules contents under each other's names lands (git refuses it as its own fsck would, or lands it; never internal)", async () => {
    const name = "swap";
    const r = await h.inSeat(
      "narrow",
      [
        fresh(name),
        "cp src/.gitattributes /tmp/ga && cp src/.gitmodules src/.gitattributes && cp /tmp/ga src/.gitmodules && git commit -qam swap",
        `git push teamd ${name} 2>&1`,
      ].join(" && "),
    );
    console.log(`[honest ${name}] code ${r.code}: ${(r.stdout + r.stderr).trim()}`);
    expect(r.stdout + r.stderr).not.toMatch(/internal|unknown-outcome/);
  }, 60_000);
  it(
    "honest: a real submodule added under src/ (git's own .gitmodules edit and gitlink, to a commit the hub lacks) lands",
    honest(
      "sub-add",
      [
        "rm -rf /tmp/subsrc && git init -q /tmp/subsrc && git -C /tmp/subsrc -c user.name=n -c user.email=n@x commit -q --allow-empty -m one",
        "git -c protocol.file.allow=always submodule add -q /tmp/subsrc src/vendored >/dev/null 2>&1 || { git config -f .gitmodules submodule.vendored.path src/vendored && git config -f .gitmodules submodule.vendored.url ../subsrc && git update-index --add --cacheinfo 160000,$(git -C /tmp/subsrc rev-parse HEAD),src/vendored; }",
        // A bounded seat writes src/ only: git's root .gitmodules moved into src/, as an ordinary file.
        "if [ -f .gitmodules ]; then cat .gitmodules >> src/.gitmodules && git rm -q --cached .gitmodules && rm .gitmodules && git add src/.gitmodules; fi",
        "git commit -qm sub-add",
      ].join(" && "),
    ),
    60_000,
  );

  // -------------------------------------------------------------------------------------------

  it("control, after the attacks: an honest push lands, a fresh fetch never holds the secret, the trunk is untouched, the hub's objects are whole", async () => {
    const r = await h.inSeat(
      "narrow",
      [fresh("honest"), "echo honest > src/honest.txt && git add src/honest.txt && git commit -qm honest", "git push teamd honest 2>&1"].join(" && "),
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const f = await h.inSeat(
      "narrow",
      [
        "rm -rf /tmp/clone && git init -q /tmp/clone && cd /tmp/clone && git remote add teamd teamd::seat 2>/dev/null; git fetch -q teamd 2>&1",
        `S=$(printf '%s\\n' '${CANARY}' | git hash-object --stdin) && (git cat-file -t $S 2>/dev/null || echo absent)`,
      ].join("; "),
    );
    console.log(`[control] fresh fetch: ${f.stdout.trim()}`);
    expect(f.stdout).not.toMatch(/^blob$/m);
    const landed = hubRef("refs/heads/seat/narrow/honest") as string;
    expect(h.hubGit("cat-file", "blob", `${landed}:src/honest.txt`)).toBe("honest");
    expect(hubRef("refs/heads/main")).toBe(main);
    const fsck = fsckHub();
    console.log(`[hub fsck] ${fsck.trim() || "clean"}`);
    expect(fsck).not.toMatch(/^FAILED/);
  }, 60_000);
});
