import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { connect as connectSocket, createServer, type Socket } from "node:net";
import { once } from "node:events";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient, createRpcServer, DaemonUnavailableError, RefusalError } from "../../src/rpc/index.js";
import { sentCalls, type SentCall } from "../../src/rpc/client.js";
import { H2Connection, wholeRequest } from "../../src/rpc/h2-client.js";
import { pushCalls } from "../../shim/first-calls.js";
import { makeTempHome } from "../support/programs.js";
import { withUnused } from "./unused-methods.js";

/**
 * Calls written on a socket before the client that goes on with them loaded (src/rpc/client.ts
 * sentCalls, the shim's front for a push: shim/first-calls.ts), answered to that client once
 * each: a real grpc-js server on a real unix socket, the bytes written as the front writes them.
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function serve(impl: Record<string, unknown>) {
  const home = await makeTempHome("teamd-sent-calls-");
  const socketPath = join(home.dir, "s.sock");
  const server = createRpcServer({ socketPath, access: { mode: 0o600 }, channel: "seat:test" });
  server.addService(ShimService, withUnused(impl) as never);
  await server.listen();
  cleanups.push(async () => {
    await server.close(0);
    await home.remove();
  });
  return { socketPath, dir: home.dir };
}

/** A stub of the push's two first calls that notes each, in the order they come. */
function pushStub(calls: string[], listRefs?: () => Promise<unknown>) {
  return {
    listRefs:
      listRefs ??
      (async (request: { forPush: boolean }) => {
        calls.push(`listRefs ${request.forPush}`);
        return { refs: [{ name: "refs/heads/main", oid: "1".repeat(40) }], head: "refs/heads/main" };
      }),
    whoAmI: async () => {
      calls.push("whoAmI");
      return { seat: "w1", team: "t" };
    },
  };
}

/** A socket to `path` carrying `bytes`, written before it is connected (as the front writes them). */
function written(path: string, bytes: Buffer): Socket {
  const socket = connectSocket(path);
  socket.on("error", () => undefined);
  socket.write(bytes);
  return socket;
}

/** A server that accepts and never reads or says a word (a daemon stopped, or hung, after it accepted), and the connections it took. */
async function silentServer(): Promise<{ path: string; connections: Socket[] }> {
  const home = await makeTempHome("teamd-sent-silent-");
  cleanups.push(async () => home.remove());
  const path = join(home.dir, "silent.sock");
  const connections: Socket[] = [];
  const silent = createServer((socket) => {
    connections.push(socket);
    socket.pause();
  });
  silent.listen(path);
  await once(silent, "listening");
  cleanups.push(async () => {
    for (const socket of connections) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });
  return { path, connections };
}

describe("rpc client: calls sent before it loaded", () => {
  it("answers each to the first call that is it, once: no call made again, none more", async () => {
    const calls: string[] = [];
    const { socketPath } = await serve(pushStub(calls));
    const sent = pushCalls();
    const bytes = sentCalls(sent);
    const socket = written(socketPath, bytes);
    // Both answered before the client exists: their replies wait on the socket.
    for (let waited = 0; calls.length < 2; waited += 10) {
      if (waited > 5_000) throw new Error(`the server saw ${JSON.stringify(calls)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const client = createRpcClient(ShimService, socketPath, { socket, sent: { bytes, calls: sent } });
    cleanups.push(async () => client.close());
    const [listing, me] = await Promise.all([client.listRefs({ forPush: true }), client.whoAmI()]);
    expect(listing.refs.map((r) => r.name)).toEqual(["refs/heads/main"]);
    expect(me.seat).toBe("w1");
    expect(calls).toEqual(["listRefs true", "whoAmI"]);
    // Taken once: the same call again goes to the server, on the same connection, as stream 5.
    expect((await client.listRefs({ forPush: true })).head).toBe("refs/heads/main");
    // Another request of the same method is its own call.
    await client.listRefs({ forPush: false });
    expect(calls).toEqual(["listRefs true", "whoAmI", "listRefs true", "listRefs false"]);
  });

  it("hands a refusal of one to the caller, and does not make it again", async () => {
    const calls: string[] = [];
    const { socketPath } = await serve(
      pushStub(calls, async () => {
        calls.push("listRefs refused");
        throw new RefusalError("channel.control-on-seat", "not here");
      }),
    );
    const sent = pushCalls();
    const bytes = sentCalls(sent);
    const client = createRpcClient(ShimService, socketPath, { socket: written(socketPath, bytes), sent: { bytes, calls: sent } });
    cleanups.push(async () => client.close());
    client.connect();
    await expect(client.listRefs({ forPush: true })).rejects.toMatchObject({ rule: "channel.control-on-seat" });
    expect((await client.whoAmI()).seat).toBe("w1");
    expect(calls).toEqual(["listRefs refused", "whoAmI"]);
  });

  it("makes them again on a connection of its own where the server closed the first before it said a word", async () => {
    const calls: string[] = [];
    const { socketPath, dir } = await serve(pushStub(calls));
    // What a seat's socket does past its bound on connections: accept and close at once.
    const closing = createServer((s) => s.destroy());
    const closingPath = join(dir, "closing.sock");
    closing.listen(closingPath);
    await once(closing, "listening");
    cleanups.push(async () => void (await new Promise((resolve) => closing.close(resolve))));
    const sent = pushCalls();
    const bytes = sentCalls(sent);
    const client = createRpcClient(ShimService, socketPath, { socket: written(closingPath, bytes), sent: { bytes, calls: sent } });
    cleanups.push(async () => client.close());
    client.connect();
    const [listing, me] = await Promise.all([client.listRefs({ forPush: true }), client.whoAmI()]);
    expect(listing.head).toBe("refs/heads/main");
    expect(me.seat).toBe("w1");
    expect(calls.sort()).toEqual(["listRefs true", "whoAmI"]);
  });

  it("fails them within the client's one deadline where the server never says a word, made on no other connection", async () => {
    // A daemon stopped (or hung) after it accepted: what was written waits unread. Made again on
    // a connection of their own after the deadline, both calls ran twice once it went on, and
    // the caller waited two deadlines (found by an attack on issue 26's twenty-fifth round).
    const { path, connections } = await silentServer();
    const sent = pushCalls();
    const bytes = sentCalls(sent);
    const socket = written(path, bytes);
    const client = createRpcClient(ShimService, path, { deadlineMs: 1500, socket, sent: { bytes, calls: sent } });
    cleanups.push(async () => client.close());
    const began = Date.now();
    const outcomes = await Promise.allSettled([client.listRefs({ forPush: true }), client.whoAmI()]);
    const waited = Date.now() - began;
    for (const outcome of outcomes) {
      expect(outcome.status).toBe("rejected");
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(DaemonUnavailableError);
      expect(String((outcome as PromiseRejectedResult).reason)).toMatch(/Deadline exceeded/);
    }
    // No connection more: given time to arrive, none did.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(connections).toHaveLength(1);
    // One deadline, not two (the bound is loose: it only tells one from two).
    expect(waited).toBeLessThan(2_900);
    // The connection never answered goes with the client.
    client.close();
    expect(socket.destroyed).toBe(true);
  });

  it("closes at once with a call the socket carried that nothing asked for", async () => {
    const { path } = await silentServer();
    const sent = pushCalls();
    const bytes = sentCalls(sent);
    const socket = written(path, bytes);
    const client = createRpcClient(ShimService, path, { socket, sent: { bytes, calls: sent } });
    client.connect();
    client.close();
    expect(socket.destroyed).toBe(true);
  });

  it("drops a socket whose bytes are not these calls', and makes each call as always", async () => {
    const calls: string[] = [];
    const { socketPath } = await serve(pushStub(calls));
    const sent = pushCalls();
    // The calls in another order than the bytes say: the streams would answer the wrong calls.
    const swapped: SentCall[] = [sent[1] as SentCall, sent[0] as SentCall];
    const bytes = sentCalls(sent);
    const socket = written(socketPath, bytes);
    const client = createRpcClient(ShimService, socketPath, { socket, sent: { bytes, calls: swapped } });
    cleanups.push(async () => client.close());
    const me = await client.whoAmI();
    expect(me.seat).toBe("w1");
    expect(socket.destroyed).toBe(true);
    expect((await client.listRefs({ forPush: true })).head).toBe("refs/heads/main");
  });

  it("writes what the client would write for the same calls: one connection's start, then each whole on streams 1, 3", () => {
    const bytes = sentCalls(pushCalls());
    expect(bytes.subarray(0, 24).toString("latin1")).toBe("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    // The frames after the preface: SETTINGS, WINDOW_UPDATE, then HEADERS and DATA (END_STREAM) per call.
    const frames: string[] = [];
    for (let at = 24; at < bytes.byteLength;) {
      const length = bytes.readUIntBE(at, 3);
      frames.push(`${bytes.readUInt8(at + 3)}/${bytes.readUInt8(at + 4)}/${bytes.readUInt32BE(at + 5)}`);
      at += 9 + length;
    }
    expect(frames).toEqual(["4/0/0", "8/0/0", "1/4/1", "0/1/1", "1/4/3", "0/1/3"]);
  });

  it("sends whole only what fits the frames and windows every server starts with", () => {
    const fields: [string, string][] = [[":path", "/x"]];
    expect(() => wholeRequest(2, fields, new Uint8Array(1))).toThrow(/odd id/);
    expect(() => wholeRequest(1, fields, new Uint8Array(16_385))).toThrow(/at most 16384 bytes/);
    expect(() => wholeRequest(1, [[":path", "x".repeat(16_400)]], new Uint8Array(1))).toThrow(/at most 16384 bytes/);
    expect(wholeRequest(1, fields, new Uint8Array(16_384)).byteLength).toBeGreaterThan(16_384);
    // A connection told of more than that was not sent whole by anything here.
    const socket = connectSocket("/nonexistent/teamd-sent-calls.sock");
    socket.on("error", () => undefined);
    expect(() => new H2Connection(socket, [16_385])).toThrow(/at most 16384 bytes/);
    socket.destroy();
  });
});
