import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { DaemonProcess } from "../support/programs.js";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { type TeamdHarness } from "../support/teamd-harness.js";
import { namespaceInode, processesInNamespace, seatNamespace } from "../sandbox/fixture/real-seat.js";
import { processStartTime } from "../../src/sandbox/process-tree.js";
import { sleeperTeamFile } from "../support/team-file.js";
import { waitFor } from "../support/wait.js";

/**
 * A daemon that crashes (SIGKILL) while a seat runs (DESIGN.md "Seat lifecycle": a crash
 * leaves nothing a later start trips over). What happens to the seat: bwrap runs with
 * --die-with-parent, and this test checks the seat's pid namespace empties once the daemon
 * is gone (its init, the inner bwrap, is killed when the outer bwrap dies, and the kernel
 * kills every process of a namespace whose init dies). The next daemon on the same
 * TEAMD_HOME sweeps the registry entry, the stale socket and the run's tmp; the seat then
 * starts again. And the sweep never kills a pid the registry names when that pid now
 * belongs to an unrelated process.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = sleeperTeamFile(["scout"]);

const ppidOf = (pid: number): number | undefined => {
  try {
    // The field after the parenthesised command name: state, then ppid.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
};
/** Exists and is not a zombie; a process that vanishes between the two reads is not alive. */
const alive = (pid: number) => {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};

describe.runIf(process.platform === "linux")("seats: a daemon crash leaves nothing a later start trips over", () => {
  let h: TeamdHarness;
  let daemon: DaemonProcess | undefined;
  let socketDir: string;
  const strays: ChildProcess[] = [];
  const leftoverNamespaces: string[] = [];

  const status = () => h.json<{ seats: Array<{ seat: string; state: string; initPid: number }> }>(["status", "--json"]);

  beforeAll(async () => {
    h = await appliedTeam("teamd-seatcrash-", TEAM_FILE, undefined, { timeoutMs: 30_000 });
    daemon = h.daemon;
    socketDir = asRoot ? join(h.home, "seat-sockets") : join(h.home, "run/seats");
  }, 60_000);
  afterAll(async () => {
    try {
      await cleanup();
    } finally {
      await h?.cleanup();
    }
  }, 30_000);
  async function cleanup() {
    for (const child of strays) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await daemon?.stop();
    // Whatever a failed assertion left running in a seat namespace: kill its init by pid.
    for (const ns of leftoverNamespaces) {
      for (const pid of await processesInNamespace(ns)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* gone */
        }
      }
    }
  }

  it("kill -9 of the daemon ends the seat: its pid-namespace init and every process in it die", async () => {
    const started = await h.run(["start", "scout", "--json"]);
    expect(started.code, started.stderr).toBe(0);
    const scout = (await status()).seats.find((s) => s.seat === "scout");
    expect(scout?.state).toBe("running");
    const init = scout?.initPid as number;
    const ns = await seatNamespace(init);
    leftoverNamespaces.push(ns);
    expect(namespaceInode(ns)).not.toBe(readlinkSync("/proc/self/ns/pid"));
    // Control: the seat is really running — its init (the inner bwrap) and `sleep` in its namespace,
    // the outer bwrap its parent, whose parent (directly, or through the uid switch) is the daemon.
    const inNs = await processesInNamespace(ns);
    expect(inNs).toContain(init);
    expect(inNs.length).toBeGreaterThanOrEqual(2);
    const outer = ppidOf(init) as number;
    expect(readFileSync(`/proc/${outer}/cmdline`, "utf8")).toMatch(/bwrap/);
    // Registry, socket and tmp exist while it runs.
    expect(readdirSync(join(h.home, "run/seats.d"))).toEqual(["proj.scout.json"]);
    // The registration names the init by its start time too (a pid and a namespace number are both reused).
    expect(JSON.parse(readFileSync(join(h.home, "run/seats.d/proj.scout.json"), "utf8"))).toMatchObject({
      initPid: init,
      pidNamespace: namespaceInode(ns),
      initStart: processStartTime(init),
    });
    expect(existsSync(join(socketDir, "proj.scout.sock"))).toBe(true);
    expect(existsSync(join(h.home, "seats/proj/scout/tmp"))).toBe(true);

    const d = daemon as DaemonProcess;
    d.child.kill("SIGKILL");
    await d.stop();
    daemon = undefined;
    // What actually happens: the outer bwrap (the daemon's child) ...
    const outerDied = await waitFor(() => !alive(outer), 5000);
    // ... and the seat's namespace (init and sleep) is emptied by the kernel.
    const nsEmpty = await waitFor(async () => (await processesInNamespace(ns)).length === 0, 5000);
    expect({ outerDied, nsEmpty, initAlive: alive(init) }).toEqual({ outerDied: true, nsEmpty: true, initAlive: false });
  }, 40_000);

  it("leaves litter a crash cannot avoid, which the next daemon sweeps; status shows the seat stopped; it starts again", async () => {
    // The crash left the registry entry, the socket file and tmp (a SIGKILLed daemon cleans nothing).
    expect(readdirSync(join(h.home, "run/seats.d"))).toEqual(["proj.scout.json"]);
    expect(existsSync(join(socketDir, "proj.scout.sock"))).toBe(true);
    expect(existsSync(join(h.home, "seats/proj/scout/tmp"))).toBe(true);

    daemon = await h.startDaemon();
    expect(daemon.stderr() + "").toMatch(/swept what a previous run left of seat proj\/scout/);
    expect(readdirSync(join(h.home, "run/seats.d"))).toEqual([]);
    expect(existsSync(join(socketDir, "proj.scout.sock"))).toBe(false);
    expect(existsSync(join(h.home, "seats/proj/scout/tmp"))).toBe(false);
    expect(existsSync(join(h.home, "seats/proj/scout/repo/README.md"))).toBe(true); // the seat's work persists
    expect((await status()).seats).toEqual([]);

    const again = await h.run(["start", "scout", "--json"]);
    expect(again.code, again.stderr).toBe(0);
    const scout = (await status()).seats.find((s) => s.seat === "scout");
    expect(scout?.state).toBe("running");
    leftoverNamespaces.push(await seatNamespace(scout?.initPid as number));
    const who = await h.run(["exec", "scout", "--", "teamd-shim", "whoami", "--json"]);
    expect(who.code, who.stderr).toBe(0);
    expect(JSON.parse(who.stdout)).toMatchObject({ seat: "scout", team: "proj" });
    const stopped = await h.run(["stop", "scout", "--json"]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(readdirSync(join(h.home, "run/seats.d"))).toEqual([]);
    expect(readdirSync(socketDir)).toEqual([]);
  }, 40_000);

  it("never kills a recorded pid that now belongs to an unrelated process; does kill a recorded init still alive", async () => {
    await (daemon as DaemonProcess).stop();
    daemon = undefined;
    // A bystander in the host's pid namespace, and a namespace made here (unshare) whose init
    // is a shell and whose pid 2 is a sleep: the shell stands in for a leftover seat's init.
    const bystander = spawn("sleep", ["60"], { stdio: "ignore" });
    // An ordinary user needs a user namespace to make a pid namespace (root does not).
    const asUser = process.getuid?.() === 0 ? [] : ["--user", "--map-root-user"];
    const nsParent = spawn("unshare", [...asUser, "--pid", "--fork", "--kill-child", "sh", "-c", "sleep 60 & wait"], { stdio: "ignore" });
    strays.push(bystander, nsParent);
    const pid = bystander.pid as number;
    const hostNs = readlinkSync(`/proc/${pid}/ns/pid`);
    const childrenOf = (p: number): number[] => {
      try {
        return readFileSync(`/proc/${p}/task/${p}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
      } catch {
        return []; // not (or no longer) a process: no children
      }
    };
    expect(
      await waitFor(() => childrenOf(nsParent.pid as number).length === 1 && childrenOf(childrenOf(nsParent.pid as number)[0] as number).length === 1, 5000),
    ).toBe(true);
    const otherInit = childrenOf(nsParent.pid as number)[0] as number;
    const otherSleep = childrenOf(otherInit)[0] as number;
    const otherNs = readlinkSync(`/proc/${otherInit}/ns/pid`);
    expect(otherNs).not.toBe(hostNs);
    expect(readlinkSync(`/proc/${otherSleep}/ns/pid`)).toBe(otherNs);

    const registry = join(h.home, "run/seats.d");
    const entry = (seat: string, initPid: number, pidNamespace: string, initStart?: string) =>
      writeFileSync(
        join(registry, `proj.${seat}.json`),
        JSON.stringify({
          team: "proj",
          seat,
          runId: "r",
          initPid,
          pidNamespace,
          daemonPid: 1,
          startedAt: new Date().toISOString(),
          ...(initStart !== undefined ? { initStart } : {}),
        }) + "\n",
      );
    // A dead seat's namespace (recorded at publish, gone now), its pid reused by the bystander.
    // The kernel reuses a dead namespace's inode number, and other files' seats start side by
    // side with this one: the id may name someone else's namespace by now. What the case needs
    // is that the recorded pid is not in the recorded namespace.
    const deadNs = namespaceInode(leftoverNamespaces[0] as string);
    expect(deadNs).not.toBe(hostNs);
    expect(await processesInNamespace(deadNs)).not.toContain(pid);
    entry("recycled", pid, deadNs);
    // A record naming the host's own namespace (no seat init is ever there).
    entry("hostns", pid, hostNs);
    // A record naming nothing.
    entry("blank", pid, "");
    // The recorded namespace is alive, but the pid is not its init (pid 2 in it).
    entry("notinit", otherSleep, otherNs);
    // The pid is the init of a namespace under the recorded number, but it started at another
    // time than the recorded init: a reused pid in a reused namespace number (another sandbox's).
    const otherStart = processStartTime(otherInit) as string;
    expect(otherStart).toMatch(/^\d+$/);
    entry("reborn", otherInit, otherNs, String(Number(otherStart) - 1));
    daemon = await h.startDaemon();
    const log = daemon.stderr();
    for (const seat of ["recycled", "hostns", "blank", "notinit", "reborn"])
      expect(log).toMatch(new RegExp(`swept what a previous run left of seat proj/${seat}`));
    expect(log).not.toMatch(/killed the leftover seat/);
    expect(readdirSync(registry)).toEqual([]);
    await new Promise((r) => setTimeout(r, 200));
    expect({ bystander: alive(pid), otherSleep: alive(otherSleep), otherInit: alive(otherInit) }).toEqual({
      bystander: true,
      otherSleep: true,
      otherInit: true,
    });

    // Control: the sweep does kill a recorded init still alive in its recorded namespace
    // (and with it, the kernel ends the namespace's other processes).
    await daemon.stop();
    daemon = undefined;
    entry("leftover", otherInit, otherNs, otherStart);
    daemon = await h.startDaemon();
    expect(daemon.stderr()).toMatch(new RegExp(`sweep: killed the leftover seat proj/leftover \\(init pid ${otherInit}\\)`));
    expect(await waitFor(async () => (await processesInNamespace(otherNs)).length === 0, 5000)).toBe(true);
    expect(alive(pid)).toBe(true);
    bystander.kill("SIGKILL");
  }, 30_000);
});
