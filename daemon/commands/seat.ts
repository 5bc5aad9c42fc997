import { UsageError } from "../../src/rpc/errors.js";
import { readFileSync } from "node:fs";
import { ControlService } from "../../src/gen/teamd/v1/control_pb.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { resolveHome } from "../host/home.js";
import { checkName } from "../host/names.js";
import { AsyncQueue } from "../../src/rpc/async-queue.js";
import { ScreenFilter } from "../host/screen-filter.js";
import { terminalStream } from "../host/terminal-text.js";

/**
 * `teamd start`, `teamd stop`, `teamd exec`: thin clients of the control socket. The daemon
 * holds the lifecycle (daemon/lifecycle/manager.ts); these name the seat and print what it did.
 */
export interface SeatTarget {
  readonly team: string;
  readonly seat: string;
}

/** `SEAT`, `SEAT@TEAM`, or `--team TEAM` alone (every seat of the team). */
export function seatTarget(spec: string | undefined, team: string | undefined): SeatTarget {
  if (spec === undefined) {
    if (team === undefined) throw new UsageError("name a seat (SEAT or SEAT@TEAM) or a team (--team TEAM)");
    return { team: checkName("team", team), seat: "" };
  }
  const [seat = "", inSpec, extra] = spec.split("@");
  if (extra !== undefined) throw new UsageError(`invalid seat '${spec}': expected SEAT or SEAT@TEAM`);
  if (inSpec !== undefined && team !== undefined && inSpec !== team) throw new UsageError(`'${spec}' names team '${inSpec}' but --team says '${team}'`);
  const t = inSpec ?? team;
  return { seat: checkName("seat", seat), team: t === undefined ? "" : checkName("team", t) };
}

function client(deadlineMs: number) {
  return createRpcClient(ControlService, resolveHome().controlSocket, { deadlineMs });
}

interface Shown {
  team: string;
  seat: string;
  state: string;
  initPid: number;
  runId: string;
  limits: string;
  repository: string;
  containment: string;
}

function show(s: Shown): Record<string, unknown> {
  return {
    team: s.team,
    seat: s.seat,
    state: s.state,
    initPid: s.initPid,
    runId: s.runId,
    limits: s.limits,
    repository: s.repository,
    containment: s.containment,
  };
}

export async function startCommand(spec: string | undefined, options: { team?: string; json?: boolean }): Promise<void> {
  const target = seatTarget(spec, options.team);
  const c = client(180_000);
  try {
    const reply = await c.startSeat(target);
    if (options.json) process.stdout.write(JSON.stringify({ started: reply.seats.map(show) }) + "\n");
    else if (reply.seats.length === 0) process.stdout.write("started: none (every seat with a start is already running)\n");
    else
      for (const s of reply.seats)
        process.stdout.write(`started: ${s.seat}@${s.team} (init pid ${s.initPid}, limits: ${s.limits}, repository ${s.repository})\n`);
    // Loudly, and on stderr even with --json: the owner asked for it, and must not forget it.
    for (const s of reply.seats) if (s.containment === "none") process.stderr.write(`${uncontainedWarning(s.seat, userName(s.uid))}\n`);
    // Containment not proven on this host by a current selftest: said, not refused (a broken one the daemon refuses).
    if (reply.seats.some((s) => s.containment !== "none")) {
      // Imported here: it runs bubblewrap (node:child_process), which status and exec, sharing this bundle, never need.
      const { selftestSummary } = await import("../host/selftest-record.js");
      const last = selftestSummary(resolveHome());
      if (last.standing === "unproven") process.stderr.write(`warning: ${last.reason}\n`);
    }
  } finally {
    c.close();
  }
}

/** What `teamd start` says of a seat that runs uncontained (`containment: none`). */
export function uncontainedWarning(seat: string, user: string): string {
  return `warning: seat ${seat} runs UNCONTAINED (containment: none in teamd.yaml): it can read and write everything ${user} can; refusals hold against a mistake only`;
}

/** The host user's name for a uid (from /etc/passwd), else "uid N". */
function userName(uid: number): string {
  try {
    for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
      const [name, , id] = line.split(":");
      if (name && Number(id) === uid) return `${name} (uid ${uid})`;
    }
  } catch {
    // no passwd to read: the number says it
  }
  return `uid ${uid}`;
}

export async function stopCommand(spec: string | undefined, options: { team?: string; json?: boolean }): Promise<void> {
  const target = seatTarget(spec, options.team);
  const c = client(60_000);
  try {
    const reply = await c.stopSeat(target);
    if (options.json) process.stdout.write(JSON.stringify({ stopped: reply.stopped.map(show) }) + "\n");
    else if (reply.stopped.length === 0) process.stdout.write("stopped: none (not running)\n");
    else for (const s of reply.stopped) process.stdout.write(`stopped: ${s.seat}@${s.team}\n`);
  } finally {
    c.close();
  }
}

/** `teamd halt SEAT` / `teamd halt --team T`: the run ends suspended, into a handoff checkpoint its next run is given. */
export async function haltCommand(spec: string | undefined, options: { team?: string; reason?: string; json?: boolean }): Promise<void> {
  const target = seatTarget(spec, options.team);
  // SIGTERM, its grace, the kill, the record and the checkpoint, per seat at once.
  const c = client(60_000);
  try {
    const reply = await c.haltSeat({ ...target, reason: options.reason ?? "" });
    const halted = reply.halted.flatMap((h) => (h.seat === undefined ? [] : [{ seat: h.seat, seq: Number(h.checkpointSeq) }]));
    if (options.json) {
      process.stdout.write(JSON.stringify({ halted: halted.map((h) => ({ ...show(h.seat), checkpointSeq: h.seq === 0 ? null : h.seq })) }) + "\n");
      return;
    }
    if (halted.length === 0) process.stdout.write("halted: none (not running)\n");
    for (const h of halted) {
      const name = `${h.seat.seat}@${h.seat.team}`;
      process.stdout.write(
        h.seq === 0
          ? `halted: ${name} (suspended); its handoff checkpoint could not be recorded (teamd logs --daemon says why)\n`
          : `halted: ${name} (suspended); handoff checkpoint: record ${h.seq} (teamd checkpoint show ${name}); its next run is given it\n`,
      );
    }
  } finally {
    c.close();
  }
}

/** `teamd freeze SEAT` / `teamd thaw SEAT`: every process of the seat stops where it stands, or runs on. */
export async function freezeCommand(spec: string, options: { team?: string; json?: boolean; thaw: boolean }): Promise<void> {
  const target = seatTarget(spec, options.team);
  const c = client(30_000);
  try {
    const reply = await c.freezeSeat({ ...target, thaw: options.thaw });
    const s = reply.seat;
    if (s === undefined) throw new Error("the daemon answered without the seat");
    const seq = Number(reply.seq);
    if (options.json) process.stdout.write(JSON.stringify({ seat: show(s), frozen: s.frozen, seq: seq === 0 ? null : seq }) + "\n");
    else if (seq === 0) process.stdout.write(`${s.seat}@${s.team}: already ${s.frozen ? "frozen" : "running (not frozen)"}\n`);
    else
      process.stdout.write(
        `${s.seat}@${s.team}: ${s.frozen ? `frozen (record ${seq}); teamd thaw ${s.seat}@${s.team} lets it run on` : `thawed (record ${seq})`}\n`,
      );
  } finally {
    c.close();
  }
}

/**
 * The command's output goes to ours byte for byte — or, where ours is a terminal, with every
 * control character shown escaped (a seat's output must not drive the owner's terminal);
 * our exit code is its exit code.
 */
export async function execCommand(
  spec: string,
  command: readonly string[],
  options: { team?: string; timeout?: string; interactive?: boolean; tty?: boolean; stdin?: NodeJS.ReadableStream },
): Promise<void> {
  const target = seatTarget(spec, options.team);
  // commander keeps a `--` that separates teamd's options from the command's when it is not the first.
  const argv = command[0] === "--" ? command.slice(1) : command;
  if (argv.length === 0) throw new UsageError("exec needs a command: teamd exec SEAT -- CMD...");
  const seconds = execTimeout(options.timeout);
  // -t: a pty, our terminal at it (stdin is the terminal itself, so -i adds nothing).
  if (options.tty) return execTtyCommand(target, argv, seconds);
  const stdin = options.interactive ? await readAll(options.stdin ?? process.stdin, EXEC_STDIN_BYTES) : new Uint8Array(0);
  const c = createRpcClient(ControlService, resolveHome().controlSocket, {
    deadlineMs: 30_000,
    // No limit (--timeout 0): the call has none either; Ctrl-C ends it, and the daemon kills the command.
    streamDeadlineMs: seconds === 0 ? NO_DEADLINE_MS : seconds * 1000 + 30_000,
  });
  const views = {
    stdout: process.stdout.isTTY ? terminalStream() : undefined,
    stderr: process.stderr.isTTY ? terminalStream() : undefined,
  };
  const relay = (name: "stdout" | "stderr", chunk: Uint8Array) => {
    const view = views[name];
    return write(process[name], view === undefined ? chunk : Buffer.from(view.write(chunk)));
  };
  try {
    // Output is written as it arrives (streamed by the daemon), in order per stream.
    for await (const reply of c.exec({
      team: target.team,
      seat: target.seat,
      command: [...argv],
      timeoutMs: Math.round(seconds * 1000),
      noTimeout: seconds === 0,
      stdin,
    })) {
      const event = reply.event;
      if (event.case === "stdout" || event.case === "stderr") await relay(event.case, event.value);
      else if (event.case === "done") {
        for (const name of ["stdout", "stderr"] as const) {
          const rest = views[name]?.end();
          if (rest) await write(process[name], Buffer.from(rest));
        }
        if (event.value.truncated) process.stderr.write("teamd exec: output truncated at 4 MiB per stream\n");
        if (event.value.how === "killed")
          process.stderr.write(
            seconds === 0 ? "teamd exec: killed (the seat stopped)\n" : `teamd exec: killed after ${seconds} s (--timeout), or the seat stopped\n`,
          );
        process.exitCode = event.value.exitCode;
        // The command's outcome is known and its output written: exit now, not after the
        // call's trailers and the connection's close (issue 26: ~2-3 ms of every exec). Only
        // where nothing is left to write (pipes and files are written in line on Linux; where
        // they are not, the ordinary end below flushes them first).
        if (process.stdout.writableLength === 0 && process.stderr.writableLength === 0) process.exit();
      }
    }
  } finally {
    c.close();
  }
}

/** What `exec -i` reads of our stdin before the call (the RPC carries it whole). */
export const EXEC_STDIN_BYTES = 16 * 1024 * 1024;
/** A call "without" a deadline: grpc-js takes a finite one; a year is none for a person. */
const NO_DEADLINE_MS = 365 * 24 * 3600 * 1000;

/** `--timeout SECONDS`: 1 to 86400, or 0 for no limit; absent: 60. */
export function execTimeout(text: string | undefined): number {
  if (text === undefined) return 60;
  const seconds = /^\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : NaN;
  if (!Number.isFinite(seconds) || seconds > 86_400) throw new UsageError(`--timeout takes seconds, at most 86400, or 0 for no limit; not '${text}'`);
  return seconds;
}

/** All of a stream, refusing past `cap` bytes (exec -i carries stdin in one message). */
async function readAll(stream: NodeJS.ReadableStream, cap: number): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer | string>) {
    const data = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    size += data.length;
    if (size > cap) throw new UsageError(`exec -i carries at most ${cap / 2 ** 20} MiB of standard input; pass a file inside the seat instead`);
    chunks.push(data);
  }
  return Buffer.concat(chunks);
}

function write(stream: NodeJS.WriteStream, chunk: Uint8Array): Promise<void> {
  return new Promise((resolve) => {
    if (stream.write(chunk)) resolve();
    else stream.once("drain", () => resolve());
  });
}

/** The detach key: Ctrl-] (0x1d), as telnet's escape; the seat never sees it. */
export const DETACH_KEY = 0x1d;

/**
 * `teamd attach SEAT`: the owner's terminal at the seat's pty, raw, until Ctrl-] or the seat
 * ends. Needs a terminal: a seat's pty is for a person; `teamd exec` is for scripts.
 */
export async function attachCommand(spec: string, options: { team?: string }): Promise<void> {
  const target = seatTarget(spec, options.team);
  const ended = await terminalSession(target, undefined);
  process.stderr.write(
    ended === undefined
      ? `\r\nteamd: detached from ${target.seat}${target.team ? `@${target.team}` : ""}\n`
      : `\r\nteamd: the seat's command ended (${ended})\n`,
  );
}

/**
 * `teamd exec -t SEAT -- CMD`: the command in a pty of its own inside the running seat, our
 * terminal at it (raw, through the same screen filter as attach); our exit code is its own.
 * Ctrl-] leaves, and the daemon kills the command.
 */
export async function execTtyCommand(target: SeatTarget, argv: readonly string[], seconds: number): Promise<void> {
  const ended = await terminalSession(target, { command: argv, seconds });
  if (ended === undefined) {
    process.stderr.write(`\r\nteamd exec: left with Ctrl-]; the command was killed\n`);
    process.exitCode = 130;
    return;
  }
  const [how = "", code = "1"] = ended.split(" ");
  if (how === "killed")
    process.stderr.write(
      seconds === 0 ? "\r\nteamd exec: killed (the seat stopped)\n" : `\r\nteamd exec: killed after ${seconds} s (--timeout), or the seat stopped\n`,
    );
  process.exitCode = Number.isInteger(Number(code)) ? Number(code) : 1;
}

/** Our terminal at a pty of the seat (its own, or an exec's): until Ctrl-] (undefined) or the command's end (how it ended). */
async function terminalSession(target: SeatTarget, exec: { command: readonly string[]; seconds: number } | undefined): Promise<string | undefined> {
  const stdin = process.stdin;
  const stdout = process.stdout;
  if (!stdin.isTTY || !stdout.isTTY) {
    throw new UsageError(
      exec === undefined
        ? "teamd attach needs a terminal (stdin and stdout are not both a tty); to run one command in the seat without one, use: teamd exec SEAT -- CMD..."
        : "teamd exec -t needs a terminal (stdin and stdout are not both a tty); without one: teamd exec [-i] SEAT -- CMD...",
    );
  }
  const c = createRpcClient(ControlService, resolveHome().controlSocket, { deadlineMs: 30_000, streamDeadlineMs: 365 * 24 * 3600 * 1000 });
  type In = Parameters<typeof c.attach>[0] extends AsyncIterable<infer I> ? I : never;
  const queue = new AsyncQueue<In>();
  const size = () => ({ cols: stdout.columns, rows: stdout.rows });
  const command = exec === undefined ? {} : { command: [...exec.command], timeoutMs: Math.round(exec.seconds * 1000), noTimeout: exec.seconds === 0 };
  queue.push({ input: { case: "open", value: { team: target.team, seat: target.seat, size: size(), ...command } } });
  const onResize = () => queue.push({ input: { case: "resize", value: size() } });
  const onKeys = (chunk: Buffer) => {
    const at = chunk.indexOf(DETACH_KEY);
    if (at < 0) return queue.push({ input: { case: "keys", value: chunk } });
    if (at > 0) queue.push({ input: { case: "keys", value: chunk.subarray(0, at) } });
    queue.close();
  };
  let raw = false;
  let ended: string | undefined;
  // What the seat's pty sends passes screen control and drops what reaches beyond the screen
  // (the clipboard, queries, passthrough: daemon/host/screen-filter.ts), scrollback included.
  const screen = new ScreenFilter();
  try {
    for await (const reply of c.attach(queue.drain())) {
      const output = reply.output;
      if (output.case === "ready") {
        const what = exec === undefined ? "attached to" : "exec in a pty of";
        process.stderr.write(
          `teamd: ${what} ${output.value.seat}@${output.value.team} (containment: ${output.value.containment}); ${exec === undefined ? "detach" : "leave (kills the command)"} with Ctrl-]\r\n`,
        );
        stdin.setRawMode(true);
        raw = true;
        stdin.on("data", onKeys);
        stdout.on("resize", onResize);
        stdin.resume();
      } else if (output.case === "data") await write(stdout, screen.write(output.value));
      else if (output.case === "ended") ended = output.value;
      else if (output.case === "detached") break;
    }
  } finally {
    // Leave the terminal as it was: the seat's modes undone (alternate screen, mouse, cursor, keys).
    if (raw) await write(stdout, Buffer.concat([screen.end(), screen.restore()]));
    stdin.off("data", onKeys);
    stdout.off("resize", onResize);
    if (raw) stdin.setRawMode(false);
    stdin.pause();
    c.close();
  }
  const dropped = [...screen.counts.dropped].map(([kind, n]) => `${kind} ×${n}`);
  if (dropped.length > 0)
    process.stderr.write(`\r\nteamd: dropped what reached beyond the screen (the clipboard, queries, passthrough): ${dropped.join(", ")}`);
  return ended;
}
