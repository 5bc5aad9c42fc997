import { execFile, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startChild, stopChild } from "../lib/child.js";
import { makeBenchRepo } from "./fixture.js";
import type { BenchRow } from "./report.js";

const TEAMD = fileURLToPath(new URL("../../daemon/main.js", import.meta.url));
const BYTES = 100 * 1024 * 1024;
const CONNECTS = Number(process.env.TEAMD_BENCH_EGRESS_CONNECTS ?? 200);
const LAUNCHES = 7;
/** Downloads per path; the median is reported (one 100 MiB run is at the scheduler's mercy on a shared machine). */
const ROUNDS = 5;

/**
 * The egress byte path (issue 11), through a real daemon, ledger and contained seat: a
 * 100 MiB download and the connect latency (sequential, p50) through the seat's proxy
 * (client in the seat → loopback proxy → the seat's egress unix socket → the daemon's
 * decision, durable intent and relay → a loopback server on the host), next to, in the same
 * run and with the same client code, a direct loopback TCP connection and a bare stream over
 * a unix socket, both on the host. Target: the proxied throughput is at least 0.25× the bare
 * unix stream's. Also the cost of the egress launcher on a seat command: `teamd exec -- true`
 * in a seat with egress next to one without.
 */
const CLIENT = String.raw`
const net = require("node:net");
const [mode, where, bytes, connects, rounds] = process.argv.slice(1);
const ROUNDS = Number(rounds);
const total = Number(bytes);
const open = () => new Promise((resolve, reject) => {
  const t0 = process.hrtime.bigint();
  const s = mode === "unix" ? net.connect(where) : mode === "tcp" ? net.connect(Number(where.split(":")[1]), where.split(":")[0]) : net.connect(3128, "127.0.0.1");
  s.on("error", reject);
  s.once("connect", () => {
    if (mode !== "proxy") return resolve({ s, us: Number(process.hrtime.bigint() - t0) / 1000 });
    s.write("CONNECT " + where + " HTTP/1.1\r\nHost: " + where + "\r\n\r\n");
    let head = Buffer.alloc(0);
    const onData = (d) => {
      head = Buffer.concat([head, d]);
      const at = head.indexOf("\r\n\r\n");
      if (at < 0) return;
      s.off("data", onData);
      s.pause();
      if (!head.subarray(0, 12).toString().includes("200")) return reject(new Error(head.toString()));
      const rest = head.subarray(at + 4);
      if (rest.length) s.unshift(rest);
      resolve({ s, us: Number(process.hrtime.bigint() - t0) / 1000 });
    };
    s.on("data", onData);
  });
});
(async () => {
  const lat = [];
  for (let i = 0; i < Number(connects); i++) {
    const { s, us } = await open();
    lat.push(us);
    s.destroy();
  }
  lat.sort((a, b) => a - b);
  const rates = [];
  for (let round = 0; round < ROUNDS; round++) {
    const { s } = await open();
    s.write("go");
    const t0 = process.hrtime.bigint();
    let got = 0;
    s.on("data", (d) => (got += d.length));
    s.resume();
    await new Promise((r) => s.once("end", r));
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    s.destroy();
    if (got !== total) throw new Error("got " + got + " of " + total + " bytes");
    rates.push(total / 1048576 / seconds);
  }
  rates.sort((a, b) => a - b);
  process.stdout.write(JSON.stringify({ mbps: rates[Math.floor(rates.length / 2)], p50: lat.length > 0 ? lat[Math.floor(lat.length / 2)] : null }) + "\n");
})().catch((e) => { process.stderr.write(String(e.stack || e) + "\n"); process.exit(1); });
`;

/** A server that answers a connection's first bytes ("go") with BYTES bytes, then ends; a connection that sends nothing is just closed. */
function sourceServer(): Server {
  const chunk = Buffer.alloc(256 * 1024, 7);
  return createServer((socket) => {
    socket.on("error", () => undefined);
    socket.once("data", () => {
      let left = BYTES;
      const pump = () => {
        while (left > 0) {
          const n = Math.min(left, chunk.length);
          left -= n;
          if (!socket.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void socket.once("drain", pump);
        }
        socket.end();
      };
      pump();
    });
  });
}

function listen(server: Server, at: number | string): Promise<string> {
  return new Promise((resolve) => {
    if (typeof at === "string") server.listen(at, () => resolve(at));
    else server.listen(at, "127.0.0.1", () => resolve(`127.0.0.1:${(server.address() as { port: number }).port}`));
  });
}

export async function benchEgress(): Promise<BenchRow[]> {
  if (process.platform !== "linux") return [];
  const dir = mkdtempSync(join(tmpdir(), "teamd-bench-egress-"));
  if (process.getuid?.() === 0) chmodSync(dir, 0o711);
  const home = join(dir, "home");
  const repo = join(dir, "repo");
  const tcp = sourceServer();
  const unix = sourceServer();
  const tcpAt = await listen(tcp, 0);
  const unixAt = await listen(unix, join(dir, "bare.sock"));
  const port = tcpAt.split(":")[1] as string;
  // One bare Node relay hop (unix in, TCP out, pipe both ways): what each of the proxied
  // path's two relays costs, measured beside it.
  const hop = createServer((seat) => {
    const upstream = connect(Number(port), "127.0.0.1");
    seat.on("error", () => upstream.destroy());
    upstream.on("error", () => seat.destroy());
    seat.pipe(upstream);
    upstream.pipe(seat);
  });
  const hopAt = await listen(hop, join(dir, "hop.sock"));
  const env = { TEAMD_HOME: home, TEAMD_OWNER_KEY: join(dir, "keys/owner.key"), HOME: dir };
  const teamd = (...args: string[]) => {
    const r = spawnSync(process.execPath, [TEAMD, ...args], { cwd: repo, env: { ...process.env, ...env }, encoding: "utf8", timeout: 300_000 });
    if (r.status !== 0) throw new Error(`teamd ${args.join(" ")} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  };
  makeBenchRepo(repo);
  const daemon = await startChild([TEAMD, "serve"], { ...env, TEAMD_TEST_EGRESS_HOSTS: JSON.stringify({ "bench.test": "127.0.0.1" }) }, "teamd: ready");
  try {
    teamd("init", "--team", "bench", "--yes");
    const seat = (name: string, network: string) =>
      `  ${name}:\n    lab: anthropic\n    capabilities: { read: ~ }\n    start:\n      command: [sleep, "3600"]\n${network}`;
    writeFileSync(
      join(repo, "teamd.yaml"),
      `version: 1\nteam: bench\ndeclare:\n  branches: [main]\n  labs: [anthropic]\nseats:\n${seat("net", `      network:\n        allow: ["bench.test:${port}"]\n        private: [127.0.0.1/32]\n`)}${seat("plain", "")}`,
    );
    teamd("apply", "--yes");
    teamd("start", "--team", "bench");
    // Asynchronous: the servers run in this process, so nothing here may block its loop.
    const measure = async (argv: string[]) => {
      const { stdout } = await promisify(execFile)(process.execPath, argv, { cwd: repo, env: { ...process.env, ...env }, encoding: "utf8", timeout: 300_000 });
      return JSON.parse(stdout) as { mbps: number; p50: number };
    };
    // Interleaved, one download per path per round, so the machine's load falls on every path alike.
    const paths: Record<"proxied" | "direct" | "bare" | "oneHop", (connects: number) => string[]> = {
      proxied: (connects) => [TEAMD, "exec", "net@bench", "--", "node", "-e", CLIENT, "proxy", `bench.test:${port}`, String(BYTES), String(connects), "1"],
      direct: (connects) => ["-e", CLIENT, "tcp", tcpAt, String(BYTES), String(connects), "1"],
      bare: (connects) => ["-e", CLIENT, "unix", unixAt, String(BYTES), String(connects), "1"],
      oneHop: (connects) => ["-e", CLIENT, "unix", hopAt, String(BYTES), String(connects), "1"],
    };
    const rates: Record<keyof typeof paths, number[]> = { proxied: [], direct: [], bare: [], oneHop: [] };
    const latency: Partial<Record<keyof typeof paths, number>> = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of Object.keys(paths) as (keyof typeof paths)[]) {
        const figures = await measure(paths[name](round === 0 ? CONNECTS : 0));
        rates[name].push(figures.mbps);
        if (round === 0) latency[name] = figures.p50;
      }
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
    const proxied = { mbps: median(rates.proxied), p50: latency.proxied as number };
    const direct = { mbps: median(rates.direct), p50: latency.direct as number };
    const bare = { mbps: median(rates.bare), p50: latency.bare as number };
    const oneHop = { mbps: median(rates.oneHop) };
    const launch = (name: string) => {
      const times: number[] = [];
      for (let i = 0; i < LAUNCHES; i++) {
        const t0 = process.hrtime.bigint();
        teamd("exec", `${name}@bench`, "--", "true");
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      return times.sort((a, b) => a - b)[Math.floor(times.length / 2)] as number;
    };
    const withEgress = launch("net");
    const without = launch("plain");
    teamd("stop", "--team", "bench");
    return [
      {
        name: "egress.proxied.mib-per-s",
        value: proxied.mbps,
        unit: "MiB/s",
        note: `100 MiB download in the seat through its proxy, the daemon's decision and relay (median of ${ROUNDS})`,
      },
      {
        name: "egress.direct-tcp.mib-per-s",
        value: direct.mbps,
        unit: "MiB/s",
        note: `the same download, direct loopback TCP on the host (median of ${ROUNDS}, interleaved)`,
      },
      {
        name: "egress.bare-unix.mib-per-s",
        value: bare.mbps,
        unit: "MiB/s",
        note: `the same download, a bare unix-socket stream on the host (median of ${ROUNDS}, interleaved)`,
      },
      {
        name: "egress.one-node-hop.mib-per-s",
        value: oneHop.mbps,
        unit: "MiB/s",
        note: "the same download through one bare Node pipe relay (unix → TCP) on the host; the proxied path has two",
      },
      {
        name: "egress.proxied-vs-bare-unix",
        value: proxied.mbps / bare.mbps,
        unit: "ratio",
        note: "proxied / bare unix stream",
        target: { min: 0.25, text: ">= 0.25" },
      },
      { name: "egress.proxied-vs-direct-tcp", value: proxied.mbps / direct.mbps, unit: "ratio", note: "proxied / direct loopback TCP" },
      {
        name: "egress.proxied.connect-p50",
        value: proxied.p50,
        unit: "us",
        note: `CONNECT through the proxy until 200 (decision, resolve, durable intent, upstream connect), ${CONNECTS} sequential`,
      },
      { name: "egress.direct-tcp.connect-p50", value: direct.p50, unit: "us", note: "loopback TCP connect on the host" },
      { name: "egress.bare-unix.connect-p50", value: bare.p50, unit: "us", note: "unix-socket connect on the host" },
      { name: "egress.exec-with-launcher.ms", value: withEgress, unit: "ms", note: `teamd exec -- true in a seat with egress (median of ${LAUNCHES})` },
      { name: "egress.exec-without.ms", value: without, unit: "ms", note: "the same in a seat without egress: the difference is the launcher" },
    ];
  } finally {
    await stopChild(daemon);
    await new Promise<void>((resolve) => tcp.close(() => resolve()));
    await new Promise<void>((resolve) => unix.close(() => resolve()));
    await new Promise<void>((resolve) => hop.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  }
}
