import type { CanonicalValue } from "./canonical.js";
import { type InputPath, type PolicyProblem, problem } from "./policy-input.js";
import { isPlainObject } from "./records.js";

/**
 * A seat's resource limits (`start.limits` in the team file): part of its pinned execution
 * context (§10), so they are in the start-context hash — a seat with its memory cap lifted is
 * a different seat, never a silent change. Pure: parsing only; whether the host can apply
 * them is the launcher's question, and a limit asked for that cannot be applied stops the
 * seat from starting (src/sandbox/cgroup-plan.ts).
 *
 *   limits:
 *     memory: 512M        # the seat's whole process tree (bytes; K, M, G, T suffixes: powers of 1024)
 *     processes: 256      # processes and threads the seat may hold at once
 *     cpus: 1.5           # CPU time per wall second, in CPUs (a quota, not a share)
 *     open-files: 1024    # per process (RLIMIT_NOFILE)
 *
 * or `limits: none` — the owner's explicit word that the seat runs without limits. Absent:
 * no limit is asked for (the seat still gets its own cgroup for kill and metering where the
 * host allows one).
 */
export type StartLimits =
  | "none"
  | {
      readonly memoryBytes?: number;
      readonly processes?: number;
      readonly cpus?: number;
      readonly openFiles?: number;
    };

const KEYS = ["memory", "processes", "cpus", "open-files"] as const;
const UNITS: Readonly<Record<string, number>> = { "": 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };
/** Below this a seat cannot even start node (the shim); a typo like `memory: 512` (bytes) is refused. */
const MIN_MEMORY = 16 * 1024 ** 2;
const MAX_PROCESSES = 4_194_304;
const MAX_CPUS = 1024;

export function readLimits(value: unknown, at: InputPath, problems: PolicyProblem[]): StartLimits | undefined {
  if (value === "none") return "none";
  if (!isPlainObject(value)) {
    problems.push(
      problem(
        "teamfile.schema",
        at,
        "limits must be `none` or a map of limits",
        "write `limits: none`, or `memory:`, `processes:`, `cpus:`, `open-files:` indented under `limits:`",
      ),
    );
    return undefined;
  }
  const before = problems.length;
  const out: { memoryBytes?: number; processes?: number; cpus?: number; openFiles?: number } = {};
  for (const [key, v] of Object.entries(value)) {
    const where = [...at, key];
    if (!(KEYS as readonly string[]).includes(key)) {
      problems.push(problem("teamfile.schema", where, `unknown limit '${key}'`, `limits takes: ${KEYS.join(", ")}`, "key"));
    } else if (key === "memory") {
      const bytes = parseBytes(v);
      if (bytes === undefined)
        problems.push(
          problem(
            "teamfile.schema",
            where,
            `memory: '${String(v)}' is not a size`,
            "write a whole number with K, M, G or T (powers of 1024), e.g. `memory: 512M`",
          ),
        );
      else if (bytes < MIN_MEMORY)
        problems.push(
          problem(
            "teamfile.schema",
            where,
            `memory: ${String(v)} is below ${MIN_MEMORY / 1024 ** 2}M, too little to start a seat`,
            "write at least `memory: 16M` (a plain number is bytes)",
          ),
        );
      else out.memoryBytes = bytes;
    } else if (key === "cpus") {
      // A number, or its text: the policy's canonical form (re-read when a signed apply is
      // checked) holds integers only, so it writes CPUs as text (canonicalLimits).
      const n = typeof v === "number" ? v : typeof v === "string" && /^\d+(\.\d+)?$/.test(v) ? Number(v) : NaN;
      if (!Number.isFinite(n) || n < 0.01 || n > MAX_CPUS)
        problems.push(
          problem("teamfile.schema", where, `cpus: '${String(v)}' is not a number of CPUs`, `write a number from 0.01 to ${MAX_CPUS}, e.g. \`cpus: 1.5\``),
        );
      else out.cpus = Math.round(n * 100) / 100;
    } else {
      const n = typeof v === "number" ? v : NaN;
      const max = key === "processes" ? MAX_PROCESSES : 1_048_576;
      if (!Number.isSafeInteger(n) || n < 1 || n > max)
        problems.push(
          problem(
            "teamfile.schema",
            where,
            `${key}: '${String(v)}' is not a whole number from 1 to ${max}`,
            `write e.g. \`${key}: ${key === "processes" ? 256 : 1024}\` (no quotes)`,
          ),
        );
      else if (key === "processes") out.processes = n;
      else out.openFiles = n;
    }
  }
  if (problems.length > before) return undefined;
  return Object.freeze(out);
}

/** `512M` → bytes; a plain whole number is bytes. Undefined for anything else. */
export function parseBytes(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isSafeInteger(value) && value > 0 ? value : undefined;
  if (typeof value !== "string") return undefined;
  const m = /^(\d+)\s*([KMGT]?)i?B?$/i.exec(value.trim());
  if (m === null) return undefined;
  const bytes = Number(m[1]) * (UNITS[(m[2] ?? "").toUpperCase()] ?? NaN);
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : undefined;
}

/** The canonical form hashed into the execution context (keys sorted by canonicalJson). */
export function canonicalLimits(limits: StartLimits): CanonicalValue {
  if (limits === "none") return "none";
  return {
    ...(limits.memoryBytes !== undefined ? { memory: limits.memoryBytes } : {}),
    ...(limits.processes !== undefined ? { processes: limits.processes } : {}),
    // The canonical form holds integers only: CPUs (two decimals) are hashed as their text.
    ...(limits.cpus !== undefined ? { cpus: String(limits.cpus) } : {}),
    ...(limits.openFiles !== undefined ? { "open-files": limits.openFiles } : {}),
  };
}

/** For diffs and status: `memory 512M, processes 256, cpus 1.5` or `none`. */
export function showLimits(limits: StartLimits | undefined): string {
  if (limits === undefined) return "(not set)";
  if (limits === "none") return "none";
  const parts: string[] = [];
  if (limits.memoryBytes !== undefined) parts.push(`memory ${showBytes(limits.memoryBytes)}`);
  if (limits.processes !== undefined) parts.push(`processes ${limits.processes}`);
  if (limits.cpus !== undefined) parts.push(`cpus ${limits.cpus}`);
  if (limits.openFiles !== undefined) parts.push(`open-files ${limits.openFiles}`);
  return parts.length === 0 ? "(empty)" : parts.join(", ");
}

export function showBytes(bytes: number): string {
  for (const [unit, size] of [
    ["T", 1024 ** 4],
    ["G", 1024 ** 3],
    ["M", 1024 ** 2],
    ["K", 1024],
  ] as const)
    if (bytes % size === 0) return `${bytes / size}${unit}`;
  return String(bytes);
}
