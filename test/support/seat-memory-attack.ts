import { readFileSync } from "node:fs";
import { expect } from "vitest";
import { join } from "node:path";
import { appliedTeam } from "./applied-team.js";
import { ROOT } from "./programs.js";
import { type TeamdHarness } from "./teamd-harness.js";
import { srcWriterTeamFile } from "./team-file.js";

/**
 * The frame of the attacks on the daemon's memory through a seat's socket (test/escape/seat-*-attack.test.ts):
 * a real daemon with seat alpha started, an attacker (node source, raw HTTP/2 on the seat's socket)
 * run inside the seat, and the daemon's resident memory read from the host while it runs.
 */
export interface MemoryTarget {
  readonly h: TeamdHarness;
  readonly daemonPid: number;
  /** The protocol version a raw client sends in its `teamd-protocol` header. */
  readonly protocol: string;
}

const KIB = 1024;

/**
 * The start of every raw HTTP/2 attacker script run in a seat (test/escape/seat-*-attack.test.ts,
 * seat-reset-flood.test.ts): `u(len, type, flags, id)`, a frame header, and
 * `frameReader(onFrame, after)`, a socket's data handler that cuts what the server sends into
 * frames, calls `onFrame(type, flags, id, payload)` for each whole one, then `after()`.
 */
export const RAW_H2 = `
const u = (len, type, flags, id) => { const b = Buffer.alloc(9); b.writeUIntBE(len, 0, 3); b[3] = type; b[4] = flags; b.writeUInt32BE(id, 5); return b; };
const frameReader = (onFrame, after) => {
  let buf = Buffer.alloc(0);
  return (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 9) {
      const len = buf.readUIntBE(0, 3), type = buf[3], flags = buf[4], id = buf.readUInt32BE(5) & 0x7fffffff;
      if (buf.length < 9 + len) break;
      const p = buf.subarray(9, 9 + len); buf = buf.subarray(9 + len);
      onFrame(type, flags, id, p);
    }
    after();
  };
};
`;

/** A team whose seat alpha writes src/, started. */
export async function memoryTarget(prefix: string): Promise<MemoryTarget> {
  const h = await appliedTeam(prefix, srcWriterTeamFile("alpha"), { "README.md": "hello\n" }, { timeoutMs: 60_000 });
  await h.ok(["start", "--team", "proj", "--json"]);
  const daemonPid = h.daemon?.child.pid;
  if (daemonPid === undefined) throw new Error("no daemon pid");
  const protocol = /PROTOCOL_VERSION = (\d+)/.exec(readFileSync(join(ROOT, "src/rpc/protocol.ts"), "utf8"))?.[1];
  if (protocol === undefined) throw new Error("no PROTOCOL_VERSION in src/rpc/protocol.ts");
  return { h, daemonPid, protocol };
}

/** A process's resident memory now and at its peak (VmRSS, VmHWM), in bytes. */
export function memoryOf(pid: number): { rss: number; hwm: number } {
  const text = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(text)?.[1] ?? NaN) * KIB;
  return { rss: field("VmRSS"), hwm: field("VmHWM") };
}

export interface AttackRun {
  /** The daemon's RSS before the attacker started. */
  readonly before: number;
  /** Its peak RSS over that, sampled every 100 ms while the attacker ran. */
  readonly growth: number;
  /** What it still held once the attacker ended. */
  readonly held: number;
  readonly hwm: number;
  /** The attacker's last line of JSON. */
  readonly line: string;
}

/** Runs `script` with `args` by node in seat alpha (PROTOCOL in its environment), for at most `maxMs`. */
export async function attackFromSeat(target: MemoryTarget, script: string, args: readonly (string | number)[], maxMs: number): Promise<AttackRun> {
  const before = memoryOf(target.daemonPid);
  let peak = before.rss;
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, memoryOf(target.daemonPid).rss);
    } catch {
      /* the daemon is gone: the caller's assertions say so */
    }
  }, 100);
  try {
    const encoded = Buffer.from(script).toString("base64");
    const r = await target.h.run(
      [
        "exec",
        "--timeout",
        String(Math.ceil(maxMs / 1000) + 10),
        "alpha@proj",
        "--",
        "sh",
        "-c",
        `PROTOCOL=${target.protocol} node -e "$(echo ${encoded} | base64 -d)" ${args.join(" ")}`,
      ],
      { timeoutMs: maxMs + 30_000 },
    );
    if (r.code !== 0) throw new Error(`the attacker failed (${r.code}): ${r.stderr}`);
    const held = memoryOf(target.daemonPid);
    peak = Math.max(peak, held.rss);
    const line = r.stdout
      .trim()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .pop();
    if (line === undefined) throw new Error(`the attacker printed no result: ${r.stdout}`);
    return { before: before.rss, growth: peak - before.rss, held: held.rss - before.rss, hwm: held.hwm, line };
  } finally {
    clearInterval(sampler);
  }
}

/** The refusals on record for streams a seat's socket reset for their tiny DATA frames (rpc.frames), by seat alpha. */
export async function framesRefusals(target: MemoryTarget): Promise<{ readonly action: string; readonly actor: string }[]> {
  const records = await target.h.records<{ type: string; action: string; actor: string; detail?: { rule?: string } }>();
  return records.filter((r) => r.type === "refusal" && r.detail?.rule === "rpc.frames").map((r) => ({ action: r.action, actor: r.actor }));
}

/** The refusals on record for a seat connection cut off for what reached no call (rpc.overhead), by seat alpha. */
export async function overheadRefusals(target: MemoryTarget): Promise<{ readonly action: string; readonly actor: string }[]> {
  const records = await target.h.records<{ type: string; action: string; actor: string; detail?: { rule?: string } }>();
  return records.filter((r) => r.type === "refusal" && r.detail?.rule === "rpc.overhead").map((r) => ({ action: r.action, actor: r.actor }));
}

/** How many rpc.frames and rpc.overhead refusals are on record now (the before of `expectEveryStreamEnded`). */
export async function refusalCounts(target: MemoryTarget): Promise<{ readonly frames: number; readonly overhead: number }> {
  return { frames: (await framesRefusals(target)).length, overhead: (await overheadRefusals(target)).length };
}

/**
 * Every stream of a 1-byte-frame attack ended, and each end is on record. Each stream is reset
 * (rpc.frames, one record each); or, where the attacker went on sending on streams already reset
 * (or sent frames HTTP/2 ignores), its connection was cut off first for that overhead
 * (src/rpc/overhead-meter.ts: every connection closed, rpc.overhead on record), its open streams
 * with it. A cut connection's GOAWAY is not asserted: an attacker writing without pause meets the
 * closed socket before it reads it. Nor are its resets counted against the records: the streams
 * the cut ends are reset too (CANCEL), unrecorded.
 */
export async function expectEveryStreamEnded(
  target: MemoryTarget,
  stats: FrameAttackStats,
  streams: number,
  before: { readonly frames: number; readonly overhead: number },
): Promise<void> {
  const now = await refusalCounts(target);
  const frames = now.frames - before.frames;
  if (now.overhead === before.overhead) {
    expect(stats.rst).toBe(streams);
    expect(frames).toBe(streams);
    return;
  }
  expect(stats.closed).toBe(stats.conns);
  // The frame bound acted only on streams the attacker saw reset — on none, where the cut came
  // first (a run of the suite: 64 KiB of ignored frames before each 1-byte frame cut the
  // connection at 12 frames a stream, under the frame bound's 65).
  expect(frames).toBeGreaterThanOrEqual(0);
  expect(frames).toBeLessThanOrEqual(stats.rst);
}

/** Mebibytes, one decimal, for the attacks' lines. */
export const mib = (n: number): string => (n / (KIB * KIB)).toFixed(1);

/** What a frame attacker prints on its last line: connections, what ended them and its streams, what it sent. */
export interface FrameAttackStats {
  conns: number;
  closed: number;
  goaway: number;
  rst: number;
  ended: number;
  sent: number;
  frames: number;
  sendMs: number;
}

/** What a paused-stream attacker (seat-paused-frames-attack, seat-pool-pin-attack) prints besides. */
export interface PausedAttackStats extends FrameAttackStats {
  wire: number;
  /** Streams that sent all of their third message but its last byte (read: the turn holders). */
  full: number;
}

export interface PausedShape {
  readonly conns: number;
  readonly streams: number;
  /** Payload bytes per DATA frame. */
  readonly frame: number;
  /** The attacker's whole run, ms (default 200 s). */
  readonly maxMs?: number;
}

/**
 * Runs a paused-stream attacker in seat alpha with its arguments (SOCKET CONNS STREAMS SIZE FRAME
 * EXTRA QUIET HOLD MAX: a third message declaring 256 KiB, the receive cap, never finished; 4 s
 * without progress, then 4 s held), the daemon's RSS sampled while it runs; logs one line, then
 * gives the daemon 3 s to let the abandoned writes go before the next shape.
 */
export async function pausedStreamsAttack(
  target: MemoryTarget,
  script: string,
  label: string,
  shape: PausedShape,
  extra: { readonly name: string; readonly bytes: number },
): Promise<{ growth: number; held: number; hwm: number; stats: PausedAttackStats }> {
  const maxMs = shape.maxMs ?? 200_000;
  const r = await attackFromSeat(
    target,
    script,
    ["/run/teamd/shim.sock", shape.conns, shape.streams, 256 * KIB, shape.frame, extra.bytes, 4000, 4000, maxMs],
    maxMs,
  );
  const stats = JSON.parse(r.line) as PausedAttackStats;
  console.log(
    `${label} (${shape.frame}-byte frames, ${extra.name} ${extra.bytes}, ${shape.conns}x${shape.streams}): sent ${mib(stats.sent)} MiB in ${stats.frames} DATA frames (${mib(stats.wire)} MiB on the wire, ${stats.sendMs} ms); daemon RSS before ${mib(r.before)} MiB, peak growth ${mib(r.growth)} MiB, held ${mib(r.held)} MiB, VmHWM ${mib(r.hwm)} MiB; ${JSON.stringify(stats)}`,
  );
  await new Promise((resolve) => setTimeout(resolve, 3000));
  return { growth: r.growth, held: r.held, hwm: r.hwm, stats };
}
