import { open, readdir } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { UsageError } from "../../src/rpc/errors.js";
import { resolveHome, type TeamdHome } from "../host/home.js";
import { plainLines } from "../host/plain-text.js";
import { drawsScreen, readableLines } from "../host/screen-text.js";
import { describeRunEnd } from "../host/run-state.js";
import { listRuns, logsRoot, readMeta, runFiles, runLogDir, runOutput, type RunMeta } from "../host/run-logs.js";
import { terminalJson, terminalText } from "../host/terminal-text.js";
import { seatTarget } from "./seat.js";

/**
 * `teamd logs SEAT`: what a seat's command printed, kept per run after it ends (the
 * docker/kubectl word; `teamd log` stays the ledger). Read from TEAMD_HOME/logs directly, so
 * it works with the daemon down. A seat's output is shown as plain text — its escape
 * sequences dropped (daemon/host/plain-text.ts), or, for a program that draws a screen (an
 * agent's UI), the screen it left (daemon/host/screen-text.ts); each line through terminalText — unless
 * --raw asks for the bytes as the pty wrote them, which go only to a pipe or a file.
 */
export interface LogsOptions {
  readonly team?: string;
  readonly run?: string;
  readonly runs?: boolean;
  readonly follow?: boolean;
  readonly lines?: string;
  readonly raw?: boolean;
  readonly json?: boolean;
}

const FOLLOW_POLL_MS = 250;

export async function logsCommand(spec: string, options: LogsOptions): Promise<void> {
  const home = resolveHome();
  const named = seatTarget(spec, options.team);
  const team = named.team !== "" ? named.team : await teamOfLogs(home, named.seat);
  const seat = named.seat;
  const n = options.lines === undefined ? undefined : lineCount(options.lines);
  if (options.raw && process.stdout.isTTY)
    throw new UsageError("--raw writes the seat's bytes as its terminal got them: send them to a file or a pipe, not to this terminal");
  if (options.raw && options.json) throw new UsageError("--raw and --json do not go together");
  const runs = await listRuns(home, team, seat);
  if (options.runs) return printRuns(team, seat, runs, options.json === true);
  if (runs.length === 0) throw new Error(`seat ${seat}@${team} has no output kept: it has not run since teamd kept logs (teamd start ${seat}@${team})`);
  const run = options.run === undefined ? runs[runs.length - 1] : runs.find((r) => r.runId === options.run);
  if (run === undefined) throw new UsageError(`seat ${seat}@${team} has no run '${options.run}' kept; teamd logs ${seat}@${team} --runs lists them`);
  const output = await runOutput(home, team, seat, run.runId);
  if (options.raw) {
    await write(n === undefined ? output : Buffer.from(lastRawLines(output, n)));
  } else {
    const { lines, note } = await readableLines(output);
    if (note !== undefined) process.stderr.write(`teamd logs: ${note}\n`);
    const shown = n === undefined ? lines : lines.slice(Math.max(0, lines.length - n));
    if (options.json && !options.follow) {
      process.stdout.write(terminalJson(JSON.stringify({ team, seat, run, truncated: run.dropped > 0, lines: shown })) + "\n");
      return;
    }
    if (run.dropped > 0 && n === undefined && !options.json)
      process.stderr.write(`teamd logs: the first ${run.dropped} bytes of this run's output were rotated away\n`);
    await emitLines(shown, options.json === true);
  }
  if (options.follow) {
    if (!options.raw && drawsScreen(output))
      process.stderr.write("teamd logs: this run draws a screen; what follows is its new text line by line (teamd attach shows the screen live)\n");
    await follow(home, run, output.length, options);
  } else if (!options.json && run.state !== "running") process.stderr.write(`teamd logs: run ${terminalText(`${run.runId} ${endWords(run)}`)}\n`);
}

/** The one team whose logs have this seat; else name it. */
async function teamOfLogs(home: TeamdHome, seat: string): Promise<string> {
  let teams: string[] = [];
  try {
    teams = await readdir(logsRoot(home));
  } catch {
    // no logs yet
  }
  const found: string[] = [];
  for (const team of teams.sort()) if ((await listRuns(home, team, seat)).length > 0) found.push(team);
  if (found.length === 1) return found[0] as string;
  if (found.length === 0)
    throw new Error(`no seat '${seat}' has output kept on this machine (teamd status lists the seats; a seat's output is kept from its first start)`);
  throw new UsageError(`seat '${seat}' has runs in several teams (${found.join(", ")}); name one: ${seat}@TEAM`);
}

function lineCount(text: string): number {
  if (!/^\d{1,9}$/.test(text)) throw new UsageError(`-n takes a number of lines, not '${text}'`);
  return Number(text);
}

function endWords(run: RunMeta): string {
  if (run.state === "running" || run.state === "starting") return "is running";
  const end = {
    state: run.state as "ended" | "stopped" | "crashed" | "suspended",
    reason: run.reason ?? "",
    ...(run.exitCode !== undefined ? { exitCode: run.exitCode } : {}),
    ...(run.stoppedBy !== undefined ? { stoppedBy: run.stoppedBy } : {}),
  };
  return `${["ended", "stopped", "crashed", "suspended"].includes(run.state) ? describeRunEnd(end) : run.state}${run.endedAt ? ` at ${run.endedAt}` : ""}`;
}

function printRuns(team: string, seat: string, runs: readonly RunMeta[], json: boolean): void {
  if (json) {
    process.stdout.write(terminalJson(JSON.stringify({ team, seat, runs })) + "\n");
    return;
  }
  if (runs.length === 0) {
    process.stdout.write(`seat ${seat}@${team}: no runs kept\n`);
    return;
  }
  for (const run of runs) process.stdout.write(terminalText(`${run.runId}  ${run.startedAt}  ${endWords(run)}  ${run.bytes} bytes`) + "\n");
}

async function emitLines(lines: readonly string[], json: boolean): Promise<void> {
  const text = lines.map((l) => (json ? terminalJson(JSON.stringify({ line: l })) : terminalText(l))).join("\n");
  if (text !== "" || lines.length > 0) await write(Buffer.from(text + "\n"));
}

function lastRawLines(output: Buffer, n: number): Buffer {
  let at = output.length;
  if (at > 0 && output[at - 1] === 0x0a) at -= 1;
  for (let seen = 0; at > 0; at -= 1) if (output[at - 1] === 0x0a && ++seen === n) break;
  return output.subarray(at);
}

/**
 * -f: what the run writes from here on, until it ends (then its end, and we stop) or Ctrl-C.
 * Polled: the log rotates by rename, so a part that shrank or was replaced is read from its start.
 */
async function follow(home: TeamdHome, run: RunMeta, shown: number, options: LogsOptions): Promise<void> {
  const files = runFiles(runLogDir(home, run.team, run.seat), run.runId);
  let offset = Math.max(0, shown - ((await statOf(files.older))?.size ?? 0));
  let partial = "";
  let ino = (await statOf(files.log))?.ino ?? -1;
  for (;;) {
    const meta = await readMeta(files.meta);
    const nowIno = (await statOf(files.log))?.ino ?? -1;
    let chunk: Buffer;
    if (nowIno !== ino) {
      // Rotated: the rest of the part we were reading is now the older part; then the new one from its start.
      const rest = await readFrom(files.older, offset);
      const fresh = await readFrom(files.log, 0);
      chunk = Buffer.concat([rest, fresh]);
      offset = fresh.length;
      ino = nowIno;
    } else {
      chunk = await readFrom(files.log, offset);
      offset += chunk.length;
    }
    if (chunk.length > 0) {
      if (options.raw) await write(chunk);
      else {
        const text = partial + chunk.toString("utf8");
        const cut = text.lastIndexOf("\n");
        partial = cut < 0 ? text : text.slice(cut + 1);
        if (cut >= 0) await emitLines(plainLines(text.slice(0, cut + 1)), options.json === true);
      }
    }
    if (meta === undefined || (meta.state !== "running" && meta.state !== "starting")) {
      if (partial !== "" && !options.raw) await emitLines(plainLines(partial), options.json === true);
      if (meta !== undefined && !options.json) process.stderr.write(`teamd logs: run ${terminalText(`${meta.runId} ${endWords(meta)}`)}\n`);
      return;
    }
    if (chunk.length === 0) await sleep(FOLLOW_POLL_MS);
  }
}

/** A file's size and inode, or undefined when it is not there (a part not yet written, or rotated away). */
async function statOf(path: string): Promise<{ size: number; ino: number } | undefined> {
  try {
    const handle = await open(path, "r");
    try {
      const info = await handle.stat();
      return { size: info.size, ino: info.ino };
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
}

async function readFrom(path: string, offset: number): Promise<Buffer> {
  try {
    const handle = await open(path, "r");
    try {
      const size = (await handle.stat()).size;
      if (size <= offset) return Buffer.alloc(0);
      const buffer = Buffer.alloc(Math.min(size - offset, 1024 * 1024));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
      return buffer.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  } catch {
    return Buffer.alloc(0);
  }
}

function write(chunk: Uint8Array): Promise<void> {
  return new Promise((resolve) => {
    if (process.stdout.write(chunk)) resolve();
    else process.stdout.once("drain", () => resolve());
  });
}
