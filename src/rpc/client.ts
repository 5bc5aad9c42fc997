import { connect as connectSocket, type Socket } from "node:net";
import { once } from "node:events";
import { create, fromBinary, toBinary, type DescMessage, type DescMethod } from "@bufbuild/protobuf";
import type { AnyService, ServiceClient } from "./service-types.js";
import { isRuleId } from "../kernel/rules.js";
import { DaemonUnavailableError, RefusalError, RpcError } from "./errors.js";
import { PROTOCOL_METADATA_KEY, PROTOCOL_VERSION, RULE_METADATA_KEY } from "./protocol.js";
import { checkSocketPath } from "./socket-path.js";
import { clientStart, H2Connection, H2_ERROR, wholeRequest, type H2Headers, type H2Stream } from "./h2-client.js";
import type { HeaderField } from "./hpack.js";

export interface RpcClientOptions {
  /** Per-call deadline; a daemon that does not answer in time is reported unavailable. */
  readonly deadlineMs?: number;
  /** Deadline of a whole streaming call (a pack can be large). Default 10 minutes. */
  readonly streamDeadlineMs?: number;
  /**
   * The first connection's socket, connected to `socketPath` by a caller that had the time
   * before it could load this client (the remote helper, earlySocket): the server's settings
   * are then there when the first call starts. One that has failed or closed by then is
   * dropped and a connection made as always, so its errors read the same.
   */
  readonly socket?: Socket;
  /**
   * What `socket` already carries: `bytes`, as sentCalls wrote them for `calls` (the shim's front
   * wrote them before it could load this client, issue 26). Each call is then answered on its
   * stream, once, for the first call of its method with the same request. Bytes that are not
   * sentCalls' for these calls are no connection this client knows how to go on with: the socket
   * is dropped and every call made as always.
   */
  readonly sent?: { readonly bytes: Buffer; readonly calls: readonly SentCall[] };
}

/** A unary call sent before the client loaded: its method's path and its request's bytes. */
export interface SentCall {
  readonly path: string;
  readonly request: Uint8Array;
}

/** The deadline a call sent before the client loaded carries (its grpc-timeout is fixed when it is written). */
export const SENT_CALL_DEADLINE_MS = 30_000;

/**
 * What a client that has not loaded yet writes on a socket it has just connected (the shim's
 * front, from a constant the build makes with this): the connection's start, then each call whole,
 * on streams 1, 3, ... The same bytes this client would write for them, deadline aside.
 */
export function sentCalls(calls: readonly SentCall[]): Buffer {
  return Buffer.concat([clientStart(), ...calls.map((call, i) => wholeRequest(1 + 2 * i, callHeaders(call.path, SENT_CALL_DEADLINE_MS), frame(call.request)))]);
}

/** A call's request headers, as grpc-js writes them. */
function callHeaders(path: string, timeoutMs: number): HeaderField[] {
  return [
    [":method", "POST"],
    [":scheme", "http"],
    [":authority", "localhost"],
    [":path", path],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    ["grpc-timeout", timeoutHeader(timeoutMs)],
    [PROTOCOL_METADATA_KEY, String(PROTOCOL_VERSION)],
  ];
}

export type RpcClient<S> = ServiceClient<S> & {
  close(): void;
  /**
   * Makes the connection now, for a caller that will call soon and has other work first (the
   * remote helper while git sends its first commands): the server's settings are then there
   * when the first call starts. A connection that cannot be made fails that call, as always.
   */
  connect(): void;
};

/*
 * The client side of teamd's gRPC, over its own HTTP/2 client on node:net (h2-client.ts, issue
 * 26). grpc-js, which the daemon serves with, cost every client's start ~30 ms of modules (with
 * node:tls, node:dns, node:zlib and its own ~60 files), and node:http2 after it ~6.5 ms more (it
 * loads node:http, node:tls and node:crypto), for what a client of a local unix socket uses:
 * one HTTP/2 connection, a request's headers, messages framed as gRPC frames them (a flag byte,
 * a 4-byte big-endian length, the bytes) and the status in the trailers. Every caller sees what it saw
 * with grpc-js: the same statuses, with grpc-js's own words for what this side decides (a
 * connection that cannot be made, a deadline, a message past the receive cap, a reset stream),
 * mapped by the same rules to RefusalError, DaemonUnavailableError and RpcError.
 */

/** gRPC status codes (fixed by the gRPC spec) this side decides or reads. */
const Status = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

/** Clients read replies up to 16 MiB (a fetch streams its pack in chunks well below it): as grpc-js was configured (channel-options.ts). */
const MAX_RECEIVE_BYTES = 16 * 1024 * 1024;

/** A call's end as the server (or this side) said it: a gRPC status, its details and its trailing metadata. */
interface CallStatus {
  readonly code: number;
  readonly details: string;
  readonly metadata: H2Headers;
}

/** The inverse of the daemon's toServiceError (refusal.ts), on a status read here. */
function toError(status: CallStatus, socketPath: string): Error {
  const rule = status.metadata[RULE_METADATA_KEY];
  if (typeof rule === "string" && isRuleId(rule)) return new RefusalError(rule, status.details);
  if (status.code === Status.UNAVAILABLE || status.code === Status.DEADLINE_EXCEEDED) {
    return new DaemonUnavailableError(socketPath, `${status.details || STATUS_NAMES[status.code]} (is \`teamd serve\` running?)`);
  }
  return new RpcError(status.code, status.details);
}

const STATUS_NAMES: Record<number, string> = { 4: "DEADLINE_EXCEEDED", 14: "UNAVAILABLE" };

/** grpc-js's mapping of an HTTP status other than 200 (a server that is not gRPC). */
function httpStatus(code: number): { code: number; details: string } {
  const grpc =
    code === 400
      ? Status.INTERNAL
      : code === 401
        ? Status.UNAUTHENTICATED
        : code === 403
          ? Status.PERMISSION_DENIED
          : code === 404
            ? Status.UNIMPLEMENTED
            : code === 429 || code === 502 || code === 503 || code === 504
              ? Status.UNAVAILABLE
              : Status.UNKNOWN;
  return { code: grpc, details: `Received HTTP status code ${code}` };
}

/** grpc-timeout: at most 8 digits and a unit (the gRPC spec), as grpc-js writes it. */
function timeoutHeader(ms: number): string {
  const units: [string, number][] = [
    ["m", 1],
    ["S", 1000],
    ["M", 60_000],
    ["H", 3_600_000],
  ];
  for (const [unit, factor] of units) {
    const amount = Math.max(0, Math.ceil(ms / factor));
    if (amount < 1e8) return `${amount}${unit}`;
  }
  return "99999999H";
}

function frame(bytes: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + bytes.byteLength);
  out.writeUInt8(0, 0);
  out.writeUInt32BE(bytes.byteLength, 1);
  out.set(bytes, 5);
  return out;
}

/** Splits a stream's bytes into gRPC messages; throws past the receive cap (from the prefix, before the body). */
class Deframer {
  private chunks: Buffer[] = [];
  private size = 0;
  /** The bytes the message begun needs in all (its prefix read): nothing is joined before they are all here. */
  private needed = 0;
  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.size += chunk.byteLength;
    const messages: Buffer[] = [];
    for (;;) {
      if (this.size < 5 || this.size < this.needed) return messages;
      const head = this.take(5, false);
      const length = head.readUInt32BE(1);
      if (head.readUInt8(0) !== 0) throw Object.assign(new Error("Received a compressed message, which was not asked for"), { status: Status.INTERNAL });
      if (length > MAX_RECEIVE_BYTES)
        throw Object.assign(new Error(`Received message larger than max (${length} vs ${MAX_RECEIVE_BYTES})`), { status: Status.RESOURCE_EXHAUSTED });
      if (this.size < 5 + length) {
        this.needed = 5 + length;
        return messages;
      }
      this.needed = 0;
      this.take(5, true);
      messages.push(this.take(length, true));
    }
  }
  get pending(): boolean {
    return this.size > 0;
  }
  private take(n: number, consume: boolean): Buffer {
    const whole = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
    this.chunks = [whole];
    const out = whole.subarray(0, n);
    if (consume) {
      this.chunks = [whole.subarray(n)];
      this.size -= n;
    }
    return out;
  }
}

/** The client's connection: its session, the first error it saw, and whether a gRPC server has answered on it. */
interface Connection {
  readonly s: H2Connection;
  readonly ready: Promise<void>;
  error: Error | undefined;
  /** The server's SETTINGS came: it has taken the connection. */
  spoke: boolean;
  /** The connection has closed. */
  ended: boolean;
}

/** `ready` settled, or the deadline passed first (a timer holds at most 2^31-1 ms: a longer wait is taken in steps). */
async function untilDeadline(ready: Promise<void>, deadline: number): Promise<"ready" | "deadline" | { readonly reached: boolean }> {
  let timer: NodeJS.Timeout | undefined;
  const passed = new Promise<"deadline">((resolve) => {
    const arm = () => {
      const left = deadline - Date.now();
      timer = setTimeout(() => (deadline - Date.now() > 0 ? arm() : resolve("deadline")), Math.max(0, Math.min(left, 2 ** 31 - 1)));
    };
    arm();
  });
  try {
    return await Promise.race([
      ready.then(
        () => "ready" as const,
        (error: { reached: boolean }) => ({ reached: error.reached }),
      ),
      passed,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** One call on the wire: its messages as they come (a pull, so reading is what lets the server send more), then its status. */
interface Call {
  /** The next reply, or undefined once the call has ended OK; throws the call's error otherwise. */
  next(): Promise<Buffer | undefined>;
  write(message: Buffer): Promise<void>;
  end(): void;
  cancel(): void;
}

/**
 * A typed client for one service over one unix socket. Errors come back as RefusalError
 * (with the daemon's rule id), DaemonUnavailableError, or RpcError.
 */
export function createRpcClient<S extends AnyService>(service: S, socketPath: string, options: RpcClientOptions = {}): RpcClient<S> {
  checkSocketPath(socketPath);
  const deadlineMs = options.deadlineMs ?? 10_000;
  const streamDeadlineMs = options.streamDeadlineMs ?? 600_000;
  let connection: Connection | undefined;
  let active = 0;
  let closed = false;
  let early = options.socket;
  let sent = options.sent;
  /** The calls the first connection's socket carried, each waiting for the first call that is it (sentCalls). */
  const parked = new Map<string, { readonly call: Call; readonly connection: Connection; readonly deadline: number }>();
  const parkedKey = (path: string, request: Uint8Array) => `${path} ${Buffer.from(request.buffer, request.byteOffset, request.byteLength).toString("base64")}`;

  /** The client's one connection, made when a call first needs it (and again after it went). */
  function open(): Connection {
    if (connection !== undefined && !connection.s.closed && !connection.s.destroyed) return connection;
    const calls = sent;
    sent = undefined;
    // A socket that carries what this side cannot go on from is not taken.
    const usable =
      early !== undefined && !early.destroyed && early.readyState !== "closed" && (calls === undefined || sentCalls(calls.calls).equals(calls.bytes));
    const given = usable ? early : undefined;
    if (early !== undefined && given === undefined) early.destroy();
    early = undefined;
    const socket = given ?? connectSocket(socketPath);
    let reached = given !== undefined && !given.connecting;
    socket.once("connect", () => (reached = true));
    const carried = given !== undefined ? calls?.calls : undefined;
    const s = new H2Connection(
      socket,
      carried?.map((call) => 5 + call.request.byteLength),
    );
    const c: Connection = {
      s,
      error: undefined,
      spoke: false,
      ended: false,
      // The server's SETTINGS: a gRPC server answered on this connection.
      ready: new Promise<void>((resolve, reject) => {
        s.once("remoteSettings", () => {
          c.spoke = true;
          resolve();
        });
        s.once("close", () => reject(Object.assign(new Error("closed before the server's settings"), { reached })));
      }),
    };
    c.ready.catch(() => undefined);
    s.on("error", (error: Error) => {
      c.error ??= error;
    });
    const forget = () => {
      if (connection === c) connection = undefined;
    };
    s.on("goaway", forget);
    s.on("close", forget);
    s.on("close", () => (c.ended = true));
    connection = c;
    // Their replies are read from now on, as any call's (a reply that comes first is held by its call).
    // Each is due by this client's deadline (or the one its bytes carry, if sooner), counted from now.
    const startedAt = Date.now();
    const deadline = startedAt + Math.min(deadlineMs, SENT_CALL_DEADLINE_MS);
    carried?.forEach((call, i) => {
      const stream = s.sentStreams[i] as H2Stream;
      parked.set(parkedKey(call.path, call.request), { call: wire(c, stream, deadline, startedAt), connection: c, deadline });
    });
    return c;
  }

  /**
   * A connection a gRPC server has answered on, for a call due by `deadline`. A connection that
   * cannot be made (no socket, nobody listening) fails the call at once, in grpc-js's words. One
   * the server accepted and closed before it said a word is tried again, shortly, within the
   * deadline: a seat's socket closes a connection past SEAT_MAX_CONNECTIONS on arrival
   * (server.ts), and grpc-js's channel, which connects again and holds the calls it has not
   * sent, made those calls once a connection came free (twelve clients of one seat at once,
   * test/escape/served-retry-attack.test.ts). Nothing of the call has been sent then.
   */
  async function acquire(deadline: number, startedAt: number): Promise<Connection> {
    let pause = 5;
    for (;;) {
      if (closed) throw new RpcError(Status.CANCELLED, "Channel has been shut down");
      const c = open();
      const outcome = await untilDeadline(c.ready, deadline);
      if (outcome === "ready") return c;
      if (outcome === "deadline") {
        // Nothing was sent on it; a server that never answered must not keep this process alive.
        if (connection === c) connection = undefined;
        c.s.destroy();
        const details = `Deadline exceeded after ${((Date.now() - startedAt) / 1000).toFixed(3)}s`;
        throw toError({ code: Status.DEADLINE_EXCEEDED, details, metadata: {} }, socketPath);
      }
      if (!outcome.reached) {
        const details = `No connection established. Last error: ${String(c.error)}. Resolution note: `;
        throw toError({ code: Status.UNAVAILABLE, details, metadata: {} }, socketPath);
      }
      if (connection === c) connection = undefined;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(pause, deadline - Date.now()))));
      pause = Math.min(pause * 2, 100);
    }
  }

  async function start(path: string, deadline: number): Promise<Call> {
    const startedAt = Date.now();
    const c = await acquire(deadline, startedAt);
    return wire(c, c.s.request(callHeaders(path, deadline - Date.now())), deadline, startedAt);
  }

  /** A call on its stream: the reply read as it comes, its end as the server (or the deadline) says. */
  function wire(c: Connection, stream: H2Stream, deadline: number, startedAt: number): Call {
    const s = c.s;
    active += 1;
    s.ref();
    const deframer = new Deframer();
    const queue: Buffer[] = [];
    let status: CallStatus | undefined;
    let httpCode: number | undefined;
    let waiter: (() => void) | undefined;
    let done = false;
    // Settles when the call ends: a write waiting for the window (a server that answered early, a refusal,
    // stops reading) is released by it — else it waits on a drain that never comes, with nothing keeping the process alive.
    let ended: () => void = () => undefined;
    const over = new Promise<void>((resolve) => (ended = resolve));
    const wake = () => {
      const w = waiter;
      waiter = undefined;
      w?.();
    };
    const finish = (end: CallStatus) => {
      if (status === undefined) status = end;
      if (!done) {
        done = true;
        ended();
        clearTimeout(timer);
        active -= 1;
        if (active === 0 && connection?.s === s) s.unref();
      }
      wake();
    };
    const fail = (code: number, details: string) => {
      finish({ code, details, metadata: {} });
      if (!stream.destroyed) stream.close(H2_ERROR.CANCEL);
    };
    // A timer holds at most 2^31-1 ms (~24.8 days; a longer one fires at once): a longer deadline is waited for in steps.
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      const left = deadline - Date.now();
      timer = setTimeout(
        () => (deadline - Date.now() > 0 ? arm() : fail(Status.DEADLINE_EXCEEDED, `Deadline exceeded after ${((Date.now() - startedAt) / 1000).toFixed(3)}s`)),
        Math.max(0, Math.min(left, 2 ** 31 - 1)),
      );
    };
    arm();
    const trailers = (headers: H2Headers) => {
      const code = headers["grpc-status"];
      if (code !== undefined) {
        const text = headers["grpc-message"] ?? "";
        let details: string;
        try {
          details = decodeURI(text);
        } catch {
          details = text;
        }
        const metadata = { ...headers };
        delete metadata["grpc-status"];
        delete metadata["grpc-message"];
        finish({ code: Number(code), details, metadata });
      } else if (httpCode !== undefined && httpCode !== 200) finish({ ...httpStatus(httpCode), metadata: headers });
      else finish({ code: Status.UNKNOWN, details: "No status information received", metadata: headers });
    };
    stream.on("response", (headers: H2Headers) => {
      httpCode = Number(headers[":status"]);
      // Trailers-only: a call that ends before any message (a refusal) has its status here.
      if (headers["grpc-status"] !== undefined) trailers(headers);
    });
    stream.on("trailers", trailers);
    stream.on("data", (chunk: Buffer) => {
      if (done) return;
      let messages: Buffer[];
      try {
        messages = deframer.push(chunk);
      } catch (error) {
        const { status: code = Status.INTERNAL, message } = error as Error & { status?: number };
        fail(httpCode !== undefined && httpCode !== 200 ? httpStatus(httpCode).code : code, message);
        return;
      }
      if (messages.length === 0) return;
      queue.push(...messages);
      // What the caller has not taken yet is held here, not more: the server waits on the flow-control window.
      stream.pause();
      wake();
    });
    stream.on("error", () => undefined); // its close says what happened
    stream.on("close", () => {
      if (status !== undefined && done) return;
      process.nextTick(() => {
        if (status !== undefined) return finish(status);
        const rst = stream.rstCode ?? H2_ERROR.NO_ERROR;
        if (c.error !== undefined && httpCode === undefined) {
          return finish({ code: Status.UNAVAILABLE, details: "Connection dropped", metadata: {} });
        }
        if (rst === H2_ERROR.NO_ERROR) {
          if (httpCode !== undefined && httpCode !== 200) return finish({ ...httpStatus(httpCode), metadata: {} });
          return finish({ code: Status.INTERNAL, details: `Received RST_STREAM with code ${rst} (Call ended without gRPC status)`, metadata: {} });
        }
        if (rst === H2_ERROR.REFUSED_STREAM) return finish({ code: Status.UNAVAILABLE, details: "Stream refused by server", metadata: {} });
        if (rst === H2_ERROR.CANCEL)
          return finish(
            c.error !== undefined
              ? { code: Status.UNAVAILABLE, details: "Connection dropped", metadata: {} }
              : { code: Status.CANCELLED, details: "Call cancelled", metadata: {} },
          );
        if (rst === H2_ERROR.ENHANCE_YOUR_CALM)
          return finish({ code: Status.RESOURCE_EXHAUSTED, details: "Bandwidth exhausted or memory limit exceeded", metadata: {} });
        if (rst === H2_ERROR.INTERNAL_ERROR)
          return finish({ code: Status.INTERNAL, details: `Received RST_STREAM with code ${rst} (Internal server error)`, metadata: {} });
        return finish({ code: Status.INTERNAL, details: `Received RST_STREAM with code ${rst}`, metadata: {} });
      });
    });
    return {
      async next() {
        for (;;) {
          const message = queue.shift();
          if (message !== undefined) {
            if (queue.length === 0 && !done) stream.resume();
            return message;
          }
          if (done) {
            const end = status as CallStatus;
            if (end.code !== Status.OK) throw toError(end, socketPath);
            if (deframer.pending) throw toError({ code: Status.INTERNAL, details: "Received an incomplete message", metadata: {} }, socketPath);
            return undefined;
          }
          stream.resume();
          await new Promise<void>((resolve) => (waiter = resolve));
        }
      },
      async write(message) {
        if (done || stream.destroyed) return;
        if (stream.write(frame(message))) return;
        // Each wait's listeners go with it: a long upload waits hundreds of times on one stream.
        const waited = new AbortController();
        try {
          await Promise.race([once(stream, "drain", { signal: waited.signal }), once(stream, "close", { signal: waited.signal }), over]);
        } finally {
          waited.abort();
        }
      },
      end() {
        if (!stream.destroyed && !stream.writableEnded) stream.end();
      },
      cancel() {
        if (done) return;
        fail(Status.CANCELLED, "Cancelled on client");
      },
    };
  }

  function serialize(schema: DescMessage, init: unknown): Buffer {
    const message = create(schema, (init ?? {}) as never);
    let bytes: Uint8Array;
    try {
      bytes = toBinary(schema, message);
    } catch (error) {
      throw new RpcError(Status.INTERNAL, `Request message serialization failure: ${error instanceof Error ? error.message : String(error)}`);
    }
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  function decoder(schema: DescMessage, call: Call): (bytes: Buffer) => unknown {
    return (bytes) => {
      try {
        return fromBinary(schema, bytes);
      } catch (error) {
        call.cancel();
        throw toError(
          { code: Status.INTERNAL, details: `Response message parsing error: ${error instanceof Error ? error.message : String(error)}`, metadata: {} },
          socketPath,
        );
      }
    };
  }

  /** Writes the caller's messages as its iterable yields them, with backpressure; a failing source cancels the call. */
  async function sendAll(call: Call, schema: DescMessage, inits: AsyncIterable<unknown>): Promise<void> {
    for await (const init of inits) await call.write(serialize(schema, init));
    call.end();
  }

  /** The one reply of a unary or client-streaming call. */
  async function single(call: Call, schema: DescMessage): Promise<unknown> {
    const decode = decoder(schema, call);
    const first = await call.next();
    if (first === undefined) throw toError({ code: Status.UNIMPLEMENTED, details: "No message received", metadata: {} }, socketPath);
    const more = await call.next();
    if (more !== undefined) {
      call.cancel();
      throw toError({ code: Status.UNIMPLEMENTED, details: "Too many responses received", metadata: {} }, socketPath);
    }
    return decode(first);
  }

  const methods: Record<string, unknown> = {};
  for (const method of service.methods as readonly DescMethod[]) {
    const path = `/${service.typeName}/${method.name}`;
    if (method.methodKind === "server_streaming") {
      methods[method.localName] = async function* (init?: unknown) {
        const request = serialize(method.input, init);
        const call = await start(path, Date.now() + streamDeadlineMs);
        const decode = decoder(method.output, call);
        try {
          void call.write(request);
          call.end();
          for (let reply = await call.next(); reply !== undefined; reply = await call.next()) yield decode(reply);
        } finally {
          call.cancel();
        }
      };
      continue;
    }
    if (method.methodKind === "client_streaming") {
      methods[method.localName] = async (inits: AsyncIterable<unknown>) => {
        const call = await start(path, Date.now() + streamDeadlineMs);
        const sent = sendAll(call, method.input, inits).catch((error: unknown) => {
          call.cancel();
          throw error instanceof Error ? error : new Error(String(error));
        });
        const reply = single(call, method.output);
        // A failing source is the error the caller sees (the call it cancelled ends CANCELLED).
        const [s, r] = await Promise.allSettled([sent, reply]);
        if (s.status === "rejected") throw s.reason;
        if (r.status === "rejected") throw r.reason;
        return r.value;
      };
      continue;
    }
    if (method.methodKind === "bidi_streaming") {
      // The caller's messages are sent as its iterable yields them (with backpressure), while
      // the replies are read; leaving the loop (or a failing source) cancels the call.
      methods[method.localName] = async function* (inits: AsyncIterable<unknown>) {
        const call = await start(path, Date.now() + streamDeadlineMs);
        const decode = decoder(method.output, call);
        let sendError: unknown;
        sendAll(call, method.input, inits).catch((error: unknown) => {
          sendError = error;
          call.cancel();
        });
        try {
          for (;;) {
            let reply: Buffer | undefined;
            try {
              reply = await call.next();
            } catch (error) {
              if (sendError !== undefined) throw sendError instanceof Error ? sendError : new Error(String(sendError));
              throw error;
            }
            if (reply === undefined) break;
            yield decode(reply);
          }
        } finally {
          call.cancel();
        }
      };
      continue;
    }
    if (method.methodKind !== "unary") continue;
    methods[method.localName] = async (init?: unknown) => {
      const request = serialize(method.input, init);
      // The calls the first socket carries are parked when it is taken, before any is looked for.
      if (sent !== undefined && !closed) open();
      const key = parkedKey(path, request);
      const carried = parked.get(key);
      parked.delete(key);
      let deadline = Date.now() + deadlineMs;
      if (carried !== undefined) {
        try {
          return await single(carried.call, method.output);
        } catch (error) {
          const c = carried.connection;
          // Made again only where the server closed that connection before it said a word: a
          // seat's socket closes one past its bound on arrival, unread (server.ts), and this side
          // would have sent nothing on it. A server that has not spoken by the deadline may yet
          // read what it holds (a daemon stopped, then resumed, ran the calls it read and the
          // calls made again): the call fails as one whose connection was never answered, within
          // the one deadline (found by an attack on issue 26's twenty-fifth round). Each call the
          // socket carried has that deadline; once all have ended the connection holds nothing
          // alive, and close() drops it.
          if (c.spoke || !c.ended) throw error;
          deadline = carried.deadline;
        }
      }
      const call = await start(path, deadline);
      void call.write(request);
      call.end();
      return single(call, method.output);
    };
  }
  methods.connect = () => {
    if (!closed) open();
  };
  methods.close = () => {
    closed = true;
    // Calls the socket carried that nothing asked for: their replies are not waited for.
    for (const { call } of parked.values()) call.cancel();
    parked.clear();
    early?.destroy();
    early = undefined;
    const s = connection?.s;
    connection = undefined;
    // As grpc-js's close: calls in flight finish, then the connection goes; with none, it goes now
    // (a graceful close waits on a peer that may never answer: a hung daemon kept the CLI alive).
    if (s !== undefined && !s.destroyed) {
      if (active === 0) s.destroy();
      else if (!s.closed) s.close();
    }
  };
  return methods as RpcClient<S>;
}
