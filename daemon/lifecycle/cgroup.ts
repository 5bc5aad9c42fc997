import { warmCgroupMoves } from "../../src/sandbox/cgroup-warm.js";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { chmod, chown, readdir, readFile, readlink } from "node:fs/promises";
import { RefusalError } from "../../src/rpc/errors.js";
import {
  createSeatCgroup,
  handle,
  readCgroupFacts,
  removeLeaves,
  sweepHomeCgroups,
  type SeatCgroup,
  type SeatCgroupUsage,
} from "../../src/sandbox/cgroup-host.js";
import { homeCgroupRoots, parseCgroupMounts, parseSelfCgroup, planCgroups, type CgroupMount } from "../../src/sandbox/cgroup-plan.js";
import type { Limits } from "../../src/sandbox/plan-types.js";
import type { TeamdHome } from "../host/home.js";
import { processTree } from "../../src/sandbox/process-tree.js";

/**
 * The seat's cgroups in the daemon's lifecycle: made after prepare and before launch (the
 * launcher moves the init in before the command runs), killed with `cgroup.kill` and removed
 * at stop, recorded in the seat registry so a crashed daemon's are swept at the next start.
 *
 * Fail closed: a seat that asks for a limit the cgroups were meant to carry does not start
 * when they cannot be made. A seat that asks for none starts without them (killed by its
 * init, metered by a /proc walk) and its status says so.
 */
export interface OpenedCgroup {
  readonly cgroup?: SeatCgroup;
  /** Why there is none, in words (for status and the log). */
  readonly missing?: string;
}

/** A short, stable key of TEAMD_HOME: the sweep removes this home's cgroups and no other daemon's. */
export function homeKey(home: TeamdHome): string {
  return createHash("sha256").update(home.root).digest("hex").slice(0, 12);
}

function asksForCgroupLimit(limits: Limits): boolean {
  return limits !== "none" && (limits.memoryBytes !== undefined || limits.processes !== undefined || limits.cpus !== undefined);
}

export async function openSeatCgroup(home: TeamdHome, team: string, seat: string, runId: string, limits: Limits): Promise<OpenedCgroup> {
  const decision = planCgroups(await readCgroupFacts(), { home: homeKey(home), team, seat, run: runId.replace(/-/g, "").slice(0, 12) }, limits);
  // No cgroup teamd may write: the launcher falls back to rlimits (partial) or refuses what none expresses.
  if (decision.kind === "none") return { missing: decision.reason };
  // The kernel's wait before the init may join them, begun while they are made (cgroup-warm.ts).
  warmCgroupMoves();
  try {
    const cgroup = await createSeatCgroup(decision.plan);
    await openKillToOwnerGroup(home, cgroup);
    return { cgroup };
  } catch (error) {
    const cause = (error as Error).message;
    if (asksForCgroupLimit(limits)) {
      throw new RefusalError(
        "containment.limit",
        `the seat's limits cannot be applied: ${cause}; fix: run \`teamd doctor\` (cgroups), free or fix the cgroup hierarchy, or drop start.limits from the team file (\`limits: none\`)`,
      );
    }
    return { missing: cause };
  }
}

/**
 * Whether a path a registry file names is a seat cgroup of this home and that seat — the only
 * folders the sweep and the machine-wide stop touch, whatever a registry file says. (The daemon
 * that wrote it may have sat in another cgroup than this process, so the test is the shape:
 * a cgroup mount, then …/teamd/<home>/<team>/<seat>-<run>.)
 */
export async function isSeatCgroup(path: string, home: TeamdHome, team: string, seat: string): Promise<boolean> {
  return isSeatCgroupOf((await readCgroupFacts()).mounts, path, home, team, seat);
}

function isSeatCgroupOf(mounts: readonly CgroupMount[], path: string, home: TeamdHome, team: string, seat: string): boolean {
  if (path.includes("/../") || path.includes("/./") || path.endsWith("/..")) return false;
  const tail = `/teamd/${homeKey(home)}/${team}/${seat}-`;
  const at = path.lastIndexOf(tail);
  return at >= 0 && /^[0-9a-f]+$/.test(path.slice(at + tail.length)) && mounts.some((m) => path.startsWith(`${m.path}/`));
}

/**
 * The `cgroup.procs` file of each seat cgroup (of this home and that seat, by isSeatCgroup)
 * that `pid` — the seat's init — is in now: where the daemon's git work for the seat joins
 * it, so that work counts against the seat's memory and pids (src/effects/contained-git.ts).
 * Empty where the seat has no cgroup of its own, or the process is gone.
 *
 * Asked before every contained git of a seat's fetch or push, so it reads two small /proc
 * files in line, once each: it read the mount table, the daemon's cgroups and every mount's
 * access through libuv's pool once per mount, 8-17 ms of every fetch (issue 26).
 */
export function seatCgroupProcs(home: TeamdHome, team: string, seat: string, pid: number): string[] {
  if (!(Number.isSafeInteger(pid) && pid > 1)) return [];
  const own = parseSelfCgroup(readProcText(`/proc/${pid}/cgroup`));
  const mounts = parseCgroupMounts(readProcText("/proc/self/mounts"));
  const procs: string[] = [];
  for (const mount of mounts) {
    const path = own[mount.type === "cgroup2" ? "0" : [...mount.controllers].sort().join(",")];
    if (path === undefined || path === "/") continue;
    const leaf = `${mount.path}${path}`;
    if (isSeatCgroupOf(mounts, leaf, home, team, seat)) procs.push(`${leaf}/cgroup.procs`);
  }
  return [...new Set(procs)];
}

/** A /proc file's text, or "" where it cannot be read (the process is gone). */
function readProcText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/**
 * System mode: the owner (group teamd, not root) may write the seat's `cgroup.kill`, so the
 * machine-wide stop ends a seat of the seat user's while the daemon is hung (issue 10); the
 * owner can neither signal nor inspect that user's processes. Only that one file: the
 * limits stay root's. A failure here fails the start (the stop must work).
 */
async function openKillToOwnerGroup(home: TeamdHome, cgroup: SeatCgroup): Promise<void> {
  if (home.mode !== "system" || home.ownerGid === undefined || cgroup.plan.kill === undefined) return;
  try {
    await chown(cgroup.plan.kill, 0, home.ownerGid);
    await chmod(cgroup.plan.kill, 0o660);
  } catch (error) {
    await cgroup.remove(1_000).catch(() => undefined);
    throw error;
  }
}

/**
 * Whether a seat cgroup holds no process now (its cgroup.procs is empty, or it is gone): how
 * the owner's CLI knows a seat of another uid is down without being able to inspect it.
 */
export async function cgroupEmpty(leaf: string): Promise<boolean> {
  try {
    return (await readFile(`${leaf}/cgroup.procs`, "utf8")).trim() === "";
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT";
  }
}

/** cgroup.kill each recorded seat cgroup that passes isSeatCgroup (v2 only has the file). */
export async function killRecordedCgroups(home: TeamdHome, entries: readonly { team: string; seat: string; cgroups?: readonly string[] }[]): Promise<string[]> {
  const mine: string[] = [];
  for (const e of entries) for (const leaf of e.cgroups ?? []) if (await isSeatCgroup(leaf, home, e.team, e.seat)) mine.push(leaf);
  for (const leaf of mine)
    await handle({ mkdir: [], leaves: [leaf], writes: [], procs: [], kill: `${leaf}/cgroup.kill`, meter: {}, byCgroup: [], summary: "" }).kill();
  return mine;
}

/** After a crash: the recorded seat cgroups (killed, removed), then anything else under this home's roots. */
export async function sweepSeatCgroups(
  home: TeamdHome,
  recorded: readonly { team: string; seat: string; cgroups?: readonly string[] }[],
  log: (line: string) => void,
): Promise<void> {
  const roots = homeCgroupRoots(await readCgroupFacts(), homeKey(home));
  const mine = await killRecordedCgroups(home, recorded);
  const left = await removeLeaves(mine, 5_000);
  const rest = await sweepHomeCgroups(roots);
  for (const leaf of [...mine.filter((l) => !left.includes(l)), ...rest.swept]) log(`sweep: removed the leftover seat cgroup ${leaf}`);
  for (const leaf of [...left, ...rest.left]) log(`sweep: could not remove the seat cgroup ${leaf} (processes still in it?)`);
}

/**
 * Metering without a cgroup: walk /proc for the processes in the seat's pid namespace. CPU is
 * utime+stime+cutime+cstime (reaped children count through their parents), at the kernel's
 * USER_HZ of 100; memory is the sum of resident set sizes (shared pages counted once per
 * process, so it overstates). A process forked and reaped between two walks is seen only
 * through its parent's cutime.
 */
export async function walkNamespaceUsage(pidNamespace: string): Promise<SeatCgroupUsage> {
  const inNamespace: number[] = [];
  for (const entry of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    if ((await readlink(`/proc/${entry}/ns/pid`).catch(() => undefined)) === pidNamespace) inNamespace.push(Number(entry));
  }
  return sumUsage(inNamespace);
}

/** The same for an uncontained seat without a cgroup: the process tree under its init (what its stop kills). */
export async function walkTreeUsage(initPid: number): Promise<SeatCgroupUsage> {
  return sumUsage(processTree(initPid));
}

async function sumUsage(pids: readonly number[]): Promise<SeatCgroupUsage> {
  let ticks = 0;
  let pages = 0;
  let processes = 0;
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
    const statm = await readFile(`/proc/${pid}/statm`, "utf8").catch(() => undefined);
    if (stat === undefined) continue;
    // Fields after the command name (which may hold spaces): state is field 3, utime 14 … cstime 17.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i] ?? 0), 0);
    pages += Number(statm?.split(" ")[1] ?? 0);
    processes += 1;
  }
  return { cpuMs: ticks * 10, memoryBytes: pages * 4096, processes };
}
