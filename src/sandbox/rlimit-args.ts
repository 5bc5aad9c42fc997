import type { Limits } from "./plan-types.js";

/**
 * Limits -> a prlimit(1) prefix for the bwrap command (pure). RLIMIT_NOFILE is exact (it is
 * per process by definition). For memory and processes this is the fallback where the seat
 * has no cgroup of its own (no root, no delegated subtree): rlimits, inherited by every
 * process of the seat. It is partial, and says so:
 * - memoryBytes -> RLIMIT_DATA: per process (private writable memory), not the tree's sum,
 *   and not the seat's tmpfs (/tmp is sized separately by the plan);
 * - processes -> RLIMIT_NPROC: counted per host uid, so every process that uid runs on the
 *   host counts, the seat's and any other (in user mode the owner's own);
 * - cpus (a quota of CPU time per wall second) has no rlimit at all: without a cgroup it
 *   cannot be applied, and the seat does not start (fail closed).
 * `byCgroup` names the limits the seat's cgroup applies (src/sandbox/cgroup-plan.ts); those
 * get no rlimit.
 */
export interface RlimitPrefix {
  readonly argv: readonly string[];
  readonly partial: boolean;
  readonly notes: readonly string[];
  /** Limits asked for that neither the cgroup nor an rlimit can apply: the seat must not start. */
  readonly unapplicable: readonly string[];
}

export type CgroupLimit = "memoryBytes" | "processes" | "cpus";

export function rlimitPrefix(limits: Limits, prlimit: string, byCgroup: ReadonlySet<CgroupLimit> = new Set()): RlimitPrefix {
  if (limits === "none") return { argv: [], partial: false, notes: ["limits: none (the team file says so)"], unapplicable: [] };
  const flags: string[] = [];
  const notes: string[] = [];
  const unapplicable: string[] = [];
  let partial = false;
  if (limits.memoryBytes !== undefined && !byCgroup.has("memoryBytes")) {
    flags.push(`--data=${limits.memoryBytes}:${limits.memoryBytes}`);
    notes.push("memory: RLIMIT_DATA per process, not the seat's total");
    partial = true;
  }
  if (limits.processes !== undefined && !byCgroup.has("processes")) {
    flags.push(`--nproc=${limits.processes}:${limits.processes}`);
    notes.push("processes: RLIMIT_NPROC, counted over every process of the host uid");
    partial = true;
  }
  if (limits.cpus !== undefined && !byCgroup.has("cpus")) unapplicable.push("cpus (a CPU quota needs the seat's own cgroup; no rlimit expresses it)");
  if (limits.openFiles !== undefined) {
    flags.push(`--nofile=${limits.openFiles}:${limits.openFiles}`);
    notes.push("open files: RLIMIT_NOFILE per process");
  }
  if (flags.length === 0) return { argv: [], partial: false, notes: byCgroup.size > 0 ? [] : ["no limits asked for"], unapplicable };
  return { argv: [prlimit, ...flags, "--"], partial, notes, unapplicable };
}
