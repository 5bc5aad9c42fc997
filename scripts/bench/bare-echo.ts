import * as grpc from "@grpc/grpc-js";
import { CLIENT_CHANNEL_OPTIONS, SERVER_CHANNEL_OPTIONS } from "../../src/rpc/channel-options.js";
import { percentile } from "./report.js";

/**
 * The baseline every RPC figure is compared with: grpc-js alone, a unary echo of raw
 * bytes over a unix socket, no protobuf, no metadata check, no teamd code — with teamd's
 * grpc-js channel options, so the comparison is of the same grpc-js. It imports
 * grpc-js directly on purpose (the one exception to "only src/rpc/ imports grpc-js").
 */
const PATH = "/bench.Echo/Echo";
const identity = (b: Buffer) => b;

export function serveBareEcho(socketPath: string): Promise<grpc.Server> {
  const server = new grpc.Server(SERVER_CHANNEL_OPTIONS);
  server.addService(
    {
      Echo: {
        path: PATH,
        requestStream: false,
        responseStream: false,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity,
      },
    },
    { Echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, call.request) },
  );
  return new Promise((resolve, reject) =>
    server.bindAsync(`unix:${socketPath}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve(server))),
  );
}

export function bareEchoCaller(socketPath: string): { call(): Promise<void>; close(): void } {
  const client = new grpc.Client(`unix:${socketPath}`, grpc.credentials.createInsecure(), CLIENT_CHANNEL_OPTIONS);
  const payload = Buffer.alloc(48, 7);
  return {
    call: () => new Promise((resolve, reject) => client.makeUnaryRequest(PATH, identity, identity, payload, (e) => (e ? reject(e) : resolve()))),
    close: () => client.close(),
  };
}

export interface LatencyFigures {
  /** Latency with one call in flight (microseconds). */
  readonly p50: number;
  readonly p99: number;
  /** Calls per second with one call in flight. */
  readonly sequentialPerSecond: number;
  /** Calls per second with `inFlight` calls in flight. */
  readonly callsPerSecond: number;
  /** Latency of each call with `inFlight` in flight (microseconds). */
  readonly concurrentP50: number;
  readonly concurrentP99: number;
}

/** `total` calls, `inFlight` at a time; `took` gets each call's latency in microseconds. */
async function inParallel(call: () => Promise<unknown>, total: number, inFlight: number, took?: (us: number) => void): Promise<void> {
  let started = 0;
  const worker = async () => {
    while (started < total) {
      started++;
      const c0 = process.hrtime.bigint();
      await call();
      took?.(Number(process.hrtime.bigint() - c0) / 1000);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

/** Latency and throughput with one call in flight, then with `inFlight` concurrent calls. */
export async function measureCalls(call: () => Promise<unknown>, sequential: number, concurrentTotal: number, inFlight = 64): Promise<LatencyFigures> {
  for (let i = 0; i < 200; i++) await call(); // warm-up: connection, JIT
  const samples: number[] = [];
  const s0 = process.hrtime.bigint();
  for (let i = 0; i < sequential; i++) {
    const t0 = process.hrtime.bigint();
    await call();
    samples.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  const sequentialSeconds = Number(process.hrtime.bigint() - s0) / 1e9;
  samples.sort((a, b) => a - b);
  // Warm up at the concurrency measured too: paths that only run under load (batches of many
  // requests, many streams at once) are compiled before the clock starts, for the echo and
  // for teamd alike — the figure is the steady rate, not the JIT's.
  await inParallel(call, Math.min(concurrentTotal, inFlight * 16), inFlight);
  const concurrent: number[] = [];
  const t0 = process.hrtime.bigint();
  await inParallel(call, concurrentTotal, inFlight, (us) => concurrent.push(us));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  concurrent.sort((a, b) => a - b);
  return {
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    sequentialPerSecond: sequential / sequentialSeconds,
    callsPerSecond: concurrentTotal / seconds,
    concurrentP50: percentile(concurrent, 50),
    concurrentP99: percentile(concurrent, 99),
  };
}

/** Calls per second with `inFlight` in flight, over `total` calls (the caller warmed the path up). */
async function measureRate(call: () => Promise<unknown>, total: number, inFlight = 64): Promise<number> {
  const t0 = process.hrtime.bigint();
  await inParallel(call, total, inFlight);
  return total / (Number(process.hrtime.bigint() - t0) / 1e9);
}

export interface RateComparison {
  /** Median calls/s of each side over the rounds. */
  readonly subject: number;
  readonly baseline: number;
  /** subject / baseline of the medians. */
  readonly ratio: number;
  readonly rounds: number;
}

/**
 * Throughput of `subject` next to `baseline`, in alternating rounds (baseline, subject,
 * baseline, ...) with `inFlight` in flight, compared by their medians. A shared 2-core machine
 * drifts by tens of percent over a minute; measured minutes apart, the two figures would
 * compare the machine's moods as much as the code. Both are warmed up at that concurrency first.
 */
export async function compareRates(
  subject: () => Promise<unknown>,
  baseline: () => Promise<unknown>,
  total: number,
  rounds = 3,
  inFlight = 64,
): Promise<RateComparison> {
  await inParallel(baseline, inFlight * 16, inFlight);
  await inParallel(subject, inFlight * 16, inFlight);
  const s: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < rounds; r++) {
    b.push(await measureRate(baseline, total, inFlight));
    s.push(await measureRate(subject, total, inFlight));
  }
  const median = (xs: number[]) =>
    percentile(
      [...xs].sort((x, y) => x - y),
      50,
    );
  return { subject: median(s), baseline: median(b), ratio: median(s) / median(b), rounds };
}
