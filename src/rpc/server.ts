import * as grpc from "@grpc/grpc-js";
import { CONTROL_SERVER_OPTIONS, SEAT_MAX_CONNECTIONS, SEAT_SERVER_OPTIONS } from "./channel-options.js";
import { constants as http2Constants, type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from "node:http2";
import { boundMessageDecoding } from "./message-decoder.js";
import { CoolDown, OverheadMeter, type OverheadReading } from "./overhead-meter.js";
import { MessageCounter } from "./message-count.js";
import { once } from "node:events";
import { createServer, type Server as NetServer, type Socket } from "node:net";
import { create, type DescMethod, type Message } from "@bufbuild/protobuf";
import type { AnyService, CallContext, ServiceImpl } from "./service-types.js";
import { deserializerFor, serializerFor } from "./codec.js";
import { RefusalError, toServiceError } from "./refusal.js";
import { PROTOCOL_METADATA_KEY, PROTOCOL_VERSION } from "./protocol.js";
import { clearStaleSocket, listenInPlace, netListenAt, removeSocket, unixAddress, type SocketAccess, type SocketIdentity } from "./unix-socket.js";

export interface RpcServerOptions {
  /** Absolute path of the unix socket to serve on. */
  readonly socketPath: string;
  readonly access: SocketAccess;
  /** Names the socket for handlers (a seat name, or "control"). Bound here, never sent by the caller. */
  readonly channel: string;
  /** Where unexpected handler failures are reported (never sent to the caller). */
  readonly onInternalError?: (error: unknown, method: string) => void;
  /**
   * Called with a refusal this layer reaches itself, before any handler (a wrong protocol
   * version, `rpc.version`), before the caller is answered: the socket's owner records it
   * (§15, every refused attempt is recorded). The refusal stands whatever this does — if it
   * fails (the store cannot take the record), the call is refused all the same (fail closed).
   */
  readonly onRefusal?: (refusal: RefusalError, method: string) => Promise<void>;
  /**
   * Whose socket it is: "seat" (the default: a hostile caller, every bound of
   * channel-options.ts's SEAT_SERVER_OPTIONS and at most SEAT_MAX_CONNECTIONS connections at
   * once) or "control" (the owner's: CONTROL_SERVER_OPTIONS, no connection bound).
   */
  readonly limits?: "seat" | "control";
  /** Told of connections closed on arrival because the socket already serves its maximum: the bound, and how many since last told (at most once per 10 s). */
  readonly onConnectionDropped?: (bound: number, dropped: number) => void;
}

export interface RpcServer {
  readonly socketPath: string;
  readonly channel: string;
  /** Register a service; every method of it must be implemented. */
  addService<S extends AnyService>(service: S, impl: ServiceImpl<S>): void;
  listen(): Promise<void>;
  /** Stop accepting, finish in-flight calls for up to graceMs, then close and remove the socket. */
  close(graceMs?: number): Promise<void>;
}

/** Checks every call's protocol metadata before its handler runs (fail closed, §11): the refusal, or undefined. */
function protocolRefusal(metadata: grpc.Metadata): RefusalError | undefined {
  const sent = metadata.get(PROTOCOL_METADATA_KEY)[0];
  if (sent === undefined) {
    return new RefusalError("rpc.version", `the call carries no ${PROTOCOL_METADATA_KEY} metadata; this daemon speaks protocol ${PROTOCOL_VERSION}`);
  }
  if (String(sent) !== String(PROTOCOL_VERSION)) {
    return new RefusalError(
      "rpc.version",
      `the client speaks protocol ${String(sent)}, this daemon speaks ${PROTOCOL_VERSION}; use a teamd-shim and teamd of the same release`,
    );
  }
  return undefined;
}

/** What a handler wrapper needs besides its method and handler: the socket's channel and its hooks. */
interface HandlerContext {
  readonly channel: string;
  readonly onInternalError: (error: unknown, method: string) => void;
  readonly onRefusal: ((refusal: RefusalError, method: string) => Promise<void>) | undefined;
}

/** A refusal of this layer's own: handed to `onRefusal` first, then thrown whatever that did (fail closed). */
async function refuseCall(refusal: RefusalError, method: DescMethod, hooks: HandlerContext): Promise<never> {
  await hooks.onRefusal?.(refusal, method.name).catch(() => undefined);
  throw refusal;
}

type AnyHandler = (input: never, context: CallContext) => unknown;

/**
 * A call's context: the socket's channel, and a signal that fires when the caller goes away.
 * The signal is made on first use: most handlers never look, and an AbortController per call
 * is a measurable share of a small call's cost.
 */
function callContext(channel: string, call: { on(event: "cancelled", listener: () => void): unknown }): CallContext {
  let controller: AbortController | undefined;
  let cancelled = false;
  call.on("cancelled", () => {
    cancelled = true;
    controller?.abort();
  });
  return Object.freeze({
    channel,
    get signal(): AbortSignal {
      if (controller === undefined) {
        controller = new AbortController();
        if (cancelled) controller.abort();
      }
      return controller.signal;
    },
  });
}

function reportFailure(error: unknown, method: DescMethod, onInternalError: (error: unknown, method: string) => void): grpc.ServiceError {
  if (!(error instanceof RefusalError)) onInternalError(error, method.name);
  return toServiceError(error) as grpc.ServiceError;
}

function unaryHandler(method: DescMethod, handler: AnyHandler, hooks: HandlerContext): grpc.handleUnaryCall<unknown, unknown> {
  return (call, callback) => {
    const respond = async () => {
      const refused = protocolRefusal(call.metadata);
      if (refused !== undefined) await refuseCall(refused, method, hooks);
      // Accept once: the decoded request is frozen before any code looks at it.
      const request = Object.freeze(call.request) as never;
      const reply = await (handler(request, callContext(hooks.channel, call)) as Promise<unknown>);
      return create(method.output, reply as never);
    };
    respond().then(
      (reply) => callback(null, reply),
      (error: unknown) => callback(reportFailure(error, method, hooks.onInternalError)),
    );
  };
}

/** Server streaming: every message the handler yields is written with backpressure; a caller that leaves stops it. */
function serverStreamHandler(method: DescMethod, handler: AnyHandler, hooks: HandlerContext): grpc.handleServerStreamingCall<unknown, unknown> {
  return (call) => {
    const context = callContext(hooks.channel, call);
    const respond = async () => {
      const refused = protocolRefusal(call.metadata);
      if (refused !== undefined) await refuseCall(refused, method, hooks);
      const request = Object.freeze(call.request) as never;
      for await (const init of handler(request, context) as AsyncIterable<unknown>) {
        if (context.signal.aborted) return;
        if (!call.write(create(method.output, init as never))) await once(call, "drain", { signal: context.signal });
      }
    };
    respond().then(
      () => call.end(),
      (error: unknown) => {
        if (context.signal.aborted) return;
        call.emit("error", reportFailure(error, method, hooks.onInternalError));
      },
    );
  };
}

/**
 * A caller's messages are read one at a time, when the handler asks for the next (issue 20).
 * grpc-js hands them to an object-mode Readable that reads ahead up to its high-water mark,
 * 16 messages: a handler that waits (a file write waiting its turn, a push on a lock) would
 * hold 16 messages of the caller's on every stream, each up to the receive cap. grpc-js takes
 * no option for it, so the stream's state is set here: one message ahead at most.
 */
function readOneAhead(call: object): void {
  const state = (call as { _readableState?: { highWaterMark?: number } })._readableState;
  if (state === undefined || typeof state.highWaterMark !== "number") throw new Error("grpc-js call has no readable state to bound (grpc-js changed?)");
  state.highWaterMark = 1;
}

/** Client streaming: the handler reads the caller's messages (each frozen as it arrives) and answers once. */
function clientStreamHandler(method: DescMethod, handler: AnyHandler, hooks: HandlerContext): grpc.handleClientStreamingCall<unknown, unknown> {
  return (call, callback) => {
    readOneAhead(call);
    const context = callContext(hooks.channel, call);
    // Not `for await (… of call)` either: grpc-js hands a client stream to the handler as a
    // duplex whose writable side is never used (the reply goes by the callback), so the default
    // iterator, finding it unfinished at the caller's end, destroyed it with an AbortError on
    // every call — whose stack Node formats, through the bundle's source map (issue 26: ~27 ms
    // on a push after the daemon's start, then ~0.4 ms each). The reply is the callback's either way.
    async function* messages(): AsyncIterable<unknown> {
      for await (const message of call.iterator({ destroyOnReturn: false }) as AsyncIterable<unknown>) yield Object.freeze(message);
    }
    const respond = async () => {
      const refused = protocolRefusal(call.metadata);
      if (refused !== undefined) await refuseCall(refused, method, hooks);
      const reply = await (handler(messages() as never, context) as Promise<unknown>);
      return create(method.output, reply as never);
    };
    respond().then(
      (reply) => callback(null, reply),
      (error: unknown) => callback(reportFailure(error, method, hooks.onInternalError)),
    );
  };
}

/**
 * Bidirectional streaming: the handler reads the caller's messages (frozen as they arrive)
 * while what it yields is written with backpressure; either side ending ends the call.
 */
function bidiStreamHandler(method: DescMethod, handler: AnyHandler, hooks: HandlerContext): grpc.handleBidiStreamingCall<unknown, unknown> {
  return (call) => {
    readOneAhead(call);
    const context = callContext(hooks.channel, call);
    // Not `for await (… of call)`: a readable's default iterator destroys the stream when
    // the caller half-closes, and on a duplex call that takes the reply side with it.
    async function* messages(): AsyncIterable<unknown> {
      for await (const message of call.iterator({ destroyOnReturn: false }) as AsyncIterable<unknown>) yield Object.freeze(message);
    }
    const respond = async () => {
      const refused = protocolRefusal(call.metadata);
      if (refused !== undefined) await refuseCall(refused, method, hooks);
      for await (const init of handler(messages() as never, context) as AsyncIterable<unknown>) {
        if (context.signal.aborted) return;
        if (!call.write(create(method.output, init as never))) await once(call, "drain", { signal: context.signal });
      }
    };
    respond().then(
      () => call.end(),
      (error: unknown) => {
        if (context.signal.aborted) return;
        call.emit("error", reportFailure(error, method, hooks.onInternalError));
      },
    );
  };
}

const HANDLERS = {
  unary: unaryHandler,
  server_streaming: serverStreamHandler,
  client_streaming: clientStreamHandler,
  bidi_streaming: bidiStreamHandler,
} as const;

/**
 * A gRPC server on one unix socket. One socket, one server: the channel name a handler
 * sees is fixed when the server is created, so the identity of a call is the socket it
 * arrived on and nothing the caller can write.
 */
export function createRpcServer(options: RpcServerOptions): RpcServer {
  const seat = (options.limits ?? "seat") === "seat";
  // An unfinished message costs its bytes, not an object per DATA frame (message-decoder.ts).
  boundMessageDecoding();
  const server = new grpc.Server(seat ? SEAT_SERVER_OPTIONS : CONTROL_SERVER_OPTIONS);
  const hooks: HandlerContext = { channel: options.channel, onInternalError: options.onInternalError ?? (() => undefined), onRefusal: options.onRefusal };
  /** The methods this server serves, by path: a stream's path names one only where it is one of them. */
  const served = new Map<string, string>();
  let listening = false;
  // The socket file this server made, which close removes (and no other made at its path since).
  let made: SocketIdentity | undefined;
  // A seat's socket is served by a listener of ours handing each connection to grpc-js, so
  // that the number of connections is bounded (grpc-js has no option for it).
  let listener: NetServer | undefined;

  return {
    socketPath: options.socketPath,
    channel: options.channel,

    addService(service, impl) {
      const definition: Record<string, grpc.MethodDefinition<Message, Message>> = {};
      const handlers: grpc.UntypedServiceImplementation = {};
      for (const method of service.methods) {
        served.set(`/${service.typeName}/${method.name}`, method.name);
        const handler = (impl as Record<string, AnyHandler>)[method.localName];
        if (!handler) throw new Error(`${service.typeName}.${method.name} has no handler`);
        definition[method.name] = {
          path: `/${service.typeName}/${method.name}`,
          requestStream: method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming",
          responseStream: method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming",
          requestSerialize: serializerFor(method.input),
          requestDeserialize: deserializerFor(method.input),
          responseSerialize: serializerFor(method.output),
          responseDeserialize: deserializerFor(method.output),
        };
        handlers[method.name] = HANDLERS[method.methodKind](method, handler, hooks) as grpc.UntypedHandleCall;
      }
      server.addService(definition, handlers);
    },

    async listen() {
      await clearStaleSocket(options.socketPath);
      if (seat) {
        // What the seat's connections send that reaches no call, bounded for the socket as a whole (overhead-meter.ts).
        const overhead = seatOverheadBound(hooks);
        const before = new Set(http2ServersOf(server));
        const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
        for (const made of http2ServersOf(server)) {
          if (before.has(made)) continue;
          made.on("session", (session) => overhead.watch(session));
          made.on("stream", (stream, headers) =>
            boundDataFrames(stream, served.get(String(headers[":path"])) ?? "unknown", hooks, overhead.tallyOf(stream.session as ServerHttp2Session)),
          );
        }
        const net = createServer((connection) => {
          if (overhead.admit(connection)) injector.injectConnection(connection);
        });
        net.maxConnections = SEAT_MAX_CONNECTIONS;
        // Told at most once per 10 s (a seat opening connections in a loop cannot flood the log), with the count since.
        let dropped = 0;
        let toldAt = 0;
        net.on("drop", () => {
          dropped += 1;
          if (Date.now() - toldAt < 10_000) return;
          toldAt = Date.now();
          options.onConnectionDropped?.(SEAT_MAX_CONNECTIONS, dropped);
          dropped = 0;
        });
        // Held before it listens, so that close() closes it whatever listening meets.
        listener = net;
        made = await listenInPlace(options.socketPath, options.access, netListenAt(net));
        // After listening, a failed accept (EMFILE) is reported, never thrown at the daemon.
        net.on("error", (error) => hooks.onInternalError(error, "accept"));
      } else {
        made = await listenInPlace(
          options.socketPath,
          options.access,
          (path) =>
            new Promise<void>((resolve, reject) => {
              server.bindAsync(unixAddress(path), grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve()));
            }),
        );
      }
      listening = true;
    },

    async close(graceMs = 2000) {
      // Accept no more connections (those open are closed below).
      listener?.close();
      listener = undefined;
      if (listening) {
        await new Promise<void>((resolve) => {
          const force = setTimeout(() => {
            server.forceShutdown();
            resolve();
          }, graceMs);
          server.tryShutdown(() => {
            clearTimeout(force);
            resolve();
          });
        });
        listening = false;
      } else {
        server.forceShutdown();
      }
      // Only a socket this server made: none where listening failed (another's may be there).
      if (made !== undefined) await removeSocket(options.socketPath, made);
    },
  };
}

/**
 * The HTTP/2 servers grpc-js made for this server. grpc-js exports no way to them, so its own map
 * is read (grpc-js 1.14.x, pinned); `server-client.test.ts` fails if it moves (a seat stream of
 * 1-byte frames is then not reset).
 */
interface Http2Events {
  on(event: "stream", listener: (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void): unknown;
  on(event: "session", listener: (session: ServerHttp2Session) => void): unknown;
}

function http2ServersOf(server: grpc.Server): Http2Events[] {
  const map = (server as unknown as { http2Servers?: unknown }).http2Servers;
  return map instanceof Map ? [...(map.keys() as Iterable<Http2Events>)] : [];
}

/**
 * A seat's DATA frames cost the daemon their bytes, not an object each (found by an attack,
 * round eighteen). node's http2 hands a stream each DATA frame as its own Buffer, a view of the
 * socket read it came in; a stream grpc-js has paused (one message ahead of a handler that
 * waits, a file write waiting its turn) keeps them, up to its window: 1-byte frames made 4 MiB
 * sent on one connection hold ~440 MiB, and each 1-byte frame sent after 64 KiB of frames HTTP/2
 * ignores kept that whole read alive (3 GiB for 52 KB of payload). So each chunk a seat's stream
 * gets is copied when it is a small part of its read (it then keeps only itself), and a stream
 * whose frames average under `SEAT_FRAME_BYTES` past its first `SEAT_FREE_FRAMES` is reset
 * (ENHANCE_YOUR_CALM): every client of teamd's sends frames of up to 16 KiB, a message whole.
 */
const SEAT_FREE_FRAMES = 64;
const SEAT_FRAME_BYTES = 1024;

/**
 * The same for a stream's gRPC messages (message-count.ts): each costs the daemon an object, a
 * decode and a turn of its handler, so past its first `SEAT_FREE_MESSAGES` a stream's messages
 * must average `SEAT_MESSAGE_BYTES` or more (every client of teamd's sends content in parts of
 * up to 128 KiB), or it is reset (ENHANCE_YOUR_CALM) and the attempt recorded (`rpc.messages`).
 */
const SEAT_FREE_MESSAGES = 64;
const SEAT_MESSAGE_BYTES = 1024;

/** One seat connection's part of the overhead bound (overhead-meter.ts): what reached a call, the streams it opened, its socket. */
interface SessionTally {
  useful: number;
  streams: number;
  /** Of `useful`, bytes of messages their streams never finished (message-count.ts). */
  lost: number;
  readonly connection: Socket;
  /** Closed for its overhead already: its last reading is taken, never acted on again. */
  cut: boolean;
}

/** How often a seat connection's overhead is read: what it can send past its bound before it is closed is what it sends in this long. */
const OVERHEAD_CHECK_MS = 100;

/** Where a seat connection's tally rides from the accepted socket to its HTTP/2 session (whose socket is a proxy that reads through to it). */
const TALLY = Symbol("teamd.overhead-tally");

/**
 * A seat socket's bound on what its connections send that reaches no call (overhead-meter.ts):
 * one bucket for all of them, each connection read every `OVERHEAD_CHECK_MS` and once more when
 * it closes (a connection that sent its fill and closed before its first reading was never
 * charged: found by an attack). A seat that runs the bucket dry has the connection closed
 * (GOAWAY ENHANCE_YOUR_CALM) where it is still open, its socket closes new connections for a
 * cool-down (`CoolDown`), and its attempt is put on record (`rpc.overhead`, under the action
 * `rpc.connection`), charged to its refusal budget like any refusal.
 */
function seatOverheadBound(hooks: HandlerContext): {
  /** Whether an accepted connection is served (closed here where it is not). */
  admit(connection: Socket): boolean;
  watch(session: ServerHttp2Session): void;
  tallyOf(session: ServerHttp2Session): SessionTally | undefined;
} {
  const coolDown = new CoolDown();
  const meter = new OverheadMeter(performance.now());
  const tallies = new WeakMap<ServerHttp2Session, SessionTally>();
  const read = (tally: SessionTally) =>
    meter.observe(
      tally,
      { read: tally.connection.bytesRead, written: tally.connection.bytesWritten, useful: tally.useful, streams: tally.streams, lost: tally.lost },
      performance.now(),
    );
  const over = (tally: SessionTally, reading: OverheadReading, session: ServerHttp2Session | undefined) => {
    tally.cut = true;
    meter.forgive();
    coolDown.strike(performance.now());
    if (session !== undefined && !session.destroyed) {
      // GOAWAY with its reason first: destroy() alone sends NO_ERROR.
      session.goaway(http2Constants.NGHTTP2_ENHANCE_YOUR_CALM);
      session.destroy();
    }
    const refusal = new RefusalError(
      "rpc.overhead",
      `the connection sent ${Math.round(reading.overhead)} bytes that reached no call (of ${tally.connection.bytesRead} read; ${tally.useful} reached a call, on ${tally.streams} streams), past what the seat's connections may (frames on closed or answered streams, frames HTTP/2 ignores, control frames past need); ${session !== undefined ? "closed (GOAWAY: ENHANCE_YOUR_CALM)" : "it had closed"}, and the seat's socket takes no new connection for a while`,
    );
    void hooks.onRefusal?.(refusal, "connection").catch(() => undefined);
  };
  return {
    admit(connection) {
      if (!coolDown.open(performance.now())) {
        connection.destroy();
        return false;
      }
      const tally: SessionTally = { useful: 0, streams: 0, lost: 0, connection, cut: false };
      (connection as unknown as Record<symbol, unknown>)[TALLY] = tally;
      connection.once("close", () => {
        const reading = read(tally);
        if (reading.tokens < 0 && !tally.cut) over(tally, reading, undefined);
      });
      return true;
    },
    watch(session) {
      const tally = (session.socket as unknown as Record<symbol, unknown> | undefined)?.[TALLY] as SessionTally | undefined;
      if (tally === undefined) return;
      tallies.set(session, tally);
      const timer = setInterval(() => {
        if (session.destroyed || tally.cut) {
          clearInterval(timer);
          return;
        }
        const reading = read(tally);
        if (reading.tokens >= 0) return;
        clearInterval(timer);
        over(tally, reading, session);
      }, OVERHEAD_CHECK_MS);
      timer.unref();
      session.once("close", () => clearInterval(timer));
    },
    tallyOf: (session) => tallies.get(session),
  };
}

/** A copy with a backing store of its own: one from node's shared pool (Buffer.from, under 4 KiB) keeps its whole 8 KiB slab alive (found by a third attack: ~286 MiB held). */
function ownCopy(chunk: Buffer): Buffer {
  const copy = Buffer.allocUnsafeSlow(chunk.byteLength);
  chunk.copy(copy);
  return copy;
}

function boundDataFrames(stream: ServerHttp2Stream, method: string, hooks: HandlerContext, tally: SessionTally | undefined): void {
  const push = stream.push.bind(stream);
  let frames = 0;
  let bytes = 0;
  let over = false;
  const counter = new MessageCounter();
  let useful = 0;
  if (tally !== undefined) {
    tally.streams += 1;
    // A message the stream never finished was no call's data after all: its bytes go to the connection's overhead (at most what was counted as data).
    stream.once("close", () => (tally.lost += Math.min(counter.unfinished(), useful)));
  }
  stream.push = (chunk: unknown, encoding?: BufferEncoding): boolean => {
    if (!Buffer.isBuffer(chunk)) return push(chunk, encoding);
    if (over) return false;
    // Data for a call the daemon has answered is read and dropped by grpc-js: the connection's overhead, not a call's.
    if (tally !== undefined && !stream.writableEnded) {
      tally.useful += chunk.byteLength;
      useful += chunk.byteLength;
    }
    frames += 1;
    bytes += chunk.byteLength;
    if (frames > SEAT_FREE_FRAMES + bytes / SEAT_FRAME_BYTES) {
      over = true;
      process.nextTick(() => stream.close(http2Constants.NGHTTP2_ENHANCE_YOUR_CALM));
      // The seat's attempt, on record (§11), counted against its refusal budget like any other.
      const refusal = new RefusalError(
        "rpc.frames",
        `the stream's ${frames} DATA frames carried ${bytes} bytes; past its first ${SEAT_FREE_FRAMES}, a seat's frames must average ${SEAT_FRAME_BYTES} bytes or more (reset: ENHANCE_YOUR_CALM)`,
      );
      void hooks.onRefusal?.(refusal, method).catch(() => undefined);
      return false;
    }
    const messages = counter.feed(chunk);
    if (messages > SEAT_FREE_MESSAGES + bytes / SEAT_MESSAGE_BYTES) {
      over = true;
      process.nextTick(() => stream.close(http2Constants.NGHTTP2_ENHANCE_YOUR_CALM));
      const refusal = new RefusalError(
        "rpc.messages",
        `the stream's ${messages} messages came in ${bytes} bytes; past its first ${SEAT_FREE_MESSAGES}, a seat's messages must average ${SEAT_MESSAGE_BYTES} bytes or more (reset: ENHANCE_YOUR_CALM)`,
      );
      void hooks.onRefusal?.(refusal, method).catch(() => undefined);
      return false;
    }
    // Copied only where it will wait in the stream (paused, or behind what waits): one that flows
    // goes to the decoder now, which copies it and lets the read go.
    const waits = stream.readableFlowing !== true || stream.readableLength > 0;
    return push(waits && chunk.byteLength * 2 < chunk.buffer.byteLength ? ownCopy(chunk) : chunk, encoding);
  };
}
