import { createHmac, type Hmac } from "node:crypto";
import { chmodSync, chownSync, closeSync, constants, fchmodSync, fchownSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { TeamdHome } from "../host/home.js";
import { listRuns, logsRoot, RUN_LOG_PART_BYTES, RUNS_KEPT, runFiles, runLogDir, type RunMeta } from "../host/run-logs.js";
import type { RunEnd } from "../host/run-state.js";

/**
 * The writer of one run's output log (daemon/host/run-logs.ts has the layout and the reader).
 * Every byte the seat's pty writes is appended as it comes (synchronously: a chunk is at most
 * the pty's read size), so what a seat printed before it died is on disk when `teamd start`
 * or `teamd logs` looks. Bounded: two parts of RUN_LOG_PART_BYTES per run, RUNS_KEPT runs
 * per seat. The files are opened O_EXCL|O_NOFOLLOW in folders no seat can reach.
 */
export class RunLog {
  private fd: number | undefined;
  private partBytes = 0;
  private bytes = 0;
  private dropped = 0;
  private readonly hash: Hmac;
  private meta: RunMeta;

  private constructor(
    private readonly files: ReturnType<typeof runFiles>,
    private readonly access: Access,
    meta: RunMeta,
  ) {
    this.meta = meta;
    this.hash = createHmac("sha256", meta.hmacKey ?? "");
    this.fd = openPart(files.log, access);
    this.writeMeta();
  }

  /** A new run's log: its folder made, the seat's oldest ended runs beyond RUNS_KEPT removed. */
  static async open(
    home: TeamdHome,
    start: { team: string; seat: string; runId: string; startedAt: string; command: readonly string[]; hmacKey: string },
  ): Promise<RunLog> {
    const access = accessFor(home);
    const dir = runLogDir(home, start.team, start.seat);
    for (const folder of [logsRoot(home), join(logsRoot(home), start.team), dir]) makeFolder(folder, access);
    const kept = await listRuns(home, start.team, start.seat);
    const ended = kept.filter((run) => run.state !== "running" && run.state !== "starting");
    for (const old of ended.slice(0, Math.max(0, kept.length + 1 - RUNS_KEPT))) {
      const files = runFiles(dir, old.runId);
      for (const path of [files.older, files.log, files.meta]) rmSync(path, { force: true });
    }
    return new RunLog(runFiles(dir, start.runId), access, {
      schema: 1,
      team: start.team,
      seat: start.seat,
      runId: start.runId,
      startedAt: start.startedAt,
      command: [...start.command],
      state: "running",
      bytes: 0,
      dropped: 0,
      hmacKey: start.hmacKey,
    });
  }

  write(chunk: Uint8Array): void {
    if (this.fd === undefined) return;
    this.hash.update(chunk);
    this.bytes += chunk.byteLength;
    if (this.partBytes + chunk.byteLength > RUN_LOG_PART_BYTES && this.partBytes > 0) this.rotate();
    // A single chunk larger than a part (it cannot be, from a pty) is cut to the part's size.
    const kept = chunk.byteLength > RUN_LOG_PART_BYTES ? chunk.subarray(chunk.byteLength - RUN_LOG_PART_BYTES) : chunk;
    this.dropped += chunk.byteLength - kept.byteLength;
    let offset = 0;
    while (offset < kept.byteLength) offset += writeSync(this.fd, kept, offset);
    this.partBytes += kept.byteLength;
  }

  /** The run ended: the log closed, its meta says how; returns what the seat_stop record carries. */
  finish(end: RunEnd, endedAt: string): { bytes: number; hmac: string } {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    const hmac = this.hash.digest("hex");
    this.meta = {
      ...this.meta,
      state: end.state,
      endedAt,
      reason: end.reason,
      ...(end.exitCode !== undefined ? { exitCode: end.exitCode } : {}),
      ...(end.stoppedBy !== undefined ? { stoppedBy: end.stoppedBy } : {}),
      bytes: this.bytes,
      dropped: this.dropped,
      hmac,
    };
    this.writeMeta();
    return { bytes: this.bytes, hmac };
  }

  private rotate(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    try {
      this.dropped += statSync(this.files.older).size;
    } catch {
      // no older part yet
    }
    renameSync(this.files.log, this.files.older);
    this.fd = openPart(this.files.log, this.access);
    this.partBytes = 0;
  }

  private writeMeta(): void {
    const next = `${this.files.meta}.next`;
    rmSync(next, { force: true });
    const fd = openPart(next, this.access);
    try {
      writeSync(fd, JSON.stringify({ ...this.meta, bytes: this.bytes, dropped: this.dropped }) + "\n");
    } finally {
      closeSync(fd);
    }
    renameSync(next, this.files.meta);
  }
}

/** The reason a lost run's meta gives: the restart policy brings such a seat back when the daemon starts again. */
export const LOST_WITH_THE_DAEMON = "the daemon went down while the run lived";

/** Marks a run the daemon did not see end (it went down while the run lived): crashed, with why. */
export async function markRunLost(home: TeamdHome, team: string, seat: string, runId: string, endedAt: string): Promise<void> {
  const run = (await listRuns(home, team, seat)).find((r) => r.runId === runId);
  if (run === undefined || (run.state !== "running" && run.state !== "starting")) return;
  const files = runFiles(runLogDir(home, team, seat), runId);
  const next = `${files.meta}.next`;
  rmSync(next, { force: true });
  const fd = openPart(next, accessFor(home));
  try {
    writeSync(fd, JSON.stringify({ ...run, state: "crashed", endedAt, reason: `${LOST_WITH_THE_DAEMON}; its sweep killed what was left` }) + "\n");
  } finally {
    closeSync(fd);
  }
  renameSync(next, files.meta);
}

interface Access {
  readonly dirMode: number;
  readonly fileMode: number;
  readonly gid: number | undefined;
}

/** System mode with group `teamd`: the owner reads the logs as they read the ledger; otherwise the daemon's user alone. */
function accessFor(home: TeamdHome): Access {
  const gid = home.mode === "system" ? home.ownerGid : undefined;
  return gid === undefined ? { dirMode: 0o700, fileMode: 0o600, gid: undefined } : { dirMode: 0o2750, fileMode: 0o640, gid };
}

function makeFolder(path: string, access: Access): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  if (access.gid !== undefined) chownSync(path, 0, access.gid);
  chmodSync(path, access.dirMode);
}

function openPart(path: string, access: Access): number {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW | constants.O_APPEND, access.fileMode);
  if (access.gid !== undefined) fchownSync(fd, 0, access.gid);
  fchmodSync(fd, access.fileMode);
  return fd;
}
