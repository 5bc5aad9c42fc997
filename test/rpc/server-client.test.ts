import { afterEach, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { toBinary, fromBinary } from "@bufbuild/protobuf";
import { join } from "node:path";
import { existsSync, unlinkSync, writeFileSync } from "node:fs";
import { connect as connectSocket, createServer, type Socket } from "node:net";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { WhoAmIRequestSchema, WhoAmIResponseSchema } from "../../src/gen/teamd/v1/whoami_pb.js";
import { createRpcClient, createRpcServer, DaemonUnavailableError, RefusalError, RpcError, type RpcServer } from "../../src/rpc/index.js";
import { PROTOCOL_METADATA_KEY, PROTOCOL_VERSION, RULE_METADATA_KEY } from "../../src/rpc/protocol.js";
import { connect as connectHttp2, constants as httpConstants } from "node:http2";
import { makeTempHome } from "../support/programs.js";
import { withUnused } from "./unused-methods.js";
import { whoAmIWithProtocol } from "./raw-call.js";

/** The rpc layer in one process: a real grpc-js server on a real unix socket, a real client. */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function serveShim(
  impl: Parameters<RpcServer["addService"]>[1],
  onInternalError?: (e: unknown) => void,
  onRefusal?: (refusal: RefusalError, method: string) => Promise<void>,
) {
  const home = await makeTempHome();
  const socketPath = join(home.dir, "s.sock");
  const server = createRpcServer({
    socketPath,
    access: { mode: 0o600 },
    channel: "seat:test",
    ...(onInternalError ? { onInternalError } : {}),
    ...(onRefusal ? { onRefusal } : {}),
  });
  server.addService(ShimService, withUnused(impl as Record<string, unknown>) as never);
  await server.listen();
  cleanups.push(async () => {
    await server.close(0);
    await home.remove();
  });
  return { socketPath, dir: home.dir };
}

describe("rpc server and client", () => {
  it("round-trips a typed unary call and passes the socket's channel to the handler", async () => {
    const { socketPath } = await serveShim({
      hello: async () => ({}),
      whoAmI: async (_req: unknown, ctx: { channel: string }) => ({ seat: ctx.channel, team: "t" }),
    });
    const client = createRpcClient(ShimService, socketPath);
    cleanups.push(async () => client.close());
    const reply = await client.whoAmI({});
    expect(reply.seat).toBe("seat:test");
    expect(reply.team).toBe("t");
  });

  it("connect() makes the connection before any call, and the first call uses it", async () => {
    // A listener that only counts connections: the client's own, made with no call at all.
    const home = await makeTempHome();
    const path = join(home.dir, "count.sock");
    const seen: Socket[] = [];
    const counter = createServer((socket) => seen.push(socket));
    await new Promise<void>((resolve) => counter.listen(path, resolve));
    const lazy = createRpcClient(ShimService, path);
    const eager = createRpcClient(ShimService, path);
    eager.connect();
    for (const deadline = Date.now() + 5_000; seen.length === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 10));
    expect(seen).toHaveLength(1);
    lazy.close();
    eager.close();
    for (const socket of seen) socket.destroy();
    await new Promise<void>((resolve) => counter.close(() => resolve()));
    await home.remove();

    const { socketPath } = await serveShim({ hello: async () => ({}), whoAmI: async () => ({ seat: "s", team: "t" }) });
    const client = createRpcClient(ShimService, socketPath);
    cleanups.push(async () => client.close());
    client.connect();
    client.connect(); // a second is the same connection
    expect((await client.whoAmI({})).seat).toBe("s");
  });

  it("connect() where no daemon listens throws nothing; the call says the daemon is unavailable, as without it", async () => {
    const home = await makeTempHome();
    cleanups.push(() => home.remove());
    const client = createRpcClient(ShimService, join(home.dir, "absent.sock"));
    cleanups.push(async () => client.close());
    client.connect();
    await expect(client.whoAmI({})).rejects.toBeInstanceOf(DaemonUnavailableError);
  });

  it("a socket connected before the client (the remote helper's, made while its code loads) carries the first call", async () => {
    const { socketPath } = await serveShim({ hello: async () => ({}), whoAmI: async () => ({ seat: "s", team: "t" }) });
    // The server's settings arrive on it, unread, before the client exists.
    const early = connectSocket(socketPath);
    await new Promise((resolve) => early.once("connect", resolve));
    for (const deadline = Date.now() + 5_000; early.readableLength === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 5));
    expect(early.readableLength).toBeGreaterThan(0);
    const client = createRpcClient(ShimService, socketPath, { socket: early });
    cleanups.push(async () => client.close());
    const before = early.bytesWritten;
    expect((await client.whoAmI({})).seat).toBe("s");
    // The call went out on the given socket (the client's preface and the request).
    expect(before).toBe(0);
    expect(early.bytesWritten).toBeGreaterThan(0);
    client.close();
    expect(early.destroyed).toBe(true);
  });

  it("a socket connected early that failed (no daemon) is dropped: the call says the daemon is unavailable, in the same words as without it", async () => {
    const home = await makeTempHome();
    cleanups.push(() => home.remove());
    const path = join(home.dir, "absent.sock");
    const early = connectSocket(path);
    early.on("error", () => undefined);
    await new Promise((resolve) => early.once("close", resolve));
    const withEarly = createRpcClient(ShimService, path, { socket: early });
    const without = createRpcClient(ShimService, path);
    cleanups.push(async () => withEarly.close());
    cleanups.push(async () => without.close());
    const [a, b] = await Promise.all([withEarly.whoAmI({}).catch((e: unknown) => e), without.whoAmI({}).catch((e: unknown) => e)]);
    expect(a).toBeInstanceOf(DaemonUnavailableError);
    expect((a as Error).message).toBe((b as Error).message);
  });

  it("a seat socket resets a stream whose DATA frames are tiny (ENHANCE_YOUR_CALM), and hands the refusal on for the record: each frame would cost the daemon an object, not its byte", async () => {
    const refused: { rule: string; reason: string; method: string }[] = [];
    const { socketPath } = await serveShim({ hello: async () => ({}), whoAmI: async () => ({ seat: "s", team: "t" }) }, undefined, async (refusal, method) => {
      refused.push({ rule: refusal.rule, reason: refusal.reason, method });
    });
    const session = connectHttp2("http://seat", { createConnection: () => connectSocket(socketPath) });
    cleanups.push(async () => {
      session.destroy();
    });
    const stream = session.request({ ":method": "POST", ":path": "/teamd.v1.ShimService/WhoAmI", "content-type": "application/grpc", te: "trailers" });
    stream.on("error", () => undefined);
    const closed = new Promise<void>((resolve) => stream.on("close", resolve));
    // A prefix declaring 1,000 bytes, then its bytes one frame each.
    stream.write(Buffer.from([0, 0, 0, 0x03, 0xe8]));
    for (let i = 0; i < 400 && !stream.closed; i++) {
      stream.write(Buffer.from([0x61]));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await closed;
    expect(stream.rstCode).toBe(httpConstants.NGHTTP2_ENHANCE_YOUR_CALM);
    // Once for the stream (its later frames are dropped, not refused again), by the method its path names.
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ rule: "rpc.frames", method: "WhoAmI" });
    expect(refused[0]?.reason).toMatch(/^the stream's 65 DATA frames carried \d+ bytes; past its first 64, a seat's frames must average 1024 bytes or more/);
    // The same bytes in one frame are a call like any other (an unfinished one here: no reset).
    const whole = session.request({ ":method": "POST", ":path": "/teamd.v1.ShimService/WhoAmI", "content-type": "application/grpc", te: "trailers" });
    whole.on("error", () => undefined);
    whole.write(Buffer.concat([Buffer.from([0, 0, 0, 0x03, 0xe8]), Buffer.alloc(999, 0x61)]));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(whole.closed).toBe(false);
    whole.close();
    expect(refused).toHaveLength(1);
  });

  it("a seat socket resets a stream whose gRPC messages are tiny (ENHANCE_YOUR_CALM), in full-sized frames, and hands the refusal on: each message would cost the daemon an object and a turn of its handler, not its bytes", async () => {
    const refused: { rule: string; reason: string; method: string }[] = [];
    let seen = 0;
    const { socketPath } = await serveShim(
      {
        hello: async () => ({}),
        async fileWrite(requests: AsyncIterable<unknown>) {
          for await (const _ of requests) seen++;
          return {};
        },
      } as never,
      undefined,
      async (refusal, method) => void refused.push({ rule: refusal.rule, reason: refusal.reason, method }),
    );
    const session = connectHttp2("http://seat", { createConnection: () => connectSocket(socketPath) });
    session.on("error", () => undefined);
    cleanups.push(async () => void session.destroy());
    const call = () => {
      const stream = session.request({
        ":method": "POST",
        ":path": "/teamd.v1.ShimService/FileWrite",
        "content-type": "application/grpc",
        te: "trailers",
        [PROTOCOL_METADATA_KEY]: String(PROTOCOL_VERSION),
      });
      stream.on("error", () => undefined);
      return stream;
    };
    const framed = (body: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, body.length >> 8, body.length & 0xff]), body]);
    // 2,000 empty data parts (field 2, length 0: seven bytes framed), in one write: node's client sends them in full-sized frames.
    const tiny = call();
    const closed = new Promise<void>((resolve) => tiny.on("close", resolve));
    tiny.write(Buffer.concat(Array.from({ length: 2000 }, () => framed(Buffer.from([0x12, 0x00])))));
    await closed;
    expect(tiny.rstCode).toBe(httpConstants.NGHTTP2_ENHANCE_YOUR_CALM);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ rule: "rpc.messages", method: "FileWrite" });
    expect(refused[0]?.reason).toMatch(/^the stream's \d+ messages came in \d+ bytes; past its first 64, a seat's messages must average 1024 bytes or more/);
    // Control: 100 parts of 16 KiB each, on the same connection: a call like any other.
    seen = 0;
    const whole = call();
    const answered = new Promise<void>((resolve) => whole.on("close", resolve));
    whole.on("data", () => undefined);
    // Each a data part of 16,000 bytes (field 2; its length 16,000 as a varint: 0x80 0x7d).
    for (let i = 0; i < 100; i++) whole.write(framed(Buffer.concat([Buffer.from([0x12, 0x80, 0x7d]), Buffer.alloc(16_000)])));
    whole.end();
    await answered;
    expect(refused).toHaveLength(1);
    expect(seen).toBe(100);
  });

  it("names on record only a method the socket serves: a path of the seat's own making is 'unknown'", async () => {
    const refused: { rule: string; method: string }[] = [];
    const { socketPath } = await serveShim({ hello: async () => ({}), whoAmI: async () => ({ seat: "s", team: "t" }) }, undefined, async (refusal, method) => {
      refused.push({ rule: refusal.rule, method });
    });
    // Raw HTTP/2: the path's HEADERS and 70 one-byte DATA frames in one write, before the server can answer the path.
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
    for (const [id, path] of [
      [1, "/evil.Forged/OwnerApprovedThisPush"],
      [3, "/teamd.v1.ShimService/WhoAmI"],
    ] as const) {
      const block = Buffer.concat([
        literal(":method", "POST"),
        literal(":scheme", "http"),
        literal(":path", path),
        literal(":authority", "seat"),
        literal("content-type", "application/grpc"),
        literal("te", "trailers"),
      ]);
      const parts = [frame(block.length, 1, 4, id), block];
      for (let i = 0; i < 70; i++) parts.push(frame(1, 0, 0, id), Buffer.from([0]));
      const socket = connectSocket(socketPath);
      cleanups.push(async () => void socket.destroy());
      socket.on("error", () => undefined);
      socket.on("data", () => undefined);
      socket.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(0, 4, 0, 0), ...parts]));
    }
    for (let waited = 0; refused.length < 2 && waited < 5000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(refused.map((r) => `${r.rule} ${r.method}`).sort()).toEqual(["rpc.frames WhoAmI", "rpc.frames unknown"]);
  });

  it("carries a refusal's rule and reason to the client", async () => {
    const { socketPath } = await serveShim({
      hello: async () => ({}),
      whoAmI: async () => {
        throw new RefusalError("channel.control-on-seat", "not here");
      },
    });
    const client = createRpcClient(ShimService, socketPath);
    cleanups.push(async () => client.close());
    const error = await client.whoAmI().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RefusalError);
    expect(error).toMatchObject({ rule: "channel.control-on-seat", reason: "not here" });
  });

  it("hides an internal error's details from the caller and reports them to the daemon", async () => {
    const seen: unknown[] = [];
    const { socketPath } = await serveShim(
      {
        hello: async () => ({}),
        whoAmI: async () => {
          throw new Error("secret path /home/owner/.ssh/id_ed25519");
        },
      },
      (e) => seen.push(e),
    );
    const client = createRpcClient(ShimService, socketPath);
    cleanups.push(async () => client.close());
    const error = await client.whoAmI().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect(String(error)).not.toContain("id_ed25519");
    expect(String(seen[0])).toContain("id_ed25519");
  });

  it.each([
    ["no protocol metadata", undefined],
    ["another protocol version", "999"],
  ])("refuses a call with %s (rpc.version)", async (_name, version) => {
    const { socketPath } = await serveShim({ hello: async () => ({}), whoAmI: async () => ({ seat: "x" }) });
    const raw = new grpc.Client(`unix:${socketPath}`, grpc.credentials.createInsecure());
    cleanups.push(async () => raw.close());
    const metadata = new grpc.Metadata();
    if (version) metadata.set("teamd-protocol", version);
    const error = await new Promise<grpc.ServiceError>((resolve) => {
      raw.makeUnaryRequest(
        "/teamd.v1.ShimService/WhoAmI",
        (m: unknown) => Buffer.from(toBinary(WhoAmIRequestSchema, m as never)),
        (b: Buffer) => fromBinary(WhoAmIResponseSchema, b),
        {} as never,
        metadata,
        (err) => resolve(err as grpc.ServiceError),
      );
    });
    expect(error.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(error.metadata.get(RULE_METADATA_KEY)).toEqual(["rpc.version"]);
  });

  it("hands a protocol refusal to onRefusal before answering, and refuses even when that fails (fail closed)", async () => {
    for (const failing of [false, true]) {
      const home = await makeTempHome();
      const socketPath = join(home.dir, "s.sock");
      const seen: string[] = [];
      let answered = false;
      const server = createRpcServer({
        socketPath,
        access: { mode: 0o600 },
        channel: "seat:test",
        onRefusal: async (refusal, method) => {
          // Recorded before the caller hears of it.
          seen.push(`${method} ${refusal.rule} answered=${String(answered)}`);
          if (failing) throw new Error("the store cannot take the record");
        },
      });
      server.addService(ShimService, withUnused({ hello: async () => ({}), whoAmI: async () => ({ seat: "x" }) }) as never);
      await server.listen();
      cleanups.push(async () => {
        await server.close(0);
        await home.remove();
      });
      const reply = await whoAmIWithProtocol(socketPath, "999");
      answered = true;
      expect(reply).toMatchObject({ code: grpc.status.PERMISSION_DENIED, rule: "rpc.version" });
      expect(seen).toEqual(["WhoAmI rpc.version answered=false"]);
      // A call with the right version never reaches the hook.
      const client = createRpcClient(ShimService, socketPath);
      cleanups.push(async () => client.close());
      expect((await client.whoAmI({})).seat).toBe("x");
      expect(seen.length).toBe(1);
    }
  });

  it("close removes only the socket it made: a second server listening at the path since (its home made again) keeps its own", async () => {
    const home = await makeTempHome();
    cleanups.push(() => home.remove());
    const socketPath = join(home.dir, "s.sock");
    const serve = (seat: string) => {
      const server = createRpcServer({ socketPath, access: { mode: 0o600 }, channel: "x" });
      server.addService(ShimService, withUnused({ hello: async () => ({}), whoAmI: async () => ({ seat }) }) as never);
      return server;
    };
    const first = serve("first");
    await first.listen();
    unlinkSync(socketPath); // the home removed and made again, with the first still running
    const second = serve("second");
    await second.listen();
    cleanups.push(() => second.close(0));
    await first.close(0);
    const client = createRpcClient(ShimService, socketPath);
    cleanups.push(async () => client.close());
    expect((await client.whoAmI({})).seat).toBe("second");
    // Control: the second removes its own.
    await second.close(0);
    expect(existsSync(socketPath)).toBe(false);
  });

  it("refuses to bind over a file that is not a socket", async () => {
    const home = await makeTempHome();
    cleanups.push(() => home.remove());
    const socketPath = join(home.dir, "not-a-socket");
    writeFileSync(socketPath, "keep me");
    const server = createRpcServer({ socketPath, access: { mode: 0o600 }, channel: "x" });
    server.addService(ShimService, withUnused({ hello: async () => ({}), whoAmI: async () => ({}) }) as never);
    await expect(server.listen()).rejects.toThrow(/is not a socket; refusing to replace it/);
    await server.close(0);
  });

  it("refuses a socket path too long for a unix socket, naming the fix", () => {
    expect(() => createRpcClient(ShimService, `/tmp/${"x".repeat(120)}.sock`)).toThrow(/set TEAMD_HOME to a shorter directory/);
  });
});
