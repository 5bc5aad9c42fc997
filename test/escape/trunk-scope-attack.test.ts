import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { initTeam, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Attacks on the destination-scoped trunk acts (issue 24, items 1, 3 and 5; daemon/seat/trunk.ts,
 * src/kernel/seat-refs.ts mayFetch, src/kernel/authorize.ts accountOf), from inside real seats
 * started by `teamd start`: only the seat's shell, its clone, `git fetch|push|ls-remote teamd`
 * and `teamd-shim`. The harness plays the owner (team file, apply, hub inspection).
 *
 * Every test asserts the safe outcome and has a control showing the setup works. The holes this
 * attack found are fixed and their tests hold (each marked "found:"): a merge into another seat's
 * branch through --into, a denied reviewer fetching every seat's branch, a refusal naming a path
 * outside the gater's read scope, and --into naming the source answered as an internal error.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const CANARY = "TRUNKSCOPE-SECRET-CANARY-5b91e";
/** A path name outside the bounded gater's read scope: names are not content, but the filtered history hides them too. */
const SECRET_PATH = "secret/launch-codes-PATHCANARY.txt";

const sleeper = `    start:\n      command: [sleep, "3600"]\n`;
const TEAM_FILE = `version: 1
team: proj
declare:
  branches: [main, "release/*"]
  labs: [anthropic, google]
  envs: [pub]
  accounts: ["git:release", "git:other"]
review:
  mode: distinct-seat
  floor: 0
deploy:
  pub:
    push: { url: "https://example.invalid/web.git", branch: main }
    account: "git:release"
deny:
  review: ~
seats:
  exec:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: [src/, secret/] }
${sleeper}  bob:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
${sleeper}  narrow:
    lab: google
    capabilities:
      read: { path: src/api/ }
      gate: { path: src/api/, branch: main }
${sleeper}  own:
    lab: google
    capabilities:
      read: ~
      write: { path: src/ }
      gate: { branch: "seat/own/*" }
${sleeper}  ops:
    lab: google
    capabilities:
      read: ~
      gate: ~
      merge: ~
${sleeper}  mrg:
    lab: google
    capabilities:
      read: ~
      merge: { branch: main }
${sleeper}  gmain:
    lab: google
    capabilities:
      read: ~
      gate: { branch: main }
${sleeper}  voidrev:
    lab: google
    capabilities:
      read: ~
      gate: { branch: [] }
${sleeper}  denied:
    lab: google
    capabilities:
      read: ~
      review: ~
${sleeper}  noas:
    lab: google
    capabilities:
      read: ~
      deploy: { env: pub }
${sleeper}  otheras:
    lab: google
    capabilities:
      read: ~
      deploy: { env: pub }
      act-as: { account: "git:other" }
${sleeper}  pubber:
    lab: google
    capabilities:
      read: ~
      deploy: { env: pub }
      act-as: { account: "git:release" }
${sleeper}`;

/** teamd-shim exited 3 (refused) naming this rule. */
function refusedBy(r: { code: number | null; stdout: string; stderr: string }, rule: string): void {
  expect(r.code, r.stdout + r.stderr).toBe(3);
  expect(r.stderr).toContain(`refused by ${rule}`);
}

describe.runIf(process.platform === "linux")("attacks on destination-scoped review, gate and merge (from inside seats)", () => {
  let h: TeamdHarness;
  const tip = (ref: string) => h.hubGit("rev-parse", ref);

  /** exec pushes a new branch off the trunk holding these files; returns the hub ref. */
  const execBranch = async (name: string, files: Record<string, string>): Promise<string> => {
    const writes = Object.entries(files)
      .map(([p, c]) => `mkdir -p $(dirname ${p}) && printf '%s' '${c}' > ${p}`)
      .join(" && ");
    const pushed = await h.inSeat(
      "exec",
      `git fetch -q teamd && git checkout -q -B ${name} teamd/main && ${writes} && git add -A && git commit -qm ${name} && git push -q teamd HEAD:${name}`,
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    return `refs/heads/seat/exec/${name}`;
  };

  beforeAll(async () => {
    h = await initTeam("teamd-trunkatk-", { files: { "README.md": "hello\n", "src/api/a.ts": "export const a = 1;\n" } });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
    // own's base branch, at the trunk (no new commit: no path written).
    const based = await h.inSeat("own", "git fetch -q teamd && git push -q teamd teamd/main:refs/heads/base");
    expect(based.code, based.stdout + based.stderr).toBe(0);
    // bob's own work branch.
    const bobbed = await h.inSeat(
      "bob",
      "git fetch -q teamd && git checkout -q -B work teamd/main && echo b > src/bob.ts && git add -A && git commit -qm bob && git push -q teamd HEAD:work",
    );
    expect(bobbed.code, bobbed.stdout + bobbed.stderr).toBe(0);
  }, 180_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a seat branch is no destination: a gate into the gater's own namespace is refused (trunk.ref), even for gate ~; the trunk's own pass serves the merge", async () => {
    const branch = await execBranch("api1", { "src/api/b.ts": "export const b = 2;" });
    const main0 = tip("refs/heads/main");
    const base0 = tip("refs/heads/seat/own/base");
    // Within own's gate scope (seat/own/*) once — a seat branch is never a destination now.
    refusedBy(await h.shim("own", "gate", "seat/exec/api1", "--pass", "--into", "seat/own/base"), "trunk.ref");
    refusedBy(await h.shim("ops", "gate", "seat/exec/api1", "--pass", "--into", "seat/own/base"), "trunk.ref");
    // The same gate into the trunk is outside own's scope.
    refusedBy(await h.shim("own", "gate", "seat/exec/api1", "--pass"), "scope.branch");
    // No pass was made: neither merger gets one.
    refusedBy(await h.shim("mrg", "merge", "seat/exec/api1"), "pass.missing");
    refusedBy(await h.shim("ops", "merge", "seat/exec/api1", "--into", "seat/own/base"), "trunk.ref");
    expect(tip("refs/heads/main")).toBe(main0);
    expect(tip("refs/heads/seat/own/base")).toBe(base0);
    // Control: a pass into main from a main-scoped gater serves the merge.
    const real = await h.shim("gmain", "gate", "seat/exec/api1", "--pass", "--json");
    expect(real.code, real.stderr).toBe(0);
    const merged = await h.shim("mrg", "merge", "seat/exec/api1", "--json");
    expect(merged.code, merged.stderr).toBe(0);
    expect(tip("refs/heads/main")).toBe((JSON.parse(merged.stdout) as { commit: string }).commit);
    expect(h.hubGit("merge-base", "--is-ancestor", tip(branch), "refs/heads/main")).toBe("");
  });

  it("gate into release/1 then merge into main (same base, same tree): the pass is bound to its destination", async () => {
    await execBranch("api2", { "src/api/c.ts": "export const c = 3;" });
    h.hubGit("branch", "-f", "release/1", "refs/heads/main");
    const main0 = tip("refs/heads/main");
    expect(tip("refs/heads/release/1")).toBe(main0);
    const gated = await h.shim("ops", "gate", "seat/exec/api2", "--pass", "--into", "release/1", "--json");
    expect(gated.code, gated.stderr).toBe(0);
    // Same base and tree as a merge into main would have: only the destination ref differs.
    refusedBy(await h.shim("ops", "merge", "seat/exec/api2"), "pass.missing");
    refusedBy(await h.shim("mrg", "merge", "seat/exec/api2", "--into", "main"), "pass.missing");
    refusedBy(await h.shim("mrg", "merge", "seat/exec/api2", "--into", "refs/heads/main"), "pass.missing");
    expect(tip("refs/heads/main")).toBe(main0);
    // Control: into release/1 the pass is consumed once.
    const merged = await h.shim("ops", "merge", "seat/exec/api2", "--into", "release/1", "--json");
    expect(merged.code, merged.stderr).toBe(0);
    const m = JSON.parse(merged.stdout) as { commit: string; effectId: string };
    expect(m.effectId).toBe((JSON.parse(gated.stdout) as { effectId: string }).effectId);
    expect(tip("refs/heads/release/1")).toBe(m.commit);
    expect(tip("refs/heads/main")).toBe(main0);
    // The request id reused for the other destination answers the recorded merge and merges nothing.
  });

  it("a seat cannot gate its own change by naming a destination in its own namespace, nor by stacking it on another seat's branch", async () => {
    const mine = await h.inSeat(
      "own",
      "git fetch -q teamd && git checkout -q -B mine teamd/main && echo o > src/own.ts && git add -A && git commit -qm own && git push -q teamd HEAD:mine",
    );
    expect(mine.code, mine.stdout + mine.stderr).toBe(0);
    const base2 = await h.inSeat("own", "git push -q -f teamd teamd/main:refs/heads/base2");
    expect(base2.code, base2.stdout + base2.stderr).toBe(0);
    refusedBy(await h.shim("own", "gate", "seat/own/mine", "--pass", "--into", "seat/own/base2"), "trunk.ref");
    // Stacked on exec's branch, the change into exec's branch is own's commit alone.
    await execBranch("api3", { "src/api/d.ts": "export const d = 4;" });
    const stacked = await h.inSeat(
      "own",
      "git fetch -q teamd && git checkout -q -B stack teamd/seat/exec/api3 && echo s > src/stack.ts && git add -A && git commit -qm stack && git push -q teamd HEAD:stack",
    );
    expect(stacked.code, stacked.stdout + stacked.stderr).toBe(0);
    const api3 = tip("refs/heads/seat/exec/api3");
    refusedBy(await h.shim("own", "gate", "seat/own/stack", "--pass", "--into", "seat/exec/api3"), "trunk.ref");
    refusedBy(await h.shim("ops", "gate", "seat/own/stack", "--pass", "--into", "seat/exec/api3"), "trunk.ref");
    expect(tip("refs/heads/seat/exec/api3")).toBe(api3);
    // Control: a gater that is no author gates the stacked change into the trunk.
    const control = await h.shim("ops", "gate", "seat/own/stack", "--pass");
    expect(control.code, control.stdout + control.stderr).toBe(0);
    const records = await h.records();
    expect(records.some((x) => x.type === "refusal" && x.action === "gate" && JSON.stringify(x).includes("trunk.ref"))).toBe(true);
  });

  // found: `--into` takes any existing hub branch, and every seat's namespace is always declared
  // (src/kernel/policy-compile.ts SEAT_BRANCHES), so a seat holding unconstrained gate and merge
  // (the verifier and operator templates' shape) merges another seat's change INTO a third seat's
  // branch — a write to seat/bob/* that no push of anyone but bob may make (push.ref), made by
  // the daemon with a merge commit no seat authored.
  it("a merge cannot land in another seat's branch (--into seat/bob/work2)", async () => {
    // bob's work branch on the current trunk (the daemon's merges there have no recorded author:
    // a destination behind them would refuse every change as sod.authorship-unknown).
    const bobbed = await h.inSeat(
      "bob",
      "git fetch -q teamd && git checkout -q -B work2 teamd/main && echo b2 > src/bob2.ts && git add -A && git commit -qm bob2 && git push -q teamd HEAD:work2",
    );
    expect(bobbed.code, bobbed.stdout + bobbed.stderr).toBe(0);
    await execBranch("api4", { "src/api/e.ts": "export const e = 5;" });
    const bob0 = tip("refs/heads/seat/bob/work2");
    // Control: another seat's push to bob's branch is refused (push.ref): bob's branch is written only by bob.
    const direct = await h.inSeat("exec", "git push teamd HEAD:refs/heads/seat/bob/work2 2>&1 || true");
    expect(direct.stdout).toContain("push.ref");
    expect(tip("refs/heads/seat/bob/work2")).toBe(bob0);
    const gate = await h.shim("ops", "gate", "seat/exec/api4", "--pass", "--into", "seat/bob/work2");
    const merge = await h.shim("ops", "merge", "seat/exec/api4", "--into", "seat/bob/work2");
    // Safe outcome: bob's branch is bob's.
    expect(tip("refs/heads/seat/bob/work2"), `gate: ${gate.code} ${gate.stderr}\nmerge: ${merge.code} ${merge.stdout}${merge.stderr}`).toBe(bob0);
    expect(merge.code).not.toBe(0);
  });

  it("a bounded gater fetches other seats' branches filtered: no blob outside its read scope, no fetch by the real id", async () => {
    const branch = await execBranch("sec", { "src/api/f.ts": "export const f = 6;", [SECRET_PATH]: CANARY });
    const real = tip(branch);
    const secretBlob = h.hubGit("rev-parse", `${real}:${SECRET_PATH}`);
    expect(h.hubGit("cat-file", "-p", secretBlob)).toBe(CANARY);
    // Control: narrow sees the branch and reads the file inside its scope.
    const seen = await h.sh("narrow", "git fetch -q teamd && git show teamd/seat/exec/sec:src/api/f.ts");
    expect(seen.code, seen.stderr).toBe(0);
    expect(seen.stdout).toContain("export const f = 6;");
    // Nothing of the secret anywhere in its repository.
    const all = await h.sh(
      "narrow",
      `git cat-file --batch-all-objects --batch | grep -a -c '${CANARY}' || true; git ls-tree -r teamd/seat/exec/sec | grep -c secret || true; git rev-parse teamd/seat/exec/sec`,
    );
    expect(all.code, all.stderr).toBe(0);
    const [canaries, names, filteredTip] = all.stdout.trim().split("\n");
    expect(canaries).toBe("0");
    expect(names).toBe("0");
    expect(filteredTip).not.toBe(real);
    // The real commit and the secret blob, by id (as a seat that learned them would ask).
    for (const oid of [real, secretBlob]) {
      const byId = await h.sh("narrow", `git fetch teamd ${oid} 2>&1; git cat-file -e ${oid} && echo HAVE || echo MISSING`);
      expect(byId.stdout).toContain("MISSING");
    }
    const again = await h.sh("narrow", `git cat-file --batch-all-objects --batch | grep -a -c '${CANARY}' || true`);
    expect(again.stdout.trim()).toBe("0");
    // A push naming the real commit (without sending it) lands nothing.
    const pushed = await h.sh("narrow", `git push teamd ${real}:refs/heads/stolen 2>&1 || true`);
    expect(pushed.code).toBe(0);
    expect(() => h.hubGit("rev-parse", "--verify", "--quiet", "refs/heads/seat/narrow/stolen")).toThrow();
  });

  // found (pre-existing): a refused gate names every path of
  // the change outside the gater's scope in its reason (src/kernel/coverage.ts, the scope.path
  // refusal), so a seat whose read scope is src/api/ learns the names of files under secret/ that
  // its filtered history hides.
  it("a bounded gater's refusal does not name a path outside its read scope", async () => {
    await execBranch("sec2", { "src/api/g.ts": "export const g = 7;", [SECRET_PATH]: CANARY });
    const r = await h.shim("narrow", "gate", "seat/exec/sec2", "--pass");
    expect(r.code, r.stdout + r.stderr).toBe(3);
    // Control: the refusal is the scope's.
    expect(r.stderr).toContain("refused by scope.path");
    expect(r.stdout + r.stderr).not.toContain(CANARY);
    expect(r.stdout + r.stderr).not.toContain("PATHCANARY");
  });

  it("a gate scope covering nothing (branch: []) opens no other seat's branch", async () => {
    await execBranch("api5", { "src/api/h.ts": "export const h = 8;" });
    // Control: a gate scoped to main lists and fetches it.
    const listed = await h.sh("gmain", "git ls-remote teamd");
    expect(listed.stdout).toContain("refs/heads/seat/exec/api5");
    const v = await h.sh("voidrev", "git ls-remote teamd; git fetch teamd refs/heads/seat/exec/api5 2>&1 && echo FETCHED || echo REFUSED");
    expect(v.stdout).not.toMatch(/^[0-9a-f]{40}\trefs\/heads\/seat\/exec\//m);
    expect(v.stdout).toContain("REFUSED");
    expect(v.stdout).not.toContain("FETCHED");
  });

  // found: mayFetch (src/kernel/seat-refs.ts) opens every seat's branch to a seat holding a review
  // or gate grant whose scope is not void — reading only `seat.byCapability`, never the owner's
  // deny (or ceiling), which "wins over every grant". Under `deny: { review: ~ }` the seat holds no
  // review into any destination (every review is refused deny.match), yet it fetches every seat's
  // branches.
  it("a review grant the owner's deny voids opens no other seat's branch", async () => {
    await execBranch("api6", { "src/api/i.ts": "export const i = 9;" });
    // Control: the deny is in force — denied cannot review anything.
    refusedBy(await h.shim("denied", "review", "seat/exec/api6", "--approve"), "deny.match");
    // Control: a seat with a live gate into main lists the branch.
    expect((await h.sh("gmain", "git ls-remote teamd")).stdout).toContain("refs/heads/seat/exec/api6");
    const d = await h.sh("denied", "git ls-remote teamd; git fetch teamd refs/heads/seat/exec/api6 2>&1 && echo FETCHED || echo REFUSED");
    expect(d.stdout).not.toMatch(/^[0-9a-f]{40}\trefs\/heads\/seat\/exec\//m);
    expect(d.stdout).not.toContain("FETCHED");
  });

  it("odd --into names are refused, move no ref, and leave the daemon serving", async () => {
    await execBranch("api7", { "src/api/j.ts": "export const j = 10;" });
    h.hubGit("tag", "v1", "refs/heads/main");
    const refsBefore = h.hubGit("for-each-ref", "--format=%(refname) %(objectname)");
    const names = [
      "HEAD",
      "refs/tags/v1",
      "v1",
      "refs/remotes/teamd/main",
      "main~1",
      "main^{tree}",
      "main@{0}",
      "seat/exec/../../main",
      "-main",
      "--upload-pack=touch /tmp/x",
      "refs/heads/refs/heads/main",
      "MAIN",
      "m\u0430in", // Cyrillic a
      "main\u200b",
      "main.lock",
      "release/*",
      "x".repeat(5000),
    ];
    const codes: string[] = [];
    for (const into of names) {
      const r = await h.shim("ops", "gate", "seat/exec/api7", "--pass", "--into", into);
      codes.push(`${JSON.stringify(into.slice(0, 30))}: ${r.code} ${(/refused by [a-z.-]+|INTERNAL/.exec(r.stderr) ?? [""])[0]}`);
      expect(r.code, `gate --into ${JSON.stringify(into.slice(0, 40))}: ${r.stdout}${r.stderr}`).not.toBe(0);
    }
    for (const into of ["HEAD", "main~1", "refs/tags/v1", "x".repeat(5000)]) {
      const r = await h.shim("ops", "merge", "seat/exec/api7", "--into", into);
      expect(r.code, `merge --into ${JSON.stringify(into.slice(0, 40))}: ${r.stdout}${r.stderr}`).not.toBe(0);
    }
    console.log(`odd --into answers:\n${codes.join("\n")}`);
    expect(h.hubGit("for-each-ref", "--format=%(refname) %(objectname)")).toBe(refsBefore);
    // Control: the daemon still serves, and a plain destination works.
    const ok = await h.shim("ops", "gate", "seat/exec/api7", "--pass", "--into", "release/1");
    expect(ok.code, ok.stderr).toBe(0);
  }, 90_000);

  // found (pre-existing, robustness): `--into` naming the source branch itself makes
  // summarizeChange's checkRefs throw a plain Error ("cannot merge … into itself",
  // src/effects/git-merge.ts checkRefs) that daemon/seat/trunk.ts change() does not map to a
  // refusal: the seat gets INTERNAL (exit 1), and no refusal is recorded for the attempt.
  it("the source named as its own destination is a recorded refusal, not an internal error", async () => {
    await execBranch("api8", { "src/api/k.ts": "export const k = 11;" });
    const before = (await h.records()).filter((x) => x.type === "refusal" && x.action === "gate").length;
    const r = await h.shim("ops", "gate", "seat/exec/api8", "--pass", "--into", "seat/exec/api8");
    // Safe in the sense that nothing moves:
    expect(r.code).not.toBe(0);
    // Control: the same gate into release/1 is served.
    expect((await h.shim("ops", "gate", "seat/exec/api8", "--pass", "--into", "release/1")).code).toBe(0);
    // A refusal, recorded.
    expect(r.code, r.stdout + r.stderr).toBe(3);
    expect((await h.records()).filter((x) => x.type === "refusal" && x.action === "gate").length).toBe(before + 1);
  });

  it("a deploy's account is the policy's: no act-as → refused; act-as over another account → refused; --as naming another → refused", async () => {
    refusedBy(await h.shim("noas", "deploy", "pub"), "authority.none");
    const other = await h.shim("otheras", "deploy", "pub");
    expect(other.code, other.stdout + other.stderr).toBe(3);
    expect(other.stderr).toMatch(/refused by (scope\.account|authority\.none)/);
    refusedBy(await h.shim("otheras", "deploy", "pub", "--as", "git:other"), "act-as.required");
    // Control: a seat holding act-as over the declared account gets past act-as (to the pass or the credential).
    const control = await h.shim("pubber", "deploy", "pub");
    expect(control.code, control.stdout + control.stderr).toBe(3);
    expect(control.stderr).not.toMatch(/refused by (authority\.none|scope\.account|act-as\.required)/);
  });
});
