import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { bareEchoCaller, measureCalls, type LatencyFigures } from "./bare-echo.js";
import { startChild, stopChild } from "../lib/child.js";
import type { BenchRow } from "./report.js";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const TEAMD = fileURLToPath(new URL("../../daemon/main.js", import.meta.url));

const SEQUENTIAL = 3000;
const CONCURRENT = 6000;

function rows(prefix: string, f: LatencyFigures, note: string): BenchRow[] {
  return [
    { name: `${prefix}.p50`, value: f.p50, unit: "us", note },
    { name: `${prefix}.p99`, value: f.p99, unit: "us", note },
    { name: `${prefix}.calls-per-s-1`, value: f.sequentialPerSecond, unit: "calls/s", note: "1 in flight" },
    { name: `${prefix}.p50-64`, value: f.concurrentP50, unit: "us", note: "64 in flight" },
    { name: `${prefix}.p99-64`, value: f.concurrentP99, unit: "us", note: "64 in flight" },
    { name: `${prefix}.calls-per-s`, value: f.callsPerSecond, unit: "calls/s", note: "64 in flight" },
  ];
}

/**
 * Unary round trip over a seat socket: a real `teamd serve` process answering
 * ShimService.WhoAmI to our typed client, next to the bare grpc-js echo (separate process,
 * raw bytes) measured in the same run. Both servers run in their own process, as a seat's
 * calls do.
 */
export async function benchRpc(): Promise<BenchRow[]> {
  const dir = await mkdtemp(join(tmpdir(), "teamd-bench-"));
  try {
    const echoSocket = join(dir, "echo.sock");
    const echo = await startChild([join(HERE, "bare-echo-server.js"), echoSocket], {}, "ready");
    let bare: LatencyFigures;
    try {
      const caller = bareEchoCaller(echoSocket);
      bare = await measureCalls(caller.call, SEQUENTIAL, CONCURRENT);
      caller.close();
    } finally {
      await stopChild(echo);
    }

    const home = join(dir, "home");
    const daemon = await startChild([TEAMD, "serve", "--seat", "bench"], { TEAMD_HOME: home }, "teamd: ready");
    let seat: LatencyFigures;
    try {
      const client = createRpcClient(ShimService, join(home, "run/seats/debug.bench.sock"));
      seat = await measureCalls(() => client.whoAmI(), SEQUENTIAL, CONCURRENT);
      client.close();
    } finally {
      await stopChild(daemon);
    }

    return [
      ...rows("rpc.bare-echo", bare, "baseline: grpc-js alone, raw bytes, separate process"),
      ...rows("rpc.seat-whoami", seat, "teamd serve, ShimService.WhoAmI on a seat socket"),
      { name: "rpc.seat-whoami.p50-vs-bare", value: seat.p50 / bare.p50, unit: "ratio", note: "seat p50 / bare echo p50" },
    ];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
