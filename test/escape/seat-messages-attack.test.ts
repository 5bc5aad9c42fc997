import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { attackFromSeat, memoryTarget, mib, type MemoryTarget } from "../support/seat-memory-attack.js";

/**
 * A file write's content sent as empty data parts (found by a review of issue 26's twenty-sixth
 * round): each part is seven bytes framed, so a 16 KiB DATA frame carries ~2,300 of them and the
 * frame bound (rpc.frames) passes; the content loop counted bytes, which empty parts never add,
 * so nothing ended it, and each part cost the daemon an object, a decode and a turn of its
 * handler (~680 bytes kept each: 70 MB sent would hold ~7 GB, past node's heap, ending every
 * seat with the daemon). Now a seat's stream whose messages average under 1 KiB past its first
 * 64 is reset (ENHANCE_YOUR_CALM) and the attempt recorded (`rpc.messages`, src/rpc/server.ts's
 * boundDataFrames, src/rpc/message-count.ts). From inside a real seat, over its own socket, with
 * node's HTTP/2 client; the daemon's resident memory read from the host.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const MIB = 1024 * 1024;
const ATTACK_MS = 4000;

/** The attacker: one FileWrite whose header declares 1 MiB for PATH, then blocks of 2,340 empty data parts for as long as the stream takes them (at most DUR ms). */
const EMPTY_PARTS = `
const http2 = require("http2"); const net = require("net");
const [socket, path, dur] = process.argv.slice(1);
const varint = (v) => { let n = BigInt(v); const b = []; while (n > 127n) { b.push(Number(n & 127n) | 128); n >>= 7n; } b.push(Number(n)); return Buffer.from(b); };
const len = (no, payload) => Buffer.concat([varint((no << 3) | 2), varint(payload.length), payload]);
const frame = (msg) => { const h = Buffer.alloc(5); h.writeUInt32BE(msg.length, 1); return Buffer.concat([h, msg]); };
const header = Buffer.concat([len(1, Buffer.from("empty-" + process.pid)), len(2, Buffer.from(path)), varint(6 << 3), varint(1 << 20)]);
const block = Buffer.concat(Array.from({ length: 2340 }, () => frame(Buffer.from([0x12, 0x00]))));
const stats = { written: 0, parts: 0, rst: -1, status: null, rule: null };
let done = false;
const finish = () => { if (done) return; done = true; console.log(JSON.stringify(stats)); process.exit(0); };
const s = http2.connect("http://seat", { createConnection: () => net.connect(socket) });
s.on("error", () => {});
const r = s.request({ ":method": "POST", ":path": "/teamd.v1.ShimService/FileWrite", "content-type": "application/grpc", te: "trailers", "teamd-protocol": process.env.PROTOCOL });
const said = (h) => { if (h["grpc-status"] !== undefined) { stats.status = h["grpc-status"]; stats.rule = h["teamd-rule"] ?? null; } };
r.on("response", said); r.on("trailers", said);
r.on("error", () => {});
r.on("close", () => { stats.rst = r.rstCode ?? -1; setTimeout(finish, 200); });
r.write(frame(len(1, header)));
(async () => {
  const t0 = Date.now();
  while (!r.closed && !r.destroyed && Date.now() - t0 < +dur) {
    stats.written += block.length; stats.parts += 2340;
    if (!r.write(block)) await new Promise((ok) => { r.once("drain", ok); r.once("close", ok); setTimeout(ok, 200); });
  }
  setTimeout(finish, 500);
})();
`;

describe.runIf(process.platform === "linux")("escape: a seat's file write of empty parts, against the daemon's memory and its handler", () => {
  let target: MemoryTarget;

  beforeAll(async () => {
    target = await memoryTarget("teamd-messages-");
  }, 120_000);

  afterAll(async () => {
    await target?.h.cleanup();
  }, 60_000);

  it("attack: a FileWrite streaming empty data parts in full-sized frames is reset at once (rpc.messages, on record); the daemon's memory stays flat and it still serves the seat", async () => {
    const r = await attackFromSeat(target, EMPTY_PARTS, ["/run/teamd/shim.sock", "src/flood.txt", ATTACK_MS], ATTACK_MS + 5000);
    const stats = JSON.parse(r.line) as { written: number; parts: number; rst: number; status: string | null; rule: string | null };
    console.log(`[messages] ${JSON.stringify(stats)}; daemon RSS before ${mib(r.before)} MiB, peak growth ${mib(r.growth)} MiB, held ${mib(r.held)} MiB`);
    // Reset with ENHANCE_YOUR_CALM (11), unanswered: the stream's first blocks were enough.
    expect(stats.rst).toBe(11);
    expect(stats.written).toBeLessThan(16 * MIB);
    expect(r.growth).toBeLessThan(64 * MIB);
    const records = await target.h.records<{ type: string; actor: string; action: string; detail?: { rule?: string } }>();
    const refused = records.filter((x) => x.type === "refusal" && x.detail?.rule === "rpc.messages");
    expect(refused.map((x) => `${x.actor} ${x.action}`)).toEqual(["seat:proj/alpha rpc.FileWrite"]);
    // Nothing landed, and the daemon still serves the seat.
    expect((await target.h.shim("alpha", "whoami", "--json")).code).toBe(0);
  }, 120_000);
});
