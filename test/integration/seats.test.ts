import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, TEAMD } from "../support/programs.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { createHarness, type TeamdHarness } from "../support/teamd-harness.js";
import { processesInNamespace, seatNamespace } from "../sandbox/fixture/real-seat.js";
import { waitFor } from "../support/wait.js";

/**
 * The seat lifecycle end to end (issue 7): a real daemon, a real repository initialised and
 * applied through the CLI, real bubblewrap. As root the daemon is in system mode and seats
 * run as the unprivileged `teamd-seat` user (created here when missing); as anyone else, in
 * user mode as that user. Every seat started here is stopped, and the test checks that
 * nothing is left: no process in the seat's pid namespace, no socket, no registry file, no
 * tmp, no mount.
 */
const asRoot = process.getuid?.() === 0;
const seatUser = asRoot ? ensureSeatUser() : { uid: process.getuid?.() ?? -1 };

const TEAM_FILE = teamFile(`  scout:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
      env:
        SEAT_NOTE: "scouting"
        GIT_AUTHOR_NAME: "Scout Override"
  broken:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
  narrow:
    lab: anthropic
    capabilities:
      read: { path: docs/ }
    start:
      command: [sleep, "3600"]
  idle:
    lab: anthropic
    roles: [observer]
`);

/** A seat written to the file on disk after the apply: never in force. */
const LATE_SEAT = `  late:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
`;

interface Json {
  [key: string]: unknown;
}

describe.runIf(process.platform === "linux")("seats: start, exec, stop through a real daemon", () => {
  let h: TeamdHarness;
  let socketDir: string;

  const refusal = (args: string[]) => h.json<Json>([...args, "--json"], { code: 3 });
  const status = () => h.json<{ mode: string; seats: Array<Json & { seat: string; state: string; initPid: number; uid: number }> }>(["status", "--json"]);

  beforeAll(async () => {
    // As root the seat user reaches its folders under TEAMD_HOME through the harness's folder: traverse only.
    h = await createHarness("teamd-seats-", { files: { "README.md": "hello\n", "GUIDE.md": "guide\n" } });
    execFileSync("git", ["branch", "other"], { cwd: h.repo });
    socketDir = asRoot ? join(h.home, "seat-sockets") : join(h.home, "run/seats");
    await h.startDaemon({ env: { TEAMD_TEST_FAIL_AT: "plan:broken" } });
    await h.ok(["init", "--yes", "--json"]);
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("refuses to start a seat before any policy is applied", async () => {
    expect(await refusal(["start", "scout@proj"])).toMatchObject({ rule: "policy.unapplied" });
  });

  it("starts a seat from the applied policy; status shows it running as the seat user", async () => {
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    const applied = await h.run(["apply", "--yes"]);
    expect(applied.code, applied.stderr).toBe(0);
    const started = await h.run(["start", "scout", "--json"]);
    expect(started.code, started.stderr + h.daemon?.stderr()).toBe(0);
    expect(JSON.parse(started.stdout)).toMatchObject({ started: [{ team: "proj", seat: "scout", state: "running" }] });
    const s = await status();
    expect(s.mode).toBe(asRoot ? "system" : "user");
    const scout = s.seats.find((x) => x.seat === "scout");
    expect(scout).toMatchObject({ team: "proj", state: "running", limits: "none" });
    // As root a host uid of the seat's own, from teamd-seat's subordinate range (inside it is teamd-seat); else the daemon's.
    if (asRoot) expect(scout?.uid).toBeGreaterThanOrEqual(0x7000_0000);
    else expect(scout?.uid).toBe(seatUser.uid);
    expect(scout?.initPid).toBeGreaterThan(1);
    expect(await refusal(["start", "scout@proj"])).toMatchObject({ rule: "seat.running" });
  });

  it("answers the seat's identity to teamd-shim inside it, on /run/teamd/shim.sock", async () => {
    const who = await h.run(["exec", "scout@proj", "--", "teamd-shim", "whoami", "--json"]);
    expect(who.code, who.stderr).toBe(0);
    expect(JSON.parse(who.stdout)).toMatchObject({ seat: "scout", team: "proj" });
    const env = await h.run(["exec", "scout", "--", "sh", "-c", "echo $TEAMD_SOCKET $SEAT_NOTE $(id -u); ls /run/teamd"]);
    expect(env.code, env.stderr).toBe(0);
    // The shim, its lazy part and the remote helper's front (scripts/build-shim.ts), the socket,
    // the folder of the shim's names: nothing else of teamd's.
    expect(env.stdout).toBe(`/run/teamd/shim.sock scouting ${seatUser.uid}\nbin\ngit-remote-teamd\nshim\nshim.lazy\nshim.sock\n`);
  });

  it("refuses and records an owner act arriving on the seat's socket, as that seat's attempt", async () => {
    const socket = (await status()).seats.find((x) => x.seat === "scout")?.socket as string;
    const result = await h.run(["status", "--json", "--socket", socket]);
    expect(result.code).toBe(3);
    expect(JSON.parse(result.stdout)).toMatchObject({ rule: "channel.control-on-seat" });
    const log = await h.run(["log", "--json", "--type", "refusal"]);
    const last = log.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Json)
      .at(-1);
    expect(last).toMatchObject({ type: "refusal", actor: "seat:proj/scout", action: "control.Status", result: "channel.control-on-seat" });
  });

  it("gives the seat a clone of trunk only, with its branch under seat/<name>/ and only the teamd remote", async () => {
    const refs = await h.run(["exec", "scout", "--", "git", "for-each-ref", "--format=%(refname)"]);
    expect(refs.code, refs.stderr).toBe(0);
    expect(refs.stdout).toBe("refs/heads/seat/scout/main\n");
    const remotes = await h.run(["exec", "scout", "--", "git", "remote"]);
    expect(remotes.stdout).toBe("teamd\n");
    const files = await h.run(["exec", "scout", "--", "ls"]);
    expect(files.stdout).toBe("GUIDE.md\nREADME.md\n");
  });

  it("binds none of teamd's own code, the hub, the ledger or the owner's repository into the seat", async () => {
    const hub = join(h.home, "hubs/proj.git");
    for (const path of [
      join(ROOT, "dist/daemon/main.js"),
      join(ROOT, "node_modules"),
      hub,
      join(h.home, "ledger"),
      join(h.home, "keys"),
      join(h.repo, ".git"),
      join(h.repo, "teamd.yaml"),
    ]) {
      expect(existsSync(path)).toBe(true); // control: it is there on the host
      const probe = await h.run(["exec", "scout", "--", "sh", "-c", `test -e '${path}' && echo VISIBLE || echo absent`]);
      expect(probe.stdout, path).toBe("absent\n");
    }
  });

  it("returns the command's exit code and records the exec as an owner act", async () => {
    const failed = await h.run(["exec", "scout", "--", "sh", "-c", "echo out; echo err >&2; exit 7"]);
    expect(failed).toMatchObject({ code: 7, stdout: "out\n", stderr: "err\n" });
    const log = await h.run(["log", "--json"]);
    const records = log.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Json);
    expect(records.filter((r) => r.action === "seat.exec").length).toBeGreaterThanOrEqual(5);
    expect(records.filter((r) => r.type === "seat_start").length).toBe(1);
  });

  it("exec for real use: -i passes stdin, flags before or after the seat, --timeout bounds it, 0 is no limit, a usage error exits 2", async () => {
    const piped = await h.run(["exec", "-i", "scout", "--", "sh", "-c", "read key; echo got:$key"], { input: "SECRET-ISH\n" });
    expect(piped).toMatchObject({ code: 0, stdout: "got:SECRET-ISH\n" });
    // A reader that closes early ends teamd quietly: no unhandled EPIPE (it crashed before).
    const piped2 = spawnSync("sh", ["-c", `'${process.execPath}' '${TEAMD}' exec scout@proj -- sh -c 'yes teamd | head -c 4000000' | head -c 10 >/dev/null`], {
      env: { ...process.env, TEAMD_HOME: h.home, HOME: h.dir },
      cwd: h.repo,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(piped2.status).toBe(0);
    expect(piped2.stderr).not.toMatch(/EPIPE|Unhandled|at .*\.js:/);
    // Without -i the command's stdin is empty, not ours.
    expect((await h.run(["exec", "scout", "--", "sh", "-c", "cat; echo end"], { input: "unseen\n" })).stdout).toBe("end\n");
    // The documented form: the flag after the seat name (it was run as the command).
    const timed = await h.run(["exec", "scout", "--timeout", "2", "--", "sleep", "5"]);
    expect(timed.code, timed.stderr).not.toBe(0);
    expect(timed.stderr).toMatch(/killed after 2 s/);
    const before = await h.run(["exec", "--timeout", "0", "scout@proj", "--", "sh", "-c", "sleep 1; echo slept"]);
    expect(before).toMatchObject({ code: 0, stdout: "slept\n" });
    for (const bad of [
      ["exec", "scout", "--timeout", "soon", "--", "true"],
      ["exec", "scout"],
      ["exec", "Bad_Name", "--", "true"],
    ]) {
      const r = await h.run(bad);
      expect(r.code, `${bad.join(" ")}: ${r.stderr}`).toBe(2);
    }
  });

  it("gives a seat a git identity and TERM by default, beneath what its team file declares and what the seat sets itself", async () => {
    const commit = await h.exec("scout", ["sh", "-c", 'git commit -q --allow-empty -m "first" && git log -1 --format="%an|%cn <%ce>" && echo "$TERM"']);
    expect(commit.code, commit.stderr).toBe(0);
    // The author is the team file's (start.env wins); the committer is teamd's default.
    expect(commit.stdout).toBe("Scout Override|scout (teamd seat, team proj) <scout@proj.teamd.invalid>\nxterm-256color\n");
    // The seat's own choice wins over teamd's default (a `git -c`, as a repository config would).
    const own = await h.exec("scout", [
      "sh",
      "-c",
      'git -c user.name=Agent -c user.email=a@b commit -q --allow-empty -m "own" && git log -1 --format="%cn <%ce>"',
    ]);
    expect(own.stdout).toBe("Agent <a@b>\n");
  });

  it("a login shell keeps the seat's PATH (bash -l, sh -l: Codex runs each command in one): teamd-shim and git's remote helper are found", async () => {
    for (const shell of ["bash", "sh"]) {
      const r = await h.exec("scout", [shell, "-lc", 'command -v teamd-shim; command -v git-remote-teamd; echo "$PATH"']);
      expect(r.code, `${shell}: ${r.stderr}`).toBe(0);
      const [shim, helper, path] = r.stdout.trim().split("\n");
      expect([shim, helper]).toEqual(["/run/teamd/bin/teamd-shim", "/run/teamd/bin/git-remote-teamd"]);
      // As the seat was started: the system's folders, teamd's, then the seat's own ~/.local/bin last.
      expect(path).toBe(`${(await h.exec("scout", ["sh", "-c", 'echo "$PATH"'])).stdout.trim()}`);
      expect(path).toMatch(/:\/run\/teamd\/bin:[^:]*\/home\/\.local\/bin$/);
    }
  });

  it("exec sees the running seat's /tmp: one /tmp per run, not one per launch", async () => {
    expect((await h.exec("scout", ["sh", "-c", "echo from-one > /tmp/shared-note"])).code).toBe(0);
    const seen = await h.exec("scout", ["cat", "/tmp/shared-note"]);
    expect(seen).toMatchObject({ code: 0, stdout: "from-one\n" });
    // And what the seat's own command wrote: its init's /tmp is the same folder.
    const tmp = join(h.home, "seats", "proj", "scout", "tmp", "shared-note");
    expect(existsSync(tmp)).toBe(true);
  });

  it("an exec whose record cannot be made does not run: nothing of it happens in the seat (the record and the sandbox's setup overlap)", async () => {
    const mark = join(h.home, "seats", "proj", "scout", "tmp", "unrecorded-exec");
    h.ledgerAway();
    try {
      const refused = await h.run(["exec", "scout", "--", "sh", "-c", "echo ran > /tmp/unrecorded-exec"]);
      expect(refused.code, refused.stderr).toBe(3);
      expect(refused.stderr).toMatch(/ledger\.unavailable/);
    } finally {
      h.ledgerBack();
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(existsSync(mark)).toBe(false);
    // Control: with the store back, the same exec opens it again (no seat act or resume needed), runs and is recorded.
    expect(await waitFor(async () => (await h.run(["exec", "scout", "--", "sh", "-c", "echo ran > /tmp/unrecorded-exec"])).code === 0, 10_000)).toBe(true);
    expect(existsSync(mark)).toBe(true);
  });

  it("starts a seat whose read scope is bounded on a filtered history; refuses one without a start and one not in the applied policy", async () => {
    const started = await h.run(["start", "narrow@proj"]);
    expect(started.code, started.stderr).toBe(0);
    // It may read docs/ only, and trunk has no docs/: its repository holds no file at all.
    const files = await h.run(["exec", "narrow", "--", "git", "ls-tree", "-r", "HEAD"]);
    expect(files).toMatchObject({ code: 0, stdout: "" });
    expect((await h.run(["stop", "narrow@proj"])).code).toBe(0);
    expect(await refusal(["start", "idle@proj"])).toMatchObject({ rule: "seat.no-start" });
    // On disk but not applied: never in force.
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE + LATE_SEAT);
    expect(await refusal(["start", "late@proj"])).toMatchObject({ rule: "seat.unknown" });
  });

  it("unwinds a start that fails after its socket and folders were made", async () => {
    const result = await h.run(["start", "broken@proj"]);
    expect(result.code).not.toBe(0);
    expect(h.daemon?.stderr()).toMatch(/injected failure at plan/);
    expect(existsSync(join(h.home, "seats/proj/broken"))).toBe(false);
    expect(existsSync(join(socketDir, "proj.broken.sock"))).toBe(false);
    expect(readdirSync(socketDir).sort()).toEqual(["proj.scout.sock"]);
    expect((await status()).seats.map((s) => s.seat)).toEqual(["scout"]);
    // In order (§15, R): the start's intent was durable before anything was made, and its
    // outcome says it did not happen, naming why.
    const records = (await h.run(["log", "--json"])).stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Json);
    const intent = records.find((r) => r.type === "seat_start" && r.target === "seat:broken");
    expect(intent, JSON.stringify(records.slice(-4))).toBeDefined();
    const outcome = records.find((r) => r.type === "outcome" && r.action === "seat.start" && (r.detail as Json | undefined)?.intentSeq === intent?.seq);
    expect(outcome, JSON.stringify(records.slice(-4))).toMatchObject({ result: "refused" });
    expect(JSON.stringify(outcome)).toMatch(/injected failure at plan/);
    expect(Number(outcome?.seq)).toBeGreaterThan(Number(intent?.seq));
  });

  it("stops the seat: no process, socket, registry file, tmp or mount is left; repository and home stay", async () => {
    const before = (await status()).seats.find((s) => s.seat === "scout");
    const ns = await seatNamespace(before?.initPid as number);
    expect((await processesInNamespace(ns)).length).toBeGreaterThan(0); // control
    const stopped = await h.run(["stop", "scout", "--json"]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(JSON.parse(stopped.stdout)).toMatchObject({ stopped: [{ seat: "scout" }] });
    expect(await processesInNamespace(ns)).toEqual([]);
    expect((await status()).seats).toEqual([]);
    expect(readdirSync(socketDir)).toEqual([]);
    expect(readdirSync(join(h.home, "run/seats.d"))).toEqual([]);
    expect(existsSync(join(h.home, "seats/proj/scout/tmp"))).toBe(false);
    expect(existsSync(join(h.home, "seats/proj/scout/repo/README.md"))).toBe(true);
    expect(existsSync(join(h.home, "seats/proj/scout/home"))).toBe(true);
    expect(readFileSync("/proc/self/mountinfo", "utf8")).not.toContain(h.dir);
    const log = await h.run(["log", "--json", "--type", "seat_stop"]);
    expect(log.stdout).toMatch(/seat\.stop/);
    const again = await h.run(["stop", "scout@proj"]);
    expect(again.stdout).toMatch(/stopped: none/);
  });

  it("starts a whole team or none of it, again on the persisted repository, and stops a whole team", async () => {
    // broken's prepare fails (the injected failure): the seats started before it are stopped.
    const none = await h.run(["start", "--team", "proj"]);
    expect(none.code).not.toBe(0);
    expect((await status()).seats).toEqual([]);
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE.replace(/  broken:[\s\S]*$/, "  idle:\n    lab: anthropic\n    roles: [observer]\n"));
    const applied = await h.run(["apply", "--yes"]);
    expect(applied.code, applied.stderr).toBe(0);
    const started = await h.run(["start", "--team", "proj", "--json"]);
    expect(started.code, started.stderr).toBe(0);
    expect((JSON.parse(started.stdout) as { started: Json[] }).started.map((s) => s.seat)).toEqual(["scout"]);
    const stopped = await h.run(["stop", "--team", "proj", "--json"]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect((JSON.parse(stopped.stdout) as { stopped: Json[] }).stopped.map((s) => s.seat)).toEqual(["scout"]);
    // A team's stop holds (§9, §15) until the owner resumes it.
    await h.ok(["resume", "--team", "proj"]);
    expect(readdirSync(socketDir)).toEqual([]);
  });
});
