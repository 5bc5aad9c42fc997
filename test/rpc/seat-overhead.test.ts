import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { connect as connectSocket, type Socket } from "node:net";
import { connect as connectHttp2 } from "node:http2";
import { ShimService, type PushRequest } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient, createRpcServer, type RefusalError } from "../../src/rpc/index.js";
import { PROTOCOL_METADATA_KEY, PROTOCOL_VERSION } from "../../src/rpc/protocol.js";
import { COOL_DOWN_MS } from "../../src/rpc/overhead-meter.js";
import { makeTempHome } from "../support/programs.js";
import { withUnused } from "./unused-methods.js";

/**
 * A seat socket bounds what a connection sends that reaches no call (src/rpc/overhead-meter.ts,
 * server.ts's meterOverhead): a real grpc-js server of the daemon's on a real unix socket, raw
 * HTTP/2 written by hand (node's client would not send what an attacker sends). Each flood is
 * cut off with GOAWAY(ENHANCE_YOUR_CALM), handed on for the record (`rpc.overhead`, under
 * `connection`), and the socket then closes new connections for a cool-down; honest traffic of
 * every shape teamd's clients send is never cut off. Without the meter every flood runs its
 * whole time (the daemon reads and drops it, a core's worth: test/escape/seat-overhead-attack.test.ts).
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const ENHANCE_YOUR_CALM = 11;
const KIB = 1024;
const MIB = 1024 * KIB;

async function serveSeat() {
  const home = await makeTempHome();
  const socketPath = join(home.dir, "s.sock");
  const refused: { rule: string; reason: string; method: string }[] = [];
  const server = createRpcServer({
    socketPath,
    access: { mode: 0o600 },
    channel: "seat:test",
    onRefusal: async (refusal: RefusalError, method: string) => void refused.push({ rule: refusal.rule, reason: refusal.reason, method }),
  });
  server.addService(
    ShimService,
    withUnused({
      whoAmI: async () => ({ seat: "s", team: "t" }),
      async *fetch(request: { wants: string[] }) {
        const size = Number(request.wants[0] ?? 0);
        for (let sent = 0; sent < size; sent += MIB) yield { data: Buffer.alloc(MIB, 7) };
      },
      async push(requests: AsyncIterable<PushRequest>) {
        let bytes = 0;
        for await (const request of requests) if (request.part.case === "data") bytes += request.part.value.byteLength;
        return { results: [{ ref: String(bytes) }] };
      },
    }) as never,
  );
  await server.listen();
  cleanups.push(async () => {
    await server.close(0);
    await home.remove();
  });
  return { socketPath, refused };
}

const frame = (len: number, type: number, flags: number, id: number) => {
  const b = Buffer.alloc(9);
  b.writeUIntBE(len, 0, 3);
  b[3] = type;
  b[4] = flags;
  b.writeUInt32BE(id, 5);
  return b;
};
const literal = (name: string, value: string) =>
  Buffer.concat([Buffer.from([0, name.length]), Buffer.from(name), Buffer.from([value.length]), Buffer.from(value)]);
const WHOAMI_HEADERS = Buffer.concat([
  literal(":method", "POST"),
  literal(":scheme", "http"),
  literal(":path", "/teamd.v1.ShimService/WhoAmI"),
  literal(":authority", "seat"),
  literal("content-type", "application/grpc"),
  literal("te", "trailers"),
  literal(PROTOCOL_METADATA_KEY, String(PROTOCOL_VERSION)),
]);

type Flood = "unknown-frames" | "closed-stream" | "window-updates";

/** One frame of each flood, 2,000 to a write. */
function floodBatch(kind: Flood): Buffer {
  const one =
    kind === "unknown-frames"
      ? Buffer.concat([frame(1, 0xfa, 0, 0), Buffer.from([0x61])])
      : kind === "window-updates"
        ? Buffer.concat([frame(4, 8, 0, 0), Buffer.from([0, 0, 0, 1])])
        : Buffer.concat([frame(1, 0, 0, 1), Buffer.from([0x61])]);
  return Buffer.concat(Array.from({ length: 2000 }, () => one));
}

/**
 * Connects raw, answers SETTINGS and PING, and floods as fast as the socket drains (for a closed
 * stream: once its WhoAmI, ended by the client, is answered). Resolves when the server closes the
 * connection, or after `maxMs`, with what it saw.
 */
function flood(socketPath: string, kind: Flood, maxMs: number): Promise<{ closed: boolean; goawayCode?: number; sent: number; ms: number; settings: boolean }> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const socket: Socket = connectSocket(socketPath);
    const batch = floodBatch(kind);
    let sent = 0;
    let goawayCode: number | undefined;
    let settings = false;
    let gone = false;
    const pump = () => {
      while (!gone) {
        sent += batch.length;
        if (!socket.write(batch)) return void socket.once("drain", pump);
      }
    };
    const timer = setTimeout(() => {
      gone = true;
      socket.destroy();
      resolve({ closed: false, sent, ms: Date.now() - t0, settings, ...(goawayCode !== undefined ? { goawayCode } : {}) });
    }, maxMs);
    socket.on("error", () => undefined);
    socket.on("close", () => {
      if (gone) return;
      gone = true;
      clearTimeout(timer);
      resolve({ closed: true, sent, ms: Date.now() - t0, settings, ...(goawayCode !== undefined ? { goawayCode } : {}) });
    });
    let buffered = Buffer.alloc(0);
    socket.on("data", (d: Buffer) => {
      buffered = Buffer.concat([buffered, d]);
      while (buffered.length >= 9) {
        const len = buffered.readUIntBE(0, 3);
        if (buffered.length < 9 + len) break;
        const [type, flags, id] = [buffered[3], buffered[4] as number, buffered.readUInt32BE(5) & 0x7fffffff];
        const payload = buffered.subarray(9, 9 + len);
        buffered = buffered.subarray(9 + len);
        if (type === 4 && !(flags & 1)) {
          settings = true;
          socket.write(frame(0, 4, 1, 0));
        } else if (type === 6 && !(flags & 1)) socket.write(Buffer.concat([frame(8, 6, 1, 0), payload]));
        else if (type === 7) goawayCode ??= payload.readUInt32BE(4);
        else if (type === 1 && id === 1 && flags & 1 && kind === "closed-stream") pump();
      }
    });
    socket.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(0, 4, 0, 0)]));
    // An empty WhoAmI request, ended: the call is answered, and then its stream is closed at both ends.
    if (kind === "closed-stream") socket.write(Buffer.concat([frame(WHOAMI_HEADERS.length, 1, 4, 1), WHOAMI_HEADERS, frame(5, 0, 1, 1), Buffer.alloc(5)]));
    else pump();
  });
}

async function until(check: () => boolean, ms: number): Promise<void> {
  for (const t0 = Date.now(); !check() && Date.now() - t0 < ms;) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe("a seat socket's bound on what reaches no call", () => {
  it.each<Flood>(["unknown-frames", "closed-stream", "window-updates"])(
    "a flood of %s is cut off with GOAWAY(ENHANCE_YOUR_CALM) (~100 ms here; held to 5 s), on record as rpc.overhead",
    async (kind) => {
      const { socketPath, refused } = await serveSeat();
      const r = await flood(socketPath, kind, 10_000);
      console.log(`[overhead] ${kind}: ${JSON.stringify(r)}`);
      expect(r.closed).toBe(true);
      expect(r.goawayCode).toBe(ENHANCE_YOUR_CALM);
      expect(r.ms).toBeLessThan(5_000);
      await until(() => refused.length > 0, 2000);
      expect(refused).toHaveLength(1);
      expect(refused[0]).toMatchObject({ rule: "rpc.overhead", method: "connection" });
      expect(refused[0]?.reason).toMatch(/^the connection sent \d+ bytes that reached no call/);
    },
    20_000,
  );

  it("data a client goes on sending on a call the server has answered (refused from its prefix, past the receive cap) is overhead: cut off", async () => {
    const { socketPath, refused } = await serveSeat();
    const session = connectHttp2("http://seat", { createConnection: () => connectSocket(socketPath) });
    session.on("error", () => undefined);
    cleanups.push(async () => void session.destroy());
    const goaway = new Promise<number>((resolve) => session.once("goaway", (code: number) => resolve(code)));
    const stream = session.request({
      ":method": "POST",
      ":path": "/teamd.v1.ShimService/WhoAmI",
      "content-type": "application/grpc",
      te: "trailers",
      [PROTOCOL_METADATA_KEY]: String(PROTOCOL_VERSION),
    });
    stream.on("error", () => undefined);
    // Refused from the prefix: a trailers-only answer (its status in the response's headers).
    const status = new Promise<string>((resolve) => {
      stream.once("response", (h) => h["grpc-status"] !== undefined && resolve(String(h["grpc-status"])));
      stream.once("trailers", (t) => resolve(String(t["grpc-status"])));
    });
    // A prefix declaring 1 MiB (the seat's cap is 256 KiB), then 16 KiB writes for as long as the stream takes them.
    stream.write(Buffer.from([0, 0, 0x10, 0, 0]));
    const chunk = Buffer.alloc(16 * KIB, 0x61);
    let written = 0;
    const t0 = Date.now();
    while (!stream.destroyed && !session.destroyed && Date.now() - t0 < 10_000) {
      written += chunk.length;
      if (!stream.write(chunk)) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(await status).toBe("8"); // RESOURCE_EXHAUSTED
    expect(await goaway).toBe(ENHANCE_YOUR_CALM);
    console.log(`[overhead] answered: ${written} bytes written in ${Date.now() - t0} ms`);
    await until(() => refused.length > 0, 2000);
    expect(refused.map((r) => r.rule)).toEqual(["rpc.overhead"]);
  }, 20_000);

  it("connections that each send most of a bucket and close before their first reading pay from the socket's one bucket: on record, and the socket cools down (found by an attack: each had a bucket of its own, a core of the daemon's at ~130 a second, never cut)", async () => {
    const { socketPath, refused } = await serveSeat();
    const junk = floodBatch("unknown-frames");
    const burst = () =>
      new Promise<void>((resolve) => {
        const socket = connectSocket(socketPath);
        socket.on("error", () => undefined);
        socket.on("data", () => undefined);
        socket.on("close", () => resolve());
        socket.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(0, 4, 0, 0)]));
        // 0.8 MiB each (40 batches of 2,000 ten-byte frames), then closed at once: under a bucket of its own, and before its first reading.
        for (let i = 0; i < 40; i++) socket.write(junk);
        socket.end();
      });
    for (let i = 0; i < 3; i++) await burst();
    await until(() => refused.length > 0, 2000);
    expect(refused.map((r) => `${r.rule} ${r.method}`)).toEqual(["rpc.overhead connection"]);
    expect(refused[0]?.reason).toMatch(/it had closed, and the seat's socket takes no new connection for a while$/);
    const next = await flood(socketPath, "unknown-frames", 1000);
    expect(next).toMatchObject({ closed: true, settings: false });
  }, 20_000);

  it("bytes a stream sent for a message it never finished are overhead when it ends: streams that each send most of a message under the receive cap and cancel it are cut off (found by a review: they were counted as calls' data)", async () => {
    const { socketPath, refused } = await serveSeat();
    const session = connectHttp2("http://seat", { createConnection: () => connectSocket(socketPath) });
    session.on("error", () => undefined);
    cleanups.push(async () => void session.destroy());
    const goaway = new Promise<number>((resolve) => session.once("goaway", (code: number) => resolve(code)));
    // Each: a prefix declaring 250 KiB (under the seat's 256 KiB cap), 240 KiB of it, then cancelled.
    const body = Buffer.alloc(240 * KIB, 0x61);
    let streams = 0;
    for (; streams < 40 && !session.destroyed && !session.closed; streams++) {
      const stream = session.request({
        ":method": "POST",
        ":path": "/teamd.v1.ShimService/WhoAmI",
        "content-type": "application/grpc",
        te: "trailers",
        [PROTOCOL_METADATA_KEY]: String(PROTOCOL_VERSION),
      });
      stream.on("error", () => undefined);
      const closed = new Promise<void>((resolve) => stream.on("close", resolve));
      stream.write(Buffer.from([0, 0, 0x03, 0xe8, 0x00]));
      await new Promise<void>((resolve) => stream.write(body, () => resolve()));
      stream.close(8); // CANCEL
      await closed;
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    console.log(`[overhead] unfinished messages: cut after ${streams} streams`);
    expect(await goaway).toBe(ENHANCE_YOUR_CALM);
    expect(streams).toBeLessThan(20);
    await until(() => refused.length > 0, 2000);
    expect(refused.map((r) => r.rule)).toEqual(["rpc.overhead"]);
  }, 30_000);

  it("after a flood is cut off the socket closes new connections for the cool-down, then serves them again", async () => {
    const { socketPath, refused } = await serveSeat();
    const r = await flood(socketPath, "unknown-frames", 10_000);
    expect(r.goawayCode).toBe(ENHANCE_YOUR_CALM);
    const cutAt = Date.now();
    // Arriving in the cool-down: closed before the server says a word (no SETTINGS).
    const early = await flood(socketPath, "unknown-frames", 1000);
    expect(early).toMatchObject({ closed: true, settings: false });
    expect(early.goawayCode).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, cutAt + COOL_DOWN_MS + 200 - Date.now())));
    const client = createRpcClient(ShimService, socketPath);
    cleanups.push(async () => client.close());
    expect(await client.whoAmI({})).toMatchObject({ seat: "s", team: "t" });
    // The close on arrival is not a refusal of its own: one record, for the flood.
    expect(refused.map((x) => x.rule)).toEqual(["rpc.overhead"]);
  }, 20_000);

  it("honest traffic is never cut off: 3,000 calls on one connection, a 64 MiB server stream, a 48 MiB client stream, idle pings", async () => {
    const { socketPath, refused } = await serveSeat();
    const client = createRpcClient(ShimService, socketPath);
    cleanups.push(async () => client.close());
    for (let i = 0; i < 3000; i++) await client.whoAmI({});
    let read = 0;
    for await (const reply of client.fetch({ wants: [String(64 * MIB)] })) read += reply.data.byteLength;
    expect(read).toBe(64 * MIB);
    async function* parts() {
      for (let i = 0; i < 384; i++) yield { part: { case: "data" as const, value: Buffer.alloc(128 * KIB, i & 0xff) } };
    }
    expect((await client.push(parts())).results[0]?.ref).toBe(String(48 * MIB));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await client.whoAmI({})).toMatchObject({ seat: "s" });
    expect(refused).toEqual([]);
  }, 60_000);
});
