import { access, mkdir, readdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { constants as fsConstants, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { cpuMillis, parseCgroupMounts, parseSelfCgroup, type CgroupFacts, type CgroupPlan } from "./cgroup-plan.js";
import type { CgroupLimit } from "./rlimit-args.js";

/**
 * The I/O half of the seat's cgroups (the plan is src/sandbox/cgroup-plan.ts): read what the
 * host offers, create the seat's folders and write its limits, move the seat's init in, read
 * its counters, kill it through `cgroup.kill`, remove the folders, and sweep what a crashed
 * daemon left. Every failure is an Error naming the file and the errno; the caller decides
 * whether the seat may start without it (only when it asked for no limit).
 */
export async function readCgroupFacts(): Promise<CgroupFacts> {
  const mounts = parseCgroupMounts(await readFile("/proc/self/mounts", "utf8").catch(() => ""));
  const self = parseSelfCgroup(await readFile("/proc/self/cgroup", "utf8").catch(() => ""));
  const v2 = mounts.find((m) => m.type === "cgroup2");
  const v2Own = v2 === undefined ? undefined : self["0"];
  const v2Controllers =
    v2 === undefined || v2Own === undefined
      ? []
      : (await readFile(`${v2.path}${v2Own === "/" ? "" : v2Own}/cgroup.controllers`, "utf8").catch(() => "")).trim().split(/\s+/).filter(Boolean);
  const writable: string[] = [];
  for (const mount of mounts) {
    const own = mount.type === "cgroup2" ? self["0"] : self[[...mount.controllers].sort().join(",")];
    if (own === undefined) continue;
    // Writable: teamd may make a child under its own cgroup here (root, or a delegated subtree).
    const dir = `${mount.path}${own === "/" ? "" : own}`;
    if (
      await access(dir, fsConstants.W_OK).then(
        () => true,
        () => false,
      )
    )
      writable.push(mount.path);
  }
  return { mounts, self, v2Controllers, writable };
}

export interface SeatCgroupUsage {
  readonly cpuMs?: number;
  readonly memoryBytes?: number;
  readonly processes?: number;
}

export interface SeatCgroup {
  readonly plan: CgroupPlan;
  readonly byCgroup: ReadonlySet<CgroupLimit>;
  readonly summary: string;
  /** Move `pid` (the seat's init, not yet running the seat's command) into every seat cgroup. */
  place(pid: number): Promise<void>;
  usage(): Promise<SeatCgroupUsage>;
  /** cgroup.kill (v2): every process in the seat's cgroup, `teamd exec`'s included. False without v2. */
  kill(): Promise<boolean>;
  /**
   * cgroup.freeze (v2): stop every process of the seat where it stands (`frozen`), or let it
   * run on. Resolves once cgroup.events says the state took hold (at most waitMs; a process in
   * uninterruptible sleep can delay a freeze). Throws without a v2 cgroup or when it did not
   * take hold in time (a freeze is then undone: the seat is never left half frozen).
   */
  setFrozen(frozen: boolean, waitMs?: number): Promise<void>;
  /** Kill, wait until empty (at most waitMs), remove the folders. Returns the folders left behind. */
  remove(waitMs?: number): Promise<string[]>;
}

/** Create the seat's cgroups as planned; on any failure remove what was made and throw. */
export async function createSeatCgroup(plan: CgroupPlan): Promise<SeatCgroup> {
  const made: string[] = [];
  try {
    for (const dir of plan.mkdir) {
      try {
        await mkdir(dir);
        made.push(dir);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST" || plan.leaves.includes(dir))
          throw new Error(`cannot create the cgroup ${dir}: ${(error as Error).message}`);
      }
    }
    for (const w of plan.writes) {
      try {
        await writeFile(w.file, w.value);
      } catch (error) {
        if (w.optional && (error as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw new Error(`cannot write ${w.value} to ${w.file}: ${(error as Error).message}`);
      }
    }
  } catch (error) {
    for (const dir of made.reverse()) await rmdir(dir).catch(() => undefined);
    throw error;
  }
  return handle(plan);
}

/** A handle on cgroups made earlier (this daemon's own, or recorded by a crashed one). */
export function handle(plan: CgroupPlan): SeatCgroup {
  const byCgroup = new Set(plan.byCgroup);
  const kill = async () => {
    if (plan.kill === undefined) return false;
    return writeFile(plan.kill, "1").then(
      () => true,
      () => false,
    );
  };
  return {
    plan,
    byCgroup,
    summary: plan.summary,
    async place(pid) {
      // Written in line, not through libuv's thread pool: the init waits on its block fd until
      // this ends, and each pool round trip cost a launch ~1-3 ms (a few files, one line each;
      // measured 0.2-2.8 ms a write through the pool against 0.05-0.5 ms in line, issue 26).
      for (const file of plan.procs) {
        try {
          writeFileSync(file, String(pid));
        } catch (error) {
          throw new Error(`cannot move the seat's init (pid ${pid}) into ${file}: ${(error as Error).message}`);
        }
      }
    },
    async usage() {
      const read = (file: string | undefined) => (file === undefined ? Promise.resolve(undefined) : readFile(file, "utf8").catch(() => undefined));
      const [cpu, memory, processes] = await Promise.all([read(plan.meter.cpu?.file), read(plan.meter.memory?.file), read(plan.meter.processes?.file)]);
      const out: { cpuMs?: number; memoryBytes?: number; processes?: number } = {};
      if (cpu !== undefined && plan.meter.cpu !== undefined) {
        const ms = cpuMillis(plan.meter.cpu.kind, cpu);
        if (ms !== undefined) out.cpuMs = ms;
      }
      if (memory !== undefined && Number.isFinite(Number(memory.trim()))) out.memoryBytes = Number(memory.trim());
      if (processes !== undefined && Number.isFinite(Number(processes.trim()))) out.processes = Number(processes.trim());
      return out;
    },
    kill,
    async setFrozen(frozen, waitMs = 5_000) {
      if (plan.freeze === undefined) throw new Error("the seat has no v2 cgroup to freeze");
      const { file, events } = plan.freeze;
      await writeFile(file, frozen ? "1" : "0");
      const want = frozen ? "1" : "0";
      const deadline = Date.now() + waitMs;
      for (;;) {
        const state = /^frozen (\d)$/m.exec(await readFile(events, "utf8"))?.[1];
        if (state === want) return;
        if (Date.now() > deadline) {
          if (frozen) await writeFile(file, "0").catch(() => undefined);
          throw new Error(`the seat's cgroup did not ${frozen ? "freeze" : "thaw"} within ${waitMs} ms (cgroup.events: frozen ${state ?? "?"})`);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async remove(waitMs = 5_000) {
      await kill();
      return removeLeaves(plan.leaves, waitMs);
    },
  };
}

/** rmdir each seat folder, retrying while it still holds dying processes; then its empty parents (team, home). */
export async function removeLeaves(leaves: readonly string[], waitMs: number): Promise<string[]> {
  const deadline = Date.now() + waitMs;
  const left: string[] = [];
  for (const leaf of leaves) {
    for (;;) {
      const error = await rmdir(leaf).then(
        () => undefined,
        (e: NodeJS.ErrnoException) => e,
      );
      if (error === undefined || error.code === "ENOENT") break;
      if (error.code !== "EBUSY" || Date.now() >= deadline) {
        left.push(leaf);
        break;
      }
      await sleep(25);
    }
    // The team's and the home's folders go when empty (another seat's may still be there).
    const team = leaf.slice(0, leaf.lastIndexOf("/"));
    const home = team.slice(0, team.lastIndexOf("/"));
    for (const dir of [team, home]) await rmdir(dir).catch(() => undefined);
  }
  return left;
}

/**
 * After a crash: every seat cgroup under this home's roots (`teamd/<home>` in each hierarchy)
 * is a leftover — at daemon start no seat of this home runs. Each is killed (v2 cgroup.kill)
 * and removed. Returns the folders swept and those that could not be removed.
 */
export async function sweepHomeCgroups(roots: readonly string[], waitMs = 5_000): Promise<{ swept: string[]; left: string[] }> {
  const leaves: string[] = [];
  for (const root of roots) {
    for (const team of await subdirs(root)) for (const seat of await subdirs(`${root}/${team}`)) leaves.push(`${root}/${team}/${seat}`);
  }
  // Kill first everywhere (only v2 has cgroup.kill), then remove.
  for (const leaf of leaves) await writeFile(`${leaf}/cgroup.kill`, "1").catch(() => undefined);
  const left = await removeLeaves(leaves, waitMs);
  for (const root of roots) await rmdir(root).catch(() => undefined);
  return { swept: leaves.filter((l) => !left.includes(l)), left };
}

async function subdirs(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isDirectory()).map((e) => e.name);
}
