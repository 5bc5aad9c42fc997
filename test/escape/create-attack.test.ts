import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { makeRepo } from "../support/repo.js";
import { seatCalls, waitingSeat } from "../support/seat-calls.js";
import { initTeam, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Attacks on create (issue 30; §8 the carve and the runtime, §9 "create (execute)", §10 the
 * create-bound) from inside a real seat, through a real daemon, real repositories and the real
 * ledger. The seat `maker` holds `create: ~`; the owner writes its create-bound on the machine.
 * Each attack tries to make a create reach past what the owner wrote — the roots, the names, the
 * child's powers, the seat and runtime envelope, the start commands, the file's size and shape,
 * links the seat planted, the non-transferability of create, a race, a stop — and each has its
 * control where one makes sense (the same call within the bound lands).
 *
 * What this attack found, each fixed and now held by its test (the comment above each says what it
 * was, with its reproduction — "FOUND, FIXED"):
 * - ESCAPE: a bound with no seat count for a lab put no cap on the child's seats (§8 carve) — and
 *   recursively, a child's seat gave a grandchild seats the child's own slice never had;
 * - ESCAPE: a child's start.env ran a command the bound does not list (BASH_ENV; §10 start commands);
 * - ESCAPE: an owner act taking create away (or lowering the ceiling) while a create was in flight did
 *   not hold — the lock-time re-check read the policy from the call's start;
 * - ESCAPE (a root within the seat's reach): the root swapped for a link — the daemon wrote into and
 *   cloned another repository; a planted .git gitfile — another repository cloned into the hub; the new
 *   team file swapped for a link before its chown — root chowned any host file to the seat's uid. Now a
 *   root must be its own real path, outside TEAMD_HOME, with a .git directory (refused at `create-bounds
 *   set` and again at create), and the chown is on the open file;
 * - weakness: create issued onward (a child's seat held create); an owner's renew of a created team
 *   handed it the runtime the seat wrote (or none); a credential-shaped key was recorded in a refusal and
 *   printed by `teamd log`; a create that failed after its effects was INTERNAL and unrecorded; a create's
 *   request id was not bound by the retry rule (§15).
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = `version: 1
team: proj
declare:
  branches: [main]
  labs: [anthropic, google]
review: { mode: distinct-seat }
ceiling:
  runtime: 2h
  seats: { anthropic: 6, google: 14 }
  capabilities: { read: ~, write: ~ }
leads:
  seat: lead
  envelope:
    read: ~
seats:
  maker:
${waitingSeat("anthropic", "      read: ~\n      write: ~\n      create: ~\n")}  admin:
${waitingSeat("anthropic", "      read: ~\n      grant: ~\n")}  lead:
${waitingSeat("google", "      read: ~\n")}`;

interface ChildSeat {
  readonly lab?: string;
  readonly caps?: string;
  readonly start?: string;
}
const SLEEP = 'command: [sleep, "3600"]';
/** A child team file: one seat per entry (lab anthropic, `read: ~`, waiting in `sleep 3600` unless told), and anything extra at the top. */
const childFile = (team: string, seats: Record<string, ChildSeat>, extraTop = "") =>
  `version: 1\nteam: ${team}\ndeclare:\n  branches: [main]\n  labs: [anthropic, google]\nreview: { mode: distinct-seat }\n${extraTop}seats:\n${Object.entries(
    seats,
  )
    .map(
      ([name, s]) =>
        `  ${name}:\n    lab: ${s.lab ?? "anthropic"}\n    capabilities: { ${s.caps ?? "read: ~"} }\n    start:\n      ${(s.start ?? SLEEP).replace(/\n/g, "\n      ")}\n`,
    )
    .join("")}`;
const one = (team: string, seat: ChildSeat = {}, extraTop = "") => childFile(team, { k1: seat }, extraTop);

interface Created {
  created: boolean;
  team: string;
  started: string[];
  deadline: string | null;
}
interface Status {
  teams: { team: string; createdBy: { parent: string; seat: string } | null; runtime: { leftMs: number } | null }[];
  seats: { team: string; seat: string; lab: string | null; state: string }[];
}

describe.runIf(process.platform === "linux")("create attack: a seat creating a team, from inside it (§8, §9, §10)", () => {
  let h: TeamdHarness;
  let calls: ReturnType<typeof seatCalls>;
  /** Owner repositories a bound may name as roots; `secret` is one no bound names and no seat reads. */
  const r: Record<string, string> = {};
  const children: string[] = [];
  let secretCommit = "";
  let fileNo = 0;

  /**
   * A child file in the seat's /tmp: the bytes the seat would write there itself (put in its tmp
   * folder from the host, which the seat sees as /tmp, so a 300 KiB file needs no argv); its path inside.
   */
  const put = async (text: string | Buffer, seat = "maker") => {
    const name = `child-${++fileNo}.yaml`;
    writeFileSync(join(h.home, "seats/proj", seat, "tmp", name), text, { mode: 0o644 });
    return `/tmp/${name}`;
  };
  const bound = (...flags: string[]) => h.ok(["create-bounds", "set", "maker@proj", ...flags, "--yes"]);
  /** The owner naming a root within the seat's reach (under TEAMD_HOME) is refused: the bound is not written. */
  const boundRefused = async (root: string) => {
    const res = await h.run([
      "create-bounds",
      "set",
      "maker@proj",
      "--teams",
      "1",
      "--root",
      root,
      "--start",
      "sleep 3600",
      "--lab",
      "google:seats=1",
      "--yes",
    ]);
    expect(res.code, res.stdout + res.stderr).not.toBe(0);
    expect(res.stderr).toMatch(/inside TEAMD_HOME|not its own real path/);
  };
  const create = (file: string, root: string) => h.shim("maker", "create", file, "--root", root, "--json");
  const status = () => h.json<Status>(["status", "--json"]);
  const registered = async () => (await status()).teams.map((t) => t.team);
  const hubs = () => readdirSync(join(h.home, "hubs"));
  /** The seat's own repository, as the host names it. */
  const seatRepo = () => join(h.home, "seats/proj/maker/repo");
  const refusedRules = async () => (await calls.log()).filter((x) => x.type === "refusal" && x.action === "team.create").map((x) => x.detail?.rule ?? "");
  /** Every file named teamd.yaml under the test's folder but the owner's own and the roots the creates were allowed to land in. */
  const strayTeamFiles = (allowed: readonly string[]) =>
    execFileSync("find", [h.dir, "-name", "teamd.yaml", "-not", "-path", `${h.home}/*`], { encoding: "utf8" })
      .split("\n")
      .filter((p) => p !== "" && p !== join(h.repo, "teamd.yaml") && !allowed.some((a) => p === join(a, "teamd.yaml")));

  /** A repository whose clone takes a moment (48 MiB of random bytes in one commit). */
  const bigRepo = (name: string) => {
    const dir = makeRepo(h.dir, name, { "README.md": `${name}\n` });
    writeFileSync(join(dir, "blob.bin"), randomBytes(48 * 1024 * 1024));
    const git = (...args: string[]) => execFileSync("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid", ...args]);
    git("add", "blob.bin");
    git("commit", "-qm", "big");
    return dir;
  };
  /**
   * A create of `file` at `root`, with the daemon's `git clone` of the root held (SIGSTOP, by its pid:
   * a child of the daemon this test started) while `during` runs — a slow clone, made deterministic.
   */
  const whileCloning = async (file: string, root: string, during: () => Promise<unknown>) => {
    const pending = create(file, root);
    const cloneOf = () =>
      readdirSync("/proc")
        .filter((p) => /^[0-9]+$/.test(p))
        .find((p) => {
          try {
            const argv = readFileSync(`/proc/${p}/cmdline`, "utf8");
            return argv.startsWith("git") && argv.includes("clone") && argv.includes(root);
          } catch {
            return false;
          }
        });
    let pid: string | undefined;
    for (const end = Date.now() + 15_000; pid === undefined && Date.now() < end;) {
      pid = cloneOf();
      if (pid === undefined) await new Promise((ok) => setTimeout(ok, 2));
    }
    expect(pid, "the daemon's clone of the root was not caught").toBeDefined();
    process.kill(Number(pid), "SIGSTOP");
    try {
      await during();
    } finally {
      process.kill(Number(pid), "SIGCONT");
    }
    return pending;
  };

  beforeAll(async () => {
    h = await initTeam("teamd-create-attack-");
    for (const name of ["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "r16", "r17"])
      r[name] = makeRepo(h.dir, name);
    r.secret = makeRepo(h.dir, "secret", { "SECRET.md": "the owner's private notes\n" });
    secretCommit = execFileSync("git", ["-C", r.secret, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
    // A name for r0 the seat might pass instead of r0: a link to it, and a prefix and a child of it.
    symlinkSync(r.r0 as string, join(h.dir, "r0-link"));
    makeRepo(h.dir, "r0/sub");
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
    calls = seatCalls(h);
  }, 180_000);
  afterAll(async () => {
    for (const t of children) await h?.run(["stop", "--team", t], { timeoutMs: 20_000 }).catch(() => undefined);
    await h?.cleanup();
  }, 120_000);

  it("roots: only a root the bound names, by its exact name — no link, '..', '.', trailing slash, prefix, child, relative path or control character; control: the named root lands", async () => {
    await bound("--teams", "4", "--root", r.r0 as string, "--root", r.r1 as string, "--start", '["sleep","3600"]', "--lab", "anthropic:seats=1");
    const file = await put(one("kid"));
    const odd = [
      join(h.dir, "r0-link"),
      `${r.r0}/`,
      `${r.r0}/.`,
      `${r.r0}/../r0`,
      `${h.dir}//r0`,
      `${r.r0}/sub`,
      (r.r0 as string).slice(0, -1),
      "r0",
      "../r0",
      `${r.r0}\n`,
      `${r.r0}\u202e`,
      r.r2 as string,
      r.secret as string,
      h.repo,
      join(h.home, "hubs"),
      "/",
      "/tmp",
    ];
    for (const root of odd) {
      const res = await create(file, root);
      expect(res.code, `${JSON.stringify(root)}: ${res.stdout}${res.stderr}`).not.toBe(0);
      expect(res.stdout + res.stderr, JSON.stringify(root)).toMatch(/create\.root|invalid|usage/i);
    }
    expect(await registered()).not.toContain("kid");
    expect(strayTeamFiles([])).toEqual([]);
    expect(hubs()).not.toContain("kid.git");
    expect(await refusedRules()).toContain("create.root");

    // Control: the named root. The child's file asks a year of runtime: it still runs down the creator's remainder (§8).
    const control = await put(one("kid", {}, "ceiling:\n  runtime: 8760h\n  seats: { anthropic: 50 }\n"));
    const made = await calls.json<Created>("maker", "create", control, "--root", r.r0 as string);
    children.push("kid");
    expect(made).toMatchObject({ created: true, team: "kid" });
    expect(Date.parse(made.deadline as string) - Date.now()).toBeLessThanOrEqual(2 * 3600_000);
    const kid = (await status()).teams.find((t) => t.team === "kid");
    expect(kid?.createdBy).toEqual({ parent: "proj", seat: "maker" });
    expect(kid?.runtime?.leftMs).toBeLessThanOrEqual(2 * 3600_000);
    expect(strayTeamFiles([r.r0 as string])).toEqual([]);
    // One team per root: the same root again, and a root that is the parent's own repository, are refused.
    await calls.refused("create.root", "maker", "create", await put(one("kid-again")), "--root", r.r0 as string);
  }, 120_000);

  it("names: an existing team, path characters, upper case, a hub's name — refused, nothing made; control: a plain new name lands", async () => {
    await bound("--teams", "4", "--root", r.r1 as string, "--start", '["sleep","3600"]', "--lab", "anthropic:seats=1");
    const names = ["proj", "kid", "../evil", "a/b", "Kid", "kid.git", "-x", "x".repeat(40), "k\u202eid", '"proj"', "proj\n"];
    for (const name of names) {
      const res = await create(await put(one(JSON.stringify(name))), r.r1 as string);
      expect(res.code, `${JSON.stringify(name)}: ${res.stdout}${res.stderr}`).not.toBe(0);
      expect(res.stdout + res.stderr, name).toMatch(/create\.(name|invalid)/);
    }
    expect(existsSync(join(r.r1 as string, "teamd.yaml"))).toBe(false);
    expect(hubs().sort()).toEqual(["kid.git", "proj.git"]);
    // proj's own policy is untouched: its file and its seats.
    expect((await status()).teams.find((t) => t.team === "proj")?.createdBy).toBeNull();
    await calls.json<Created>("maker", "create", await put(one("kid-b")), "--root", r.r1 as string);
    children.push("kid-b");
    expect(hubs()).toContain("kid-b.git");
  }, 120_000);

  // FOUND, FIXED (weakness, §8: the unattended-runtime window is owner-sovereign, and nothing the seat writes
  // may widen a bound): a created team runs to its inherited deadline until the owner renews it; once
  // renewed (`teamd renew --team CHILD`, the owner meaning "give it its time again") its clock is its own
  // file's ceiling.runtime — a number the seat wrote (kid: 8760h) — or, with none written (kid-b), no
  // limit at all (status runtime: null). Reproduce: create a child whose file says
  // `ceiling: { runtime: 8760h }` (or nothing); `teamd renew --team kid` → status shows ~a year left;
  // `teamd renew --team kid-b` → no runtime bound. Safe: a renewed created team gets a window the owner
  // chose (the creator's, the bound's, or one given at renew), never one only the seat wrote, never none.
  it("an owner's renew of a created team does not hand it a runtime window only the seat wrote (or none)", async () => {
    await h.ok(["renew", "--team", "kid"]);
    await h.ok(["renew", "--team", "kid-b"]);
    const teams = (await status()).teams;
    for (const t of ["kid", "kid-b"]) {
      const left = teams.find((x) => x.team === t)?.runtime?.leftMs;
      expect(left, `${t}: ${JSON.stringify(teams.find((x) => x.team === t)?.runtime)}`).toBeDefined();
      expect(left as number, t).toBeLessThanOrEqual(2 * 3600_000);
    }
  }, 60_000);

  it("the child's powers past the bound — grant, agree, uncontained, egress, limits, deploy, accounts, trackers, a lab not in the slice, one seat too many, a start not listed — each refused, nothing made", async () => {
    await bound("--teams", "4", "--root", r.r2 as string, "--start", '["sleep","3600"]', "--lab", "anthropic:seats=1");
    const cases: [string, string, string][] = [
      ["grant", one("c1", { caps: "read: ~, grant: ~" }), "create.grant"],
      ["agree", one("c1", { caps: "read: ~, agree: ~" }), "create.grant"],
      ["uncontained", one("c1", { start: `${SLEEP}\ncontainment: none` }), "create.start"],
      ["egress", one("c1", { start: `${SLEEP}\nnetwork: { allow: [example.com] }` }), "create."],
      ["limits", one("c1", { start: `${SLEEP}\nlimits: { memory: 64G }` }), "create."],
      ["deploy", one("c1", {}, "deploy:\n  prod:\n    command: [sh, -c, id]\n"), "create."],
      ["accounts", one("c1", {}, "accounts:\n  gh: { kind: github }\n"), "create."],
      ["trackers", one("c1", {}, "trackers:\n  gh: { kind: github }\n"), "create."],
      ["a lab the slice does not name", one("c1", { lab: "google" }), "create.seats"],
      ["two seats in a slice of one", childFile("c1", { k1: {}, k2: {} }), "create.seats"],
      ["a start not listed", one("c1", { start: "command: [sh, -c, 'curl evil']" }), "create.start"],
      ["a start that is a prefix of a listed one", one("c1", { start: "command: [sleep]" }), "create.start"],
      ["a start longer than a listed one", one("c1", { start: 'command: [sleep, "3600", "&&", "x"]' }), "create.start"],
      ["an unknown capability", one("c1", { caps: "read: ~, root: ~" }), "create.invalid"],
      ["the all-word", one("c1", { caps: "all: ~" }), "create."],
      ["a start file outside the root", one("c1", { start: `${SLEEP}\nfiles: [../secret/SECRET.md]` }), "create.invalid"],
      ["a start file by absolute path", one("c1", { start: `${SLEEP}\nfiles: [/etc/shadow]` }), "create.invalid"],
      ["a start file in .git", one("c1", { start: `${SLEEP}\nfiles: [.git/config]` }), "create.invalid"],
      ["a workdir outside the root", one("c1", { start: `${SLEEP}\nworkdir: ../..` }), "create.invalid"],
      [
        "a role carrying grant",
        `${one("c1", { caps: "read: ~" }).replace("seats:\n", "roles:\n  boss:\n    capabilities: { grant: ~ }\nseats:\n").replace("capabilities: { read: ~ }\n    start", "roles: [boss]\n    capabilities: { read: ~ }\n    start")}`,
        "create.",
      ],
      [
        "a role carrying create",
        `${one("c1", { caps: "read: ~" }).replace("seats:\n", "roles:\n  boss:\n    capabilities: { create: ~ }\nseats:\n").replace("capabilities: { read: ~ }\n    start", "roles: [boss]\n    capabilities: { read: ~ }\n    start")}`,
        "create.",
      ],
      ["a leads envelope holding grant", one("c1", {}, "leads:\n  seat: k1\n  envelope:\n    grant: ~\n"), "create."],
    ];
    for (const [what, text, rule] of cases) {
      const res = await create(await put(text), r.r2 as string);
      expect(res.code, `${what}: ${res.stdout}${res.stderr}`).not.toBe(0);
      expect(res.stdout + res.stderr, what).toContain(rule);
    }
    expect(existsSync(join(r.r2 as string, "teamd.yaml"))).toBe(false);
    expect(hubs()).not.toContain("c1.git");
    expect(await registered()).not.toContain("c1");
    expect(await refusedRules()).toEqual(expect.arrayContaining(["create.grant", "create.start", "create.seats"]));
  }, 180_000);

  // FOUND, FIXED (weakness, §10 "create is non-transferable — never copied, leased, or issued onward by any
  // holder"; "a new team gives no agent ... create, leads"): the kernel checks a child's seats for grant
  // and agree only (src/kernel/create-bound.ts checkCreate), so a create holder writes `create: ~` into
  // its child's seat — the right to create issued onward in a file the seat wrote, signed as policy in
  // force. Safe: refused (create.grant or a rule of its own).
  it("a child's seat is not given create by its creator (create is never issued onward, §10)", async () => {
    await bound("--teams", "4", "--root", r.r3 as string, "--start", '["sleep","3600"]', "--lab", "anthropic:seats=1");
    const res = await create(await put(one("heir", { caps: "read: ~, create: ~" })), r.r3 as string);
    if (res.code === 0) children.push("heir");
    expect(res.code, res.stdout + res.stderr).not.toBe(0);
    expect(res.stdout + res.stderr).toContain("create.grant");
    expect(await registered()).not.toContain("heir");
    // Control: made without it, heir's seat holds create once the owner applies heir's file with it (the tests below recurse from there).
    const made = await create(await put(one("heir")), r.r3 as string);
    expect(made.code, made.stdout + made.stderr).toBe(0);
    children.push("heir");
    writeFileSync(join(r.r3 as string, "teamd.yaml"), one("heir", { caps: "read: ~, create: ~" }));
    await h.ok(["apply", "--yes"], { cwd: r.r3 as string });
  }, 60_000);

  // FOUND, FIXED (ESCAPE of the seat envelope, §8 "a created team inherits within the creator's envelope ...
  // its per-lab seat allowance is named in the create-bound and atomically debited from the creator's
  // matching per-lab remainder"): a bound that names no --lab slice puts no cap on the child's seats at
  // all (checkCreate skips the per-lab check when the bound names no lab; seatCarve then gives the child
  // no slice and debits nothing; the same for a lab the bound names with a spend and no seat count, e.g.
  // --lab anthropic:spend=10), although the creator's own ceiling caps anthropic at 6 (2 live, 2 carved
  // to kid and kid-b). With --also-start, one create runs 5 more anthropic seats the owner never allowed. Spend has the rule
  // ("a spend ceiling and no slice: refused", create.slice); seats do not. Reproduce:
  //   teamd create-bounds set maker@proj --teams 1 --root R --start 'sleep 3600' --also-start --yes
  //   (in maker) teamd-shim create kid5.yaml --root R   # kid5.yaml: five anthropic seats, sleep 3600
  // Safe: refused (create.slice / create.seats), or the child may run no seat in a lab the creator caps.
  it("a bound with no seat slice does not let the child run seats past the creator's seat envelope (§8)", async () => {
    await bound("--teams", "1", "--root", r.r4 as string, "--start", "sleep 3600", "--also-start");
    const five = childFile("wide", { w1: {}, w2: {}, w3: {}, w4: {}, w5: {} }, "ceiling:\n  seats: { anthropic: 50 }\n");
    const res = await create(await put(five), r.r4 as string);
    if (res.code === 0) children.push("wide");
    // What the machine runs in anthropic for proj and what proj created, against proj's cap (6).
    const deadline = Date.now() + 20_000;
    let live = 0;
    do {
      await new Promise((ok) => setTimeout(ok, 1000));
      const s = await status();
      live = s.seats.filter((x) => (x.team === "proj" || x.team === "wide") && x.lab === "anthropic" && x.state === "running").length;
    } while (res.code === 0 && live <= 6 && Date.now() < deadline);
    expect(live, res.stdout + res.stderr).toBeLessThanOrEqual(6);
    expect(res.code, res.stdout + res.stderr).not.toBe(0);
  }, 60_000);

  // FOUND, FIXED (ESCAPE of the bound's start commands, §10 "which start commands"; §9 start "runs the
  // hash-pinned start command and its full hashed execution context ... environment bindings"): the
  // bound pins a child seat's argv only; the child's file also chooses start.env (and workdir), and the
  // kernel does not look at it. The owner allows `bash -c 'sleep 3600'`; the seat's child sets
  // BASH_ENV='$(...)' and bash runs the seat's command before the owner's. Reproduce:
  //   teamd create-bounds set maker@proj --root R --start '["bash","-c","sleep 3600"]' --also-start --lab anthropic:seats=1 --yes
  //   child seat: start: { command: [bash, -c, "sleep 3600"], env: { BASH_ENV: "$(echo ran > /tmp/not-the-bound)" } }
  // Safe: a child seat's env (like its network and limits) is refused, or the child's seat runs only the listed command.
  it("a child's start env does not run a command the bound does not list (§10 start commands)", async () => {
    await bound("--teams", "1", "--root", r.r5 as string, "--start", '["bash","-c","sleep 3600"]', "--also-start", "--lab", "anthropic:seats=1");
    const start = 'command: [bash, -c, "sleep 3600"]\nenv: { BASH_ENV: "$(echo ran > /tmp/not-the-bound)" }';
    const res = await create(await put(one("envy", { start })), r.r5 as string);
    if (res.code === 0) children.push("envy");
    const marker = join(h.home, "seats/envy/k1/tmp/not-the-bound");
    for (let i = 0; i < 20 && res.code === 0 && !existsSync(marker); i++) await new Promise((ok) => setTimeout(ok, 500));
    expect(existsSync(marker), "the child's seat ran the seat's own command").toBe(false);
    expect(res.code, res.stdout + res.stderr).not.toBe(0);
  }, 60_000);

  // FOUND, FIXED (weakness, §15 "records refused attempts too"; the brief's "the record of the refusal"): a
  // create that fails after its bound passed — here createHub throws on a root with no commit — is not a
  // Refusal: daemon/seat/create-team.ts undoes its effects and rethrows a plain Error, the seat gets
  // "INTERNAL: internal error in the teamd daemon", and nothing is on record. The same path is what the
  // chown race above runs through (each attempt fails at the hub), so those attempts leave no record
  // either. Reproduce: create-bounds set ... --root EMPTY (git init, no commit); teamd-shim create
  // kid.yaml --root EMPTY → INTERNAL, `teamd log --type refusal` unchanged.
  // Safe: a refusal naming the rule (create.root), recorded.
  it("a root the daemon cannot make a hub from (a repository with no commit) is refused and the refusal is on record; nothing left in it", async () => {
    const empty = join(h.dir, "empty");
    execFileSync("git", ["init", "-q", "-b", "main", empty]);
    await bound("--teams", "1", "--root", empty, "--start", "sleep 3600", "--lab", "google:seats=1");
    const before = (await refusedRules()).length;
    const res = await create(await put(one("hollow", { lab: "google" })), empty);
    expect(res.code, res.stdout + res.stderr).not.toBe(0);
    expect(existsSync(join(empty, "teamd.yaml"))).toBe(false);
    expect(hubs()).not.toContain("hollow.git");
    expect((await refusedRules()).length, `${res.stdout}${res.stderr}`).toBeGreaterThan(before);
  }, 60_000);

  it("create is never leased, granted or copied: a lease of create, a grant of create, a seat added like the holder — none holds create; control: the holder still does", async () => {
    await calls.refused("", "maker", "lease", "issue", "admin", "create", "*");
    await calls.refused("", "lead", "lease", "issue", "admin", "create", "*");
    await calls.refused("", "admin", "grant", "admin", "create", "*");
    await calls.refused("", "admin", "grant", "lead", "create", "*");
    const added = await h.shim("admin", "seat", "add", "maker2", "--like", "maker", "--json");
    // Whether the copy is committed or refused, it never holds create.
    const out = join(h.dir, "export.yaml");
    await h.ok(["policy", "export", out, "--team", "proj"]);
    const policy = parseYaml(readFileSync(out, "utf8")) as { seats: Record<string, { capabilities?: Record<string, unknown> }> };
    expect(Object.keys(policy.seats.maker?.capabilities ?? {})).toContain("create");
    for (const [name, seat] of Object.entries(policy.seats))
      if (name !== "maker") expect(Object.keys(seat.capabilities ?? {}), `${name} (${added.stdout}${added.stderr})`).not.toContain("create");
    // The leaseholder, the grantee and the copy cannot create (no bound is theirs, and none holds create).
    await calls.refused("create.not-held", "admin", "create", await put(one("by-admin"), "admin"), "--root", r.r5 as string);
  }, 90_000);

  it("links the seat planted in a root within its reach are not followed: a team-file link is not written through, a start file that is a link is not read", async () => {
    // The owner names a folder of the seat's own repository as a root (a root within the seat's reach).
    const target = join(h.dir, "target.txt");
    writeFileSync(target, "untouched\n");
    const plant = await h.sh("maker", `mkdir -p nest && ln -s ${target} nest/teamd.yaml && ln -s ${target} nest/brief.md && echo ok`);
    expect(plant.code, plant.stderr).toBe(0);
    const nest = join(seatRepo(), "nest");
    await boundRefused(nest);
    await calls.refused("create.", "maker", "create", await put(one("linked", { lab: "google" })), "--root", nest);
    expect(readFileSync(target, "utf8")).toBe("untouched\n");
    await h.sh("maker", "rm nest/teamd.yaml");
    const res = await create(await put(one("linked", { lab: "google", start: `${SLEEP}\nfiles: [brief.md]` })), nest);
    expect(res.code, res.stdout + res.stderr).not.toBe(0);
    expect(res.stdout + res.stderr).toContain("create.");
    expect(readFileSync(target, "utf8")).toBe("untouched\n");
    expect(await registered()).not.toContain("linked");
  }, 90_000);

  // FOUND, FIXED (ESCAPE where a root the owner named lies within the seat's reach, §10 "nothing the seat
  // chooses ... may make the daemon write outside the owner-named root, follow a link the seat planted"):
  // the daemon checks the root by its name only (resolve(root) === root, and the bound's list), then
  // stat()s, writes into and clones it following links. The seat replaces the folder the owner named with
  // a link to another repository — here the owner's private `secret`, which no bound names — and the
  // daemon (root) writes the child's team file into `secret` and clones `secret` into the child's hub.
  // Reproduce:
  //   (in maker) mkdir swap                         # a folder of the seat's own repository
  //   (owner)    teamd create-bounds set maker@proj --root $TEAMD_HOME/seats/proj/maker/repo/swap --start 'sleep 3600' --yes
  //   (in maker) rmdir swap && ln -s /path/to/secret swap && teamd-shim create kid.yaml --root <that root>
  //   → /path/to/secret/teamd.yaml is written, $TEAMD_HOME/hubs/<kid>.git holds secret's commits.
  // Safe: a root a seat can write is refused (at `create-bounds set` or at create), and the daemon opens
  // the root without following a link (O_NOFOLLOW/openat on every component).
  it("a root the seat swapped for a link does not make the daemon write into or copy another repository", async () => {
    expect((await h.sh("maker", "mkdir -p swap && echo ok")).code).toBe(0);
    const swap = join(seatRepo(), "swap");
    await boundRefused(swap);
    const file = await put(one("swapped", { lab: "google" }));
    expect((await h.sh("maker", `rmdir swap && ln -s ${r.secret} swap && echo ok`)).code).toBe(0);
    const res = await create(file, swap);
    if (res.code === 0) children.push("swapped");
    const wrote = existsSync(join(r.secret as string, "teamd.yaml"));
    const hub = join(h.home, "hubs/swapped.git");
    const copied = existsSync(hub) && execFileSync("git", ["--git-dir", hub, "cat-file", "-t", secretCommit], { encoding: "utf8" }).trim() === "commit";
    expect({ wrote, copied }, res.stdout + res.stderr).toEqual({ wrote: false, copied: false });
  }, 90_000);

  // FOUND, FIXED (ESCAPE, same root within the seat's reach): a `.git` gitfile the seat wrote in its own
  // repository makes createHub (run as root with `-c safe.directory=ROOT`) clone whatever repository the
  // gitfile names into the child's hub. Reproduce:
  //   (owner)    teamd create-bounds set maker@proj --root $TEAMD_HOME/seats/proj/maker/repo --start 'sleep 3600' --yes
  //   (in maker) mv .git /tmp/g && echo "gitdir: /path/to/secret/.git" > .git && teamd-shim create kid.yaml --root <that root>
  //   → $TEAMD_HOME/hubs/<kid>.git holds secret's commits.
  // Safe: as above (a root a seat can write is refused), or the hub is made from the root's own .git only.
  it("a .git the seat planted in a root within its reach does not make the daemon copy another repository into the child's hub", async () => {
    await boundRefused(seatRepo());
    const file = await put(one("mirror", { lab: "google" }));
    const plant = await h.sh("maker", `mv .git /tmp/real-git && printf 'gitdir: ${r.secret}/.git\\n' > .git && echo ok`);
    expect(plant.code, plant.stderr).toBe(0);
    const res = await create(file, seatRepo());
    if (res.code === 0) children.push("mirror");
    await h.sh("maker", "rm -f .git && mv /tmp/real-git .git");
    const hub = join(h.home, "hubs/mirror.git");
    const copied = existsSync(hub) && execFileSync("git", ["--git-dir", hub, "cat-file", "-t", secretCommit], { encoding: "utf8" }).trim() === "commit";
    expect(copied, `the child's hub holds the secret repository's commit (${res.stdout}${res.stderr})`).toBe(false);
  }, 90_000);

  // FOUND, FIXED (ESCAPE where a root lies within the seat's reach; src/effects/team-root.ts writeNewInRoot): the
  // child's team file is made with O_EXCL|O_NOFOLLOW, then chown()ed BY ITS PATH to the root's owner (system
  // mode). The seat, which owns the root folder, renames a link over the new file in between, and the daemon
  // (root) chowns the link's target — any host file — to the seat's uid. It lands in 2-3 creates with a
  // node loop in the seat. Reproduce (system mode):
  //   (in maker) mkdir race      (owner) teamd create-bounds set maker@proj --root $TEAMD_HOME/seats/proj/maker/repo/race ... --yes
  //   (in maker) node -e '<loop: when race/teamd.yaml is a plain file, symlink /etc/shadow race/.l; rename race/.l race/teamd.yaml>' &
  //              teamd-shim create kid.yaml --root <that root>   (a few times; each fails at the hub and is not counted)
  //   → /etc/shadow is owned by the seat's uid.
  // Safe: fchown on the open handle (never a path), and a root a seat can write refused.
  it("a root within the seat's reach: the chown of the new team file does not follow a link swapped in after the file is made", async () => {
    const canary = join(h.dir, "canary-owned");
    writeFileSync(canary, "root's\n", { mode: 0o600 });
    expect((await h.sh("maker", "mkdir -p race && echo ok")).code).toBe(0);
    const race = join(seatRepo(), "race");
    await boundRefused(race);
    // A long file (a comment pads it) keeps the daemon's write, between its open and its chown, a little longer.
    const file = await put(`# ${"pad ".repeat(60_000)}\n${one("racer", { lab: "google" })}`);
    // The racer: whenever race/teamd.yaml is a plain file, rename a link to the canary over it — until told to stop (60 s at most).
    const script = `const fs=require("fs");const end=Date.now()+60000;let n=0;while(Date.now()<end&&!fs.existsSync("/tmp/stop-racer")){try{const s=fs.lstatSync("race/teamd.yaml");if(!s.isSymbolicLink()){try{fs.symlinkSync(${JSON.stringify(canary)},"race/.l")}catch{}fs.renameSync("race/.l","race/teamd.yaml");n++}}catch{}}console.log("swaps",n)`;
    const racer = h.sh("maker", `node -e '${script}'`);
    await new Promise((ok) => setTimeout(ok, 1500));
    let tries = 0;
    try {
      for (; tries < 5 && statSync(canary).uid === 0; tries++) await create(file, race);
    } finally {
      writeFileSync(join(h.home, "seats/proj/maker/tmp/stop-racer"), "");
    }
    const raced = await racer;
    expect(statSync(canary).uid, `after ${tries} creates; racer: ${raced.stdout}${raced.stderr}`).toBe(0);
    expect(readFileSync(canary, "utf8")).toBe("root's\n");
  }, 120_000);

  it("huge, malformed and hostile YAML is refused quickly and the daemon answers after it; control: a plain file still lands", async () => {
    await bound("--teams", "2", "--root", r.r6 as string, "--start", "sleep 3600", "--lab", "google:seats=1");
    const laughs = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (let i = 1; i < 12; i++)
      laughs.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(", ")}]`,
      );
    const hostile: [string, string | Buffer][] = [
      ["over 256 KiB", `${one("big", { lab: "google" })}\n# ${"x".repeat(300 * 1024)}\n`],
      ["alias bomb", `${laughs.join("\n")}\n${one("bomb", { lab: "google" })}`],
      ["deep nesting", `${"[".repeat(100_000)}${"]".repeat(100_000)}`],
      ["deep maps", `${Array.from({ length: 3000 }, (_, i) => `${" ".repeat(i)}k:`).join("\n")} 1\n`],
      ["not UTF-8", Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x80, 0x81])],
      ["empty", ""],
      ["a list", "- 1\n- 2\n"],
      ["a prototype key", `__proto__: { team: evil }\n${one("proto", { lab: "google" })}`],
      ["two documents", `${one("doc1", { lab: "google" })}---\n${one("doc2", { lab: "google" })}`],
      ["a duplicate team key", `${one("dup1", { lab: "google" })}team: proj\n`],
      ["many seats", childFile("many", Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`s${i}`, { lab: "google" }])))],
    ];
    for (const [what, text] of hostile) {
      const t0 = Date.now();
      const res = await create(await put(text), r.r6 as string);
      expect(res.code, `${what}: ${res.stdout}${res.stderr.slice(0, 400)}`).not.toBe(0);
      expect(Date.now() - t0, what).toBeLessThan(20_000);
      expect(res.stdout.length + res.stderr.length, what).toBeLessThan(8192);
    }
    expect(existsSync(join(r.r6 as string, "teamd.yaml"))).toBe(false);
    expect(await registered()).not.toEqual(expect.arrayContaining(["big", "bomb", "evil", "proto", "doc1", "doc2", "dup1", "many"]));
    await calls.json<Created>("maker", "create", await put(one("calm", { lab: "google" })), "--root", r.r6 as string);
    children.push("calm");
  }, 240_000);

  it("what the owner sees carries no seat-chosen control or bidi characters (log, notices, status)", async () => {
    await bound("--teams", "2", "--root", r.r7 as string, "--start", "sleep 3600", "--lab", "google:seats=1");
    const evil = "\u001b[2J\u001b]0;owned\u0007\u202eexe.txt\u2066";
    const q = JSON.stringify(evil);
    const attempts = [
      one("ctl", { lab: "google", start: `command: [sleep, ${q}]` }),
      `${one("ctl", { lab: "google" })}${q}: 1\n`,
      one("ctl", { lab: "google", caps: `read: ~, ${q}: ~` }),
      one("ctl", { lab: q }),
      one("ctl", { lab: "google", start: `${SLEEP}\nfiles: [${q}]` }),
      one("ctl", { lab: "google", start: `${SLEEP}\nenv: { ${q}: x }` }),
      one("ctl", { lab: "google", start: `${SLEEP}\nworkdir: ${q}` }),
    ];
    for (const text of attempts) {
      const res = await create(await put(text), r.r7 as string);
      expect(res.code, res.stdout + res.stderr).not.toBe(0);
    }
    // A root the seat names with bidi and C1 control characters (the daemon's root check refuses C0 only).
    const oddRoot = await create(await put(one("ctl", { lab: "google" })), `${r.r7}/\u009b2J\u202eexe\u0085x`);
    expect(oddRoot.code).not.toBe(0);
    expect(existsSync(join(r.r7 as string, "teamd.yaml"))).toBe(false);
    // And a child that lands with the same text where the kernel takes any text (an env value, a comment).
    const landed = await create(await put(`# ${evil}\n${one("ctl", { lab: "google" })}`), r.r7 as string);
    expect(landed.code, landed.stdout + landed.stderr).toBe(0);
    children.push("ctl");
    const seen = {
      log: await h.ok(["log", "-n", "60"]),
      notices: await h.ok(["notices"]),
      status: await h.ok(["status"]),
      bounds: await h.ok(["create-bounds", "show"]),
    };
    for (const [where, text] of Object.entries(seen)) expect(text, where).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
  }, 120_000);

  // FOUND, FIXED (weakness, "nothing the seat chooses may make the daemon ... print/record a secret"; the
  // loader's own words: "teamd does not ask for, store or print the labs' keys"): a credential-shaped
  // string is refused (secret.shape), but where it is a KEY — an env name (`env: { ghp_…: x }`) or a top-level
  // key (values, scopes and lines YAML cannot parse do not leak) — the refusal's reason names it (`seats.k1.start.env.ghp_…: a
  // value has a known credential shape`) and the daemon records that reason: the token is in the ledger and
  // `teamd log` prints it to the owner. Reproduce: a child file with `env: { <token>: x }`; teamd-shim create
  // … → refused create.invalid; `teamd log --type refusal` shows the token. Safe: the reason names the place
  // without the key's text (or with it redacted), as for a value.
  it("a credential-shaped string in the child's file is refused and never recorded or shown to the owner: in a value, a key, an unknown key, a line YAML cannot parse", async () => {
    await bound("--teams", "1", "--root", r.r17 as string, "--start", "sleep 3600", "--lab", "google:seats=1");
    // Built at run time: a fake token of GitHub's shape (not a credential).
    const token = `${"gh"}p_${"Zq9".repeat(12)}`;
    const attempts: [string, string][] = [
      ["an env value", one("sec", { lab: "google", start: `${SLEEP}\nenv: { NOTE: ${token} }` })],
      ["a scope value", one("sec", { lab: "google", caps: `read: { path: ${token} }` })],
      ["an env name", one("sec", { lab: "google", start: `${SLEEP}\nenv: { ${token}: x }` })],
      ["a top-level key", `${one("sec", { lab: "google" })}${token}: 1\n`],
      ["a flow map YAML cannot parse", `version: 1\nteam: sec\nseats: { ${token}: [ }\n`],
      ["a line YAML cannot parse", `version: 1\nteam: sec\n  ${token}\n bad: : :\n`],
    ];
    const leaked: string[] = [];
    for (const [what, text] of attempts) {
      const res = await create(await put(text), r.r17 as string);
      expect(res.code, res.stdout + res.stderr).not.toBe(0);
      // (What the seat is told back is its own text; what is recorded is the owner's to see.)
      const last = (await h.records("--type", "refusal", "-n", "1"))[0];
      if (JSON.stringify(last).includes(token)) leaked.push(what);
    }
    expect(await registered()).not.toContain("sec");
    const shown = [await h.ok(["log", "-n", "40"]), await h.ok(["notices"]), await h.ok(["status"])].join("\n");
    expect({ leaked, shown: shown.includes(token) }).toEqual({ leaked: [], shown: false });
  }, 90_000);

  it("creates at once cannot spend one count, one root or one slice: four racing over three roots, a slice that fits once — one lands, one file, one hub", async () => {
    // The slice is more than half of what proj has left in google, so one fits and two do not.
    const left = (await h.json<{ teams: { team: string; envelope: { lab: string; seats: { left: number } | null }[] }[] }>(["status", "--json"])).teams
      .find((t) => t.team === "proj")
      ?.envelope.find((e) => e.lab === "google")?.seats?.left as number;
    expect(left).toBeGreaterThanOrEqual(5);
    const slice = Math.ceil((left + 1) / 2);
    await bound(
      "--teams",
      "3",
      "--root",
      r.r8 as string,
      "--root",
      r.r9 as string,
      "--root",
      r.r11 as string,
      "--start",
      "sleep 3600",
      "--lab",
      `google:seats=${slice}`,
    );
    const names = ["ra", "rb", "rc", "rd"];
    const files = await Promise.all(names.map((n) => put(one(n, { lab: "google" }))));
    const roots = [r.r8, r.r8, r.r9, r.r11] as string[];
    const results = await Promise.all(files.map((f, i) => create(f, roots[i] as string)));
    const landed = results.filter((x) => x.code === 0).map((x) => (JSON.parse(x.stdout) as Created).team);
    children.push(...landed);
    expect(landed, results.map((x) => x.stderr).join("\n")).toHaveLength(1);
    const files2 = roots.filter((root, i) => roots.indexOf(root) === i && existsSync(join(root, "teamd.yaml")));
    expect(files2).toHaveLength(1);
    for (const n of names) expect(hubs().includes(`${n}.git`), n).toBe(landed.includes(n));
    expect(results.filter((x) => x.code !== 0).map((x) => x.stdout + x.stderr)).toEqual(Array(3).fill(expect.stringMatching(/create\.(slice|root)/)));
  }, 120_000);

  it("a request id replayed: identical copies at once make one team, one file, one hub, one carve; a byte-identical retry after it makes no second team", async () => {
    await bound("--teams", "3", "--root", r.r12 as string, "--root", r.r13 as string, "--start", "sleep 3600", "--lab", "google:seats=1");
    const maker = createRpcClient(ShimService, h.seatSocket("maker"));
    try {
      const teamFile = new TextEncoder().encode(one("replay-a", { lab: "google" }));
      const ask = () => maker.createTeam({ requestId: "create-replay-1", root: r.r12 as string, teamFile });
      const copies = await Promise.allSettled([ask(), ask(), ask()]);
      const landed = copies.filter((c) => c.status === "fulfilled");
      expect(landed.length, JSON.stringify(copies.map((c) => (c.status === "rejected" ? String(c.reason) : "ok")))).toBeGreaterThanOrEqual(1);
      children.push("replay-a");
      await ask().catch(() => undefined);
      const made = (await calls.log()).filter((x) => x.type === "team" && x.action === "team.create" && JSON.stringify(x).includes("replay-a"));
      expect(made).toHaveLength(1);
    } finally {
      maker.close();
    }
  }, 90_000);

  // FOUND, FIXED (weakness, §15 "one retry rule": a request id this seat already used is answered from its
  // records when the bytes are the same, refused when they are not): a create's TEAM record is not indexed
  // as a recorded request (src/ledger/view.ts notes GRANT/AGREEMENT/LEASE/REVOCATION only), so the retry
  // check in pipeline.record never sees it: the same request id with other bytes — another child at another
  // root — is decided anew and lands a second team; and a byte-identical retry is refused (create.root: the
  // file is there) rather than answered with the first create's records. The bound still holds (count,
  // slice), so this is not an escape of it. Reproduce (raw gRPC on the seat's socket):
  //   createTeam({requestId: "X", root: R1, teamFile: A}) → created; createTeam({requestId: "X", root: R2, teamFile: B}) → created too.
  // Safe: the second is refused request.replay-mismatch and leaves nothing.
  it("a create's request id used again with other bytes is refused (request.replay-mismatch), nothing made", async () => {
    const maker = createRpcClient(ShimService, h.seatSocket("maker"));
    try {
      const other = new TextEncoder().encode(one("replay-b", { lab: "google" }));
      const res = await maker.createTeam({ requestId: "create-replay-1", root: r.r13 as string, teamFile: other }).then(
        () => "created",
        (e: { rule?: string }) => e.rule ?? "error",
      );
      if (res === "created") children.push("replay-b");
      expect(res).toBe("request.replay-mismatch");
      expect(existsSync(join(r.r13 as string, "teamd.yaml"))).toBe(false);
      expect(hubs()).not.toContain("replay-b.git");
    } finally {
      maker.close();
    }
  }, 60_000);

  it("a child that creates further stays inside its own slice: its creator's bound on the grandchild cannot carve seats its own slice never had (§8 recursive)", async () => {
    // heir (made above, slice anthropic:1, holding create) runs its one seat; the owner writes heir/k1 a bound.
    await h.ok(["start", "--team", "heir"]);
    const inHeir = async (text: string, root: string) => {
      const name = `grand-${++fileNo}.yaml`;
      writeFileSync(join(h.home, "seats/heir/k1/tmp", name), text, { mode: 0o644 });
      return h.run(["exec", "k1@heir", "--", "teamd-shim", "create", `/tmp/${name}`, "--root", root, "--json"]);
    };
    await h.ok(["create-bounds", "set", "k1@heir", "--teams", "2", "--root", r.r14 as string, "--start", "sleep 3600", "--lab", "google:seats=1", "--yes"]);
    const google = await inHeir(one("grand-g", { lab: "google" }), r.r14 as string);
    expect(google.code, google.stdout + google.stderr).not.toBe(0);
    expect(google.stdout + google.stderr).toContain("create.slice");
    await h.ok(["create-bounds", "set", "k1@heir", "--teams", "2", "--root", r.r14 as string, "--start", "sleep 3600", "--lab", "anthropic:seats=1", "--yes"]);
    const anthropic = await inHeir(one("grand-a"), r.r14 as string);
    expect(anthropic.code, anthropic.stdout + anthropic.stderr).not.toBe(0);
    expect(anthropic.stdout + anthropic.stderr).toContain("create.slice");
    expect(existsSync(join(r.r14 as string, "teamd.yaml"))).toBe(false);
    expect(await registered()).not.toEqual(expect.arrayContaining(["grand-g", "grand-a"]));
  }, 120_000);

  // FOUND, FIXED (ESCAPE, recursion past its own bound — the same hole as the seat-envelope finding above):
  // heir's own slice is one anthropic seat (live); a bound the owner writes for heir's seat with no seat
  // count lets heir's seat create a grandchild of three anthropic seats, which heir's slice never had.
  // Reproduce: (heir made with create: ~ and slice anthropic:seats=1, started) teamd create-bounds set
  // k1@heir --root R --start 'sleep 3600' --yes; (in k1@heir) teamd-shim create g.yaml --root R (three
  // anthropic seats) → created. Safe: refused (create.slice): a child carves only from its own slice.
  it("a child that creates further cannot give a grandchild seats its own slice never had, by a bound naming no seat count", async () => {
    try {
      const name = `grand-${++fileNo}.yaml`;
      writeFileSync(join(h.home, "seats/heir/k1/tmp", name), childFile("grand-w", { g1: {}, g2: {}, g3: {} }), { mode: 0o644 });
      await h.ok(["create-bounds", "set", "k1@heir", "--teams", "1", "--root", r.r14 as string, "--start", "sleep 3600", "--yes"]);
      const res = await h.run(["exec", "k1@heir", "--", "teamd-shim", "create", `/tmp/${name}`, "--root", r.r14 as string, "--json"]);
      if (res.code === 0) children.push("grand-w");
      expect(res.code, res.stdout + res.stderr).not.toBe(0);
      expect(await registered()).not.toContain("grand-w");
    } finally {
      await h.ok(["stop", "--team", "heir"]);
    }
  }, 90_000);

  it("a bound cannot be written ahead for a team not yet registered (a child taking that name would hold it)", async () => {
    const set = await h.run(["create-bounds", "set", "k1@ghost", "--teams", "5", "--root", r.r15 as string, "--start", "sleep 3600", "--yes"]);
    expect(set.code, set.stdout + set.stderr).not.toBe(0);
    expect(set.stderr).toContain("team.unknown");
    await bound("--teams", "1", "--root", r.r16 as string, "--start", "sleep 3600", "--lab", "google:seats=1");
    expect(await h.ok(["create-bounds", "show"])).not.toContain("ghost");
  }, 60_000);

  // FOUND, FIXED (ESCAPE of the owner's bound, a race; §10 "bounded by what the giver wrote", §8 owner-sovereign):
  // daemon/seat/create-team.ts decides again under the lock "over the records as they stand now", but
  // facts() there reads ctx.policy — the creator's policy read at the call's start, before the file
  // write and the hub's clone. An owner apply that takes `create: ~` from the seat (or lowers its
  // ceiling's seats or runtime) while the clone runs does not hold: the create lands after the owner's
  // act, against the policy the owner replaced. The window is the clone of the owner's root (seconds
  // for a large repository); the test widens it deterministically by SIGSTOPping the daemon's git on
  // the root (by pid) while the owner applies. Reproduce: a bound on a large root; the seat runs
  // create; meanwhile the owner applies a file without maker's `create: ~` → the create still lands.
  // Safe: the lock-time check reads the policy in force under the lock (policyInForce), refuses
  // create.not-held and undoes its file and hub.
  it("an owner act taking create away while a create is in flight holds: the create, decided again under the lock, reads the policy in force then", async () => {
    const big = bigRepo("big");
    await bound("--teams", "1", "--root", big, "--start", "sleep 3600", "--lab", "google:seats=1");
    const res = await whileCloning(await put(one("inflight", { lab: "google" })), big, async () => {
      writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE.replace("      create: ~\n", ""));
      await h.ok(["apply", "--yes", "--keep-delegated"]);
    });
    if (res.code === 0) children.push("inflight");
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes", "--keep-delegated"]);
    expect(res.code, `maker no longer held create when the create was recorded: ${res.stdout}${res.stderr}`).not.toBe(0);
    expect(await registered()).not.toContain("inflight");
    expect(existsSync(join(big, "teamd.yaml"))).toBe(false);
  }, 120_000);

  it("a team stop and the machine stop hold against a create in flight: decided under the lock after the stop, refused and recorded, its file and hub undone", async () => {
    const root = bigRepo("big2");
    await bound("--teams", "2", "--root", root, "--start", "sleep 3600", "--lab", "google:seats=1");
    const settled = async (team: string, before: number) => {
      // The seat's call ends with the seat; the daemon's handler finishes on its own: wait for its refusal.
      for (let i = 0; i < 40 && (await refusedRules()).length === before; i++) await new Promise((ok) => setTimeout(ok, 250));
      expect((await refusedRules()).length, `no refusal recorded for ${team}`).toBeGreaterThan(before);
      expect(await registered()).not.toContain(team);
      expect(existsSync(join(root, "teamd.yaml"))).toBe(false);
      expect(hubs()).not.toContain(`${team}.git`);
    };
    let before = (await refusedRules()).length;
    await whileCloning(await put(one("late", { lab: "google" })), root, () => h.ok(["stop", "--team", "proj"]));
    await settled("late", before);
    // Stopped, the seat cannot ask at all.
    expect((await h.shim("maker", "whoami")).code).not.toBe(0);
    await h.ok(["resume", "--team", "proj"]);
    await h.ok(["start", "maker"]);
    before = (await refusedRules()).length;
    await whileCloning(await put(one("later", { lab: "google" })), root, () => h.ok(["stop", "--all"]));
    await settled("later", before);
    await h.ok(["resume"]);
  }, 180_000);
});
