import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { freshFromTrunk } from "../support/evil-git.js";
import { spread } from "../support/guess-timing.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * A hostile UNBOUNDED seat (w1: reads everything but other seats' branches, writes src/)
 * against the daemon's handling of its pushes, with a second seat (narrow) whose branch
 * seat/narrow/good holds src/good.txt = NARROW_ONLY, which w1 may never read (round fourteen,
 * a fourth attacker). Can w1 learn whether narrow's branch holds content it guesses (a blob
 * id, a tree id) through the words of a refusal, which refs land, exit codes or timing?
 * Probed: the storage quota's figures, pushes with no pack naming ids, merges naming a guessed
 * parent or tree, pushes of several refs mixing these, and honest usage (merge of the trunk,
 * rebase, submodule, .gitattributes, delete).
 *
 * Proves docs/enforcement.md's rows "read / lab-visibility refusal (c5) (§3, §8)" and
 * "Capability vocabulary + gate (§3)" (the write scope of a push).
 *
 * Found when written: a whole commit of narrow's branch (lib/n.txt, outside w1's write scope),
 * sent byte for byte, landed on w1's branch: the push's new commits were listed against every
 * ref of the hub, narrow's branch among them, so it was no new commit, changed no path and met
 * no write check; and a right guess of that commit landed while a wrong one was refused
 * (scope.path). Fixed (src/effects/git-receive.ts): the new commits are those the seat's
 * readable tips do not reach.
 *
 * Each case asserts the SECURE outcome: a failing case is a hole.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const NARROW_ONLY = "NARROW-ONLY-walk4-7a31";
const WRONG = "NARROW-ONLY-walk4-0000";

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
      read: { path: [src/, README.md, lib/] }
      write: { path: [src/, lib/] }
    start:
      command: [sleep, "3600"]
`);

/** One shell word, single-quoted. */
const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
/** In the seat: /tmp/evil/git is this script (lines), first on the helper's PATH. */
const writeEvil = (lines: readonly string[]) => `mkdir -p /tmp/evil && printf '%s\\n' ${lines.map(sq).join(" ")} > /tmp/evil/git && chmod +x /tmp/evil/git`;
/** The seat's git answers pack-objects with a 32-byte "pack" whose header declares 1,000,000 objects. */
const EVIL_QUOTA = writeEvil([
  "#!/bin/sh",
  String.raw`if [ "$1" = pack-objects ]; then cat >/dev/null; printf "PACK\000\000\000\002\000\017\102\100"; head -c 20 /dev/zero; exit 0; fi`,
  'exec /usr/bin/git "$@"',
]);
/** The seat's git sends no pack, and says every pushed id is a commit it has (so any id can be pushed). */
const EVIL_NOPACK = writeEvil([
  "#!/bin/sh",
  'if [ "$1" = pack-objects ]; then cat >/dev/null; exit 0; fi',
  String.raw`if [ "$1" = cat-file ]; then exec sed "s/\^{commit}\$/ commit/"; fi`,
  'exec /usr/bin/git "$@"',
]);
/** The seat's git answers pack-objects with /tmp/evil/pack (made beforehand), and says every pushed id is a commit. */
const EVIL_PACKFILE = writeEvil([
  "#!/bin/sh",
  'if [ "$1" = pack-objects ]; then cat >/dev/null; exec cat /tmp/evil/pack; fi',
  String.raw`if [ "$1" = cat-file ]; then exec sed "s/\^{commit}\$/ commit/"; fi`,
  'exec /usr/bin/git "$@"',
]);
/** The helper fed directly: each line `SRC:DST` (or `+SRC:DST`, `:DST`). */
const helper = (specs: readonly string[]) =>
  `{ printf '%s\\n' 'list for-push' ${specs.map((s) => `"push ${s}"`).join(" ")}; echo; } | { PATH=/tmp/evil:$PATH git-remote-teamd teamd teamd::seat 2>&1; echo "helper-exit $?"; } | grep -v -e '^[0-9a-f]\\{40\\} ' -e '^@' -e '^$'; true`;
const LIT = "author w <w@seat.invalid> 1700000000 +0000\\ncommitter w <w@seat.invalid> 1700000000 +0000";

interface Said {
  readonly text: string;
  readonly ms: number;
}

describe.runIf(process.platform === "linux")("attack 4: an unbounded seat against another seat's branch, through quota, no-pack pushes, merges", () => {
  let h: TeamdHarness;
  let main: string;
  let narrowTip: string;
  let narrowTree: string;
  let narrowSrc: string;
  let narrowBlob: string;

  const hubRef = (ref: string) => h.hubRef(ref);
  /** What a refusal says, without what differs by construction (ids, branch names, the pack's size). */
  const normal = (text: string, ...names: string[]) => {
    let out = text
      .replace(/\b[0-9a-f]{40}\b/g, "<oid>")
      .replace(/^teamd: pushed \d+ bytes to the daemon$/m, "")
      .replace(/^ms \d+$/m, "")
      .trim();
    for (const [i, b] of names.entries()) out = out.replaceAll(b, `X${i}`);
    return out;
  };
  /** A timed run of a script in w1 (the clock read in the seat). */
  const timed = async (script: string): Promise<Said> => {
    const r = await h.sh("w1", `s=$(date +%s%N); out=$( { ${script} ; } 2>&1 ); e=$(date +%s%N); echo "$out"; echo "ms $(( (e - s) / 1000000 ))"`);
    return { text: r.stdout, ms: Number(/^ms (\d+)$/m.exec(r.stdout)?.[1]) };
  };
  /** Alternate two probes `rounds` times (ABBA), print their times; return each one's set of normalized words. */
  const alternate = async (label: string, a: () => Promise<Said>, b: () => Promise<Said>, rounds: number, norm: (t: string) => string) => {
    const times = { a: [] as number[], b: [] as number[] };
    const words = { a: new Set<string>(), b: new Set<string>() };
    for (let i = 0; i < rounds; i++) {
      for (const which of i % 2 === 0 ? (["a", "b"] as const) : (["b", "a"] as const)) {
        const r = await (which === "a" ? a() : b());
        times[which].push(r.ms);
        words[which].add(norm(r.text));
      }
    }
    console.log(`[${label}] right: ${spread(times.a)}\n[${label}] wrong: ${spread(times.b)}`);
    return { a: [...words.a].sort().join(" || "), b: [...words.b].sort().join(" || ") };
  };

  beforeAll(async () => {
    h = await appliedTeam("teamd-walk-attack4-", TEAM_FILE, {
      "README.md": "hello\n",
      "src/a.txt": "a\n",
    });
    await h.ok(["start", "--team", "proj"]);
    main = hubRef("refs/heads/main") as string;
    for (const seat of ["w1", "narrow"]) expect((await h.inSeat(seat, "git fetch -q teamd 2>&1 && git checkout -q --detach teamd/main")).code).toBe(0);
    const pushed = await h.inSeat(
      "narrow",
      `git checkout -q -b good teamd/main && echo ${NARROW_ONLY} > src/good.txt && mkdir -p lib && echo lib-${NARROW_ONLY} > lib/n.txt && git add -A && git commit -qm good && git push -q teamd good 2>&1`,
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    narrowTip = hubRef("refs/heads/seat/narrow/good") as string;
    narrowTree = h.hubGit("rev-parse", `${narrowTip}^{tree}`);
    narrowSrc = h.hubGit("rev-parse", `${narrowTip}:src`);
    narrowBlob = h.hubGit("rev-parse", `${narrowTip}:src/good.txt`);
    expect(h.hubGit("cat-file", "blob", narrowBlob)).toBe(NARROW_ONLY);
    expect((await h.inSeat("w1", "git ls-remote teamd")).stdout).not.toContain("seat/narrow/");
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  // -------------------------------------------------------------------------------------------
  // The storage quota: "your branches hold N objects in the hub" counts the objects only w1's
  // branches reach — `rev-list --objects --glob=seat/w1/* --not --glob=refs/*`, the other
  // seats' branches among the refs/*. So a blob w1 holds that narrow's branch also holds is not
  // counted: N says whether narrow's branch holds w1's guess. The refusal is w1's to provoke at
  // will: a 32-byte "pack" whose header declares 1,000,000 objects.

  it("the objects quota's refusal (a pack header declaring 1,000,000 objects): the same words whether another seat's branch holds w1's guess or not", async () => {
    const probe = async (content: string, branch: string) => {
      const r = await h.inSeat(
        "w1",
        [
          freshFromTrunk(branch),
          `echo ${content} > src/probe.txt && git add -A && git commit -qm ${branch}`,
          `git push -q teamd ${branch} 2>&1`,
          `git branch -f ${branch}-q HEAD`,
          EVIL_QUOTA,
          helper([`refs/heads/${branch}-q:refs/heads/${branch}-q`]),
          `git push -q teamd --delete seat/w1/${branch} 2>&1; git checkout -q --detach teamd/main; git branch -q -D ${branch} ${branch}-q`,
        ].join(" && "),
      );
      console.log(`[objects quota probe ${branch}] ${r.stdout.trim()}`);
      expect(hubRef(`refs/heads/seat/w1/${branch}-q`)).toBeUndefined();
      expect(hubRef(`refs/heads/seat/w1/${branch}`)).toBeUndefined();
      return normal(r.stdout, `${branch}-q`, branch);
    };
    const right = await probe(NARROW_ONLY, "qright");
    const wrong = await probe(WRONG, "qwrong");
    const right2 = await probe(NARROW_ONLY, "qright2");
    console.log(`[objects quota oracle] right guess: ${right}\n[objects quota oracle] wrong guess: ${wrong}\n[objects quota oracle] right again: ${right2}`);
    expect(right).toMatch(/push\.quota/);
    expect(right).toBe(wrong);
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // Pushes with no pack naming ids: the daemon lands a tip only if it is a commit w1 was served.

  it("no pack, tips naming narrow's commit / tree / blob / an id nowhere, as a new branch, a force push and over an existing branch: the same words for each", async () => {
    const fake = "1234567890abcdef1234567890abcdef12345678";
    const made = await h.inSeat(
      "w1",
      [
        freshFromTrunk("np-base"),
        "git commit -q --allow-empty -m base && git branch -f np-base2 && git push -q teamd np-base np-base2 2>&1 && git checkout -q --detach teamd/main",
      ].join(" && "),
    );
    expect(made.code, made.stdout).toBe(0);
    const outcomes: Record<string, string[]> = {};
    for (const [label, oid] of [
      ["narrow commit", narrowTip],
      ["narrow root tree", narrowTree],
      ["narrow src tree", narrowSrc],
      ["narrow blob", narrowBlob],
      ["nowhere", fake],
    ] as const) {
      const r = await h.inSeat(
        "w1",
        [EVIL_NOPACK, helper([`${oid}:refs/heads/np-new`, `+${oid}:refs/heads/np-force`, `${oid}:refs/heads/np-base`, `+${oid}:refs/heads/np-base2`])].join(
          " && ",
        ),
      );
      outcomes[label] = [normal(r.stdout)];
      console.log(`[no pack: ${label}] ${normal(r.stdout)}`);
      expect(hubRef("refs/heads/seat/w1/np-new")).toBeUndefined();
      expect(hubRef("refs/heads/seat/w1/np-force")).toBeUndefined();
      expect(hubRef("refs/heads/seat/w1/np-base")).not.toBe(oid);
      expect(hubRef("refs/heads/seat/w1/np-base2")).not.toBe(oid);
    }
    for (const label of Object.keys(outcomes)) expect.soft(outcomes[label], label).toEqual(outcomes.nowhere);
    // Control: the trunk's commit (served) lands with no pack.
    const ok = await h.inSeat("w1", [EVIL_NOPACK, helper([`${main}:refs/heads/np-trunk`])].join(" && "));
    console.log(`[no pack: trunk control] ${ok.stdout.trim()}`);
    expect(hubRef("refs/heads/seat/w1/np-trunk")).toBe(main);
  }, 60_000);

  it("timing: no-pack push of narrow's commit id against an id nowhere, alternated (reported, not asserted)", async () => {
    const fake = "abcdef1234567890abcdef1234567890abcdef12";
    const once = (oid: string) => () => timed(`${EVIL_NOPACK} && ${helper([`${oid}:refs/heads/np-t`])}`);
    const w = await alternate("no-pack timing (narrow commit vs nowhere)", once(narrowTip), once(fake), 6, (t) => normal(t));
    console.log(`[no-pack timing words] right: ${w.a}\n[no-pack timing words] wrong: ${w.b}`);
    expect(w.a).toBe(w.b);
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // Merges pushed by w1 (two parents), one parent or a merged tree naming a guess, not sent.

  it("merges naming a guess (narrow's commit as a parent; narrow's blob or src tree in the merged tree), not sent, alone and beside an honest ref: the same outcome whether the hub holds it or not", async () => {
    const fakeParent = "fedcba9876543210fedcba9876543210fedcba98";
    const mk = (guessBlob: string, guessSrc: string, parent: string) =>
      [
        freshFromTrunk("mg-base"),
        // An honest side commit (sent), and an honest ref beside.
        "echo side > src/side.txt && git add -A && git commit -qm side && side=$(git rev-parse HEAD)",
        "git checkout -q -B mg-ok teamd/main && echo ok > src/ok.txt && git add -A && git commit -qm ok && ok=$(git rev-parse HEAD)",
        "T=$(git rev-parse teamd/main^{tree}) && M=$(git rev-parse teamd/main)",
        // parent: trunk + the guessed parent commit, the trunk's tree.
        `p=$(printf "tree %s\\nparent %s\\nparent %s\\n${LIT}\\n\\nmerge\\n" $T $M ${parent} | git hash-object -t commit -w --stdin --literally)`,
        // blob: a merge of trunk and side whose tree names the guessed blob at src/g.txt.
        `sb=$({ git ls-tree $side:src; printf '100644 blob %s\\tg.txt\\n' ${guessBlob}; } | git mktree --missing)`,
        "tb=$(git ls-tree $side | grep -v '\tsrc$' | { cat; printf '040000 tree %s\\tsrc\\n' $sb; } | git mktree --missing)",
        `b=$(printf "tree %s\\nparent %s\\nparent %s\\n${LIT}\\n\\nmerge\\n" $tb $M $side | git hash-object -t commit -w --stdin --literally)`,
        // tree: a merge of trunk and side whose src/ is the guessed src tree.
        "tt=$(git ls-tree $side | grep -v '\tsrc$' | { cat; printf '040000 tree %s\\tsrc\\n' " + guessSrc + "; } | git mktree --missing)",
        `t=$(printf "tree %s\\nparent %s\\nparent %s\\n${LIT}\\n\\nmerge\\n" $tt $M $side | git hash-object -t commit -w --stdin --literally)`,
        "git checkout -q --detach teamd/main",
      ].join(" && ");
    const guessOf = (content: string) =>
      [
        `G=$(printf '%s\\n' '${content}' | git hash-object --stdin)`,
        "rm -rf /tmp/scratch.git && git init -q --bare /tmp/scratch.git",
        "GS=$(printf '100644 blob %s\\ta.txt\\n100644 blob %s\\tgood.txt\\n' $(git rev-parse teamd/main:src/a.txt) $G | GIT_DIR=/tmp/scratch.git git mktree --missing)",
      ].join(" && ");
    const shapes: Record<string, (which: string) => string> = {
      parent: () => `printf '%s\\n' $p | git pack-objects --stdout -q > /tmp/evil/pack && ${EVIL_PACKFILE} && ${helper(["$p:refs/heads/mg-x"])}`,
      parentBesideOk: () =>
        `printf '%s\\n' $p $ok $(git rev-parse $ok^{tree} $ok:src $ok:src/ok.txt) | git pack-objects --stdout -q > /tmp/evil/pack && ${EVIL_PACKFILE} && ${helper(["$ok:refs/heads/mg-ok", "$p:refs/heads/mg-x"])}`,
      blob: () =>
        `printf '%s\\n' $b $tb $sb $side $(git rev-parse $side^{tree} $side:src $side:src/side.txt) | git pack-objects --stdout -q > /tmp/evil/pack && ${EVIL_PACKFILE} && ${helper(["$b:refs/heads/mg-x"])}`,
      srcTree: () =>
        `printf '%s\\n' $t $tt $side $(git rev-parse $side^{tree} $side:src $side:src/side.txt) | git pack-objects --stdout -q > /tmp/evil/pack && ${EVIL_PACKFILE} && ${helper(["$t:refs/heads/mg-x"])}`,
      srcTreeBesideOk: () =>
        `printf '%s\\n' $t $tt $side $(git rev-parse $side^{tree} $side:src $side:src/side.txt) $ok $(git rev-parse $ok^{tree} $ok:src $ok:src/ok.txt) | git pack-objects --stdout -q > /tmp/evil/pack && ${EVIL_PACKFILE} && ${helper(["$ok:refs/heads/mg-ok", "$t:refs/heads/mg-x"])}`,
    };
    const outcomes: string[] = [];
    for (const [name, shape] of Object.entries(shapes)) {
      const said: Record<string, string> = {};
      for (const [which, content, parent] of [
        ["right", NARROW_ONLY, narrowTip],
        ["wrong", WRONG, fakeParent],
      ] as const) {
        const r = await h.inSeat("w1", [guessOf(content), mk("$G", "$GS", parent), "mkdir -p /tmp/evil", shape(which)].join(" && "));
        const landed = ["mg-ok", "mg-x"].filter((b) => hubRef(`refs/heads/seat/w1/${b}`) !== undefined);
        said[which] = `landed ${JSON.stringify(landed)}: ${normal(r.stdout + r.stderr)}`;
        // Nothing of it stays for the next shape.
        await h.inSeat("w1", "git push -q teamd --delete seat/w1/mg-ok >/dev/null 2>&1; git push -q teamd --delete seat/w1/mg-x >/dev/null 2>&1; true");
      }
      outcomes.push(`[merge ${name}] right: ${said.right}\n[merge ${name}] wrong: ${said.wrong}`);
      expect.soft(said.right, name).toBe(said.wrong);
      expect.soft(said.right, name).not.toMatch(/internal|unknown-outcome/);
      expect.soft(said.right, name).toMatch(/landed \[\]/);
    }
    console.log(outcomes.join("\n"));
  }, 120_000);

  it("timing: a merge whose second parent is narrow's commit against one nowhere, alternated (reported, not asserted)", async () => {
    const fakeParent = "0123456789abcdef0123456789abcdef01234567";
    const prep = await h.inSeat(
      "w1",
      [
        "mkdir -p /tmp/evil",
        "T=$(git rev-parse teamd/main^{tree}) && M=$(git rev-parse teamd/main)",
        ...(
          [
            ["right", narrowTip],
            ["wrong", fakeParent],
          ] as const
        ).map(([which, parent]) =>
          [
            `p=$(printf "tree %s\\nparent %s\\nparent %s\\n${LIT}\\n\\nmerge ${which}\\n" $T $M ${parent} | git hash-object -t commit -w --stdin --literally)`,
            `printf '%s\\n' $p | git pack-objects --stdout -q > /tmp/evil/pack-${which} && echo $p > /tmp/evil/tip-${which}`,
          ].join(" && "),
        ),
        EVIL_PACKFILE,
      ].join(" && "),
    );
    expect(prep.code, prep.stdout + prep.stderr).toBe(0);
    const once = (which: string) => () =>
      timed(`cp /tmp/evil/pack-${which} /tmp/evil/pack && p=$(cat /tmp/evil/tip-${which}) && ${helper(["$p:refs/heads/mg-t"])}`);
    const w = await alternate("merge parent timing (narrow commit vs nowhere)", once("right"), once("wrong"), 6, (t) => normal(t));
    console.log(`[merge timing words] right: ${w.a}\n[merge timing words] wrong: ${w.b}`);
    expect(w.a).toBe(w.b);
    expect(hubRef("refs/heads/seat/w1/mg-t")).toBeUndefined();
  }, 90_000);

  // -------------------------------------------------------------------------------------------
  // Several refs in one push mixing: a new honest branch, a no-pack tip naming narrow's commit,
  // a delete of an own branch, the trunk, another seat's branch.

  it("one push mixing an honest branch, narrow's commit as a tip, a delete, the trunk and narrow's branch: the same refs land and the same words whether the named commit exists or not", async () => {
    const fake = "9999999999aaaaaaaaaabbbbbbbbbbcccccccccc";
    const said: Record<string, string> = {};
    for (const [which, oid] of [
      ["right", narrowTip],
      ["wrong", fake],
    ] as const) {
      const r = await h.inSeat(
        "w1",
        [
          freshFromTrunk("mix-del"),
          "git commit -q --allow-empty -m del && git push -q teamd mix-del 2>&1",
          freshFromTrunk("mix-ok"),
          "echo mixok > src/mixok.txt && git add -A && git commit -qm mixok && ok=$(git rev-parse HEAD)",
          "mkdir -p /tmp/evil && printf '%s\\n' $ok $(git rev-parse $ok^{tree} $ok:src $ok:src/mixok.txt) | git pack-objects --stdout -q > /tmp/evil/pack",
          EVIL_PACKFILE,
          helper(["$ok:refs/heads/mix-ok", `${oid}:refs/heads/mix-steal`, ":refs/heads/mix-del", "$ok:refs/heads/main", `$ok:refs/heads/seat/narrow/good`]),
          "git checkout -q --detach teamd/main",
        ].join(" && "),
      );
      const landed = ["mix-ok", "mix-steal", "mix-del"].filter((b) => hubRef(`refs/heads/seat/w1/${b}`) !== undefined);
      said[which] = `landed ${JSON.stringify(landed)}: ${normal(r.stdout)}`;
      expect(hubRef("refs/heads/main")).toBe(main);
      expect(hubRef("refs/heads/seat/narrow/good")).toBe(narrowTip);
      await h.inSeat("w1", "git push -q teamd --delete seat/w1/mix-ok >/dev/null 2>&1; git push -q teamd --delete seat/w1/mix-del >/dev/null 2>&1; true");
    }
    console.log(`[mix] right: ${said.right}\n[mix] wrong: ${said.wrong}`);
    expect(said.right).toBe(said.wrong);
    expect(said.right).not.toMatch(/internal|unknown-outcome/);
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // A whole commit guessed: w1 sends every object of a commit byte for byte as narrow's branch
  // holds it (here read from the hub: a guess that is right, e.g. by trying timestamps), which
  // writes lib/ — outside w1's write scope. The listing (`--not --all`) finds no new commit, so
  // no path is checked; a guess one second off is a new commit, checked and refused.

  it("a whole commit of narrow's branch guessed and sent (it writes lib/, outside w1's scope): the same outcome as a guess one second off", async () => {
    const scratch = `${h.dir}/walk4-scratch.git`;
    execFileSync("git", ["init", "-q", "--bare", scratch]);
    execFileSync("sh", ["-c", `echo ${h.hub}/objects > ${scratch}/objects/info/alternates`]);
    const sg = (args: string[], input?: string) =>
      execFileSync("git", ["--git-dir", scratch, ...args], { encoding: "latin1", ...(input !== undefined ? { input } : {}) });
    const raw = sg(["cat-file", "commit", narrowTip]);
    const off = raw.replace(/^(committer .* )(\d+)( [+-]\d{4})$/m, (_m, a: string, t: string, z: string) => `${a}${Number(t) + 1}${z}`);
    expect(off).not.toBe(raw);
    const offTip = sg(["hash-object", "-t", "commit", "-w", "--stdin"], off).trim();
    const packOf = (tip: string) =>
      execFileSync("git", ["--git-dir", scratch, "pack-objects", "--revs", "--stdout", "-q"], { input: `${tip}\n^${main}\n` }).toString("base64");
    const said: Record<string, string> = {};
    for (const [which, tip] of [
      ["right", narrowTip],
      ["wrong", offTip],
    ] as const) {
      const r = await h.inSeat(
        "w1",
        [`mkdir -p /tmp/evil && printf '%s' '${packOf(tip)}' | base64 -d > /tmp/evil/pack`, EVIL_PACKFILE, helper([`${tip}:refs/heads/dup-${which}`])].join(
          " && ",
        ),
      );
      const landed = hubRef(`refs/heads/seat/w1/dup-${which}`);
      said[which] = `${landed === undefined ? "refused" : "LANDED"}: ${normal(r.stdout, `dup-${which}`)}`;
      if (landed !== undefined)
        console.log(`[whole commit ${which}] landed; lib/n.txt on seat/w1/dup-${which}: ${h.hubGit("cat-file", "blob", `${landed}:lib/n.txt`)}`);
    }
    console.log(`[whole commit guessed] right: ${said.right}\n[whole commit guessed] wrong: ${said.wrong}`);
    await h.inSeat("w1", "git push -q teamd --delete seat/w1/dup-right >/dev/null 2>&1; git push -q teamd --delete seat/w1/dup-wrong >/dev/null 2>&1; true");
    expect(said.right).toBe(said.wrong);
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // After w1 holds the guessed content on its own branch, what its fetch and ls-remote show.

  it("after w1 lands a branch holding its (right) guess, its fetch and ls-remote name nothing of narrow's, and a fresh clone never holds narrow's commit", async () => {
    const r = await h.inSeat(
      "w1",
      [
        freshFromTrunk("hold"),
        `echo ${NARROW_ONLY} > src/good.txt && git add -A && git commit -qm hold && git push -q teamd hold 2>&1`,
        "git ls-remote teamd",
        "rm -rf /tmp/clone && git init -q /tmp/clone && cd /tmp/clone && git remote add teamd teamd::seat && git fetch -q teamd 2>&1",
        `(git cat-file -t ${narrowTip} 2>/dev/null || echo absent-commit)`,
      ].join(" && "),
    );
    console.log(`[hold] ${r.stdout.trim()}`);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).not.toContain("seat/narrow");
    expect(r.stdout).toContain("absent-commit");
    await h.inSeat("w1", "git checkout -q --detach teamd/main && git push -q teamd --delete seat/w1/hold 2>&1; true");
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // Honest usage by the unbounded seat: never refused, never internal.

  const honest =
    (name: string, steps: string, push = `git push teamd ${name} 2>&1`) =>
    async () => {
      const r = await h.inSeat("w1", [steps, push].join(" && "));
      console.log(`[honest ${name}] code ${r.code}: ${(r.stdout + r.stderr).trim()}`);
      expect(r.stdout + r.stderr).not.toMatch(/internal|unknown-outcome/);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(hubRef(`refs/heads/seat/w1/${name}`)).toBeDefined();
      await h.inSeat("w1", "git checkout -q --detach teamd/main");
    };

  it(
    "honest: a .gitattributes edit under src/ and a submodule under src/ land",
    honest(
      "w-attr",
      [
        freshFromTrunk("w-attr"),
        "printf '*.txt text eol=lf\\n' > src/.gitattributes && git add -A && git commit -qm attr",
        "rm -rf /tmp/subsrc && git init -q /tmp/subsrc && git -C /tmp/subsrc -c user.name=n -c user.email=n@x commit -q --allow-empty -m one",
        "printf '[submodule \"vendored\"]\\n\\tpath = src/vendored\\n\\turl = ../subsrc\\n' > src/.gitmodules",
        "git add src/.gitmodules && git update-index --add --cacheinfo 160000,$(git -C /tmp/subsrc rev-parse HEAD),src/vendored && git commit -qm sub",
      ].join(" && "),
    ),
    60_000,
  );

  it("honest, after the trunk moves: merging the trunk into a pushed branch lands; rebasing another onto it and pushing --force lands; deleting a branch lands", async () => {
    const before = await h.inSeat(
      "w1",
      [
        freshFromTrunk("w-merge"),
        "echo m > src/m.txt && git add -A && git commit -qm m && git push -q teamd w-merge 2>&1",
        freshFromTrunk("w-rebase"),
        "echo r > src/r.txt && git add -A && git commit -qm r && git push -q teamd w-rebase 2>&1",
      ].join(" && "),
    );
    expect(before.code, before.stdout).toBe(0);
    // The trunk moves (as a gated merge would move it): a commit made in the hub.
    const env = {
      ...process.env,
      GIT_DIR: h.hub,
      GIT_INDEX_FILE: `${h.dir}/walk4-index`,
      GIT_AUTHOR_NAME: "o",
      GIT_AUTHOR_EMAIL: "o@x",
      GIT_COMMITTER_NAME: "o",
      GIT_COMMITTER_EMAIL: "o@x",
    };
    const g = (args: string[], input?: string) => execFileSync("git", args, { env, encoding: "utf8", ...(input !== undefined ? { input } : {}) }).trim();
    g(["read-tree", "refs/heads/main"]);
    const blob = g(["hash-object", "-w", "--stdin"], "trunk moved\n");
    g(["update-index", "--add", "--cacheinfo", `100644,${blob},docs/moved.md`]);
    const moved = g(["commit-tree", g(["write-tree"]), "-p", "refs/heads/main", "-m", "trunk moves"]);
    g(["update-ref", "refs/heads/main", moved, main]);
    main = moved;
    const r = await h.inSeat(
      "w1",
      [
        "git fetch -q teamd 2>&1",
        "git checkout -q w-merge && git merge -q --no-edit teamd/main && git push teamd w-merge 2>&1",
        "git checkout -q w-rebase && git rebase -q teamd/main && git push --force teamd w-rebase 2>&1",
        "git push teamd --delete seat/w1/w-attr 2>&1",
        "git checkout -q --detach teamd/main",
      ].join(" && "),
    );
    console.log(`[honest merge/rebase/delete] code ${r.code}: ${(r.stdout + r.stderr).trim()}`);
    expect(r.stdout + r.stderr).not.toMatch(/internal|unknown-outcome/);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const merged = hubRef("refs/heads/seat/w1/w-merge") as string;
    expect(h.hubGit("rev-list", "--parents", "-n1", merged).split(" ")).toHaveLength(3);
    expect(h.hubGit("rev-parse", "refs/heads/seat/w1/w-rebase~1")).toBe(moved);
    expect(hubRef("refs/heads/seat/w1/w-attr")).toBeUndefined();
  }, 60_000);

  it("honest: a branch is deleted by the hub's name git knows it by (git push teamd --delete seat/w1/BRANCH, as the push.quota refusal says)", async () => {
    // By the name it was pushed under (w-del) git refuses on the seat's side ("remote ref does
    // not exist": the listing gives the hub's names); the quota's refusal named that form until
    // round fourteen, and names this one now (daemon/seat/git.ts).
    const r = await h.inSeat(
      "w1",
      [
        freshFromTrunk("w-del"),
        "git commit -q --allow-empty -m del && git push -q teamd w-del 2>&1",
        "git checkout -q --detach teamd/main",
        "git push teamd --delete seat/w1/w-del 2>&1",
      ].join(" && "),
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(hubRef("refs/heads/seat/w1/w-del")).toBeUndefined();
  }, 60_000);

  it("control, after the attacks: the trunk and narrow's branch untouched, the hub's objects whole", () => {
    expect(hubRef("refs/heads/main")).toBe(main);
    expect(hubRef("refs/heads/seat/narrow/good")).toBe(narrowTip);
    const fsck = (() => {
      try {
        return execFileSync("git", ["--git-dir", h.hub, "fsck", "--no-dangling", "--connectivity-only"], {
          encoding: "utf8",
          stdio: ["ignore", "pipe", "pipe"],
        });
      } catch (error) {
        return `FAILED: ${String((error as { stderr?: string }).stderr ?? error)}`;
      }
    })();
    console.log(`[hub fsck] ${fsck.trim() || "clean"}`);
    expect(fsck).not.toMatch(/^FAILED/);
  });
});
