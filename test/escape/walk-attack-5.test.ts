import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { daemonPid, quarantineLeft } from "../support/daemon-proc.js";
import { freshFromTrunk } from "../support/evil-git.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * A hostile seat (round fourteen, a fifth attacker) against the newest paths of the push checks:
 * index-pack's failure taken as passed (carriedOnly), the .gitattributes / .gitmodules a push
 * changes without carrying them (checkSpecialFiles / checkAsSpecialFile), pushes of several refs
 * where a later one builds on an earlier (the landed tip joins `readable`), and honest usage.
 *
 * Seats: w1 (reads everything, writes src/) and narrow (reads src/ and README.md, writes src/,
 * so its pushes are replayed). Each case asserts the SECURE outcome: a failing case is a hole.
 *
 * Found when written: 12,000 copies of the trunk's src/.gitattributes (git does not send the
 * blob) in folders of 240-byte names, one ordinary `git push`: checkSpecialFiles' ls-tree takes
 * every such path as an argument (~3.1 MB, past ARG_MAX) and the daemon answered INTERNAL
 * ("internal error in Push: Error: spawn E2BIG" in its log). Fixed (src/effects/git-receive.ts):
 * the special files' modes and ids come from one diff-tree of the commits, read from stdin.
 *
 * Proves docs/enforcement.md's rows "read / lab-visibility refusal (c5) (§3, §8)" and
 * "Capability vocabulary + gate (§3)" (the write scope of a push of several refs).
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
  narrow:
    lab: anthropic
    capabilities:
      read: { path: [src/, README.md] }
      write: { path: src/ }
    start:
      command: [sleep, "3600"]
`);

/** A .gitmodules git's fsck refuses (gitmodulesUrl, gitmodulesPath): an option as the URL and as the path. */
const EVIL_GITMODULES = '[submodule "x"]\n\tpath = -x\n\turl = --upload-pack=touch$IFS/tmp/pwned\n';

/** One shell word, single-quoted. */
const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
/** The seat's git answers pack-objects with exactly `objects` (shell words), packed by the real git. */
const evilPacking = (objects: string) =>
  [
    `mkdir -p /tmp/evil && printf '%s\\n' ${objects} > /tmp/evil/objects`,
    `printf '#!/bin/sh\\nif [ "$1" = pack-objects ]; then exec /usr/bin/git pack-objects --stdout -q < /tmp/evil/objects; fi\\nexec /usr/bin/git "$@"\\n' > /tmp/evil/git`,
    "chmod +x /tmp/evil/git",
  ].join(" && ");
/** The helper fed directly: each line SRC:DST. Output without the listing's lines. */
const helper = (specs: readonly string[]) =>
  `{ printf '%s\\n' ${specs.map((s) => `"push ${s}"`).join(" ")}; echo; } | { PATH=/tmp/evil:$PATH git-remote-teamd teamd teamd::seat 2>&1; echo "helper-exit $?"; }`;

describe.runIf(process.platform === "linux")("attack 5: special files not carried, index-pack's passed failure, pushes of several refs", () => {
  let h: TeamdHarness;
  let main: string;
  const hubRef = (ref: string) => h.hubRef(ref);
  const normal = (text: string) =>
    text
      .replace(/\b[0-9a-f]{40}\b/g, "<oid>")
      .replace(/^teamd: pushed \d+ bytes to the daemon$/m, "")
      .trim();
  /** The git and bwrap processes the daemon has running now. */
  const daemonGits = () =>
    execFileSync("ps", ["-eo", "pid=,ppid=,cmd="], { encoding: "utf8" })
      .split("\n")
      .filter((l) => l.trim().split(/\s+/)[1] === String(daemonPid(h)) && /\b(git|bwrap)\b/.test(l) && !l.includes("--hostname"));
  const settle = async () => {
    for (let i = 0; i < 20 && (quarantineLeft(h).length > 0 || daemonGits().length > 0); i++) await new Promise((r) => setTimeout(r, 250));
  };
  const fsckHub = (strict = false) => {
    try {
      return execFileSync("git", ["--git-dir", h.hub, "fsck", "--no-dangling", ...(strict ? [] : ["--connectivity-only"])], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      });
    } catch (error) {
      return `FAILED: ${String((error as { stderr?: string }).stderr ?? error)}`;
    }
  };

  beforeAll(async () => {
    h = await appliedTeam("teamd-walk-attack5-", TEAM_FILE, {
      "README.md": "hello\n",
      "src/a.txt": "a\n",
      "src/.gitattributes": "*.txt text\n",
      "docs/secret.md": "secret\n",
    });
    await h.ok(["start", "--team", "proj"]);
    main = hubRef("refs/heads/main") as string;
    for (const seat of ["w1", "narrow"]) expect((await h.inSeat(seat, "git fetch -q teamd 2>&1 && git checkout -q --detach teamd/main")).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  // -------------------------------------------------------------------------------------------
  // checkSpecialFiles skips a path holding a line break ("refused before the intent
  // (gitPathProblem)"), but gitPathProblem has no rule against one. A .gitmodules whose blob the
  // hub already holds (the seat landed it first as an ordinary file, src/evil.txt) named under a
  // folder whose name holds "\n", not sent: index-pack sees no blob (gitmodulesMissing is
  // ignored), and the special-file check never reads it.

  for (const seat of ["w1", "narrow"] as const) {
    it(`${seat}: an evil .gitmodules (URL and path options) the hub holds as src/evil.txt, named at src/<name>/.gitmodules without its content: refused for every folder name (a line break, a CR, a tab, a trailing space), as for a plain one`, async () => {
      const step1 = await h.inSeat(
        seat,
        [
          freshFromTrunk(`evil-${seat}`),
          `printf '%s' ${sq(EVIL_GITMODULES)} > src/evil.txt && git add -A && git commit -qm evil`,
          `git push -q teamd evil-${seat} 2>&1`,
        ].join(" && "),
      );
      expect(step1.code, step1.stdout + step1.stderr).toBe(0);
      const outcomes: string[] = [];
      for (const [label, name] of [
        ["plain", "ab"],
        ["newline", "a\\nb"],
        ["cr", "a\\rb"],
        ["tab", "a\\tb"],
        ["trailing space", "ab "],
        ["ntfs alias", "deep"],
      ] as const) {
        const file = label === "ntfs alias" ? "GITMOD~1" : ".gitmodules";
        const branch = `gm-${seat}-${label.replace(/ /g, "-")}`;
        const r = await h.inSeat(
          seat,
          [
            freshFromTrunk(branch),
            // Built on the seat's own landed evil branch: E is in its parent's tree, so the walk passes it unsent.
            `P=$(git rev-parse refs/heads/evil-${seat}) && E=$(git rev-parse $P:src/evil.txt)`,
            `l=$(printf '100644 blob %s\\t${file}\\0' $E | git mktree -z --missing)`,
            `s=$({ git ls-tree -z $P:src; printf '040000 tree %s\\t${name}\\0' $l; } | git mktree -z --missing)`,
            "t=$(git ls-tree $P | grep -v '\tsrc$' | { cat; printf '040000 tree %s\\tsrc\\n' $s; } | git mktree --missing)",
            `c=$(git commit-tree $t -p $P -m ${branch}) && git update-ref refs/heads/${branch} $c`,
            evilPacking("$c $t $s $l"),
            helper([`refs/heads/${branch}:refs/heads/${branch}`]),
            `git checkout -q --detach teamd/main; git update-ref -d refs/heads/${branch}`,
          ].join(" && "),
        );
        const landed = hubRef(`refs/heads/seat/${seat}/${branch}`);
        let detail = "";
        if (landed !== undefined) {
          detail = ` — LANDED: ${h.hubGit("ls-tree", "-r", "-z", landed, "src").replace(/\0/g, " | ")}`;
        }
        outcomes.push(
          `[${seat} evil .gitmodules at src/${JSON.stringify(name)}/${file}] ${landed === undefined ? "refused" : "LANDED"}: ${normal(r.stdout + r.stderr).replace(/\n/g, " / ")}${detail}`,
        );
        expect.soft(landed, `${seat} ${label}`).toBeUndefined();
        expect.soft(r.stdout, `${seat} ${label}`).not.toMatch(/internal|unknown-outcome/);
      }
      console.log(outcomes.join("\n"));
      await settle();
      expect(quarantineLeft(h)).toEqual([]);
    }, 90_000);
  }

  // -------------------------------------------------------------------------------------------
  // The same with .gitattributes: a line longer than git's fsck allows (gitattributesLineLength,
  // 2048 bytes), held by the hub as src/long.txt, named at src/a\nb/.gitattributes unsent.

  it("w1: an over-long .gitattributes the hub holds as src/long.txt, named at src/a\\nb/.gitattributes without its content: refused as at src/ab/.gitattributes", async () => {
    const step1 = await h.inSeat(
      "w1",
      [
        freshFromTrunk("long-ga"),
        "{ printf '*.txt '; head -c 3000 /dev/zero | tr '\\0' a; printf ' text\\n'; } > src/long.txt && git add -A && git commit -qm long",
        "git push -q teamd long-ga 2>&1",
      ].join(" && "),
    );
    expect(step1.code, step1.stdout + step1.stderr).toBe(0);
    const said: string[] = [];
    for (const [label, name] of [
      ["plain", "ab"],
      ["newline", "a\\nb"],
    ] as const) {
      const branch = `ga-${label}`;
      const r = await h.inSeat(
        "w1",
        [
          freshFromTrunk(branch),
          "P=$(git rev-parse refs/heads/long-ga) && E=$(git rev-parse $P:src/long.txt)",
          "l=$(printf '100644 blob %s\\t.gitattributes\\0' $E | git mktree -z --missing)",
          `s=$({ git ls-tree -z $P:src; printf '040000 tree %s\\t${name}\\0' $l; } | git mktree -z --missing)`,
          "t=$(git ls-tree $P | grep -v '\tsrc$' | { cat; printf '040000 tree %s\\tsrc\\n' $s; } | git mktree --missing)",
          `c=$(git commit-tree $t -p $P -m ${branch}) && git update-ref refs/heads/${branch} $c`,
          evilPacking("$c $t $s $l"),
          helper([`refs/heads/${branch}:refs/heads/${branch}`]),
          `git checkout -q --detach teamd/main; git update-ref -d refs/heads/${branch}`,
        ].join(" && "),
      );
      const landed = hubRef(`refs/heads/seat/w1/${branch}`);
      said.push(
        `[long .gitattributes at src/${JSON.stringify(name)}] ${landed === undefined ? "refused" : "LANDED"}: ${normal(r.stdout).replace(/\n/g, " / ")}`,
      );
      expect.soft(landed, label).toBeUndefined();
    }
    console.log(said.join("\n"));
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // Resource use of checkSpecialFiles: one ls-tree a commit names every special path as an
  // argument. 12,000 copies of the trunk's src/.gitattributes (a blob git does not send: the hub
  // has it) in folders of 240-byte names are ~3.1 MB of arguments, past Linux's ARG_MAX (2 MiB).
  // Ordinary git, ordinary push: it must land or be refused with a rule, never "internal".

  it("12,000 copies of src/.gitattributes in long-named folders, pushed by ordinary git (the blob not sent): lands or is refused with a rule, never internal, nothing left behind", async () => {
    const r = await h.inSeat(
      "w1",
      [
        freshFromTrunk("many-ga"),
        "B=$(git rev-parse HEAD:src/.gitattributes)",
        "l=$(printf '100644 blob %s\\t.gitattributes\\n' $B | git mktree)",
        "s=$({ git ls-tree HEAD:src; i=0; while [ $i -lt 12000 ]; do printf '040000 tree %s\\t%0240d\\n' $l $i; i=$((i+1)); done; } | git mktree)",
        "t=$(git ls-tree HEAD | grep -v '\tsrc$' | { cat; printf '040000 tree %s\\tsrc\\n' $s; } | git mktree)",
        "c=$(git commit-tree $t -p HEAD -m many) && git update-ref refs/heads/many-ga $c && git checkout -q --detach teamd/main",
        "git push teamd many-ga 2>&1; echo push-exit $?",
      ].join(" && "),
    );
    const out = (r.stdout + r.stderr).trim();
    console.log(`[12,000 .gitattributes copies] ${normal(out).slice(0, 2000)}`);
    const log = (h.daemon?.stderr() ?? "").split("\n").filter((l) => /E2BIG|internal|Error/.test(l));
    console.log(`[12,000 .gitattributes copies] daemon's log: ${log.slice(-5).join("\n").slice(0, 3000)}`);
    expect(out).not.toMatch(/internal|unknown-outcome/);
    expect(out).toMatch(/push-exit 0|error.*teamd: .*(push\.|special|gitattributes)/);
    await settle();
    expect(quarantineLeft(h)).toEqual([]);
    expect(daemonGits()).toEqual([]);
  }, 120_000);

  // -------------------------------------------------------------------------------------------
  // index-pack's failure taken as passed (carriedOnly): a tree naming a .gitattributes the pack
  // lacks makes index-pack fail after writing the pack. Beside it in the same pack: a .gitmodules
  // with an option URL, an over-long .gitattributes, a commit fsck refuses (bad email), a tree
  // with duplicate entries. Each must be refused, nothing left behind.

  it("a pack whose tree names a .gitattributes it does not carry, carrying beside it an object git's fsck refuses: refused each time, nothing left in the quarantine", async () => {
    const LIT = "author w <w@seat.invalid> 1700000000 +0000\\ncommitter w <w@seat.invalid> 1700000000 +0000";
    const BADLIT = "author w <w@seat.invalid 1700000000 +0000\\ncommitter w <w@seat.invalid> 1700000000 +0000";
    const shapes: Record<string, string> = {
      evilGitmodules: [
        `G=$(printf '%s' ${sq(EVIL_GITMODULES)} | git hash-object -w --stdin)`,
        "s=$({ git ls-tree HEAD:src | grep -v '\t\\.gitattributes$'; printf '100644 blob %s\\t.gitattributes\\n100644 blob %s\\t.gitmodules\\n' $M $G; } | git mktree --missing)",
        'o="$G"',
      ].join(" && "),
      evilGitmodulesDeep: [
        `G=$(printf '%s' ${sq(EVIL_GITMODULES)} | git hash-object -w --stdin)`,
        "d=$(printf '100644 blob %s\\t.gitmodules\\n' $G | git mktree)",
        "s=$({ git ls-tree HEAD:src | grep -v '\t\\.gitattributes$'; printf '100644 blob %s\\t.gitattributes\\n040000 tree %s\\tzz\\n' $M $d; } | git mktree --missing)",
        'o="$G $d"',
      ].join(" && "),
      longGitattributes: [
        "G=$({ printf '*.txt '; head -c 3000 /dev/zero | tr '\\0' a; printf ' text\\n'; } | git hash-object -w --stdin)",
        "d=$(printf '100644 blob %s\\t.gitattributes\\n' $G | git mktree)",
        "s=$({ git ls-tree HEAD:src | grep -v '\t\\.gitattributes$'; printf '100644 blob %s\\t.gitattributes\\n040000 tree %s\\tzz\\n' $M $d; } | git mktree --missing)",
        'o="$G $d"',
      ].join(" && "),
      badCommitBeside: [
        "s=$({ git ls-tree HEAD:src | grep -v '\t\\.gitattributes$'; printf '100644 blob %s\\t.gitattributes\\n' $M; } | git mktree --missing)",
        `x=$(printf "tree %s\\n${BADLIT}\\n\\nbad\\n" $(git rev-parse HEAD^{tree}) | git hash-object -t commit -w --stdin --literally)`,
        'o="$x"',
      ].join(" && "),
      dupTreeBeside: [
        "s=$({ git ls-tree HEAD:src | grep -v '\t\\.gitattributes$'; printf '100644 blob %s\\t.gitattributes\\n' $M; } | git mktree --missing)",
        "x=$(printf '100644 blob %s\\tdup\\n100644 blob %s\\tdup\\n' $(git rev-parse HEAD:src/a.txt) $(git rev-parse HEAD:src/a.txt) | git mktree --missing 2>/dev/null || { printf '100644 dup\\0'; git rev-parse HEAD:src/a.txt | xxd -r -p 2>/dev/null; printf '100644 dup\\0'; git rev-parse HEAD:src/a.txt | xxd -r -p 2>/dev/null; } | git hash-object -t tree -w --stdin --literally)",
        'o="$x"',
      ].join(" && "),
    };
    const said: string[] = [];
    for (const [name, shape] of Object.entries(shapes)) {
      const branch = `cq-${name}`.toLowerCase();
      const r = await h.inSeat(
        "w1",
        [
          freshFromTrunk(branch),
          // A .gitattributes the pack will not carry (content nowhere).
          "M=$(printf '*.bin binary %s\\n' $(date +%s%N) | git hash-object --stdin)",
          shape,
          "t=$(git ls-tree HEAD | grep -v '\tsrc$' | { cat; printf '040000 tree %s\\tsrc\\n' $s; } | git mktree --missing)",
          `c=$(printf "tree %s\\nparent %s\\n${LIT}\\n\\nx\\n" $t $(git rev-parse HEAD) | git hash-object -t commit -w --stdin)`,
          `git update-ref refs/heads/${branch} $c`,
          evilPacking("$c $t $s $o"),
          helper([`refs/heads/${branch}:refs/heads/${branch}`]),
          `git checkout -q --detach teamd/main; git update-ref -d refs/heads/${branch}`,
        ].join(" && "),
      );
      const landed = hubRef(`refs/heads/seat/w1/${branch}`);
      said.push(`[carriedOnly + ${name}] ${landed === undefined ? "refused" : "LANDED"}: ${normal(r.stdout + r.stderr).replace(/\n/g, " / ")}`);
      expect.soft(landed, name).toBeUndefined();
      expect.soft(r.stdout, name).not.toMatch(/internal|unknown-outcome/);
    }
    console.log(said.join("\n"));
    await settle();
    expect(quarantineLeft(h)).toEqual([]);
  }, 90_000);

  // -------------------------------------------------------------------------------------------
  // Pushes of several refs where a later ref builds on an earlier one.

  it("w1: one push of two refs, the first writing lib/ (outside the write scope, refused), the second built on it writing src/ only: neither lands", async () => {
    const r = await h.inSeat(
      "w1",
      [
        freshFromTrunk("st-a"),
        "mkdir -p lib && echo out > lib/out.txt && git add -A && git commit -qm out",
        "git checkout -q -b st-b && echo in > src/in.txt && git add -A && git commit -qm in",
        "git push teamd st-a st-b 2>&1; echo push-exit $?",
        "git checkout -q --detach teamd/main",
      ].join(" && "),
    );
    console.log(`[stacked, first out of scope] ${normal(r.stdout + r.stderr).replace(/\n/g, " / ")}`);
    expect(hubRef("refs/heads/seat/w1/st-a")).toBeUndefined();
    expect(hubRef("refs/heads/seat/w1/st-b")).toBeUndefined();
    expect(r.stdout).not.toMatch(/internal|unknown-outcome/);
  }, 60_000);

  it("w1: one push naming the same ref twice (first an honest commit, then forced to a child writing lib/): the child is refused", async () => {
    const r = await h.inSeat(
      "w1",
      [
        freshFromTrunk("tw"),
        "echo ok > src/ok.txt && git add -A && git commit -qm ok && a=$(git rev-parse HEAD)",
        "mkdir -p lib && echo out > lib/out.txt && git add -A && git commit -qm out && b=$(git rev-parse HEAD)",
        evilPacking("$(git rev-list --objects --no-object-names $b ^teamd/main)"),
        helper(["$a:refs/heads/tw", "+$b:refs/heads/tw", "$b:refs/heads/tw2"]),
        "git checkout -q --detach teamd/main",
      ].join(" && "),
    );
    console.log(`[same ref twice] ${normal(r.stdout + r.stderr).replace(/\n/g, " / ")}`);
    const tw = hubRef("refs/heads/seat/w1/tw");
    if (tw !== undefined) expect(h.hubGit("ls-tree", "-r", "--name-only", tw)).not.toContain("lib/out.txt");
    expect(hubRef("refs/heads/seat/w1/tw2")).toBeUndefined();
    expect(r.stdout).not.toMatch(/internal|unknown-outcome/);
  }, 60_000);

  for (const seat of ["w1", "narrow"] as const) {
    it(`honest ${seat}: git push teamd a b c, b built on a and c on b (each changing src/, c editing src/.gitattributes) lands all three`, async () => {
      const r = await h.inSeat(
        seat,
        [
          freshFromTrunk(`hs-a-${seat}`),
          "echo 1 > src/s1.txt && git add -A && git commit -qm s1",
          `git checkout -q -b hs-b-${seat} && echo 2 > src/s2.txt && git add -A && git commit -qm s2`,
          `git checkout -q -b hs-c-${seat} && printf '*.bin binary\\n' >> src/.gitattributes && git commit -qam s3`,
          `git push teamd hs-a-${seat} hs-b-${seat} hs-c-${seat} 2>&1; echo push-exit $?`,
          "git checkout -q --detach teamd/main",
        ].join(" && "),
      );
      console.log(`[honest stacked ${seat}] ${normal(r.stdout + r.stderr).replace(/\n/g, " / ")}`);
      expect(r.stdout).not.toMatch(/internal|unknown-outcome/);
      expect(r.stdout).toContain("push-exit 0");
      for (const b of ["a", "b", "c"]) expect.soft(hubRef(`refs/heads/seat/${seat}/hs-${b}-${seat}`), b).toBeDefined();
    }, 60_000);
  }

  it("honest narrow: a rebase of a pushed branch onto a moved trunk, pushed --force beside a new branch built on the rebased one", async () => {
    const before = await h.inSeat(
      "narrow",
      [freshFromTrunk("rb-a"), "echo r > src/r.txt && git add -A && git commit -qm r && git push -q teamd rb-a 2>&1"].join(" && "),
    );
    expect(before.code, before.stdout).toBe(0);
    // The trunk moves (docs/, which narrow cannot read, and src/).
    const env = {
      ...process.env,
      GIT_DIR: h.hub,
      GIT_INDEX_FILE: `${h.dir}/walk5-index`,
      GIT_AUTHOR_NAME: "o",
      GIT_AUTHOR_EMAIL: "o@x",
      GIT_COMMITTER_NAME: "o",
      GIT_COMMITTER_EMAIL: "o@x",
    };
    const g = (args: string[], input?: string) => execFileSync("git", args, { env, encoding: "utf8", ...(input !== undefined ? { input } : {}) }).trim();
    g(["read-tree", "refs/heads/main"]);
    g(["update-index", "--add", "--cacheinfo", `100644,${g(["hash-object", "-w", "--stdin"], "moved\n")},docs/moved.md`]);
    g(["update-index", "--add", "--cacheinfo", `100644,${g(["hash-object", "-w", "--stdin"], "trunk src\n")},src/trunk.txt`]);
    const moved = g(["commit-tree", g(["write-tree"]), "-p", "refs/heads/main", "-m", "trunk moves"]);
    g(["update-ref", "refs/heads/main", moved, main]);
    main = moved;
    const r = await h.inSeat(
      "narrow",
      [
        "git fetch -q teamd 2>&1",
        "git checkout -q rb-a && git rebase -q teamd/main",
        "git checkout -q -b rb-b && echo b > src/rb.txt && git add -A && git commit -qm rb-b",
        "git push --force teamd rb-a rb-b 2>&1; echo push-exit $?",
        "git checkout -q --detach teamd/main",
      ].join(" && "),
    );
    console.log(`[honest rebase + stacked narrow] ${normal(r.stdout + r.stderr).replace(/\n/g, " / ")}`);
    expect(r.stdout).not.toMatch(/internal|unknown-outcome/);
    expect(r.stdout).toContain("push-exit 0");
    const b = hubRef("refs/heads/seat/narrow/rb-b") as string;
    expect(h.hubGit("cat-file", "blob", `${b}:docs/moved.md`)).toBe("moved");
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // The walk (checkSelfContained: rev-list --objects TIP ^READABLE...) excludes only what the
  // seat's readable tips' history marks: a plain rev-list does not mark the trees of a readable
  // tip that is no ancestor of the pushed one (only --objects-edge / pack-objects do). So a blob
  // the seat's own other branch holds, which ordinary git does not send (its pack-objects marks
  // every uninteresting tip's tree), is "an object the pusher was never served".

  for (const seat of ["w1", "narrow"] as const) {
    it(`honest ${seat}: a file taken from another pushed branch of the seat's own (git checkout other -- file; a cherry-pick) onto a new branch from the trunk lands`, async () => {
      const r = await h.inSeat(
        seat,
        [
          freshFromTrunk(`side-${seat}`),
          "echo side-content-$(date +%s%N) > src/side.txt && git add -A && git commit -qm side",
          `git push -q teamd side-${seat} 2>&1`,
          freshFromTrunk(`take-${seat}`),
          `git checkout side-${seat} -- src/side.txt && git commit -qm take`,
          `git push teamd take-${seat} 2>&1; echo push-exit $?`,
          freshFromTrunk(`pick-${seat}`),
          `git cherry-pick side-${seat} >/dev/null && git push teamd pick-${seat} 2>&1; echo push-exit $?`,
          "git checkout -q --detach teamd/main",
        ].join(" && "),
      );
      console.log(`[honest take from a sibling branch, ${seat}] ${normal(r.stdout + r.stderr).replace(/\n/g, " / ")}`);
      expect(r.stdout).not.toMatch(/internal|unknown-outcome/);
      expect.soft(hubRef(`refs/heads/seat/${seat}/take-${seat}`), "checkout -- file").toBeDefined();
      expect.soft(hubRef(`refs/heads/seat/${seat}/pick-${seat}`), "cherry-pick").toBeDefined();
    }, 60_000);
  }

  // -------------------------------------------------------------------------------------------

  it("control, after the attacks: the trunk untouched, no quarantine or git left, the hub's objects whole (strict fsck reported)", async () => {
    await settle();
    expect(hubRef("refs/heads/main")).toBe(main);
    expect(quarantineLeft(h)).toEqual([]);
    expect(daemonGits()).toEqual([]);
    expect(fsckHub()).not.toMatch(/^FAILED/);
    const strict = fsckHub(true);
    console.log(`[hub fsck (full)] ${strict.trim().slice(0, 2000) || "clean"}`);
    expect(strict).not.toMatch(/gitmodulesUrl|gitmodulesPath|gitattributesLineLength/);
  });
});
