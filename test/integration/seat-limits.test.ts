import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { DaemonProcess } from "../support/programs.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { appliedTeam } from "../support/applied-team.js";
import type { TeamdHarness } from "../support/teamd-harness.js";

/**
 * Per-seat limits and metering through a real daemon (issue 7, "Linux launcher"): a seat whose
 * team file asks for memory, processes and CPUs starts in its own cgroups (as root) with those
 * limits in force, `teamd status` meters its CPU and memory, `teamd stop` removes the cgroups,
 * and after `kill -9` of the daemon the next start sweeps them (and what `teamd exec` left in
 * them). As an ordinary user there is no cgroup to write: the memory and process limits fall
 * back to rlimits and status says "partial"; a CPU quota, which no rlimit expresses, stops the
 * seat from starting.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = teamFile(`  busy:
    lab: anthropic
    roles: [observer]
    start:
      command: [sh, -c, "while :; do :; done"]
      limits:
        memory: 256M
        processes: 64
        cpus: 0.5
  soft:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
      limits:
        memory: 256M
        processes: 4096
  tight:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
      limits:
        processes: 2
  plain:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
`);

/**
 * A process's identity: pid and start time (field 22 of /proc/PID/stat). pid_max is small on
 * test hosts and other seats start beside this test, so a bare pid (or a pid-namespace inode)
 * may be reused within seconds; the pair is not.
 */
function identity(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (/^[ZX]$/.test(fields[0] ?? "")) return undefined; // a zombie is dead, waiting to be reaped
    return `${pid}@${fields[19]}`;
  } catch {
    return undefined;
  }
}

interface SeatJson {
  seat: string;
  state: string;
  initPid: number;
  limits: string;
  cgroup: string;
  cpuMs: number;
  memoryBytes: number;
  meteredBy: string;
}

describe.runIf(process.platform === "linux")("seat limits and metering through a real daemon", () => {
  let h: TeamdHarness;

  const status = async (): Promise<SeatJson[]> => {
    const result = await h.run(["status", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    return (JSON.parse(result.stdout) as { seats: SeatJson[] }).seats;
  };
  const registered = (seat: string) => JSON.parse(readFileSync(join(h.home, "run/seats.d", `proj.${seat}.json`), "utf8")) as { cgroups?: string[] };

  beforeAll(async () => {
    h = await appliedTeam("teamd-limits-", TEAM_FILE);
  }, 60_000);

  afterAll(async () => {
    await h?.cleanup();
  }, 60_000);

  describe.runIf(asRoot)("as root: the seat's own cgroups", () => {
    it("a low processes limit is the seat's own: two processes are enough to start it", async () => {
      const started = await h.run(["start", "tight@proj", "--json"]);
      expect(started.code, started.stdout + started.stderr).toBe(0);
      try {
        const exec = await h.run(["exec", "tight@proj", "--", "sh", "-c", "sleep 1 & sleep 1 & wait; echo done"]);
        expect(exec.stdout + exec.stderr).toMatch(/fork|Resource temporarily unavailable|Cannot/i); // the seat's budget is 2, the exec's shell forks past it
        expect(exec.stdout).not.toContain("done");
      } finally {
        // Stopped whatever the case found: a seat left running is listed beside the next case's.
        expect((await h.run(["stop", "tight@proj"])).code).toBe(0);
      }
    }, 120_000);

    it("starts the seat in its cgroups with the limits in force; status meters a busy seat; stop removes them", async () => {
      const started = await h.run(["start", "busy@proj", "--json"]);
      expect(started.code, started.stderr).toBe(0);
      const leaves = registered("busy").cgroups ?? [];
      const leaf = (h: string) => leaves.find((l) => l.startsWith(`/sys/fs/cgroup/${h}/`)) as string;
      expect(leaves.length).toBeGreaterThan(0);
      expect(readFileSync(join(leaf("pids"), "pids.max"), "utf8").trim()).toBe("64");
      expect(Number(readFileSync(join(leaf("memory"), "memory.limit_in_bytes"), "utf8"))).toBe(256 * 1024 ** 2);
      expect(readFileSync(join(leaf("cpu"), "cpu.cfs_quota_us"), "utf8").trim()).toBe("50000");
      // The seat's init and its command are inside (the command was born there).
      // By name: a seat another case left running may be listed first.
      const busy = async () => (await status()).find((s) => s.seat === "busy") as SeatJson;
      const seat = await busy();
      const procs = readFileSync(join(leaf("pids"), "cgroup.procs"), "utf8")
        .trim()
        .split("\n")
        .map(Number);
      expect(procs).toContain(seat?.initPid);
      expect(procs.length).toBeGreaterThanOrEqual(2);
      expect(seat).toMatchObject({
        seat: "busy",
        limits: expect.stringMatching(/^applied: cgroup v2 \(kill\), v1 \(cpus 0\.5, memory 256M, pids 64\)/),
        cgroup: expect.stringContaining("v1"),
        meteredBy: "cgroup",
      });

      // Metering: the busy loop's CPU shows, and grows.
      const t0 = Date.now();
      const c0 = (await busy()).cpuMs;
      await sleep(1500);
      const first = await busy();
      expect(first.cpuMs).toBeGreaterThan(100);
      // Reported, not asserted (no timing asserts): the busy loop's CPU per wall second under cpus: 0.5.
      console.log(`seat-limits: busy seat under cpus 0.5 used ${first.cpuMs - c0} ms CPU in ${Date.now() - t0} ms wall; memory ${first.memoryBytes} bytes`);
      expect(first.memoryBytes).toBeGreaterThan(0);
      const text = await h.run(["status"]);
      expect(text.stdout).toMatch(/busy@proj +running .*\n +limits: .*cgroup v2.*; cpu \d+ ms, memory [\d.]+ MiB \(cgroup\)/);

      // teamd exec joins the same cgroups (one budget): its process is counted there.
      const exec = await h.run(["exec", "busy@proj", "--", "sh", "-c", "cat /proc/self/cgroup | grep -c teamd"]);
      expect(exec.code, exec.stderr).toBe(0);
      expect(Number(exec.stdout.trim())).toBe(leaves.length);

      const stopped = await h.run(["stop", "busy@proj"]);
      expect(stopped.code, stopped.stderr).toBe(0);
      for (const l of leaves) expect(existsSync(l), l).toBe(false);
    }, 120_000);

    it("after kill -9 of the daemon, the next start kills and sweeps the seat's cgroups (a `teamd exec` left in them too)", async () => {
      const started = await h.run(["start", "soft@proj", "--json"]);
      expect(started.code, started.stderr).toBe(0);
      const leaves = registered("soft").cgroups ?? [];
      expect(leaves.length).toBeGreaterThan(0);
      // An exec that outlives its caller: its own pid namespace, in the seat's cgroups.
      const lingering = h.run(["exec", "soft@proj", "--", "sleep", "3600"], { timeoutMs: 120_000 });
      const pidsLeaf = leaves.find((l) => l.startsWith("/sys/fs/cgroup/pids/")) as string;
      for (let i = 0; i < 100 && readFileSync(join(pidsLeaf, "cgroup.procs"), "utf8").trim().split("\n").length < 4; i++) await sleep(50);
      const inside = readFileSync(join(pidsLeaf, "cgroup.procs"), "utf8").trim().split("\n").map(Number);
      expect(inside.length).toBeGreaterThanOrEqual(4); // control: the seat's init + sleep, the exec's init + sleep
      const before = inside.map(identity).filter((w): w is string => w !== undefined);
      expect(before.length).toBe(inside.length);

      const old = h.daemon as DaemonProcess;
      process.kill(old.child.pid as number, "SIGKILL");
      await new Promise<void>((resolve) =>
        old.child.exitCode !== null || old.child.signalCode !== null ? resolve() : old.child.once("exit", () => resolve()),
      );
      // The crash left the folders (bwrap's --die-with-parent may already have ended the
      // processes with the daemon; the folders stay until someone removes them).
      for (const l of leaves) expect(existsSync(l), l).toBe(true);

      await h.startDaemon();
      for (const l of leaves) expect(existsSync(l), l).toBe(false);
      // None of the seat's processes runs any more (gone, or a zombie waiting to be reaped).
      for (const who of before) expect(identity(Number(who.split("@")[0])), who).not.toBe(who);
      await lingering;
    }, 120_000);
  });

  describe.runIf(!asRoot)("as an ordinary user: rlimits, partial", () => {
    it("starts a seat asking for memory and processes with rlimits, and says partial; refuses a CPU quota", async () => {
      console.log("seat-limits: not root — no cgroup to write here; testing the rlimit fallback (the cgroup tests need root)");
      const started = await h.run(["start", "soft@proj", "--json"]);
      expect(started.code, started.stderr).toBe(0);
      const seat = (await status()).find((s) => s.seat === "soft");
      expect(seat?.limits).toMatch(/^partial: memory: RLIMIT_DATA/);
      expect(seat?.cgroup).toMatch(/^none: /);
      expect(seat?.meteredBy).toBe("proc walk");
      expect(seat?.memoryBytes).toBeGreaterThan(0);
      expect((await h.run(["stop", "soft@proj"])).code).toBe(0);
      const busy = await h.run(["start", "busy@proj", "--json"]);
      expect(busy.code).toBe(3);
      expect(JSON.parse(busy.stdout)).toMatchObject({ rule: "containment.limit", reason: expect.stringMatching(/cpus/) });
      // RLIMIT_NPROC counts the whole uid: a low processes limit cannot even start the seat, and says why.
      const tight = await h.run(["start", "tight@proj", "--json"]);
      expect(tight.code).toBe(3);
      expect(JSON.parse(tight.stdout)).toMatchObject({
        rule: "containment.limit",
        reason: expect.stringMatching(/RLIMIT_NPROC, which counts every process and thread/),
      });
    }, 120_000);
  });

  it("a seat that asks for no limits runs without any, and is metered", async () => {
    const started = await h.run(["start", "plain@proj", "--json"]);
    expect(started.code, started.stderr).toBe(0);
    const seat = (await status()).find((s) => s.seat === "plain");
    expect(seat?.limits).toBe("none");
    expect(seat?.meteredBy).toBe(asRoot ? "cgroup" : "proc walk");
    expect((await h.run(["stop", "plain@proj"])).code).toBe(0);
  }, 120_000);
});
