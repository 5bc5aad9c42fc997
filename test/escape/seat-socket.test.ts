import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { ROOT } from "../support/programs.js";
import { SEAT_MAX_CONNECTIONS } from "../../src/rpc/channel-options.js";
import { type TeamdHarness } from "../support/teamd-harness.js";
import { srcWriterTeamFile } from "../support/team-file.js";
import { waitFor } from "../support/wait.js";

/**
 * Proves (docs/enforcement.md), in a seat started by `teamd start` through a real daemon:
 * - "Resource limits (§11): one seat cannot exhaust the daemon's memory through its socket"
 *   (issue 20, finding 3): the seat socket's server bounds its connections, the streams of a
 *   connection, the session memory and each message it receives, and closes an idle
 *   connection. The attack is written as a seat would: raw HTTP/2 (node's own client, no
 *   grpc-js) over `/run/teamd/shim.sock`, many connections and streams each holding a
 *   nearly complete gRPC message that is never finished; the daemon's RSS is read from the
 *   host (/proc/PID/status, VmRSS) while the attack holds.
 * - The control: the same attack, from the host, against a bare grpc-js server in a process
 *   of its own configured as the seat socket was before (16 MiB messages, no other cap) —
 *   its RSS grows by about what was sent; and an idle connection to it stays open.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * The attacker, run by node in the seat (or on the host for the control): CONNS connections
 * to SOCKET, STREAMS calls on each to METHOD, each sending a gRPC frame header that declares
 * SIZE bytes and then SIZE - 1 of them (from one shared buffer: the attacker's own memory
 * stays small), holding everything open for HOLD ms. It prints one JSON line of what the
 * server let through: connections that closed, streams that closed, bytes flushed.
 * MODE "idle": one connection, no stream; prints how long until the server closed it (or
 * -1 after HOLD ms).
 */
const ATTACK = `
const http2 = require("http2"); const net = require("net");
const [socket, mode, method, conns, streams, size, hold] = process.argv.slice(1);
const C = Number(conns), S = Number(streams), N = Number(size), H = Number(hold);
if (mode === "idle") {
  const t0 = Date.now();
  const s = http2.connect("http://seat", { createConnection: () => net.connect(socket) });
  s.on("error", () => {});
  const timer = setTimeout(() => { console.log(JSON.stringify({ closedAfterMs: -1 })); process.exit(0); }, H);
  s.on("close", () => { clearTimeout(timer); console.log(JSON.stringify({ closedAfterMs: Date.now() - t0 })); process.exit(0); });
} else {
  const body = Buffer.alloc(N - 1, 0x61);
  const header = Buffer.alloc(5); header.writeUInt32BE(N, 1);
  const stats = { sessionsClosed: 0, streamsClosed: 0, flushed: 0, statuses: {} };
  for (let c = 0; c < C; c++) {
    const s = http2.connect("http://seat", { createConnection: () => net.connect(socket), settings: { initialWindowSize: 65535 } });
    s.on("error", () => {});
    s.on("close", () => stats.sessionsClosed++);
    for (let i = 0; i < S; i++) {
      let r;
      try {
        r = s.request({ ":method": "POST", ":path": method, "content-type": "application/grpc", te: "trailers", "teamd-protocol": process.env.PROTOCOL });
      } catch { stats.streamsClosed++; continue; }
      r.on("error", () => {});
      r.on("response", (h) => { const k = String(h["grpc-status"] ?? h[":status"]); stats.statuses[k] = (stats.statuses[k] || 0) + 1; });
      r.on("trailers", (h) => { const k = "t" + String(h["grpc-status"]); stats.statuses[k] = (stats.statuses[k] || 0) + 1; });
      r.on("close", () => stats.streamsClosed++);
      r.write(header);
      r.write(body, () => { stats.flushed += N - 1; });
    }
  }
  console.log("started");
  setTimeout(() => { console.log(JSON.stringify(stats)); process.exit(0); }, H);
}
`;

const ATTACK_B64 = Buffer.from(ATTACK).toString("base64");

/** A bare grpc-js server, configured as the seat socket was before issue 20: messages up to 16 MiB, no other cap. */
const BARE_SERVER = `
const grpc = require(${JSON.stringify(join(ROOT, "node_modules/@grpc/grpc-js"))});
const server = new grpc.Server({ "grpc.max_receive_message_length": 16 * 1024 * 1024, "grpc.enable_channelz": 0 });
const id = (b) => b;
server.addService({ Checkpoint: { path: "/teamd.v1.ShimService/Checkpoint", requestStream: false, responseStream: false, requestSerialize: id, requestDeserialize: id, responseSerialize: id, responseDeserialize: id } }, { Checkpoint: (call, cb) => cb(null, Buffer.alloc(0)) });
server.bindAsync("unix:" + process.argv[1], grpc.ServerCredentials.createInsecure(), (e) => { if (e) throw e; console.log("ready"); });
`;

const METHOD = "/teamd.v1.ShimService/Checkpoint";

/**
 * Streamed file writes holding nearly complete contents: CONNS connections of STREAMS
 * FileWrite calls, each an honest header declaring SIZE bytes for src/flood-N, then SIZE - 1 of
 * them in 128 KiB messages (one shared buffer), never the last byte; held HOLD ms. Each
 * message is small, so no receive cap stops it: what bounds the daemon is how many contents
 * of one seat it holds at once.
 */
const FILE_FLOOD = `
const http2 = require("http2"); const net = require("net");
const [socket, conns, streams, size, hold] = process.argv.slice(1);
const N = Number(size);
const varint = (v) => { let n = BigInt(v); const b = []; while (n > 127n) { b.push(Number(n & 127n) | 128); n >>= 7n; } b.push(Number(n)); return Buffer.from(b); };
const len = (no, payload) => Buffer.concat([varint((no << 3) | 2), varint(payload.length), payload]);
const prefix = (n) => { const h = Buffer.alloc(5); h.writeUInt32BE(n, 1); return h; };
const chunk = Buffer.alloc(128 * 1024, 0x63);
let k = 0;
for (let c = 0; c < Number(conns); c++) {
  const s = http2.connect("http://seat", { createConnection: () => net.connect(socket) });
  s.on("error", () => {});
  for (let i = 0; i < Number(streams); i++) {
    let r;
    try { r = s.request({ ":method": "POST", ":path": "/teamd.v1.ShimService/FileWrite", "content-type": "application/grpc", te: "trailers", "teamd-protocol": process.env.PROTOCOL }); } catch { continue; }
    r.on("error", () => {});
    const header = len(1, Buffer.concat([len(1, Buffer.from("flood-" + process.pid + "-" + k)), len(2, Buffer.from("src/flood-" + k++)), varint(6 << 3), varint(N)]));
    r.write(Buffer.concat([prefix(header.length), header]));
    for (let at = 0; at < N - 1; at += chunk.length) {
      const piece = chunk.subarray(0, Math.min(chunk.length, N - 1 - at));
      const head = Buffer.concat([varint((2 << 3) | 2), varint(piece.length)]);
      r.write(Buffer.concat([prefix(head.length + piece.length), head]));
      r.write(piece);
    }
  }
}
setTimeout(() => { console.log(JSON.stringify({ done: true })); process.exit(0); }, Number(hold));
`;

/** One seat that may read everything and write under src/ (its file read and write stream in chunks). */
const TEAM_FILE = srcWriterTeamFile("alpha");

/** A trunk file of several read chunks (256 KiB each), not a multiple of one. */
const BIG_TRUNK_FILE = "0123456789abcdef".repeat(96 * 1024) + "tail\n";

/**
 * A file write as a seat could craft it, raw HTTP/2 and protobuf by hand: a FileWriteHeader
 * declaring DECLARED bytes for PATH, then SENT bytes of data in 128 KiB messages. Prints the
 * call's grpc-status and teamd-rule trailers as JSON.
 */
const LYING_WRITE = `
const http2 = require("http2"); const net = require("net");
const [socket, path, declared, sent] = process.argv.slice(1);
const varint = (v) => { let n = BigInt(v); const b = []; while (n > 127n) { b.push(Number(n & 127n) | 128); n >>= 7n; } b.push(Number(n)); return Buffer.from(b); };
const len = (no, payload) => Buffer.concat([varint((no << 3) | 2), varint(payload.length), payload]);
const frame = (msg) => { const h = Buffer.alloc(5); h.writeUInt32BE(msg.length, 1); return Buffer.concat([h, msg]); };
const header = Buffer.concat([len(1, Buffer.from("lie-" + process.pid)), len(2, Buffer.from(path)), varint(6 << 3), varint(declared)]);
const s = http2.connect("http://seat", { createConnection: () => net.connect(socket) });
s.on("error", () => {});
const r = s.request({ ":method": "POST", ":path": "/teamd.v1.ShimService/FileWrite", "content-type": "application/grpc", te: "trailers", "teamd-protocol": process.env.PROTOCOL });
const out = {};
const done = () => { console.log(JSON.stringify(out)); process.exit(0); };
r.on("response", (h) => { if (h["grpc-status"] !== undefined) { out.status = h["grpc-status"]; out.rule = h["teamd-rule"]; } });
r.on("trailers", (h) => { out.status = h["grpc-status"]; out.rule = h["teamd-rule"]; });
r.on("error", () => {});
r.on("close", done);
r.resume();
(async () => {
  r.write(frame(len(1, header)));
  const chunk = Buffer.alloc(128 * 1024, 0x62);
  for (let at = 0; at < Number(sent); at += chunk.length) {
    const piece = chunk.subarray(0, Math.min(chunk.length, Number(sent) - at));
    if (!r.write(frame(len(2, piece)))) await new Promise((ok) => { r.once("drain", ok); r.once("close", ok); });
    if (r.closed) break;
  }
  if (!r.closed) r.end();
})();
setTimeout(done, 30000);
`;

function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  if (kb === undefined) throw new Error(`no VmRSS for ${pid}`);
  return Number(kb) * KIB;
}

interface AttackStats {
  sessionsClosed: number;
  streamsClosed: number;
  flushed: number;
  statuses: Record<string, number>;
}

/** The attack's shape: connections, streams on each, the size each message declares. */
interface Shape {
  readonly conns: number;
  readonly streams: number;
  readonly size: number;
}

const HOLD_MS = 6000;

/**
 * Runs `start` (the attacker, which holds for HOLD_MS), sampling `pid`'s RSS every 100 ms
 * until the attacker exits: the peak growth over the RSS before it, and what the attacker saw.
 */
async function measured(pid: number, start: () => Promise<string>): Promise<{ growth: number; stats: AttackStats }> {
  const before = rssBytes(pid);
  let peak = before;
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, rssBytes(pid));
    } catch {
      /* the process is gone: the assertion on growth says so */
    }
  }, 100);
  try {
    const out = await start();
    peak = Math.max(peak, rssBytes(pid));
    const line = out
      .trim()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .pop();
    if (line === undefined) throw new Error(`the attacker printed no result: ${out}`);
    return { growth: peak - before, stats: JSON.parse(line) as AttackStats };
  } finally {
    clearInterval(sampler);
  }
}

describe.runIf(process.platform === "linux")("escape: one seat against the daemon's memory, through its own socket", () => {
  let h: TeamdHarness;
  let daemonPid: number;
  let protocol: string;
  /** The control's bare servers, each in its own process (stopped by its pid). */
  const bares: ChildProcess[] = [];
  let bareSocket = "";

  /** A fresh bare server (a fresh process: no memory another attack left behind): its pid. */
  const startBare = async (): Promise<number> => {
    bareSocket = join(h.dir, `bare-${bares.length}.sock`);
    const child = spawn(process.execPath, ["-e", BARE_SERVER, bareSocket], { stdio: ["ignore", "pipe", "pipe"] });
    bares.push(child);
    let ready = "";
    child.stdout?.setEncoding("utf8").on("data", (d: string) => (ready += d));
    expect(await waitFor(() => ready.includes("ready"), 10_000), "the bare grpc-js server is ready").toBe(true);
    return child.pid as number;
  };

  /** The attack from inside the seat, over its own socket. */
  const fromSeat = async (shape: Shape): Promise<string> => {
    const r = await h.sh(
      "alpha",
      `PROTOCOL=${protocol} node -e "$(echo ${ATTACK_B64} | base64 -d)" /run/teamd/shim.sock flood ${METHOD} ${shape.conns} ${shape.streams} ${shape.size} ${HOLD_MS}`,
    );
    expect(r.code, r.stderr).toBe(0);
    return r.stdout;
  };

  /** The same attack from the host against the bare server. */
  const atBare = (shape: Shape | "idle", hold = HOLD_MS): Promise<string> =>
    new Promise((resolve, reject) => {
      const args =
        shape === "idle"
          ? [bareSocket, "idle", METHOD, "1", "0", "1", String(hold)]
          : [bareSocket, "flood", METHOD, String(shape.conns), String(shape.streams), String(shape.size), String(hold)];
      const child = spawn(process.execPath, ["-e", ATTACK, ...args], { env: { ...process.env, PROTOCOL: protocol }, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
      const killer = setTimeout(() => child.pid !== undefined && process.kill(child.pid, "SIGKILL"), hold + 20_000);
      child.once("error", reject);
      child.once("exit", () => {
        clearTimeout(killer);
        resolve(out);
      });
    });

  beforeAll(async () => {
    h = await appliedTeam("teamd-sock-", TEAM_FILE, { "README.md": "hello\n", "src/big.txt": BIG_TRUNK_FILE }, { timeoutMs: 60_000 });
    await h.ok(["start", "--team", "proj", "--json"]);
    const pid = h.daemon?.child.pid;
    if (pid === undefined) throw new Error("no daemon pid");
    daemonPid = pid;
    protocol = /PROTOCOL_VERSION = (\d+)/.exec(readFileSync(join(ROOT, "src/rpc/protocol.ts"), "utf8"))?.[1] ?? "";
    expect(protocol).not.toBe("");
  }, 120_000);

  afterAll(async () => {
    for (const bare of bares) if (bare.pid !== undefined && bare.exitCode === null && bare.signalCode === null) process.kill(bare.pid, "SIGKILL");
    await h?.cleanup();
  }, 60_000);

  // Messages declaring the old 8 MiB file content on 4 connections of 16 streams (512 MiB
  // against an uncapped server); and messages just under a small cap on 32 connections of
  // 32 streams (256 MiB against an uncapped server).
  const LARGE: Shape = { conns: 4, streams: 16, size: 8 * MIB };
  const MANY: Shape = { conns: 32, streams: 32, size: 250 * KIB };

  it("control: the same attacks grow a bare grpc-js server's memory by about what they send", async () => {
    const largePid = await startBare();
    const large = await measured(largePid, () => atBare(LARGE));
    process.kill(largePid, "SIGKILL");
    const manyPid = await startBare();
    const many = await measured(manyPid, () => atBare(MANY));
    process.kill(manyPid, "SIGKILL");
    console.log(`control (bare grpc-js): LARGE grew RSS by ${(large.growth / MIB).toFixed(0)} MiB, MANY by ${(many.growth / MIB).toFixed(0)} MiB`);
    // Most of the 512 MiB and 256 MiB held: the server buffers each unfinished message whole.
    expect(large.growth).toBeGreaterThan(300 * MIB);
    expect(many.growth).toBeGreaterThan(150 * MIB);
  }, 120_000);

  it("attack: many connections and streams holding nearly complete messages leave the daemon's memory bounded", async () => {
    // The smaller first: memory the larger one left would be reused by the next.
    const many = await measured(daemonPid, () => fromSeat(MANY));
    const large = await measured(daemonPid, () => fromSeat(LARGE));
    console.log(
      `daemon: LARGE grew RSS by ${(large.growth / MIB).toFixed(1)} MiB (${JSON.stringify(large.stats)}), MANY by ${(many.growth / MIB).toFixed(1)} MiB (${JSON.stringify(many.stats)})`,
    );
    // The seat socket's bounds: 8 connections x 16 streams x a 256 KiB message (plus each
    // stream's 64 KiB window) is at most 40 MiB; 64 MiB leaves room for the daemon's own noise.
    expect(large.growth).toBeLessThan(64 * MIB);
    expect(many.growth).toBeLessThan(64 * MIB);
    // What the attacker saw: every large message's stream ended (refused from its prefix), and
    // every connection past the socket's bound was closed.
    expect(large.stats.streamsClosed).toBe(LARGE.conns * LARGE.streams);
    expect(many.stats.sessionsClosed).toBeGreaterThanOrEqual(MANY.conns - SEAT_MAX_CONNECTIONS);
    // The daemon is alive and still serves the seat.
    expect((await h.shim("alpha", "whoami", "--json")).code).toBe(0);
  }, 120_000);

  it("attack: streamed file writes holding nearly complete 8 MiB contents on every stream leave the daemon's memory bounded", async () => {
    // 4 connections x 16 streams x (8 MiB - 1): 512 MiB of content in small messages, held unfinished.
    const flood = await measured(daemonPid, async () => {
      const r = await h.sh(
        "alpha",
        `PROTOCOL=${protocol} node -e "$(echo ${Buffer.from(FILE_FLOOD).toString("base64")} | base64 -d)" /run/teamd/shim.sock 4 16 ${8 * MIB} ${HOLD_MS + 4000}`,
      );
      expect(r.code, r.stderr).toBe(0);
      return r.stdout.replace("done", "flushed").replace("true", "0").replace("{", '{"sessionsClosed":0,"streamsClosed":0,"statuses":{},');
    });
    console.log(`daemon: streamed file-write flood grew RSS by ${(flood.growth / MIB).toFixed(1)} MiB`);
    // Two contents of 8 MiB at once (MAX_CONTENTS_PER_SEAT), plus each waiting stream's one message and window.
    expect(flood.growth).toBeLessThan(64 * MIB);
    expect((await h.shim("alpha", "whoami", "--json")).code).toBe(0);
    // Nothing of it landed.
    expect(execFileSync("git", ["--git-dir", h.hub, "for-each-ref", "refs/heads/seat/alpha/"], { encoding: "utf8" })).not.toContain("flood");
  }, 90_000);

  it("streams a file's content both ways through the shim: a read of several chunks, a 3 MiB write; a 9 MiB write is refused file.kind", async () => {
    const read = await h.sh("alpha", "teamd-shim file read src/big.txt | sha256sum");
    expect(read.code, read.stderr).toBe(0);
    expect(read.stdout.split(" ")[0]).toBe(createHash("sha256").update(BIG_TRUNK_FILE).digest("hex"));
    const written = await h.sh(
      "alpha",
      "head -c 3145728 /dev/urandom > /tmp/w.bin && sha256sum /tmp/w.bin && teamd-shim file write src/w.bin --from /tmp/w.bin --branch blobs --json",
    );
    expect(written.code, written.stderr).toBe(0);
    const [sum, json] = written.stdout.trim().split("\n");
    const commit = (JSON.parse(json ?? "{}") as { commit: string }).commit;
    const stored = execFileSync("git", ["--git-dir", h.hub, "cat-file", "blob", `${commit}:src/w.bin`], { maxBuffer: 16 * MIB });
    expect(stored.byteLength).toBe(3 * MIB);
    expect(createHash("sha256").update(stored).digest("hex")).toBe(sum?.split(" ")[0]);
    const tooBig = await h.sh("alpha", "head -c 8388609 /dev/zero > /tmp/z.bin && teamd-shim file write src/z.bin --from /tmp/z.bin --branch blobs");
    expect(tooBig.code).toBe(3);
    expect(tooBig.stderr).toContain("file.kind");
    expect(execFileSync("git", ["--git-dir", h.hub, "ls-tree", "--name-only", "refs/heads/seat/alpha/blobs", "src/"], { encoding: "utf8" })).not.toContain(
      "z.bin",
    );
  }, 60_000);

  it("attack: a file write whose header lies about its size is refused (request.malformed, file.kind) and recorded; nothing lands", async () => {
    const lie = async (path: string, declared: number, sent: number): Promise<{ status?: string; rule?: string }> => {
      const r = await h.sh(
        "alpha",
        `PROTOCOL=${protocol} node -e "$(echo ${Buffer.from(LYING_WRITE).toString("base64")} | base64 -d)" /run/teamd/shim.sock ${path} ${declared} ${sent}`,
      );
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout.trim().split("\n").pop() ?? "{}") as { status?: string; rule?: string };
    };
    // Control, first: the same client with an honest header writes its file. (After the lies it
    // may meet the socket's cool-down: the lying client goes on sending past its refusal, which
    // reaches no call, and the seat's overhead bound cuts it — src/rpc/overhead-meter.ts.)
    const honest = await lie("src/honest.txt", 300 * KIB, 300 * KIB);
    expect(honest.status).toBe("0");
    // More than declared (the daemon stops counting at the first byte past it), less than declared, more than the maximum.
    expect((await lie("src/more.txt", 10, 300 * KIB)).rule).toBe("request.malformed");
    expect((await lie("src/less.txt", 1000, 10)).rule).toBe("request.malformed");
    expect((await lie("src/max.txt", 8 * MIB + 1, 8 * MIB + 1)).rule).toBe("file.kind");
    const tree = execFileSync("git", ["--git-dir", h.hub, "ls-tree", "-r", "--name-only", "refs/heads/seat/alpha/main"], { encoding: "utf8" });
    expect(tree).toContain("src/honest.txt");
    for (const path of ["more", "less", "max"]) expect(tree).not.toContain(`src/${path}.txt`);
    const refusals = (await h.records()).filter((r) => r.type === "refusal" && r.action === "file.write").map((r) => String(r.result));
    expect(refusals.filter((rule) => rule === "request.malformed").length).toBeGreaterThanOrEqual(2);
    expect(refusals).toContain("file.kind");
  }, 90_000);

  it("attack: an idle connection is closed by the daemon within its idle timeout; control: the bare server keeps it", async () => {
    // Served again first: an attack before this one may have left the socket in its overhead cool-down (at most 16 s), which the shim waits out.
    expect((await h.shim("alpha", "whoami", "--json")).code).toBe(0);
    const inSeat = h.sh("alpha", `PROTOCOL=${protocol} node -e "$(echo ${ATTACK_B64} | base64 -d)" /run/teamd/shim.sock idle - 0 0 0 25000`);
    await startBare();
    const control = atBare("idle", 25_000);
    const [seat, host] = await Promise.all([inSeat, control]);
    const seatClosed = (JSON.parse(seat.stdout.trim().split("\n").pop() ?? "{}") as { closedAfterMs?: number }).closedAfterMs ?? -2;
    const bareClosed = (JSON.parse(host.trim().split("\n").pop() ?? "{}") as { closedAfterMs?: number }).closedAfterMs ?? -2;
    console.log(`idle connection: closed by the daemon after ${seatClosed} ms; by the bare server after ${bareClosed} ms (-1: still open after 25 s)`);
    expect(bareClosed).toBe(-1);
    expect(seatClosed).toBeGreaterThan(0);
    // grpc-js checks idleness on a timer of the idle period that starts with the connection:
    // a connection idle from the start is closed at the first check (10 s) or, where that
    // check finds it idle a moment short of 10 s, at the next (20 s) — between one and two
    // periods, never later (both seen here). The bare server still holds it at 25 s.
    expect(seatClosed).toBeGreaterThanOrEqual(9_000);
    expect(seatClosed).toBeLessThan(21_000);
  }, 60_000);
});
