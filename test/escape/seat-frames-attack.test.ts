import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import {
  RAW_H2,
  attackFromSeat,
  expectEveryStreamEnded,
  framesRefusals,
  memoryTarget,
  refusalCounts,
  type MemoryTarget,
  type FrameAttackStats,
} from "../support/seat-memory-attack.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Attacks docs/enforcement.md's "One seat cannot exhaust the daemon's memory through its socket"
 * (bound: 8 connections x 16 streams x (256 KiB message + 256 KiB window) = 64 MiB a seat) from
 * inside a real `teamd start`ed seat, over `/run/teamd/shim.sock`, with HTTP/2 written by hand
 * (raw frames on a unix socket: no grpc-js, no node:http2 client, which would coalesce writes).
 *
 * The bound counts bytes; the daemon's cost was per DATA frame. grpc-js's StreamDecoder kept an
 * unfinished message as one `data.slice()` per DATA frame (readPartialMessage), and node's
 * http2 hands JS one Buffer per DATA frame. A message of 256 KiB - 1 (under the receive cap)
 * sent as 1-byte DATA frames was 262,143 Buffer objects held by the daemon for 256 KiB of
 * payload: found by an attack (round eighteen), 4 MiB sent on one connection held ~500 MiB, and
 * 32 MiB on eight ~3.9 GiB. Nothing else bounded it: the stream is being read (its window is
 * given back at once), the message is under the cap, nghttp2's session memory does not see what
 * JS holds. Now a message is one buffer of its declared size (src/rpc/message-decoder.ts). Any
 * method will do (a unary one here: the message is never finished, so no handler ever runs).
 *
 * The control is the same number of bytes per stream in 16 KiB DATA frames, on all 8
 * connections: within the bound.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * The attacker: CONNS connections to SOCKET, STREAMS streams each calling METHOD, each sending a
 * gRPC prefix declaring SIZE bytes then SIZE - 1 of them in DATA frames of FRAME bytes, within
 * the server's flow-control windows (tracked from its SETTINGS and WINDOW_UPDATEs). It answers
 * SETTINGS and PING (the daemon's keepalive), and holds everything HOLD ms after the last byte
 * went out (or MAX ms in all), then prints one JSON line of what it saw.
 */
const ATTACK = `${RAW_H2}
const net = require("net");
const [socket, method, conns, streams, size, frame, hold, max] = process.argv.slice(1);
const C = +conns, S = +streams, N = +size, F = +frame, H = +hold;
const lit = (n, v) => { n = Buffer.from(n); v = Buffer.from(v); return Buffer.concat([Buffer.from([0, n.length]), n, Buffer.from([v.length]), v]); };
const block = Buffer.concat([lit(":method", "POST"), lit(":scheme", "http"), lit(":path", method), lit(":authority", "seat"),
  lit("content-type", "application/grpc"), lit("te", "trailers"), lit("teamd-protocol", process.env.PROTOCOL)]);
const stats = { conns: 0, closed: 0, goaway: 0, rst: 0, ended: 0, sent: 0, frames: 0, sendMs: -1 };
const payload = Buffer.alloc(Math.max(F, 16), 0x61);
const total = C * S * (N - 1);
const t0 = Date.now();
let finishing = false;
const finish = () => { console.log(JSON.stringify(stats)); process.exit(0); };
const all = [];
// Every stream reset or ended, or its connection gone: nothing more can be sent.
setInterval(() => {
  if (finishing || all.length < C || !all.every((c) => c.gone() || [...c.st.values()].every((s) => s.dead))) return;
  finishing = true; stats.sendMs = Date.now() - t0; setTimeout(finish, H);
}, 100);
function conn() {
  const sock = net.connect(socket);
  let connWin = 65535, initWin = 65535, gone = false, pumping = false, nextId = 1;
  const st = new Map();
  sock.on("error", () => {});
  sock.on("connect", () => stats.conns++);
  sock.on("close", () => { stats.closed++; gone = true; });
  all.push({ st, gone: () => gone });
  sock.write(Buffer.from("PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n"));
  sock.write(u(0, 4, 0, 0));
  for (let i = 0; i < S; i++) {
    const id = nextId; nextId += 2;
    st.set(id, { win: 65535, left: N - 1, prefixed: false, dead: false });
    sock.write(Buffer.concat([u(block.length, 1, 4, id), block]));
  }
  sock.on("data", frameReader((type, flags, id, p) => {
    if (type === 4 && !(flags & 1)) {
      for (let o = 0; o + 6 <= p.length; o += 6) if (p.readUInt16BE(o) === 4) { const v = p.readUInt32BE(o + 2); for (const s of st.values()) s.win += v - initWin; initWin = v; }
      sock.write(u(0, 4, 1, 0));
    } else if (type === 6 && !(flags & 1)) sock.write(Buffer.concat([u(8, 6, 1, 0), p]));
    else if (type === 8) { const inc = p.readUInt32BE(0) & 0x7fffffff; if (id === 0) connWin += inc; else if (st.has(id)) st.get(id).win += inc; }
    else if (type === 3) { stats.rst++; if (st.has(id)) st.get(id).dead = true; }
    else if (type === 7) stats.goaway++;
    else if (type === 1 && (flags & 1)) { stats.ended++; if (st.has(id)) st.get(id).dead = true; }
  }, pump));
  function pump() {
    if (pumping || gone) return;
    const out = []; let bytes = 0;
    for (const [id, s] of st) {
      if (s.dead) continue;
      if (!s.prefixed) {
        if (s.win < 5 || connWin < 5) continue;
        const pre = Buffer.alloc(5); pre.writeUInt32BE(N, 1);
        out.push(u(5, 0, 0, id), pre); s.win -= 5; connWin -= 5; s.prefixed = true; bytes += 14;
      }
      while (s.left > 0 && s.win > 0 && connWin > 0 && bytes < 1 << 20) {
        const n = Math.min(F, s.left, s.win, connWin);
        out.push(u(n, 0, 0, id), payload.subarray(0, n));
        s.left -= n; s.win -= n; connWin -= n; bytes += 9 + n; stats.sent += n; stats.frames++;
      }
    }
    if (stats.sent === total && !finishing) { finishing = true; stats.sendMs = Date.now() - t0; setTimeout(finish, H); }
    if (out.length === 0) return;
    if (sock.write(Buffer.concat(out))) setImmediate(pump);
    else { pumping = true; sock.once("drain", () => { pumping = false; pump(); }); }
  }
}
for (let c = 0; c < C; c++) conn();
setTimeout(finish, +max);
`;

const METHOD = "/teamd.v1.ShimService/Checkpoint";

interface Shape {
  readonly conns: number;
  readonly streams: number;
  /** What each stream's message declares (it sends all but the last byte). */
  readonly size: number;
  /** Payload bytes per DATA frame. */
  readonly frame: number;
}

/** One message of 256 KiB - 1 byte per stream: under the 256 KiB receive cap, never finished. */
const SIZE = 256 * KIB;
const HOLD_MS = 5000;
/** The 1-byte flood's connections (default 1: 16 streams are enough; ATTACK_CONNS=8 is the whole socket). */
const ATTACK_CONNS = Number(process.env.ATTACK_CONNS ?? 1);

describe.runIf(process.platform === "linux")("escape: one seat against the daemon's memory, DATA frame by DATA frame", () => {
  let target: MemoryTarget;
  let h: TeamdHarness;

  /** Runs the attacker in seat alpha, the daemon's RSS sampled while it runs. */
  const attack = async (shape: Shape): Promise<{ growth: number; held: number; hwm: number; stats: FrameAttackStats }> => {
    const maxMs = 240_000;
    const r = await attackFromSeat(
      target,
      ATTACK,
      ["/run/teamd/shim.sock", METHOD, shape.conns, shape.streams, shape.size, shape.frame, HOLD_MS, maxMs],
      maxMs,
    );
    return { growth: r.growth, held: r.held, hwm: r.hwm, stats: JSON.parse(r.line) as FrameAttackStats };
  };

  beforeAll(async () => {
    target = await memoryTarget("teamd-frames-");
    h = target.h;
  }, 120_000);

  afterAll(async () => {
    await h?.cleanup();
  }, 60_000);

  it("control: 8 connections x 16 streams of 256 KiB - 1 in 16 KiB DATA frames stay within the 64 MiB bound", async () => {
    const shape: Shape = { conns: 8, streams: 16, size: SIZE, frame: 16 * KIB };
    const r = await attack(shape);
    console.log(
      `control (16 KiB frames, ${shape.conns}x${shape.streams}): sent ${(r.stats.sent / MIB).toFixed(1)} MiB in ${r.stats.frames} DATA frames (${r.stats.sendMs} ms); daemon RSS peak growth ${(r.growth / MIB).toFixed(1)} MiB, held ${(r.held / MIB).toFixed(1)} MiB, VmHWM ${(r.hwm / MIB).toFixed(0)} MiB; ${JSON.stringify(r.stats)}`,
    );
    expect(r.stats.sent).toBe(shape.conns * shape.streams * (shape.size - 1));
    expect(r.growth).toBeLessThan(64 * MIB);
    expect((await h.shim("alpha", "whoami", "--json")).code).toBe(0);
  }, 300_000);

  it("attack: 16 streams of 256 KiB - 1 in 1-byte DATA frames are reset, and leave the daemon within the 64 MiB bound (they held ~500 MiB)", async () => {
    const shape: Shape = { conns: ATTACK_CONNS, streams: 16, size: SIZE, frame: 1 };
    const before = await refusalCounts(target);
    const r = await attack(shape);
    console.log(
      `attack (1-byte frames, ${shape.conns}x${shape.streams}): sent ${(r.stats.sent / MIB).toFixed(1)} MiB in ${r.stats.frames} DATA frames (${r.stats.sendMs} ms); daemon RSS peak growth ${(r.growth / MIB).toFixed(1)} MiB, held ${(r.held / MIB).toFixed(1)} MiB, VmHWM ${(r.hwm / MIB).toFixed(0)} MiB; ${JSON.stringify(r.stats)}`,
    );
    // Each stream is reset (ENHANCE_YOUR_CALM) once its frames average under 1 KiB past its
    // first 64 (server.ts, boundDataFrames), or its connection cut off first for the frames the
    // attacker sent on streams already reset (overhead-meter.ts); before, every byte went in and
    // nothing was refused.
    // And each reset is the seat's refused attempt, on record (before, none was: the ledger did not show the attack).
    await expectEveryStreamEnded(target, r.stats, shape.conns * shape.streams, before);
    const recorded = await framesRefusals(target);
    expect(new Set(recorded.map((x) => `${x.actor} ${x.action}`))).toEqual(new Set([`seat:proj/alpha rpc.${METHOD.split("/").pop() ?? ""}`]));
    // What was in flight when the reset came went in; the rest never did.
    expect(r.stats.sent).toBeLessThan(shape.conns * shape.streams * (shape.size - 1));
    // The documented bound for the whole socket (8 x 16 x (256 KiB + 256 KiB)); with neither the
    // frame bound nor the bounded decoder (message-decoder.ts) it grew ~500 MiB here.
    expect(r.growth, `the daemon grew by ${(r.growth / MIB).toFixed(1)} MiB for ${(r.stats.sent / MIB).toFixed(1)} MiB sent`).toBeLessThan(64 * MIB);
    expect((await h.shim("alpha", "whoami", "--json")).code).toBe(0);
  }, 300_000);
});
