import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createSeatCgroup, readCgroupFacts, type SeatCgroup } from "../../src/sandbox/cgroup-host.js";
import { planCgroups } from "../../src/sandbox/cgroup-plan.js";
import type { Limits } from "../../src/sandbox/plan-types.js";
import { createRealSeat, type RealSeat } from "../sandbox/fixture/real-seat.js";

/**
 * Proves (docs/enforcement.md): "Containment (§11): per-seat limits — a fork bomb is held at
 * the seat's pids limit and a memory balloon is OOM-killed at the seat's memory limit, inside
 * the seat; the host and the test run survive". The seat is a real bwrap seat placed in its
 * own cgroups by the real launcher (src/sandbox/cgroup-host.ts, --block-fd), as `teamd start`
 * does. Each attack has a control: the same attack, bounded, in the same kind of seat without
 * that limit gets further.
 *
 * Needs root (the seat's cgroups are made under teamd's own; an ordinary user has no cgroup it
 * may write here): as anyone else the suite is skipped, and says why.
 */
const root = process.getuid?.() === 0;
const skipReason = root
  ? ""
  : "limits.test.ts skipped: needs root to create the seat's cgroups (as an ordinary user seats fall back to rlimits: test/integration/seat-limits.test.ts, test/sandbox/launcher-linux.test.ts)";
if (!root && process.platform === "linux") console.log(skipReason);

let seat: RealSeat;
const made: SeatCgroup[] = [];
beforeEach(async () => {
  seat = await createRealSeat();
});
afterEach(async () => {
  await seat.cleanup();
  for (const cg of made.splice(0)) expect(await cg.remove()).toEqual([]);
});

async function seatCgroup(limits: Limits): Promise<SeatCgroup> {
  const decision = planCgroups(
    await readCgroupFacts(),
    { home: `test${randomBytes(3).toString("hex")}`, team: "alpha", seat: "builder", run: randomBytes(4).toString("hex") },
    limits,
  );
  if (decision.kind !== "cgroup") throw new Error(`no cgroup: ${decision.reason}`);
  const cg = await createSeatCgroup(decision.plan);
  made.push(cg);
  return cg;
}

const leafOf = (cg: SeatCgroup, hierarchy: string) => {
  const leaf = cg.plan.leaves.find((l) => l.startsWith(`/sys/fs/cgroup/${hierarchy}/`));
  if (leaf === undefined) throw new Error(`no ${hierarchy} cgroup`);
  return leaf;
};
const read = async (file: string) => (await readFile(file, "utf8")).trim();
const sh = (script: string) => ["/bin/sh", "-c", script];

/** Start the seat waiting for a go file in its tmp; check from the host that its init is in `cg`; then return the trigger. */
async function armed(cg: SeatCgroup, limits: Limits, script: string) {
  const plan = await seat.plan((input) => ({ ...input, limits }));
  const launched = await seat.launch(plan, sh(`while [ ! -e "$TMPDIR/go" ]; do sleep 0.05; done; ${script}`), undefined, cg);
  if (!launched.ok) throw new Error(`launch refused: ${launched.refusal.reason}`);
  const proc = launched.seat;
  const io = proc.io;
  if (io.kind !== "pipes") throw new Error("this seat was launched with pipes");
  io.stdin.end();
  let stdout = "";
  io.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  io.stderr.resume();
  // Before anything runs: the init is in every seat cgroup (its /proc/PID/cgroup names each leaf).
  const own = await readFile(`/proc/${proc.initPid}/cgroup`, "utf8");
  for (const leaf of cg.plan.leaves) {
    const rel = leaf.replace(/^\/sys\/fs\/cgroup\/[^/]+/, "");
    expect(own).toContain(rel);
  }
  return {
    proc,
    output: () => stdout,
    go: () => writeFile(join(seat.tmp, "go"), ""),
  };
}

describe.runIf(process.platform === "linux" && root)("escape: resource limits (per-seat cgroups)", () => {
  it("a fork bomb is held at the seat's pids limit; the host can still fork", async () => {
    const limit = 32;
    const cg = await seatCgroup({ processes: limit });
    const pids = leafOf(cg, "pids");
    expect(await read(join(pids, "pids.max"))).toBe(String(limit)); // the limit is in force
    // A real, unbounded fork bomb — started only after the host saw the seat inside its pids cgroup.
    const seatRun = await armed(cg, { processes: limit }, "b() { b | b & }; b; sleep 30");
    await seatRun.go();
    let highest = 0;
    for (let i = 0; i < 40; i++) {
      highest = Math.max(highest, Number(await read(join(pids, "pids.current"))));
      await sleep(50);
    }
    const events = await read(join(pids, "pids.events"));
    const peak = Number(await read(join(pids, "pids.peak")));
    // The bomb did hit the limit (forks were refused), and the seat never held more than it.
    expect(Number(/max (\d+)/.exec(events)?.[1] ?? 0)).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(limit);
    expect(highest).toBeLessThanOrEqual(limit);
    // The host can still fork, while the bomb still runs.
    expect(spawnSync("/bin/true").status).toBe(0);
    // cgroup.kill ends the bomb (every process of the seat), then the init goes.
    expect(await cg.kill()).toBe(true);
    seatRun.proc.kill();
    await seatRun.proc.exit;
    expect(Number(await read(join(pids, "pids.current")))).toBe(0);
  }, 60_000);

  it("control: without the pids limit the same fan-out, bounded, gets past it", async () => {
    const cg = await seatCgroup("none");
    const pids = leafOf(cg, "pids");
    expect(await read(join(pids, "pids.max"))).toBe("max");
    // 64 sleepers, no more: the attack is bounded; with the limit above it could not hold 32.
    const seatRun = await armed(cg, "none", "i=0; while [ $i -lt 64 ]; do sleep 30 & i=$((i+1)); done; echo spawned; sleep 30");
    await seatRun.go();
    for (let i = 0; i < 100 && !seatRun.output().includes("spawned"); i++) await sleep(50);
    expect(Number(await read(join(pids, "pids.current")))).toBeGreaterThan(64);
    seatRun.proc.kill();
    await seatRun.proc.exit;
  }, 60_000);

  it("a memory balloon is OOM-killed inside the seat at its memory limit; the host survives", async () => {
    const limit = 128 * 1024 ** 2;
    const cg = await seatCgroup({ memoryBytes: limit });
    const memory = leafOf(cg, "memory");
    expect(Number(await read(join(memory, "memory.limit_in_bytes")))).toBe(limit);
    // Bounded at 1 GiB (64 × 16 MiB), each chunk touched so it is really charged.
    const balloon = `${process.execPath} -e 'const a=[]; for (let i=0;i<64;i++){ a.push(Buffer.alloc(16<<20, 1)); console.log("chunk " + i); }'; echo "status $?"`;
    const seatRun = await armed(cg, { memoryBytes: limit }, balloon);
    await seatRun.go();
    await seatRun.proc.exit;
    const out = seatRun.output();
    expect(out).toMatch(/^status 137$/m); // SIGKILL: the OOM killer
    const chunks = [...out.matchAll(/^chunk (\d+)$/gm)].length;
    expect(chunks).toBeLessThan(8); // 8 chunks alone are 128 MiB
    expect(Number(/oom_kill (\d+)/.exec(await read(join(memory, "memory.oom_control")))?.[1])).toBeGreaterThan(0);
    expect(Number(await read(join(memory, "memory.max_usage_in_bytes")))).toBeLessThanOrEqual(limit);
    expect(spawnSync("/bin/true").status).toBe(0); // the host survives
  }, 60_000);

  it("control: without the memory limit the same balloon, bounded at 256 MiB, completes", async () => {
    const cg = await seatCgroup("none");
    const memory = leafOf(cg, "memory");
    const balloon = `${process.execPath} -e 'const a=[]; for (let i=0;i<16;i++){ a.push(Buffer.alloc(16<<20, 1)); console.log("chunk " + i); }'; echo "status $?"`;
    const seatRun = await armed(cg, "none", balloon);
    await seatRun.go();
    await seatRun.proc.exit;
    expect(seatRun.output()).toMatch(/^status 0$/m);
    expect(seatRun.output()).toMatch(/^chunk 15$/m);
    expect(Number(await read(join(memory, "memory.max_usage_in_bytes")))).toBeGreaterThan(256 * 1024 ** 2);
  }, 60_000);
});

describe.runIf(process.platform === "linux" && !root)("escape: resource limits (per-seat cgroups)", () => {
  it.skip(skipReason, () => undefined);
});
