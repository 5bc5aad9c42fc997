import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile, execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TEAMD } from "../support/programs.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { createHarness, type TeamdHarness } from "../support/teamd-harness.js";
import { expectNoneLeft, startedNamespaces } from "../support/seat-namespaces.js";
import { processesInNamespace } from "../sandbox/fixture/real-seat.js";
import { sleeperTeamFile } from "../support/team-file.js";

/**
 * System mode with an ordinary owner (issue 10, §11, §15; DESIGN.md "Modes"): the daemon runs
 * as root, the seats as `teamd-seat`, and the owner is a non-root user in group `teamd`. That
 * owner — never root — starts seats, reads status, and stops every seat of the machine with
 * `teamd stop --all` (daemon up; daemon up with the ledger store gone; daemon hung), then
 * resumes. After each stop no seat process is left, a start is refused `stop.active`, and
 * the stop holds across a daemon restart until the owner's resume.
 *
 * The owner also registers their own repository (`teamd init`: the daemon makes the hub,
 * open to the group) and applies the team file, and fetches the trunk from the hub.
 *
 * Root only: it creates the group and a throwaway owner user, as setup.sh and an admin would.
 */
const asRoot = process.getuid?.() === 0;
const OWNER = "teamd-test-owner";

function ensureOwner(): { uid: number; gid: number } {
  try {
    execFileSync("getent", ["group", "teamd"], { stdio: "pipe" });
  } catch {
    execFileSync("groupadd", ["--system", "teamd"], { stdio: "pipe" });
  }
  const id = (flag: string) => Number(execFileSync("id", [flag, OWNER], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim());
  try {
    id("-u");
    execFileSync("usermod", ["-aG", "teamd", OWNER], { stdio: "pipe" });
  } catch {
    execFileSync(
      "useradd",
      ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", "-G", "teamd", OWNER],
      { stdio: "pipe" },
    );
  }
  return { uid: id("-u"), gid: id("-g") };
}

interface Json {
  [key: string]: unknown;
}

describe.runIf(process.platform === "linux" && asRoot)("system mode: a non-root owner in group teamd stops and resumes the machine", () => {
  let h: TeamdHarness;
  let ownerHome: string;
  let owner: { uid: number; gid: number };
  let env: NodeJS.ProcessEnv;

  /**
   * The owner's CLI: the owner's uid and gid with the supplementary groups of /etc/group (teamd),
   * which the harness's uid and gid cannot give (node's spawn drops supplementary groups); only
   * PATH and the owner's environment, run from the owner's home.
   */
  const asOwner = (args: string[], timeoutMs = 60_000, cwd = ownerHome): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(
        "setpriv",
        [
          `--reuid=${owner.uid}`,
          `--regid=${owner.gid}`,
          "--init-groups",
          ...(args[0] === "git" ? ["git"] : [process.execPath, TEAMD]),
          ...(args[0] === "git" ? args.slice(1) : args),
        ],
        { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, cwd, timeout: timeoutMs, encoding: "utf8" },
        (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
      );
    });
  const json = async (args: string[], code = 0, timeoutMs = 60_000) => {
    const result = await asOwner([...args, "--json"], timeoutMs);
    expect(result.code, `${args.join(" ")}: ${result.stderr}${result.stdout}`).toBe(code);
    return JSON.parse(result.stdout) as Json;
  };
  const startTeam = () => startedNamespaces(json(["start", "--team", "proj"]), 2);
  const inRepo = async (args: string[]) => {
    const r = await asOwner(args, 60_000, h.repo);
    expect(r.code, `${args.join(" ")}: ${r.stderr}${r.stdout}`).toBe(0);
    return r.stdout;
  };

  beforeAll(async () => {
    ensureSeatUser();
    owner = ensureOwner();
    // As root the harness opens its folder to traversal (0711): the owner reaches its own under it.
    h = await createHarness("teamd-sysowner-");
    ownerHome = join(h.dir, "owner");
    mkdirSync(join(ownerHome, "keys"), { recursive: true });
    chownSync(ownerHome, owner.uid, owner.gid);
    chownSync(join(ownerHome, "keys"), owner.uid, owner.gid);
    chmodSync(ownerHome, 0o700);
    env = { TEAMD_HOME: h.home, TEAMD_OWNER_KEY: join(ownerHome, "keys/owner.key"), HOME: ownerHome };
    // The owner's repository is the owner's.
    execFileSync("chown", ["-R", `${owner.uid}:${owner.gid}`, h.repo]);
    await h.startDaemon();
  }, 90_000);

  afterAll(async () => {
    await h?.cleanup();
  }, 30_000);

  it("the owner registers their repository and applies the team file without root; the daemon makes the hub, open to the group", async () => {
    const init = JSON.parse(await inRepo(["init", "--yes", "--json"])) as { mode: string; hub: { path: string; by?: string; remote: string } };
    expect(init).toMatchObject({ mode: "system", hub: { path: join(h.home, "hubs/proj.git"), by: "daemon", remote: "added" } });
    expect(statSync(join(h.home, "hubs/proj.git")).uid).toBe(0);
    writeFileSync(join(h.repo, "teamd.yaml"), sleeperTeamFile(["alpha", "beta"]));
    chownSync(join(h.repo, "teamd.yaml"), owner.uid, owner.gid);
    await inRepo(["apply", "--yes"]);
    // The owner reads the hub (the gated trunk comes back this way).
    await inRepo(["git", "fetch", "-q", "teamd"]);
    expect((await inRepo(["git", "rev-parse", "teamd/main"])).trim()).toMatch(/^[0-9a-f]{40}$/);
  });

  it("the home is the daemon's, opened to group teamd only where the owner needs it", () => {
    const teamdGid = Number(execFileSync("getent", ["group", "teamd"], { encoding: "utf8" }).split(":")[2]);
    const mode = (p: string) => statSync(join(h.home, p)).mode & 0o7777;
    const gid = (p: string) => statSync(join(h.home, p)).gid;
    expect(mode("flags")).toBe(0o3770);
    expect(gid("flags")).toBe(teamdGid);
    expect(mode("keys")).toBe(0o750);
    expect(mode("keys/daemon.key") & 0o077).toBe(0);
    expect(mode("ledger") & 0o7777).toBe(0o2750);
    expect(gid("ledger/ledger.db")).toBe(teamdGid);
    expect(mode("run/control.sock") & 0o777).toBe(0o660);
  });

  it("the owner's status reads the daemon, the teams and the unseen notices without root", async () => {
    const s = await json(["status"]);
    expect(s).toMatchObject({ mode: "system", daemon: { running: true }, ledger: { state: "ready", verified: true }, stopped: false });
    expect((s.notices as { unseen: number | null }).unseen).not.toBeNull();
  });

  it("(a) daemon up: the owner stops every seat; starts are refused; the stop holds across a restart until the owner resumes", async () => {
    const namespaces = await startTeam();
    const stopped = await json(["stop", "--all"]);
    expect(stopped).toMatchObject({ stopped: true, daemon: { answered: true, recorded: true }, alive: [] });
    await expectNoneLeft(namespaces);
    expect(await json(["start", "alpha@proj"], 3)).toMatchObject({ rule: "stop.active" });
    await h.stopDaemon();
    await h.startDaemon();
    expect(await json(["start", "alpha@proj"], 3)).toMatchObject({ rule: "stop.active" });
    expect((await json(["status"])).stopped).toBe(true);
    expect(await json(["resume"])).toMatchObject({ resumed: true });
    expect((await json(["status"])).stopped).toBe(false);
  }, 120_000);

  it("(b) daemon up, ledger unavailable: the owner's flag holds, seats die, the stop is appended late", async () => {
    const namespaces = await startTeam();
    h.ledgerAway();
    const stopped = await json(["stop", "--all"]);
    expect(stopped).toMatchObject({ stopped: true, daemon: { answered: true, recorded: false }, alive: [] });
    await expectNoneLeft(namespaces);
    expect(await json(["start", "alpha@proj"], 3)).toMatchObject({ rule: "stop.active" });
    h.ledgerBack();
    expect(await json(["resume"])).toMatchObject({ resumed: true });
  }, 120_000);

  it("(c) daemon hung (SIGSTOP): the owner's CLI ends every seat without root, through each seat's group-writable cgroup.kill", async () => {
    const namespaces = await startTeam();
    const pid = h.daemon?.child.pid as number;
    process.kill(pid, "SIGSTOP");
    let result: { code: number; stdout: string; stderr: string };
    try {
      result = await asOwner(["stop", "--all", "--json"], 30_000);
      // Checked while the daemon is still stopped: the owner's CLI did it, not the daemon.
      await expectNoneLeft(namespaces);
    } finally {
      process.kill(pid, "SIGCONT");
    }
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const out = JSON.parse(result.stdout) as { stopped: boolean; path: string; alive: unknown[]; killedByCli: { outcome: string }[] };
    expect(out).toMatchObject({ stopped: true, path: "cli", alive: [] });
    expect(out.killedByCli.map((k) => k.outcome)).toEqual(["killed", "killed"]);
    expect(await json(["start", "alpha@proj"], 3)).toMatchObject({ rule: "stop.active" });
    expect(await json(["resume"])).toMatchObject({ resumed: true });
  }, 120_000);

  it("(c') without a cgroup.kill it may write, the owner's CLI says so (never a false 'stopped'), and the daemon stops the seats the moment it runs again", async () => {
    const namespaces = await startTeam();
    // Take the owner's write on each seat's cgroup.kill away, as on a host without v2 cgroups.
    const registry = join(h.home, "run/seats.d");
    const leaves = readdirSync(registry)
      .filter((n) => n.endsWith(".json"))
      .flatMap((n) => (JSON.parse(readFileSync(join(registry, n), "utf8")) as { cgroups?: string[] }).cgroups ?? []);
    const kills = leaves.map((l) => join(l, "cgroup.kill")).filter((f) => existsSync(f));
    expect(kills.length).toBe(2); // control: each seat has one, and the owner could write it
    for (const f of kills) chmodSync(f, 0o600);
    const pid = h.daemon?.child.pid as number;
    process.kill(pid, "SIGSTOP");
    let result: { code: number; stdout: string; stderr: string };
    try {
      result = await asOwner(["stop", "--all", "--json"], 30_000);
    } finally {
      process.kill(pid, "SIGCONT");
    }
    expect(result.code, result.stderr).toBe(1);
    const out = JSON.parse(result.stdout) as { stopped: boolean; alive: { outcome: string }[]; problem?: string };
    expect(out.stopped).toBe(false);
    expect(out.alive.map((a) => a.outcome)).toEqual(["unseen", "unseen"]);
    expect(out.problem).toMatch(/may neither inspect nor signal.*the stop flag holds/);
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && (await Promise.all(namespaces.map(processesInNamespace))).some((p) => p.length > 0))
      await new Promise((r) => setTimeout(r, 100));
    await expectNoneLeft(namespaces);
    expect(await json(["start", "alpha@proj"], 3)).toMatchObject({ rule: "stop.active" });
    expect(await json(["resume"])).toMatchObject({ resumed: true });
  }, 120_000);
});
