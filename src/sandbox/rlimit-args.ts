import type { Limits } from "./plan-types.js";

/**
 * Limits -> a prlimit(1) prefix for the bwrap command (pure). This is the fallback that
 * works without root and without a delegated cgroup: rlimits, inherited by every process of
 * the seat. It is partial, and says so:
 * - memoryBytes -> RLIMIT_DATA: per process (private writable memory), not the tree's sum,
 *   and not the seat's tmpfs (/tmp is sized separately by the plan);
 * - cpuSeconds -> RLIMIT_CPU: per process;
 * - processes -> RLIMIT_NPROC: counted per host uid, so every process that uid runs on the
 *   host counts, the seat's and any other (in user mode the owner's own);
 * - openFiles -> RLIMIT_NOFILE: per process.
 * The tree-wide limits (memory, pids, cpu of the whole seat) need the seat's own cgroup,
 * which this does not build.
 */
export interface RlimitPrefix {
  readonly argv: readonly string[];
  readonly partial: boolean;
  readonly notes: readonly string[];
}

export function rlimitPrefix(limits: Limits, prlimit: string): RlimitPrefix {
  if (limits === "none") return { argv: [], partial: false, notes: ["limits: none (the team file says so)"] };
  const flags: string[] = [];
  const notes: string[] = [];
  if (limits.memoryBytes !== undefined) {
    flags.push(`--data=${limits.memoryBytes}:${limits.memoryBytes}`);
    notes.push("memory: RLIMIT_DATA per process, not the seat's total");
  }
  if (limits.cpuSeconds !== undefined) {
    flags.push(`--cpu=${limits.cpuSeconds}:${limits.cpuSeconds}`);
    notes.push("cpu: RLIMIT_CPU per process");
  }
  if (limits.processes !== undefined) {
    flags.push(`--nproc=${limits.processes}:${limits.processes}`);
    notes.push("processes: RLIMIT_NPROC, counted over every process of the host uid");
  }
  if (limits.openFiles !== undefined) {
    flags.push(`--nofile=${limits.openFiles}:${limits.openFiles}`);
    notes.push("open files: RLIMIT_NOFILE per process");
  }
  if (flags.length === 0) return { argv: [], partial: false, notes: ["no limits asked for"] };
  return { argv: [prlimit, ...flags, "--"], partial: true, notes };
}
