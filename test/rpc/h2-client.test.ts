import { afterEach, describe, expect, it } from "vitest";
import { createServer as createH2Server, type Http2Server, type ServerHttp2Session, type ServerHttp2Stream } from "node:http2";
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { once } from "node:events";
import { join } from "node:path";
import { H2Connection, H2_ERROR, type H2Headers, type H2Stream } from "../../src/rpc/h2-client.js";
import { makeTempHome } from "../support/programs.js";

/**
 * The client's own HTTP/2 (src/rpc/h2-client.ts) against a real server — node:http2, i.e.
 * nghttp2, the library under grpc-js's server — on a unix socket: headers Huffman-coded and
 * indexed across requests, trailers, large bodies both ways under flow control (a paused reader
 * holds the server back), RST_STREAM, GOAWAY, PING, a server that ends while the client still
 * writes; and against a raw hostile peer, whose malformed frames end the connection with an
 * error, never a hang or a wrong reply.
 */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function socketPath(): Promise<string> {
  const home = await makeTempHome("teamd-h2-");
  cleanups.push(() => home.remove());
  return join(home.dir, "h2.sock");
}

async function h2Server(handler: (stream: ServerHttp2Stream, headers: Record<string, unknown>) => void): Promise<{ path: string; server: Http2Server }> {
  const path = await socketPath();
  const server = createH2Server();
  server.on("stream", (stream, headers) => handler(stream, headers as Record<string, unknown>));
  server.listen(path);
  await once(server, "listening");
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { path, server };
}

async function client(path: string): Promise<H2Connection> {
  const c = new H2Connection(connect(path));
  c.on("error", () => undefined);
  cleanups.push(() => c.destroy());
  await once(c, "remoteSettings");
  return c;
}

const REQUEST = (path = "/svc/M"): [string, string][] => [
  [":method", "POST"],
  [":scheme", "http"],
  [":authority", "localhost"],
  [":path", path],
  ["content-type", "application/grpc"],
];

/** The reply: its headers, its body, its trailers and how the stream closed. */
function collect(stream: H2Stream): Promise<{ headers: H2Headers; body: Buffer; trailers: H2Headers | undefined; rstCode: number | undefined }> {
  let headers: H2Headers = {};
  let trailers: H2Headers | undefined;
  const chunks: Buffer[] = [];
  stream.on("response", (h: H2Headers) => (headers = h));
  stream.on("trailers", (h: H2Headers) => (trailers = h));
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  return new Promise((resolve) => stream.on("close", () => resolve({ headers, body: Buffer.concat(chunks), trailers, rstCode: stream.rstCode })));
}

describe("the client's HTTP/2 against nghttp2 (node:http2's server)", () => {
  it("sends a request and its body; reads the reply's headers, body and trailers, again and again on one connection", async () => {
    const { path } = await h2Server((stream, headers) => {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        stream.respond({ ":status": 200, "content-type": "application/grpc", "x-echo-path": String(headers[":path"]) }, { waitForTrailers: true });
        stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0", "grpc-message": "all%20good", "teamd-rule": "rpc.malformed" }));
        stream.end(Buffer.concat(chunks));
      });
    });
    const c = await client(path);
    for (let i = 0; i < 5; i++) {
      const stream = c.request(REQUEST(`/svc/M${i}`));
      const reply = collect(stream);
      stream.write(Buffer.from(`body ${i}`));
      stream.end();
      const r = await reply;
      expect(r.headers[":status"]).toBe("200");
      expect(r.headers["x-echo-path"]).toBe(`/svc/M${i}`);
      expect(r.body.toString()).toBe(`body ${i}`);
      expect(r.trailers).toEqual({ "grpc-status": "0", "grpc-message": "all%20good", "teamd-rule": "rpc.malformed" });
      expect(r.rstCode).toBe(H2_ERROR.NO_ERROR);
    }
  });

  it("moves 8 MiB each way under flow control; a paused reader holds the server back until it resumes", async () => {
    const size = 8 * 1024 * 1024;
    let written = 0;
    const { path } = await h2Server((stream) => {
      let received = 0;
      stream.on("data", (chunk: Buffer) => (received += chunk.byteLength));
      stream.on("end", async () => {
        stream.respond({ ":status": 200, "x-received": String(received) });
        const block = Buffer.alloc(64 * 1024, 7);
        for (let i = 0; i < size / block.byteLength; i++) {
          written += block.byteLength;
          if (!stream.write(block)) await once(stream, "drain");
        }
        stream.end();
      });
    });
    const c = await client(path);
    const stream = c.request(REQUEST());
    let headers: H2Headers = {};
    stream.on("response", (h: H2Headers) => (headers = h));
    const upload = Buffer.alloc(size, 3);
    for (let at = 0; at < size; at += 256 * 1024) if (!stream.write(upload.subarray(at, at + 256 * 1024))) await once(stream, "drain");
    stream.end();
    stream.pause();
    let got = 0;
    stream.on("data", (chunk: Buffer) => (got += chunk.byteLength));
    const closed = once(stream, "close");
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Paused: the server wrote at most the windows this side granted (1 MiB for the stream) and its own buffers.
    expect(got).toBe(0);
    expect(written).toBeLessThan(3 * 1024 * 1024);
    stream.resume();
    await closed;
    expect(headers["x-received"]).toBe(String(size));
    expect(got).toBe(size);
  });

  it("a paused reader gets what came before the end in order: the data, then the trailers, then the close (none of it lost)", async () => {
    const { path } = await h2Server((stream) => {
      stream.respond({ ":status": 200 }, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.write(Buffer.alloc(100_000, 1));
      stream.write(Buffer.alloc(100_000, 2));
      stream.end(Buffer.from("tail\n"));
    });
    const c = await client(path);
    const stream = c.request(REQUEST());
    stream.end();
    const seen: string[] = [];
    let bytes = 0;
    stream.on("response", () => stream.pause());
    stream.on("data", (chunk: Buffer) => {
      bytes += chunk.byteLength;
      if (seen.at(-1) !== "data") seen.push("data");
    });
    stream.on("trailers", () => seen.push("trailers"));
    const closed = new Promise<void>((resolve) => stream.on("close", () => (seen.push("close"), resolve())));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(seen).toEqual([]);
    stream.resume();
    await closed;
    expect(seen).toEqual(["data", "trailers", "close"]);
    expect(bytes).toBe(200_005);
    expect(stream.rstCode).toBe(H2_ERROR.NO_ERROR);
  });

  it("a server's RST_STREAM ends the stream with its code; other streams go on", async () => {
    const { path } = await h2Server((stream, headers) => {
      stream.on("error", () => undefined);
      if (headers[":path"] === "/reset") stream.close(H2_ERROR.ENHANCE_YOUR_CALM);
      else stream.on("end", () => stream.respond({ ":status": 200 }, { endStream: true })).resume();
    });
    const c = await client(path);
    const reset = c.request(REQUEST("/reset"));
    const ok = c.request(REQUEST("/ok"));
    const [resetReply, okReply] = [collect(reset), collect(ok)];
    ok.end();
    reset.end();
    expect((await resetReply).rstCode).toBe(H2_ERROR.ENHANCE_YOUR_CALM);
    expect((await okReply).headers[":status"]).toBe("200");
  });

  it("a server that answers and ends while the client still writes: the stream closes (NO_ERROR), writes stop, nothing hangs", async () => {
    const { path } = await h2Server((stream) => {
      stream.respond({ ":status": 200, "grpc-status": "7", "grpc-message": "refused" }, { endStream: true });
    });
    const c = await client(path);
    const stream = c.request(REQUEST());
    const reply = collect(stream);
    stream.write(Buffer.alloc(2 * 1024 * 1024));
    const r = await reply;
    expect(r.headers["grpc-status"]).toBe("7");
    expect(r.rstCode).toBe(H2_ERROR.NO_ERROR);
    expect(stream.write(Buffer.from("late"))).toBe(false);
  });

  it("holds requests past the server's MAX_CONCURRENT_STREAMS and sends each as a stream ends (nghttp2 ends the connection for one more)", async () => {
    const path = await socketPath();
    const server = createH2Server({ settings: { maxConcurrentStreams: 2 } });
    let open = 0;
    let most = 0;
    server.on("stream", (stream) => {
      open++;
      most = Math.max(most, open);
      stream.on("close", () => open--);
      stream.on("end", () => setTimeout(() => stream.respond({ ":status": 200 }, { endStream: true }), 20)).resume();
    });
    server.listen(path);
    await once(server, "listening");
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const c = await client(path);
    const streams = Array.from({ length: 7 }, (_, i) => c.request(REQUEST(`/m${i}`)));
    const replies = streams.map((stream) => collect(stream));
    for (const stream of streams) stream.end();
    const done = await Promise.all(replies);
    expect(done.map((r) => r.headers[":status"])).toEqual(Array.from({ length: 7 }, () => "200"));
    expect(most).toBe(2);
    // Ids in the order the requests went out.
    expect(streams.map((stream) => stream.id)).toEqual([1, 3, 5, 7, 9, 11, 13]);
  });

  it("the streams a server's GOAWAY leaves open end with its code when it closes (as node:http2 ended them)", async () => {
    let serverSession: ServerHttp2Session | undefined;
    let served = () => undefined as void;
    const serving = new Promise<void>((resolve) => (served = resolve));
    // The server's stream is destroyed with its session's error: its error is the test's, not unhandled.
    const { path, server } = await h2Server((stream) => {
      stream.on("error", () => undefined);
      served();
    });
    server.on("session", (s) => (serverSession = s));
    const c = await client(path);
    const stream = c.request(REQUEST());
    const reply = collect(stream);
    await serving;
    await new Promise((resolve) => setTimeout(resolve, 50));
    // A session error: nghttp2 says GOAWAY INTERNAL_ERROR, then closes.
    serverSession?.on("error", () => undefined);
    serverSession?.destroy(new Error("the server failed"));
    expect((await reply).rstCode).toBe(H2_ERROR.INTERNAL_ERROR);
  });

  it("a header's name is its own: no prototype's member answers for it", async () => {
    const { path } = await h2Server((stream) => stream.respond({ ":status": 200, constructor: "c", "x-a": "1" }, { endStream: true }));
    const c = await client(path);
    const stream = c.request(REQUEST());
    stream.end();
    const r = await collect(stream);
    expect(r.headers.constructor).toBe("c");
    expect(r.headers.toString).toBeUndefined();
  });

  it("answers the server's PING; a GOAWAY is told, and no request is made on the connection after it", async () => {
    let serverSession: ServerHttp2Session | undefined;
    const { path, server } = await h2Server(() => undefined);
    server.on("session", (s) => (serverSession = s));
    const c = await client(path);
    const session = serverSession as NonNullable<typeof serverSession>;
    // node:http2's server holds a session that sent GOAWAY open after its peer has gone (its own client too): closed here.
    cleanups.push(() => session.destroy());
    const pinged = await new Promise<boolean>((resolve) => session.ping((error) => resolve(error === null)));
    expect(pinged).toBe(true);
    const goaway = once(c, "goaway");
    session.goaway(0);
    await goaway;
    expect(c.closed).toBe(true);
    expect(() => c.request(REQUEST())).toThrow(/destroyed/);
  });
});

/** A raw peer that says whatever the test makes it say, after a well-formed SETTINGS. */
async function hostile(send: (socket: Socket) => void): Promise<string> {
  const path = await socketPath();
  const sockets: Socket[] = [];
  const server: NetServer = createNetServer((socket) => {
    sockets.push(socket);
    socket.on("error", () => undefined);
    socket.write(rawFrame(4, 0, 0, Buffer.alloc(0)));
    socket.once("data", () => send(socket));
  });
  server.listen(path);
  await once(server, "listening");
  cleanups.push(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return path;
}

function rawFrame(type: number, flags: number, id: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.byteLength, 0, 3);
  head.writeUInt8(type, 3);
  head.writeUInt8(flags, 4);
  head.writeUInt32BE(id, 5);
  return Buffer.concat([head, payload]);
}

describe("the client's HTTP/2 against a raw peer", () => {
  it("a GOAWAY naming an earlier last stream refuses the streams after it (REFUSED_STREAM: nothing of them was processed)", async () => {
    const goaway = Buffer.alloc(8);
    const path = await hostile((socket) => socket.write(rawFrame(7, 0, 0, goaway)));
    const c = new H2Connection(connect(path));
    c.on("error", () => undefined);
    cleanups.push(() => c.destroy());
    await once(c, "remoteSettings");
    const stream = c.request(REQUEST());
    const closed = collect(stream);
    expect((await closed).rstCode).toBe(H2_ERROR.REFUSED_STREAM);
  });
});

describe("the client's HTTP/2 against a hostile peer: a malformed frame ends the connection with an error", () => {
  it.each([
    ["a frame past the 16 KiB announced", () => rawFrame(0, 0, 1, Buffer.alloc(20_000)), /past the 16384 announced/],
    ["a PUSH_PROMISE", () => rawFrame(5, 4, 1, Buffer.alloc(8)), /PUSH_PROMISE/],
    ["DATA on a stream never opened", () => rawFrame(0, 0, 9, Buffer.from("x")), /never opened/],
    ["DATA before the reply's headers", () => rawFrame(0, 0, 1, Buffer.from("x")), /before the reply's headers/],
    ["a header block that does not decode", () => rawFrame(1, 4, 1, Buffer.from([0x80])), /index 0/],
    [
      "a header block past 256 KiB in CONTINUATIONs",
      () => Buffer.concat([rawFrame(1, 0, 1, Buffer.alloc(16_000)), ...Array.from({ length: 20 }, () => rawFrame(9, 0, 1, Buffer.alloc(16_000)))]),
      /header block past/,
    ],
    [
      "data past the stream's window",
      () => Buffer.concat([rawFrame(1, 4, 1, Buffer.from([0x88])), ...Array.from({ length: 70 }, () => rawFrame(0, 0, 1, Buffer.alloc(16_000)))]),
      /past a stream's window/,
    ],
    [
      "a header block of empty CONTINUATIONs (each frame counts)",
      () => Buffer.concat([rawFrame(1, 0, 1, Buffer.from([0x88])), ...Array.from({ length: 40_000 }, () => rawFrame(9, 0, 1, Buffer.alloc(0)))]),
      /header block past/,
    ],
    [
      "an integer of endless continuation bytes (HPACK)",
      () => rawFrame(1, 4, 1, Buffer.from([0x3f, ...Array.from({ length: 200 }, () => 0x80), 0x01])),
      /past 2\^31/,
    ],
    [
      "a WINDOW_UPDATE past 2^31-1",
      () => Buffer.concat([rawFrame(8, 0, 0, Buffer.from([0x7f, 0xff, 0xff, 0xff])), rawFrame(8, 0, 0, Buffer.from([0x7f, 0xff, 0xff, 0xff]))]),
      /past 2\^31-1/,
    ],
  ])("%s", async (_what, make, message) => {
    const path = await hostile((socket) => socket.write(make()));
    const c = new H2Connection(connect(path));
    const errors: Error[] = [];
    c.on("error", (error: Error) => errors.push(error));
    await once(c, "remoteSettings");
    const stream = c.request(REQUEST());
    stream.pause();
    await new Promise<void>((resolve) => c.on("close", () => resolve()));
    expect(stream.destroyed).toBe(true);
    expect(stream.rstCode).toBe(H2_ERROR.CANCEL);
    expect(errors.map((e) => e.message).join("\n")).toMatch(message);
  });
});

describe("the client's HTTP/2 against a peer that does not read", () => {
  it("PINGs it never reads the answers to end the connection (ENHANCE_YOUR_CALM), not this side's memory", async () => {
    const path = await hostile((socket) => {
      socket.pause();
      const ping = rawFrame(6, 0, 0, Buffer.alloc(8));
      const burst = Buffer.concat(Array.from({ length: 10_000 }, () => ping));
      for (let i = 0; i < 60; i++) socket.write(burst);
    });
    const c = new H2Connection(connect(path));
    const errors: Error[] = [];
    c.on("error", (error: Error) => errors.push(error));
    await new Promise<void>((resolve) => c.on("close", () => resolve()));
    expect(errors.map((e) => e.message).join("\n")).toMatch(/answers it does not read/);
  });
});
