import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { RAW_H2, expectEveryStreamEnded, memoryTarget, refusalCounts, type MemoryTarget, mib, pausedStreamsAttack } from "../support/seat-memory-attack.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Attacks docs/enforcement.md's "One seat cannot exhaust the daemon's memory through its socket"
 * (bound: 8 connections x 16 streams x (256 KiB message + 256 KiB window) = 64 MiB a seat) on the
 * path seat-frames-attack.test.ts does not reach: a stream grpc-js has paused.
 *
 * grpc-js pauses the node http2 stream once it has decoded a whole message, until the handler
 * asks for the next (server.ts's readOneAhead: one message ahead). While it is paused the seat
 * may still send up to the stream's flow-control window (SEAT_STREAM_WINDOW), and node hands each
 * DATA frame to the stream's Readable as its own Buffer (a view of the socket read it came in,
 * which it keeps alive) — the bounded decoder (message-decoder.ts) never sees them.
 *
 * The stream the daemon does not read: FileWrite. A seat holds at most 2 file contents in the
 * daemon at once; its further writes wait their turn (daemon/seat/files.ts) after reading their
 * header, holding one message ahead. Every stream here sends a header (size 8 MiB), a 1-byte data
 * message, then a third message it never finishes: the two writes that get the turn read it into
 * the bounded decoder and wait for its end forever, holding the turn; every other stream is
 * paused with its data message unread, and its third message's bytes go to node's paused stream.
 * (Push is no candidate: a fifth push is refused at once, git.concurrent; a unary call is read on
 * after its message, for the half-close, so its further bytes reach the bounded decoder.)
 *
 * Shapes: FRAME payload bytes per DATA frame; FILLER bytes of unknown-type HTTP/2 frames (which
 * HTTP/2 says to ignore, outside flow control) after each DATA frame, so that each DATA frame
 * arrives in a socket read of its own.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * The attacker: CONNS connections to SOCKET, STREAMS FileWrite streams each, each sending its
 * header and a 1-byte data message in one DATA frame, then a third message's prefix declaring
 * SIZE bytes and up to SIZE - 1 of them in DATA frames of FRAME bytes (each followed by FILLER
 * bytes of unknown frames), within the flow-control windows the server grants (tracked from its
 * SETTINGS and WINDOW_UPDATEs). It answers SETTINGS and PING, and once nothing more can be sent
 * for QUIET ms (the paused streams' windows are spent) holds everything HOLD ms, then prints one
 * JSON line of what it saw (or at MAX ms in all).
 */
const ATTACK = `${RAW_H2}
const net = require("net");
const [socket, conns, streams, size, frame, fillerArg, quiet, hold, max] = process.argv.slice(1);
const C = +conns, S = +streams, N = +size, F = +frame, FILL = +fillerArg, Q = +quiet, H = +hold;
const lit = (n, v) => { n = Buffer.from(n); v = Buffer.from(v); return Buffer.concat([Buffer.from([0, n.length]), n, Buffer.from([v.length]), v]); };
const block = Buffer.concat([lit(":method", "POST"), lit(":scheme", "http"), lit(":path", "/teamd.v1.ShimService/FileWrite"), lit(":authority", "seat"),
  lit("content-type", "application/grpc"), lit("te", "trailers"), lit("teamd-protocol", process.env.PROTOCOL)]);
const varint = (n) => { const o = []; while (n > 127) { o.push((n & 127) | 128); n = Math.floor(n / 128); } o.push(n); return Buffer.from(o); };
const field = (no, bytes) => Buffer.concat([Buffer.from([(no << 3) | 2]), varint(bytes.length), bytes]);
const grpcMsg = (body) => { const p = Buffer.alloc(5); p.writeUInt32BE(body.length, 1); return Buffer.concat([p, body]); };
const firstTwo = (tag) => Buffer.concat([
  grpcMsg(field(1, Buffer.concat([field(1, Buffer.from("paused-" + tag)), field(2, Buffer.from("src/paused-" + tag + ".txt")), field(5, Buffer.from("m")), Buffer.from([6 << 3]), varint(8 * 1024 * 1024)]))),
  grpcMsg(field(2, Buffer.from("a"))),
]);
const fill = [];
for (let left = FILL; left > 0; ) { const n = Math.min(16384, left - 9); if (n < 0) break; fill.push(u(n, 0x20, 0, 0), Buffer.alloc(n)); left -= 9 + n; }
const filler = Buffer.concat(fill);
const stats = { conns: 0, closed: 0, goaway: 0, rst: 0, ended: 0, sent: 0, frames: 0, wire: 0, full: 0, sendMs: -1 };
const payload = Buffer.alloc(Math.max(F, 16), 0x61);
const t0 = Date.now();
let lastSent = -1, lastChange = Date.now(), finishing = false;
const finish = () => { console.log(JSON.stringify(stats)); process.exit(0); };
const sts = [];
setInterval(() => {
  if (stats.sent !== lastSent) { lastSent = stats.sent; lastChange = Date.now(); return; }
  if (!finishing && stats.sent > 0 && Date.now() - lastChange >= Q) {
    finishing = true; stats.sendMs = lastChange - t0; stats.full = sts.filter((s) => s.left === 0).length; setTimeout(finish, H);
  }
}, 250);
function conn(c) {
  const sock = net.connect(socket);
  let connWin = 65535, initWin = 65535, gone = false, pumping = false, nextId = 1;
  const st = new Map();
  sock.on("error", () => {});
  sock.on("connect", () => stats.conns++);
  sock.on("close", () => { stats.closed++; gone = true; });
  sock.write(Buffer.from("PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n"));
  sock.write(u(0, 4, 0, 0));
  for (let i = 0; i < S; i++) {
    const id = nextId; nextId += 2;
    const s = { win: 65535, left: N - 1, first: firstTwo(c + "-" + i), started: false, prefixed: false, dead: false };
    st.set(id, s); sts.push(s);
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
      if (!s.started) {
        if (s.win < s.first.length || connWin < s.first.length) continue;
        out.push(u(s.first.length, 0, 0, id), s.first); s.win -= s.first.length; connWin -= s.first.length; s.started = true; bytes += 9 + s.first.length;
      }
      if (!s.prefixed) {
        if (s.win < 5 || connWin < 5) continue;
        const pre = Buffer.alloc(5); pre.writeUInt32BE(N, 1);
        out.push(u(5, 0, 0, id), pre); s.win -= 5; connWin -= 5; s.prefixed = true; bytes += 14;
      }
      while (s.left > 0 && s.win > 0 && connWin > 0 && bytes < 1 << 20) {
        const n = Math.min(F, s.left, s.win, connWin);
        out.push(u(n, 0, 0, id), payload.subarray(0, n));
        if (FILL > 0) out.push(filler);
        s.left -= n; s.win -= n; connWin -= n; bytes += 9 + n + filler.length; stats.sent += n; stats.frames++; stats.wire += 9 + n + filler.length;
      }
    }
    if (out.length === 0) return;
    if (sock.write(Buffer.concat(out))) setImmediate(pump);
    else { pumping = true; sock.once("drain", () => { pumping = false; pump(); }); }
  }
}
for (let c = 0; c < C; c++) conn(c);
setTimeout(finish, +max);
`;

interface Shape {
  readonly conns: number;
  readonly streams: number;
  /** Payload bytes per DATA frame. */
  readonly frame: number;
  /** Bytes of ignored (unknown-type) frames after each DATA frame. */
  readonly filler: number;
  /** The attacker's whole run, ms (default 200 s). */
  readonly maxMs?: number;
}

/** The 1-byte flood's connections (default 1: 16 streams; ATTACK_CONNS=8 is the whole socket). */
const ATTACK_CONNS = Number(process.env.ATTACK_CONNS ?? 1);
/** Probe shapes (not the default run): ignored-frame bytes after each DATA frame, its streams, the attacker's run in ms. */
const ATTACK_FILLER = Number(process.env.ATTACK_FILLER ?? 0);
const ATTACK_STREAMS = Number(process.env.ATTACK_STREAMS ?? 16);
const ATTACK_MAX_MS = process.env.ATTACK_MAX_MS === undefined ? undefined : Number(process.env.ATTACK_MAX_MS);

describe.runIf(process.platform === "linux")("escape: one seat against the daemon's memory, on streams grpc-js has paused", () => {
  let target: MemoryTarget;
  let h: TeamdHarness;

  /** Runs the attacker in seat alpha, the daemon's RSS sampled while it runs. */
  const attack = (label: string, shape: Shape) => pausedStreamsAttack(target, ATTACK, label, shape, { name: "filler", bytes: shape.filler });

  beforeAll(async () => {
    target = await memoryTarget("teamd-paused-");
    h = target.h;
  }, 120_000);

  afterAll(async () => {
    await h?.cleanup();
  }, 60_000);

  it("control: 8 connections x 16 paused FileWrites, their windows in 16 KiB DATA frames, stay within the 64 MiB bound", async () => {
    const shape: Shape = { conns: 8, streams: 16, frame: 16 * KIB, filler: 0 };
    const r = await attack("control", shape);
    expect(r.stats.rst + r.stats.goaway + r.stats.ended).toBe(0);
    expect(r.growth).toBeLessThan(64 * MIB);
    expect((await h.shim("alpha", "whoami", "--json")).code).toBe(0);
  }, 300_000);

  it("attack: paused FileWrites sending each 1-byte DATA frame after 64 KiB of frames HTTP/2 ignores are reset, and keep no socket read alive", async () => {
    // Each byte arrived in a socket read of its own and, a view of it, kept all 64 KiB alive:
    // 4 streams for 5 s held ~3 GiB for 52 KB of payload. Now a small chunk is copied, and the
    // stream is reset past its first 64 frames.
    const shape: Shape = { conns: 1, streams: 4, frame: 1, filler: 64 * KIB - 9, maxMs: 5_000 };
    const before = await refusalCounts(target);
    const r = await attack("filler", shape);
    // Each stream reset, each on record as the seat's refused attempt (rpc.frames), or the
    // connection cut off first for its 64 KiB fillers (overhead-meter.ts: they reach no call).
    await expectEveryStreamEnded(target, r.stats, shape.streams, before);
    expect(r.growth, `the daemon grew by ${mib(r.growth)} MiB for ${mib(r.stats.sent)} MiB sent`).toBeLessThan(64 * MIB);
    expect((await h.shim("alpha", "whoami", "--json")).code).toBe(0);
  }, 300_000);

  it("attack: 16 paused FileWrites, their windows in 1-byte DATA frames, leave the daemon within the 64 MiB bound", async () => {
    const shape: Shape = {
      conns: ATTACK_CONNS,
      streams: ATTACK_STREAMS,
      frame: 1,
      filler: ATTACK_FILLER,
      ...(ATTACK_MAX_MS !== undefined ? { maxMs: ATTACK_MAX_MS } : {}),
    };
    const before = await refusalCounts(target);
    const r = await attack("attack", shape);
    // Each stream is reset (ENHANCE_YOUR_CALM) once its frames average under 1 KiB past its first
    // 64 (server.ts, boundDataFrames), or its connection cut off first for the frames sent on
    // streams already reset (overhead-meter.ts); before, nothing was refused and 16 streams held ~440 MiB.
    await expectEveryStreamEnded(target, r.stats, shape.conns * shape.streams, before);
    expect(r.growth, `the daemon grew by ${mib(r.growth)} MiB for ${mib(r.stats.sent)} MiB sent`).toBeLessThan(64 * MIB);
    expect((await h.shim("alpha", "whoami", "--json")).code).toBe(0);
  }, 300_000);
});
