import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { daemonCpu, daemonMemory } from "../support/daemon-proc.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Proves, in docs/enforcement.md's row "One seat cannot exhaust the daemon's memory through its
 * socket (§11; issue 20, finding 3)", its part on a call answered while the seat still sends.
 *
 * A seat's call the daemon answers while the seat is still sending (found by an attack on issue
 * 26's twenty-fourth round, older than it). From the seat: 12 calls on one connection, each
 * answered at once (a Push refused for its header, a Push of pack_bytes 0 that sends data, the
 * same with ~2,000 one-byte data parts per DATA frame, and a unary WhoAmI whose message prefix is
 * over the 256 KiB cap), each then sending for up to 8 s (24 s for "tiny") and never half-closing.
 * Before: the calls never ended — grpc-js, its status sent, read and dropped every byte the seat
 * went on sending (its notifyOnCancel, "flush incoming data frames"), 3-17 GB a run and ~0.5 of a
 * core of the daemon's (4-16 s of CPU), nothing recorded past the one refusal, with or without
 * teamd's own stream reader (the unary call too). Now the daemon tells the seat to stop once its
 * answer is sent (RST_STREAM NO_ERROR, RFC 7540 §8.1: src/rpc/server.ts stopSendingOnceAnswered),
 * and each call ends with its answer. Measured from the host: the daemon's RSS and CPU.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = teamFile(`  w1:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: [sleep, "3600"]
`);

const FLOOD = String.raw`
const http2 = require("http2"); const net = require("net"); const crypto = require("crypto");
const [sock, mode, streams, seconds, oid] = process.argv.slice(1);
function varint(n) { const out = []; n = BigInt(n); while (n >= 0x80n) { out.push(Number(n & 0x7fn) | 0x80); n >>= 7n; } out.push(Number(n)); return Buffer.from(out); }
function field(no, buf) { if (typeof buf === "string") buf = Buffer.from(buf); return Buffer.concat([varint((no << 3) | 2), varint(buf.length), buf]); }
function vfield(no, n) { return Buffer.concat([varint(no << 3), varint(n)]); }
function frame(msg) { const f = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), msg]); f.writeUInt32BE(msg.length, 1); return f; }
const chunk = Buffer.alloc(16 * 1024 - 64, 7);
const dataFrame = frame(field(2, chunk));
// A tiny data part: many gRPC messages per HTTP/2 DATA frame.
const tinyFrames = Buffer.concat(Array.from({ length: 2000 }, () => frame(field(2, Buffer.from([1])))));
const s = http2.connect("http://seat", { createConnection: () => net.connect(sock) });
s.on("error", () => undefined);
function one(i) {
  let header;
  const upd = field(2, Buffer.concat([field(1, mode === "refs" ? "refs/tags/t" + i : "refs/heads/f" + i), field(3, oid)]));
  if (mode === "header") header = Buffer.concat([field(1, crypto.randomUUID()), upd, vfield(3, 5), vfield(4, 1)]);
  else header = Buffer.concat([field(1, crypto.randomUUID()), upd]);
  const path = mode === "unary" ? "/teamd.v1.ShimService/WhoAmI" : "/teamd.v1.ShimService/Push";
  const st = s.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", "teamd-protocol": "3" });
  let status = "none", sent = 0, statusAt = -1, closedAt = -1; const t0 = Date.now();
  const said = (h) => { if (h["grpc-status"] !== undefined) { status = h["grpc-status"] + " " + decodeURIComponent(h["grpc-message"] || "").slice(0, 60); statusAt = Date.now() - t0; } };
  st.on("response", said); st.on("trailers", said); st.on("data", () => undefined); st.on("error", () => undefined);
  // unary: a WhoAmI whose one message says it is 1 MiB (over the seat's 256 KiB receive cap): refused from its prefix.
  if (mode === "unary") { const p = Buffer.alloc(5); p.writeUInt32BE(1 << 20, 1); st.write(p); } else st.write(frame(field(1, header)));
  const payload = mode === "tiny" ? tinyFrames : dataFrame;
  return new Promise((resolve) => {
    let stop = false;
    const pump = () => { while (!stop && !st.destroyed && !st.closed) { sent += payload.length; if (!st.write(payload)) { st.once("drain", pump); return; } } };
    st.on("close", () => { closedAt = Date.now() - t0; stop = true; resolve({ i, status, statusAt, closedAt, sent }); });
    setTimeout(() => { stop = true; const r = { i, status, statusAt, closedAt, sent, open: !st.closed }; st.close(); resolve(r); }, Number(seconds) * 1000);
    pump();
  });
}
(async () => {
  const all = await Promise.all(Array.from({ length: Number(streams) }, (_, i) => one(i)));
  let total = 0; for (const r of all) total += r.sent;
  console.log(JSON.stringify({ total, sample: all.slice(0, 3) }));
  s.close(); setTimeout(() => process.exit(0), 200);
})();
setTimeout(() => { console.log("timeout"); process.exit(3); }, 120000).unref();
`;
const flood = (mode: string, streams: number, seconds: number, oid: string): string =>
  `node -e "$(echo ${Buffer.from(FLOOD).toString("base64")} | base64 -d)" /run/teamd/shim.sock ${mode} ${streams} ${seconds} ${oid}`;

describe.runIf(process.platform === "linux")("push data sent after the push was answered", () => {
  let h: TeamdHarness;
  beforeAll(async () => {
    h = await appliedTeam("teamd-after-refusal-", TEAM_FILE, { "README.md": "hello\n", "src/a.txt": "a\n" });
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  for (const [mode, seconds] of [
    ["header", 8],
    ["refs", 8],
    ["tiny", 24],
    ["unary", 8],
  ] as const) {
    it(`ends the call with its answer, and costs the daemon nothing past it (${mode})`, async () => {
      const trunk = h.hubRef("refs/heads/main") as string;
      const before = { mem: daemonMemory(h), cpu: daemonCpu(h) };
      const t0 = Date.now();
      const rss: number[] = [];
      const sampler = setInterval(() => rss.push(Math.round(daemonMemory(h).rss / 2 ** 20)), 2_000);
      const run = await h.inSeat("w1", flood(mode, 12, seconds, trunk)).finally(() => clearInterval(sampler));
      const wall = (Date.now() - t0) / 1000;
      const after = { mem: daemonMemory(h), cpu: daemonCpu(h) };
      const out = run.stdout.trim().split("\n").pop() ?? "";
      console.log(
        `${mode}: ${out}\n  daemon RSS ${(before.mem.rss / 2 ** 20).toFixed(1)} -> ${(after.mem.rss / 2 ** 20).toFixed(1)} MiB (peak ${(after.mem.peak / 2 ** 20).toFixed(1)}; every 2 s: ${rss.join(" ")}), CPU ${(after.cpu - before.cpu).toFixed(2)} s over ${wall.toFixed(1)} s`,
      );
      const parsed = JSON.parse(out) as { total: number; sample: { status: string; statusAt: number; closedAt: number }[] };
      // Every call was answered (refused) at once...
      for (const r of parsed.sample) expect(r.status, out).toMatch(mode === "unary" ? /^8 / : /^7 /);
      expect(after.mem.rss - before.mem.rss, out).toBeLessThan(64 * 2 ** 20);
      // ...and the call ends: the daemon stops taking the seat's bytes within 2 s of its answer.
      for (const r of parsed.sample)
        expect({ closed: r.closedAt !== -1 && r.closedAt - r.statusAt < 2_000, sentAfter: parsed.total }, out).toMatchObject({ closed: true });
      // The seat's bytes after the answer are not the daemon's work: what it spent is the calls'
      // own, before their answers (~0.05-0.25 s here; 4-16 s before, the seat sending on).
      expect(after.cpu - before.cpu, out).toBeLessThan(1.5);
    }, 120_000);
  }
});
