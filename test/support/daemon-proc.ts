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
