import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { appliedTeam } from "../support/applied-team.js";
import type { TeamdHarness } from "../support/teamd-harness.js";
import { waitFor } from "../support/wait.js";
import { daemonPid } from "../support/daemon-proc.js";
import { cmdline, readyExecProcesses } from "../support/ready-exec-processes.js";

/**
 * The seat against the ready exec (daemon/lifecycle/ready-exec.ts, issue 26): the sandbox the
 * daemon makes for a seat's next `teamd exec` after an owner's exec is answered, waiting on its
 * control pipe in the seat's cgroups. The seat's main tree runs whatever it drops at /tmp/main.sh
 * (its start command picks it up); the owner's commands run as execs. What must hold: the seat
 * sees nothing of the waiting sandbox and reaches none of its pipes, an owner's command holds no
 * pipe of it, owner execs at once leave at most one, and nothing of it outlives the daemon.
 * A helper told only what a seat reaches also found that a ready sandbox killed between its take
 * and its command (the seat ending its own run, an OOM) hung the owner's exec past its deadline:
 * fixed, and held deterministically with real processes in test/daemon/lifecycle/ready-exec.test.ts
 * (the seat cannot widen that window at will, so no test here can hit it every time).
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = teamFile(`  scout:
    lab: anthropic
    roles: [observer]
    start:
      command: [sh, -c, "while :; do if [ -f /tmp/main.sh ]; then mv /tmp/main.sh /tmp/main.run; sh /tmp/main.run & fi; sleep 0.1; done"]
`);

const pids = () => readdirSync("/proc").filter((name) => /^\d+$/.test(name));

describe.runIf(process.platform === "linux")("attack: the seat against its next exec's ready sandbox", () => {
  let h: TeamdHarness;
  let tmp: string;
  /** This harness's ready sandboxes on the host: bwrap and its init. */
  const readyProcesses = () => readyExecProcesses(h.home);
  /** The trampolines (bash) of this harness: children of its ready sandboxes' inits. */
  const trampolines = () =>
    pids().filter((pid) => {
      const argv = cmdline(pid);
      if (argv[0] !== "/bin/bash" || !argv.includes("teamd-exec")) return false;
      try {
        const parent = /^\d+ \(.*\) \S (\d+)/.exec(readFileSync(`/proc/${pid}/stat`, "utf8"))?.[1];
        return parent !== undefined && readyProcesses().includes(parent);
      } catch {
        return false;
      }
    });
  const exec = (argv: string[]) => h.run(["exec", "scout@proj", "--", ...argv]);
  const readied = async () => {
    expect(await waitFor(() => trampolines().length > 0, 10_000)).toBe(true);
    await sleep(300);
  };
  /** Runs `script` in the seat's main tree (its start command's namespace), waits for its `done` file. */
  const inMain = async (script: string, done: string) => {
    await exec(["sh", "-c", `cat > /tmp/main.sh <<'EOF'\n${script}\nEOF`]);
    expect(await waitFor(() => existsSync(join(tmp, done)), 10_000)).toBe(true);
  };

  beforeAll(async () => {
    h = await appliedTeam("teamd-ready-exec-attack-", TEAM_FILE);
    await h.ok(["start", "scout@proj"]);
    tmp = join(h.home, "seats", "proj", "scout", "tmp");
  }, 90_000);

  afterAll(async () => {
    await h?.run(["stop", "scout@proj"]).catch(() => undefined);
    await h?.cleanup();
  }, 60_000);

  it("the seat's main tree sees no ready sandbox among its processes, while one waits", async () => {
    await exec(["true"]);
    await readied();
    // The control: the host sees it.
    expect(trampolines().length).toBe(1);
    await inMain("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done > /tmp/seen.txt; : > /tmp/seen.done", "seen.done");
    const seen = readFileSync(join(tmp, "seen.txt"), "utf8");
    expect(seen).toMatch(/main\.run/); // the control: it listed its own tree
    // Its own init (bwrap) is there; no process of the ready sandbox is.
    expect(seen).not.toMatch(/teamd-exec/);
  }, 60_000);

  it("an owner's command in the ready sandbox holds no pipe of it, nor does its namespace's init", async () => {
    await exec(["true"]);
    await readied();
    const fds = await exec(["sh", "-c", "ls /proc/self/fd; echo ---; ls /proc/1/fd; echo ---; readlink /proc/1/fd/* | grep -c socket || true"]);
    expect(fds.code, fds.stderr).toBe(0);
    const [own = "", init = "", sockets = ""] = fds.stdout.split("---\n");
    // sh's three streams and ls's own fd on /proc/self/fd: the control pipe (6) is closed before the exec.
    expect(own.trim().split("\n").sort()).toEqual(["0", "1", "2", "3"]);
    // The init holds the three streams (the exec's sockets) and its own eventfd: no control pipe.
    expect(
      init
        .trim()
        .split("\n")
        .filter((fd) => !["0", "1", "2"].includes(fd)).length,
    ).toBeLessThanOrEqual(1);
    expect(Number(sockets.trim())).toBe(3);
  }, 60_000);

  it("owner execs at once leave at most one ready sandbox, twice over", async () => {
    for (let wave = 0; wave < 2; wave++) {
      const results = await Promise.all(Array.from({ length: 6 }, () => exec(["true"])));
      expect(results.map((r) => r.code)).toEqual([0, 0, 0, 0, 0, 0]);
      await sleep(1_500);
      expect(trampolines().length).toBeLessThanOrEqual(1);
    }
  }, 120_000);

  it("nothing of it outlives the daemon: its stop, and its SIGKILL", async () => {
    await exec(["true"]);
    await readied();
    expect(trampolines()).toHaveLength(1);
    await h.stopDaemon();
    expect(await waitFor(() => trampolines().length === 0 && readyProcesses().length === 0, 10_000)).toBe(true);
    await h.startDaemon();
    await h.run(["start", "scout@proj"]);
    await exec(["true"]);
    await readied();
    expect(trampolines()).toHaveLength(1);
    process.kill(daemonPid(h), "SIGKILL");
    expect(await waitFor(() => trampolines().length === 0 && readyProcesses().length === 0, 10_000)).toBe(true);
    await h.startDaemon();
  }, 120_000);
});
