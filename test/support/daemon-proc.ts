import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { TeamdHarness } from "./teamd-harness.js";

/**
 * What attack tests read of the daemon they started, from the host (/proc): its pid, its
 * memory now and at its peak, its own CPU, and the push quarantines it has left.
 */
export function daemonPid(h: TeamdHarness): number {
  const pid = h.daemon?.child.pid;
  if (pid === undefined) throw new Error("no daemon pid");
  return pid;
}

/** Resident memory now and at its peak (VmRSS, VmHWM), in bytes. */
export function daemonMemory(h: TeamdHarness): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${daemonPid(h)}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? "NaN") * 1024;
  return { rss: field("VmRSS"), peak: field("VmHWM") };
}

/** Resets the daemon's peak to what it holds now (5 to clear_refs: root or the daemon's own uid). */
export function resetDaemonPeak(h: TeamdHarness): void {
  execFileSync("sh", ["-c", `echo 5 > /proc/${daemonPid(h)}/clear_refs`]);
}

/** The daemon process's own CPU time (user + system), in seconds: not its children's. */
export function daemonCpu(h: TeamdHarness): number {
  const stat = readFileSync(`/proc/${daemonPid(h)}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The push quarantines (and replay folders) the daemon has not removed. */
export function quarantineLeft(h: TeamdHarness): string[] {
  const dir = join(h.home, "git", "quarantine");
  return existsSync(dir) ? readdirSync(dir) : [];
}

/**
 * The quarantines left once a landed push's have had their time: a push that landed answers
 * before its quarantine is removed (daemon/seat/git.ts), so one is gone a moment after the
 * reply, not at it. A refused push's is gone at its reply (quarantineLeft, at once).
 */
export async function quarantineLeftAfterLanding(h: TeamdHarness, withinMs = 5_000): Promise<string[]> {
  for (const until = Date.now() + withinMs; quarantineLeft(h).length > 0 && Date.now() < until;) await new Promise((resolve) => setTimeout(resolve, 50));
  return quarantineLeft(h);
}

/** The daemon's contained index-pack processes now: git processes under it, from the host's ps. */
export function daemonIndexPacks(h: TeamdHarness): number {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid=,args="], { encoding: "utf8" })
    .split("\n")
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null);
  const parent = new Map(rows.map((m) => [Number(m[1]), Number(m[2])]));
  const daemon = daemonPid(h);
  const underDaemon = (pid: number) => {
    for (let at = parent.get(pid), depth = 0; at !== undefined && at > 1 && depth < 64; at = parent.get(at), depth++) if (at === daemon) return true;
    return false;
  };
  // git itself (its sandbox's bwrap and bash name it in their arguments too).
  return rows.filter((m) => /^(?:\S*\/)?git\s.*\sindex-pack\s/.test(m[3] ?? "") && underDaemon(Number(m[1]))).length;
}

/** Runs `work`, sampling the daemon's quarantines and index-packs every few milliseconds meanwhile: the most of each seen, and every quarantine's name. */
export async function sampleReceives<T>(
  h: TeamdHarness,
  work: Promise<T>,
): Promise<{ result: T; quarantines: number; indexPacks: number; names: Set<string> }> {
  let done = false;
  const result = work.finally(() => (done = true));
  let quarantines = 0;
  let packs = 0;
  const names = new Set<string>();
  while (!done) {
    const left = quarantineLeft(h);
    for (const name of left) names.add(name);
    quarantines = Math.max(quarantines, left.length);
    packs = Math.max(packs, daemonIndexPacks(h));
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return { result: await result, quarantines, indexPacks: packs, names };
}
