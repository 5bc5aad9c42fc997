import { lstat, open, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { TeamdHome } from "./home.js";
import type { RunState, StoppedBy } from "./run-state.js";

/**
 * Where each seat's output is kept, per run (issue 22): TEAMD_HOME/logs/TEAM/SEAT/, outside
 * every seat's view (no plan binds TEAMD_HOME/logs), the daemon's alone — in system mode
 * readable by group `teamd`, like the ledger. Per run: RUN.json (how it stands), RUN.log (the
 * newest part of its pty output, raw), RUN.log.1 (the part before it, when it rotated). Output
 * is owner-visible material, never a ledger record: the seat_stop record carries only its
 * size and hash.
 */
export interface RunMeta {
  readonly schema: 1;
  readonly team: string;
  readonly seat: string;
  readonly runId: string;
  readonly startedAt: string;
  /** The start command, as recorded (credential shapes redacted). */
  readonly command: readonly string[];
  readonly state: RunState;
  readonly endedAt?: string;
  readonly exitCode?: number;
  readonly stoppedBy?: StoppedBy;
  readonly reason?: string;
  /** Output bytes the run wrote in all; kept: the last two parts of at most RUN_LOG_PART_BYTES each. */
  readonly bytes: number;
  /** Bytes rotated away (the oldest output), so a reader knows the log does not start at the start. */
  readonly dropped: number;
  /**
   * HMAC-SHA256 (hex) of every byte the run wrote, keyed by `hmacKey`, when it ended; the
   * seat_stop record carries the HMAC, never the key. Keyed, not a bare digest: the ledger is
   * permanent and exported, and a bare sha-256 of short output (a PIN the agent printed) gives
   * the output back to anyone who hashes the candidates (found by an attack from a seat).
   */
  readonly hmac?: string;
  /** The run's own key for `hmac`, here only (owner-readable, beside the output it keys). */
  readonly hmacKey?: string;
}

/** One part of a run's output; two are kept, so a run keeps at most twice this. */
export const RUN_LOG_PART_BYTES = 8 * 1024 * 1024;
/** Runs kept per seat; the oldest ended ones go when a new run starts. */
export const RUNS_KEPT = 20;

const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;

export function runLogDir(home: TeamdHome, team: string, seat: string): string {
  return join(home.root, "logs", team, seat);
}

export function logsRoot(home: TeamdHome): string {
  return join(home.root, "logs");
}

export function runFiles(dir: string, runId: string): { meta: string; log: string; older: string } {
  if (!RUN_ID.test(runId)) throw new Error(`'${runId}' is not a run id (teamd logs SEAT --runs lists them)`);
  return { meta: join(dir, `${runId}.json`), log: join(dir, `${runId}.log`), older: join(dir, `${runId}.log.1`) };
}

/** Every kept run of a seat, oldest first. A file that does not parse is skipped, never trusted. */
export async function listRuns(home: TeamdHome, team: string, seat: string): Promise<RunMeta[]> {
  const dir = runLogDir(home, team, seat);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const runs: RunMeta[] = [];
  for (const name of names) {
    if (!name.endsWith(".json") || !RUN_ID.test(name.slice(0, -5))) continue;
    const meta = await readMeta(join(dir, name));
    if (meta !== undefined) runs.push(meta);
  }
  return runs.sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : a.runId < b.runId ? -1 : 1));
}

export async function readMeta(path: string): Promise<RunMeta | undefined> {
  try {
    const info = await lstat(path);
    if (!info.isFile()) return undefined;
    const value = JSON.parse(await readFile(path, "utf8")) as RunMeta;
    return value.schema === 1 && typeof value.runId === "string" && typeof value.startedAt === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

/** A run's kept output, oldest byte first (the rotated part, then the current one). */
export async function runOutput(home: TeamdHome, team: string, seat: string, runId: string): Promise<Buffer> {
  const files = runFiles(runLogDir(home, team, seat), runId);
  const part = async (path: string) => {
    try {
      const info = await lstat(path);
      return info.isFile() ? await readFile(path) : Buffer.alloc(0);
    } catch {
      return Buffer.alloc(0);
    }
  };
  return Buffer.concat([await part(files.older), await part(files.log)]);
}

/** The last `bytes` of a run's output (enough for its last lines: `teamd status`), read without loading the whole log. */
export async function runTail(home: TeamdHome, team: string, seat: string, runId: string, bytes: number): Promise<Buffer> {
  const files = runFiles(runLogDir(home, team, seat), runId);
  const tail = async (path: string, want: number): Promise<Buffer> => {
    if (want <= 0) return Buffer.alloc(0);
    try {
      if (!(await lstat(path)).isFile()) return Buffer.alloc(0);
      const handle = await open(path, "r");
      try {
        const size = (await handle.stat()).size;
        const length = Math.min(size, want);
        const buffer = Buffer.alloc(length);
        const { bytesRead } = await handle.read(buffer, 0, length, size - length);
        return buffer.subarray(0, bytesRead);
      } finally {
        await handle.close();
      }
    } catch {
      return Buffer.alloc(0);
    }
  };
  const current = await tail(files.log, bytes);
  return Buffer.concat([await tail(files.older, bytes - current.length), current]);
}
