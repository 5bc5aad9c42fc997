import { afterEach, describe, expect, it } from "vitest";
import { connect, createServer, type Server, type Socket } from "node:net";
import { relay } from "../../src/effects/egress-relay.js";
import { bigReads, type BigReads } from "../../src/rpc/big-reads.js";

/**
 * The egress byte path (§12) on real loopback sockets: both directions relayed, a half-close
 * passed on (a client that ends its request still reads the answer), bytes counted each way,
 * an idle connection closed, one side's failure ending the other.
 */
interface Pair {
  /** The seat's end as the daemon holds it, and the seat's own end. */
  readonly seatSide: Socket;
  readonly seat: Socket;
}

const servers: Server[] = [];
const accepted: Socket[] = [];
afterEach(async () => {
  // Half-open sockets keep a server open: end every one this test accepted.
  for (const socket of accepted.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function listen(onConnection: (socket: Socket) => void): Promise<number> {
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    accepted.push(socket);
    onConnection(socket);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

async function seatPair(): Promise<Pair> {
  let accepted!: (socket: Socket) => void;
  const got = new Promise<Socket>((resolve) => (accepted = resolve));
  const port = await listen((socket) => accepted(socket));
  const seat = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
  return { seatSide: await got, seat };
}

function connectUpstream(port: number, download?: BigReads): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true, ...(download ? { onread: download.onread } : {}) });
    socket.once("connect", () => resolve(socket));
  });
}

function readAll(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    socket.setEncoding("utf8").on("data", (d: string) => (text += d));
    socket.once("end", () => resolve(text));
  });
}

describe("egress relay", () => {
  it("passes a half-close on: the seat ends its request and still reads the whole answer; bytes are counted", async () => {
    // An upstream that answers only once the request has ended (like a server reading to EOF).
    const port = await listen((socket) => {
      let request = "";
      socket.setEncoding("utf8").on("data", (d: string) => (request += d));
      socket.once("end", () => socket.end(`got ${request.length} bytes: ${request}`));
    });
    const { seatSide, seat } = await seatPair();
    const result = relay(seatSide, await connectUpstream(port), { idleMs: 5000 });
    const answer = readAll(seat);
    seat.end("hello upstream");
    expect(await answer).toBe("got 14 bytes: hello upstream");
    const counted = await result;
    expect(counted.up).toBe(14);
    expect(counted.down).toBe("got 14 bytes: hello upstream".length);
    expect(counted.ended).toBeUndefined();
  });

  it("relays a large answer with backpressure intact (every byte, in order)", async () => {
    const big = Buffer.alloc(8 * 1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = i % 251;
    const port = await listen((socket) => socket.end(big));
    const { seatSide, seat } = await seatPair();
    const result = relay(seatSide, await connectUpstream(port), { idleMs: 5000 });
    const chunks: Buffer[] = [];
    seat.on("data", (d: Buffer) => chunks.push(d));
    await new Promise((resolve) => seat.once("end", resolve));
    seat.end();
    expect(Buffer.concat(chunks).equals(big)).toBe(true);
    expect((await result).down).toBe(big.length);
  });

  it("relays through big reads: a banner sent before the relay attaches comes first, then every byte in order, with a slow reader", async () => {
    const big = Buffer.alloc(16 * 1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7) % 253;
    const port = await listen((socket) => {
      socket.write("BANNER\n");
      socket.once("data", () => socket.end(big));
    });
    const { seatSide, seat } = await seatPair();
    const download = bigReads();
    const upstream = await connectUpstream(port, download);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the banner arrives before the relay
    const result = relay(seatSide, upstream, { idleMs: 5000, download });
    const chunks: Buffer[] = [];
    // A reader that stalls now and then: the relay must pause upstream, never drop or reorder.
    seat.on("data", (d: Buffer) => {
      chunks.push(d);
      if (chunks.length % 20 === 0) {
        seat.pause();
        setTimeout(() => seat.resume(), 5);
      }
    });
    seat.write("go");
    await new Promise((resolve) => seat.once("end", resolve));
    seat.end();
    const all = Buffer.concat(chunks);
    expect(all.subarray(0, 7).toString()).toBe("BANNER\n");
    expect(all.subarray(7).equals(big)).toBe(true);
    expect((await result).down).toBe(big.length + 7);
  });

  it("closes an idle connection on both sides", async () => {
    const port = await listen(() => undefined);
    const { seatSide, seat } = await seatPair();
    seat.resume();
    const upstream = await connectUpstream(port);
    const result = await relay(seatSide, upstream, { idleMs: 200 });
    expect(result.ended).toBe("idle");
    expect(upstream.destroyed).toBe(true);
    // The seat sees its connection end (it holds a half-open socket, so it closes its own end).
    await new Promise((resolve) => (seat.readableEnded || seat.destroyed ? resolve(undefined) : (seat.once("end", resolve), seat.once("close", resolve))));
    seat.destroy();
  });

  it("ends the seat's side when upstream fails", async () => {
    let server!: Socket;
    const port = await listen((socket) => (server = socket));
    const { seatSide, seat } = await seatPair();
    const result = relay(seatSide, await connectUpstream(port), { idleMs: 5000 });
    seat.on("error", () => undefined);
    seat.resume();
    await new Promise((resolve) => setTimeout(resolve, 50));
    server.resetAndDestroy();
    const ended = await result;
    expect(ended.ended).toMatch(/^upstream /);
    // The seat sees its connection end (it holds a half-open socket, so it closes its own end).
    await new Promise((resolve) => (seat.readableEnded || seat.destroyed ? resolve(undefined) : (seat.once("end", resolve), seat.once("close", resolve))));
    seat.destroy();
  });
});
