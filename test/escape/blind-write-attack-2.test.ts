import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { freshFromTrunk } from "../support/evil-git.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { BLIND_WRITER_TEAM_FILE, blindWriterRepoFiles, expectBlindWriterContained } from "../support/narrow-seat.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * A hostile seat that writes docs/ blind, a second attacker of round fifteen (after 0104cbb, when
 * the replay's bounds counted the seat's own names and bytes one by one and the hub's unseen ones
 * per folder in blocks of 64 names / 4 KiB, at least one block where the seat saw no folder). Seat wo reads src/ and
 * README.md and writes src/ and docs/; the owner denies write under docs/a/keep/ and docs/b/keep/.
 * The hub holds under docs/ (none of it readable by wo): secret.md (canary), sub/s.md (one file,
 * canary), few/ (3 files), big/ (100 files f001..f100), huge/ (5,000 files), n1/n2/n3.md (deep),
 * a/keep/k.md (denied), and a file with a 200-character name. Each case asserts the SECURE outcome:
 * a failing case is a hole.
 *
 * The attack: the "at least one block" floor applies only where `from === null` — the seat's
 * parent commit shows no folder there. In a push of several commits, a folder the seat made blind
 * in its first commit IS in the parent of its second (the seat's own commit), so from the second
 * commit on the hub's unseen names there count ceil(n/64) blocks with no floor: 0 for a folder the
 * hub does not hold (or where the seat named every name the hub holds), 64 for one holding 1..64
 * names the seat did not name. Padded to sit on the entry bound (push.paths), a push that creates
 * docs/G/t.md and changes it in each later commit tells whether docs/G is a folder of the hub, and
 * one that names docs/sub/s.md vs docs/sub/t.md tells which name the one-file folder holds.
 *
 * Found when written (each model of the count matched the seat's own search exactly, ~2.5 s a
 * probe), all closed in round fifteen (each folder the seat changes that it may not read all of
 * now counts what the hub held unseen there when the push started — never what the push's own
 * commits set — as the power of two at or above it, at least 1,024 names and 64 KiB): shape A — at the FINE where docs/nosub/t.md landed and FINE+1 was
 * refused (push.paths), docs/sub/t.md, docs/few/t.md, docs/big/t.md were refused at FINE,
 * docs/sub/s.md landed; the same through two levels (docs/n1/n2, docs/n1/zz) and a delete in
 * commit 2; in the 100-file folder a 36th right name flipped the count (f001 with f002..f036
 * landed at FINE+1, zz9 refused); the bytes bound alike (push.object-size). On record as weak: a
 * folder past the floor tells its size to a power of two (docs/huge), and the replay's time grows
 * with an unseen folder's size (30 commits into docs/huge took ~1.29 s against ~0.94 s before it
 * was refused). Held: a file at the guessed folder's name, the deny through several commits, .git
 * aliases, refs outside seat/wo/.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const CANARY = "CANARY-bwa2-51c9 never for wo";
const SUB_CANARY = "CANARY-bwa2-7e04 never for wo";
const LONG = `${"l".repeat(196)}.md`;

const TEAM_FILE = BLIND_WRITER_TEAM_FILE;

const hubFiles = (): Record<string, string> => {
  const files: Record<string, string> = {
    ...blindWriterRepoFiles(CANARY, SUB_CANARY),
    "docs/n1/n2/n3.md": "deep\n",
    [`docs/${LONG}`]: "long\n",
  };
  for (const n of ["f1.md", "f2.md", "f3.md"]) files[`docs/few/${n}`] = `${n}\n`;
  for (let i = 1; i <= 100; i++) files[`docs/big/f${String(i).padStart(3, "0")}`] = `b${i}\n`;
  for (let i = 1; i <= 5000; i++) files[`docs/huge/h${String(i).padStart(4, "0")}`] = `h${i}\n`;
  return files;
};

/** The replay's bound on tree entries compared (REPLAY_ENTRIES in src/effects/git-filter.ts). */
const REPLAY_ENTRIES = 500_000;
/** Padding: M commits, each changing one file of a src/pad folder of K entries. */
const K = 45_700;
const M = 10;
/** What the replay counts for a folder the seat may not read all of that holds little unseen (src/effects/git-filter.ts, UNSEEN_NAMES_FLOOR). */
const UNSEEN_FLOOR = 1024;

/**
 * In the seat: /tmp/pad2.sh BRANCH FINE DOCSFILE — DOCSFILE defines a shell function `docs I`
 * printing the docs tree of commit I (or "-" for no docs/ at all). Commit 1 adds src/pad (K
 * files), src/fine (FINE files) and docs(1); commits 2..M each change src/pad/p000001 and take
 * docs(I). All plumbing; then the branch is pushed.
 */
const PAD_SCRIPT = `cat > /tmp/pad2.sh <<'EOS'
set -e
B=$1; FN=$2; . $3; KK=\${4:-${K}}
BL=$(printf 'p\\n' | git hash-object -w --stdin)
A=$(git rev-parse teamd/main:src/a.txt); R=$(git rev-parse teamd/main:README.md)
seq -f 'p%06g' 1 $KK | awk -v b=$BL '{printf "100644 blob %s\\t%s\\n", b, $0}' > /tmp/pad.txt
FINE=$(seq -f 'f%06g' 1 $FN | awk -v b=$BL '{printf "100644 blob %s\\t%s\\n", b, $0}' | git mktree)
mk() { PAD=$(git mktree < /tmp/pad.txt); SRC=$(printf '100644 blob %s\\ta.txt\\n040000 tree %s\\tfine\\n040000 tree %s\\tpad\\n' $A $FINE $PAD | git mktree); if [ "$1" = - ]; then printf '100644 blob %s\\tREADME.md\\n040000 tree %s\\tsrc\\n' $R $SRC | git mktree; else printf '100644 blob %s\\tREADME.md\\n040000 tree %s\\tdocs\\n040000 tree %s\\tsrc\\n' $R $1 $SRC | git mktree; fi; }
C=$(git commit-tree $(mk $(docs 1)) -p teamd/main -m c1)
i=2
while [ $i -le ${M} ]; do
  P=$(printf 'p%s\\n' $i | git hash-object -w --stdin)
  sed -i "1s/ [0-9a-f]*\\t/ $P\\t/" /tmp/pad.txt
  C=$(git commit-tree $(mk $(docs $i)) -p $C -m c$i)
  i=$((i + 1))
done
git update-ref refs/heads/$B $C
set +e
git push teamd $B 2>&1; echo push-exit $?
EOS
chmod +x /tmp/pad2.sh`;

/** docs(I) = a folder path G (a/b/c) holding one file NAME whose content changes every commit; `dropAfter1`: docs/ gone from commit 2 on. */
const oneFileIn = (path: string, name: string, dropAfter1 = false): string => {
  const parts = path.split("/");
  let build = `t=$(printf '100644 blob %s\\t${name}\\n' $b | git mktree)`;
  for (const part of [...parts].reverse()) build += `; t=$(printf '040000 tree %s\\t${part}\\n' $t | git mktree)`;
  const drop = dropAfter1 ? `if [ $1 -gt 1 ]; then echo -; return; fi; ` : "";
  return `docs() { ${drop}b=$(printf 'v%s\\n' $1 | git hash-object -w --stdin); ${build}; echo $t; }`;
};

/** docs(I) = docs/FOLDER holding every name of NAMES (one per line): the first name's content changes every commit. */
const manyIn = (folder: string, names: readonly string[], tag: string): string =>
  `printf '%s\\n' ${names.join(" ")} > /tmp/names-${tag}; docs() { b=$(printf 'v%s\\n' $1 | git hash-object -w --stdin); x=$(printf 'x\\n' | git hash-object -w --stdin); g=$({ head -1 /tmp/names-${tag} | awk -v b=$b '{printf "100644 blob %s\\t%s\\n", b, $0}'; tail -n +2 /tmp/names-${tag} | awk -v b=$x '{printf "100644 blob %s\\t%s\\n", b, $0}'; } | git mktree); printf '040000 tree %s\\t${folder}\\n' $g | git mktree; }`;

describe.runIf(process.platform === "linux")("blind-write attack 2: the replay's blocks, from a push's second commit on", () => {
  let h: TeamdHarness;
  let main: string;
  let seq = 0;
  const hubRef = (ref: string) => h.hubRef(ref);
  const normal = (text: string, branch: string) =>
    text
      .replace(/\b[0-9a-f]{40}\b/g, "<oid>")
      .replace(/^teamd: pushed \d+ bytes to the daemon$/m, "")
      .split(branch)
      .join("B")
      .trim();

  beforeAll(async () => {
    h = await appliedTeam("teamd-bwa2-", TEAM_FILE, hubFiles());
    await h.ok(["start", "--team", "proj"]);
    main = hubRef("refs/heads/main") as string;
    const r = await h.inSeat("wo", `git fetch -q teamd 2>&1 && git checkout -q --detach teamd/main && ${PAD_SCRIPT}\nfor t in awk seq; do command -v $t; done`);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  }, 180_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  /** A padded push: docs given by a `docs` function definition (shell); landed, and what the seat saw. */
  async function padded(fine: number, docsFn: string, k = K): Promise<{ landed: boolean; said: string; ms: number }> {
    const branch = `p${seq++}`;
    const r = await h.inSeat(
      "wo",
      `git fetch -q teamd && cat > /tmp/docs-${branch}.sh <<'EOD'\n${docsFn}\nEOD\ns=$(date +%s%N); sh /tmp/pad2.sh ${branch} ${fine} /tmp/docs-${branch}.sh ${k}; e=$(date +%s%N); echo "ms $(( (e - s) / 1000000 ))"`,
    );
    const said = normal((r.stdout + r.stderr).replace(/^ms \d+$/m, ""), branch);
    // Its exit status too: an empty output with no push-exit was once a whole run cut at the harness's time out.
    if (!/push-exit/.test(said)) throw new Error(`pad script failed (teamd exec exit ${r.code}): ${said}`);
    return { landed: hubRef(`refs/heads/seat/wo/${branch}`) !== undefined, said, ms: Number(/^ms (\d+)$/m.exec(r.stdout)?.[1]) };
  }

  /** The attacker's calibration on names it made up: the FINE at which the push lands and FINE+1 is refused. */
  async function boundary(docsFn: string, lo: number, hi: number, k = K): Promise<number> {
    // Widened until the flip lies inside: the attacker's search needs no model of the count.
    for (let step = Math.max(8, hi - lo); !(await padded(lo, docsFn, k)).landed; step *= 2) [hi, lo] = [lo, Math.max(0, lo - step)];
    for (let step = Math.max(8, hi - lo); ; step *= 2) {
      const high = await padded(hi, docsFn, k);
      if (!high.landed) {
        expect(high.said).toMatch(/push\.paths/);
        break;
      }
      [lo, hi] = [hi, hi + step];
    }
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if ((await padded(mid, docsFn, k)).landed) lo = mid;
      else hi = mid;
    }
    return lo;
  }

  /** Each case at FINE and FINE+1: "LANDED / refused" and so on. */
  async function probe(fine: number, cases: readonly (readonly [string, string])[], k = K): Promise<Record<string, string>> {
    const seen: Record<string, string> = {};
    for (const [label, docsFn] of cases) {
      const at = await padded(fine, docsFn, k);
      const past = await padded(fine + 1, docsFn, k);
      seen[label] = `${at.landed ? "LANDED" : "refused"} / ${past.landed ? "LANDED" : "refused"}`;
      console.log(
        `[${label}] FINE ${fine}: ${seen[label]} (${at.ms} / ${past.ms} ms) ${past.landed ? "" : (/push\.[a-z-]+/.exec(past.said)?.[0] ?? past.said)}`,
      );
    }
    return seen;
  }

  /** Roughly where the bound is for a push whose docs visit `folders` folders blind, each changed in every commit: the seat's own names, and the floor for each folder it may not read all of (the root, docs, and them). */
  const estimate = (folders: number) => REPLAY_ENTRIES - M * (K + 6) - M - M * folders - UNSEEN_FLOOR * M * (2 + folders);

  it("several commits into a folder set blind (docs/G/t.md made, then changed in commits 2..10): a guessed folder the hub holds (sub: 1 file; few: 3; big: 100) counts like one it does not, and a file at the folder's name (secret.md) too; a right name in the one-file folder (sub/s.md) like a wrong one (sub/t.md)", async () => {
    const est = estimate(1);
    const fine = await boundary(oneFileIn("nosub", "t.md"), est - 8, est + 8);
    console.log(`[shape A] calibrated FINE ${fine} on docs/nosub/t.md (model ${est})`);
    const seen = await probe(fine, [
      ["docs/zzsub/t.md (made up)", oneFileIn("zzsub", "t.md")],
      ["docs/secret.md/t.md (the hub: a file there)", oneFileIn("secret.md", "t.md")],
      ["docs/sub/t.md (the hub: a folder of 1, wrong name)", oneFileIn("sub", "t.md")],
      ["docs/sub/s.md (the hub: a folder of 1, right name)", oneFileIn("sub", "s.md")],
      ["docs/few/t.md (the hub: a folder of 3)", oneFileIn("few", "t.md")],
      ["docs/big/t.md (the hub: a folder of 100)", oneFileIn("big", "t.md")],
    ]);
    const base = seen["docs/zzsub/t.md (made up)"];
    expect(base).toBe("LANDED / refused");
    // A file where the seat makes a folder goes whole: held.
    expect.soft(seen["docs/secret.md/t.md (the hub: a file there)"]).toBe(base);
    // Was a hole: a folder the hub holds counted a block (64 names) in each of commits 2..10, one
    // it did not none — whether docs/sub, docs/few, docs/big exist was told by the outcome.
    expect.soft(seen["docs/sub/t.md (the hub: a folder of 1, wrong name)"]).toBe(base);
    expect.soft(seen["docs/few/t.md (the hub: a folder of 3)"]).toBe(base);
    expect.soft(seen["docs/big/t.md (the hub: a folder of 100)"]).toBe(base);
    // Was a hole: the one name a one-file folder holds: s.md (right) counted 0 unseen, t.md (wrong) a block.
    expect.soft(seen["docs/sub/s.md (the hub: a folder of 1, right name)"]).toBe(seen["docs/sub/t.md (the hub: a folder of 1, wrong name)"]);
  }, 240_000);

  it("deeper nesting: docs/n1/n2/t.md (both folders held) and docs/n1/zz/t.md (only n1) against docs/q1/q2/t.md (made up), each changed in commits 2..10: the same outcomes", async () => {
    const est = estimate(2);
    const fine = await boundary(oneFileIn("q1/q2", "t.md"), est - 8, est + 8);
    console.log(`[shape A2] calibrated FINE ${fine} on docs/q1/q2/t.md (model ${est})`);
    const seen = await probe(fine, [
      ["docs/n1/n2/t.md", oneFileIn("n1/n2", "t.md")],
      ["docs/n1/zz/t.md", oneFileIn("n1/zz", "t.md")],
    ]);
    // Was a hole: n1/n2 — n2 holds n3.md unseen; n1/zz — n1 holds n2 unseen: a block each from commit 2 on.
    expect.soft(seen["docs/n1/n2/t.md"]).toBe("LANDED / refused");
    expect.soft(seen["docs/n1/zz/t.md"]).toBe("LANDED / refused");
  }, 240_000);

  it("a delete: docs/G/t.md made in commit 1, docs/ gone in commit 2 (G = sub, held, against zzdel, made up): the same outcomes", async () => {
    const est = estimate(1) + (M - 2) * 3 + UNSEEN_FLOOR * (2 * M - 4);
    const fine = await boundary(oneFileIn("zzdel", "t.md", true), est - 8, est + 8);
    console.log(`[shape D] calibrated FINE ${fine} on docs/zzdel/t.md (model ${est})`);
    const seen = await probe(fine, [["docs/sub/t.md, then deleted", oneFileIn("sub", "t.md", true)]]);
    // Was a hole: deleting what it made visits docs/sub with the seat's own commit as parent: no floor, the hub's s.md a block.
    expect.soft(seen["docs/sub/t.md, then deleted"]).toBe("LANDED / refused");
  }, 240_000);

  it("a specific name in the 100-file folder: 35 names the seat knows (f002..f036) and one guess, f001 (right) or zz9 (wrong), changed in commits 2..10: the same outcomes", async () => {
    const known = Array.from({ length: 35 }, (_, i) => `f${String(i + 2).padStart(3, "0")}`);
    // The first name of the list is the one changed each commit: a made-up one for the calibration.
    const k = K - 200;
    const est = estimate(1) + M * 200 - M * 35;
    const fine = await boundary(manyIn("big", ["zz0", ...known], "cal"), est - 8, est + 8, k);
    console.log(`[shape B] calibrated FINE ${fine} on docs/big/{zz0, f002..f036} (model ${est})`);
    const seen = await probe(
      fine,
      [
        ["docs/big/{zz9, f002..f036} (wrong guess)", manyIn("big", ["zz9", ...known], "wrong")],
        ["docs/big/{f001, f002..f036} (right guess)", manyIn("big", ["f001", ...known], "right")],
      ],
      k,
    );
    expect(seen["docs/big/{zz9, f002..f036} (wrong guess)"]).toBe("LANDED / refused");
    // Was a hole: 100 - 36 right names = 64 unseen, one block; 100 - 35 = 65, two: the 36th right name flipped the count.
    expect.soft(seen["docs/big/{f001, f002..f036} (right guess)"]).toBe("LANDED / refused");
  }, 240_000);

  /** The bytes bound (REPLAY_BUILT_BYTES): src/bpad of K2 files with 255-character names (git.path refuses longer), changed in each of M2 commits. */
  const BUILT = 128 * 1024 * 1024;
  const K2 = 13_400;
  const M2 = 32;
  /**
   * In the seat: /tmp/bpad.sh BRANCH T DOCSFILE — as pad2.sh, but padding bytes: commit 1 adds
   * src/bpad (K2 entries of 283 bytes each) and src/fine, a tree of exactly T + 29 bytes (T/35
   * entries of 35 bytes and one of 29 + T%35); commits 2..M2 change src/bpad's first file; docs
   * as docs(I). Prints the seat's own commits' bytes (the replayed ones are as long), then pushes.
   */
  const BPAD_SCRIPT = `cat > /tmp/bpad.sh <<'EOS'
set -e
B=$1; T=$2; . $3
BL=$(printf 'p\\n' | git hash-object -w --stdin)
A=$(git rev-parse teamd/main:src/a.txt); R=$(git rev-parse teamd/main:README.md)
N=$(printf '%0250d' 0 | tr 0 b)
seq -f '%05g' 1 ${K2} | awk -v b=$BL -v n=$N '{printf "100644 blob %s\\t%s%s\\n", b, $0, n}' > /tmp/bpad.txt
FN=$((T / 35)); RR=$((T % 35))
FINE=$({ seq -f 'f%06g' 1 $FN | awk -v b=$BL '{printf "100644 blob %s\\t%s\\n", b, $0}'; printf '100644 blob %s\\t%s\\n' $BL $(printf "%0$((RR + 1))d" 0 | tr 0 x); } | git mktree)
mk() { PAD=$(git mktree < /tmp/bpad.txt); SRC=$(printf '100644 blob %s\\ta.txt\\n040000 tree %s\\tbpad\\n040000 tree %s\\tfine\\n' $A $PAD $FINE | git mktree); printf '100644 blob %s\\tREADME.md\\n040000 tree %s\\tdocs\\n040000 tree %s\\tsrc\\n' $R $1 $SRC | git mktree; }
C=$(git commit-tree $(mk $(docs 1)) -p teamd/main -m c1)
i=2
while [ $i -le ${M2} ]; do
  P=$(printf 'p%s\\n' $i | git hash-object -w --stdin)
  sed -i "1s/ [0-9a-f]*\\t/ $P\\t/" /tmp/bpad.txt
  C=$(git commit-tree $(mk $(docs $i)) -p $C -m c$i)
  i=$((i + 1))
done
git update-ref refs/heads/$B $C
echo "commitbytes $(git rev-list --max-count=${M2} $C | while read c; do git cat-file -s $c; done | awk '{s += $1} END {print s}')"
set +e
git push teamd $B 2>&1; echo push-exit $?
EOS`;

  async function bpadded(t: number, docsFn: string): Promise<{ landed: boolean; said: string; ms: number; commitBytes: number }> {
    const branch = `b${seq++}`;
    const r = await h.inSeat(
      "wo",
      `git fetch -q teamd && cat > /tmp/docs-${branch}.sh <<'EOD'\n${docsFn}\nEOD\ns=$(date +%s%N); sh /tmp/bpad.sh ${branch} ${t} /tmp/docs-${branch}.sh; e=$(date +%s%N); echo "ms $(( (e - s) / 1000000 ))"`,
    );
    const said = normal((r.stdout + r.stderr).replace(/^ms \d+$/m, ""), branch);
    if (!/push-exit/.test(said)) throw new Error(`bpad script failed (teamd exec exit ${r.code}): ${said}`);
    return {
      landed: hubRef(`refs/heads/seat/wo/${branch}`) !== undefined,
      said,
      ms: Number(/^ms (\d+)$/m.exec(r.stdout)?.[1]),
      commitBytes: Number(/^commitbytes (\d+)$/m.exec(r.stdout)?.[1]),
    };
  }

  // Skipped since the floors (round fifteen): this padding — tree entries of 283 bytes — now meets
  // the entry bound first (each folder the seat may not read all of counts 1,024 names a commit:
  // ~98,000 over 32 commits of three such folders), so the bytes bound is no longer reachable
  // this way. The bound itself counts unseen bytes as the entries are counted (a power of two, at
  // least 64 KiB), and test/effects/git-filter.test.ts searches it for a held and an absent folder;
  // a padding through the seat's own commit messages, which would reach it, is not written here.
  it.skip("the bytes bound: docs/G/t.md made, then changed in commits 2..32, G = sub (held, 1 file) with t.md (wrong) and s.md (right), against zub (made up): the same outcomes", async () => {
    expect((await h.inSeat("wo", BPAD_SCRIPT)).code).toBe(0);
    // The seat's own bytes, one by one, and 64 KiB (the floor) a commit for each folder it cannot read all of: the root, docs, zub.
    const model = (commitBytes: number) => BUILT - (M2 * (98 + 95 + K2 * 283 + 30 + 32 + 3 * 64 * 1024) + commitBytes + 29);
    const first = await bpadded(model(M2 * 230), oneFileIn("zub", "t.md"));
    const est = model(first.commitBytes);
    console.log(`[bytes] first probe ${first.landed ? "LANDED" : "refused"} ${first.ms} ms; commit bytes ${first.commitBytes}; model T ${est}`);
    let lo = est - 16;
    let hi = est + 16;
    // Widened until the flip lies inside (the attacker's search needs no model).
    for (let step = 32; !(await bpadded(lo, oneFileIn("zub", "t.md"))).landed; step *= 2) [hi, lo] = [lo, lo - step];
    for (let step = 32; ; step *= 2) {
      const high = await bpadded(hi, oneFileIn("zub", "t.md"));
      if (!high.landed) {
        expect(high.said).toMatch(/push\.object-size/);
        break;
      }
      [lo, hi] = [hi, hi + step];
    }
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if ((await bpadded(mid, oneFileIn("zub", "t.md"))).landed) lo = mid;
      else hi = mid;
    }
    console.log(`[bytes] calibrated T ${lo} on docs/zub/t.md (model ${est})`);
    const seen: Record<string, string> = {};
    for (const [label, fn] of [
      ["docs/sub/t.md (wrong name)", oneFileIn("sub", "t.md")],
      ["docs/sub/s.md (right name)", oneFileIn("sub", "s.md")],
    ] as const) {
      const at = await bpadded(lo, fn);
      const past = await bpadded(lo + 1, fn);
      seen[label] = `${at.landed ? "LANDED" : "refused"} / ${past.landed ? "LANDED" : "refused"}`;
      console.log(`[bytes ${label}] T ${lo}: ${seen[label]} (${at.ms} / ${past.ms} ms) ${past.landed ? "" : (/push\.[a-z-]+/.exec(past.said)?.[0] ?? "")}`);
    }
    // Was a hole: from commit 2 on, the hub's s.md beside the seat's t.md was a 4 KiB block; beside nothing, none.
    expect.soft(seen["docs/sub/t.md (wrong name)"]).toBe("LANDED / refused");
    expect.soft(seen["docs/sub/s.md (right name)"]).toBe("LANDED / refused");
  }, 240_000);

  it("the size of an unseen folder, in one commit: docs/big/t.md (100 names) and docs/huge/t.md (5,000) against docs/zzbig/t.md (made up), padded: the same outcomes", async () => {
    // A one-commit shape: docs(I) the same tree in every commit, so only commit 1 visits docs/.
    const same = (g: string) =>
      `docs() { b=$(printf 'v\\n' | git hash-object -w --stdin); t=$(printf '100644 blob %s\\tt.md\\n' $b | git mktree); printf '040000 tree %s\\t${g}\\n' $t | git mktree; }`;
    const est = REPLAY_ENTRIES - M * (K + 6) - 2 - UNSEEN_FLOOR * (M + 2);
    const fine = await boundary(same("zzbig"), est - 8, est + 8);
    console.log(`[shape S] calibrated FINE ${fine} on docs/zzbig/t.md (model ${est})`);
    const seen = await probe(fine, [
      ["docs/big/t.md (100)", same("big")],
      ["docs/huge/t.md (5,000)", same("huge")],
    ]);
    expect(seen["docs/big/t.md (100)"]).toBe("LANDED / refused");
    // What is left, on record in docs/enforcement.md: a folder holding more unseen names than the
    // floor (1,024) counts the power of two above them (8,192 for 5,000), so its size class is
    // told — that such a folder is there, and nothing of its names.
    expect(seen["docs/huge/t.md (5,000)"]).toBe("refused / refused");
  }, 240_000);

  it("timing, no padding: 30 commits each changing docs/big/t.md (100 unseen names) against docs/nobig/t.md, alternating: both land in the same words; the times are printed (docs/enforcement.md: the replay's time still grows with an unseen folder's size)", async () => {
    const script = `cat > /tmp/tim.sh <<'EOS'
B=$1; G=$2
C=teamd/main; i=1
while [ $i -le 30 ]; do
  b=$(printf 'v%s\\n' $i | git hash-object -w --stdin)
  t=$(printf '100644 blob %s\\tt.md\\n' $b | git mktree); g=$(printf '040000 tree %s\\t%s\\n' $t $G | git mktree)
  r=$(printf '100644 blob %s\\tREADME.md\\n040000 tree %s\\tdocs\\n040000 tree %s\\tsrc\\n' $(git rev-parse teamd/main:README.md) $g $(git rev-parse teamd/main:src) | git mktree)
  C=$(git commit-tree $r -p $C -m t$i); i=$((i + 1))
done
git update-ref refs/heads/$B $C
s=$(date +%s%N); git push teamd $B 2>&1; echo push-exit $?; e=$(date +%s%N); echo "ms $(( (e - s) / 1000000 ))"
EOS`;
    expect((await h.inSeat("wo", script)).code).toBe(0);
    const times: Record<"held" | "free", number[]> = { held: [], free: [] };
    const said = new Set<string>();
    for (let i = 0; i < 8; i++) {
      for (const which of i % 2 === 0 ? (["held", "free"] as const) : (["free", "held"] as const)) {
        const branch = `tim${i}${which}`;
        const r = await h.inSeat("wo", `git fetch -q teamd && sh /tmp/tim.sh ${branch} ${which === "held" ? "big" : "nobig"}`);
        times[which].push(Number(/^ms (\d+)$/m.exec(r.stdout)?.[1]));
        said.add(normal((r.stdout + r.stderr).replace(/^ms \d+$/m, ""), branch));
      }
    }
    const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
    const line = (xs: number[]) => {
      const s = sorted(xs);
      return `median ${s[Math.floor(s.length / 2)]} ms, min ${s[0]}, max ${s[s.length - 1]} [${xs.join(", ")}]`;
    };
    console.log(`[timing] big: ${line(times.held)}\n[timing] nobig: ${line(times.free)}\n[timing] said: ${[...said].join(" | ").replace(/\n/g, " / ")}`);
    // One set of words, and landed: what differs is only the time, which grows with the folder's
    // unseen size (on record as weak).
    expect(said.size).toBe(1);
    expect([...said][0]).toMatch(/landed on seat\/wo\//);
  }, 120_000);

  // -------------------------------------------------------------------------------------------
  // What the seat may not write, through several commits and raw trees.

  /** A raw-tree push: `docsFn` defines docs I as above; C commits; plain push. */
  async function plain(docsFn: string, commits: number): Promise<{ landed: boolean; said: string; branch: string }> {
    const branch = `w${seq++}`;
    const r = await h.inSeat(
      "wo",
      [
        "git fetch -q teamd",
        `cat > /tmp/docs-${branch}.sh <<'EOD'\n${docsFn}\nEOD`,
        `. /tmp/docs-${branch}.sh; C=teamd/main; i=1; while [ $i -le ${commits} ]; do D=$(docs $i); if [ "$D" = - ]; then T=$(printf '100644 blob %s\\tREADME.md\\n040000 tree %s\\tsrc\\n' $(git rev-parse teamd/main:README.md) $(git rev-parse teamd/main:src) | git mktree); else T=$(printf '100644 blob %s\\tREADME.md\\n040000 tree %s\\tdocs\\n040000 tree %s\\tsrc\\n' $(git rev-parse teamd/main:README.md) $D $(git rev-parse teamd/main:src) | git mktree); fi; C=$(git commit-tree $T -p $C -m c$i); i=$((i + 1)); done; git update-ref refs/heads/${branch} $C`,
        `git push teamd ${branch} 2>&1; echo push-exit $?`,
      ].join("\n"),
    );
    return { landed: hubRef(`refs/heads/seat/wo/${branch}`) !== undefined, said: normal(r.stdout + r.stderr, branch), branch };
  }

  it("commit 1 a folder docs/a/x.md (over the denied folder's parent), commit 2 adds docs/a/keep/z.md; the same at docs/b: both refused in the same words", async () => {
    const fn = (d: string) =>
      `docs() { x=$(printf 'x\\n' | git hash-object -w --stdin); if [ $1 -eq 1 ]; then a=$(printf '100644 blob %s\\tx.md\\n' $x | git mktree); else k=$(printf '100644 blob %s\\tz.md\\n' $x | git mktree); a=$(printf '100644 blob %s\\tx.md\\n040000 tree %s\\tkeep\\n' $x $k | git mktree); fi; printf '040000 tree %s\\t${d}\\n' $a | git mktree; }`;
    const held = await plain(fn("a"), 2);
    const free = await plain(fn("b"), 2);
    const words = (s: string) => s.replace(/docs\/[ab]\b/g, "docs/X");
    console.log(
      `[deny, two commits] a: ${held.landed} ${held.said.replace(/\n/g, " / ")}\n[deny, two commits] b: ${free.landed} ${free.said.replace(/\n/g, " / ")}`,
    );
    expect([held.landed, free.landed]).toEqual([false, false]);
    expect(words(held.said)).toBe(words(free.said));
  }, 60_000);

  it("commit 1 docs/a/x.md, commit 2 docs/a made a file, commit 3 docs/a a folder again: refused; docs/a/keep/k.md untouched on the trunk", async () => {
    const fn = `docs() { x=$(printf 'x\\n' | git hash-object -w --stdin); if [ $1 -eq 2 ]; then printf '100644 blob %s\\ta\\n' $x | git mktree; else a=$(printf '100644 blob %s\\tx.md\\n' $x | git mktree); printf '040000 tree %s\\ta\\n' $a | git mktree; fi; }`;
    const r = await plain(fn, 3);
    console.log(`[folder, file, folder at docs/a] ${r.landed} ${r.said.replace(/\n/g, " / ")}`);
    expect(r.landed).toBe(false);
    expect(h.hubGit("cat-file", "blob", `${main}:docs/a/keep/k.md`)).toBe("kept");
  }, 60_000);

  it(".git-like names set blind (docs/.git/config, docs/sub/.GIT/config, docs/git~1, docs/.git\\u200c): never landed; in docs/sub and docs/nosub the same words", async () => {
    const at = (folder: string, dotgit: string) =>
      `docs() { x=$(printf '[core]\\n\\thooksPath=/tmp\\n' | git hash-object -w --stdin); t=$(printf '100644 blob %s\\tconfig\\n' $x | git mktree); t=$(printf '040000 tree %s\\t${dotgit}\\n' $t | git mktree); ${folder === "" ? "" : `t=$(printf '040000 tree %s\\t${folder}\\n' $t | git mktree); `}echo $t; }`;
    const cases = [
      ["docs/.git", at("", ".git")],
      ["docs/sub/.GIT", at("sub", ".GIT")],
      ["docs/nosub/.GIT", at("nosub", ".GIT")],
      ["docs/git~1", at("", "git~1")],
      ["docs/.git\u200c", at("", ".git\u200c")],
    ] as const;
    const said: Record<string, string> = {};
    for (const [label, fn] of cases) {
      const r = await plain(fn, 1);
      said[label] = r.said.replace(/docs\/(no)?sub/g, "docs/X");
      console.log(`[${label}] ${r.landed ? "LANDED" : "refused"}: ${r.said.replace(/\n/g, " / ")}`);
      expect.soft(r.landed, label).toBe(false);
    }
    expect(said["docs/sub/.GIT"]).toBe(said["docs/nosub/.GIT"]);
  }, 90_000);

  it("refs: a push to main, to seat/other/x, to a tag, and a branch named ../main: nothing lands outside refs/heads/seat/wo/", async () => {
    const before = h.hubGit("for-each-ref", "--format=%(refname) %(objectname)");
    const r = await h.inSeat(
      "wo",
      [
        freshFromTrunk("refs-x"),
        "printf 'x\\n' > src/x.txt && git add -A && git commit -qm x",
        "git push teamd HEAD:main 2>&1; echo e1 $?",
        "git push teamd HEAD:refs/heads/seat/other/x 2>&1; echo e2 $?",
        "git push teamd HEAD:refs/tags/v1 2>&1; echo e3 $?",
        "git push teamd HEAD:refs/heads/seat/wo/../../main 2>&1; echo e4 $?",
        "git push teamd HEAD:teamd.yaml 2>&1; echo e5 $?",
        "git checkout -q --detach teamd/main",
      ].join("; "),
    );
    console.log(`[refs] ${r.stdout.replace(/\n/g, " / ")}`);
    const after = h.hubGit("for-each-ref", "--format=%(refname) %(objectname)");
    const added = after.split("\n").filter((l) => !before.split("\n").includes(l));
    expect(hubRef("refs/heads/main")).toBe(main);
    for (const line of added) expect(line).toMatch(/^refs\/heads\/seat\/wo\//);
  }, 60_000);

  it("control: the trunk untouched, the hub's objects whole, wo served nothing of docs/", async () => {
    await expectBlindWriterContained(h, main, "CANARY-bwa2");
  }, 60_000);
});
