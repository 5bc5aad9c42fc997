/**
 * Shared shape of benchmark results. Every bench module returns rows; main.ts prints them
 * as a table (or JSON with --json) and evaluates each row's target, if it has one, as a
 * ratio against a baseline measured in the same run — never against a fixed time.
 */
export interface BenchRow {
  /** Short name, e.g. "rpc.seat-whoami.p50". */
  readonly name: string;
  readonly value: number;
  /** Unit of value: "us", "calls/s", "appends/s", "ratio"... */
  readonly unit: string;
  /** Optional context printed beside the figure. */
  readonly note?: string;
  /** Optional target: value must be >= min or <= max. */
  readonly target?: { readonly min?: number; readonly max?: number; readonly text: string };
}

export function meetsTarget(row: BenchRow): boolean | undefined {
  if (!row.target) return undefined;
  if (row.target.min !== undefined && !(row.value >= row.target.min)) return false;
  if (row.target.max !== undefined && !(row.value <= row.target.max)) return false;
  return true;
}

/** Percentile of already-sorted numbers (nearest rank). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}
