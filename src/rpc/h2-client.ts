import { EventEmitter } from "node:events";
import type { Socket } from "node:net";
import { encodeHeaders, HpackDecoder, HpackError, type HeaderField } from "./hpack.js";

/**
 * The client side of an HTTP/2 connection (RFC 7540) over a socket already connected, as the
 * gRPC client of the CLI and the shim uses it (src/rpc/client.ts, issue 26): requests on
 * client streams, their replies' headers, data and trailers, flow control both ways, RST_STREAM,
 * PING, SETTINGS and GOAWAY. No server push (refused in the SETTINGS this side sends), no
 * priorities, no upgrade, no TLS. node:http2 did this before; it loads node:http, node:tls and
 * all of node:crypto with it — ~6.5 ms of every command inside a seat (8.7 ms over `node -e 0`
 * against 2.2 ms for node:net and node:stream), for one connection on a unix socket.
 *
 * The peer is the daemon, but nothing it sends is trusted to be well formed: a frame past the
 * size this side announced, data past a window, a header block past its bound or an unknown
 * stream in a frame that needs one is a connection error (GOAWAY, then the socket closed), and
 * every stream still open ends with it.
 */

/** Error codes (RFC 7540 §7), as client.ts reads a stream's rstCode. */
export const H2_ERROR = {
  NO_ERROR: 0,
  PROTOCOL_ERROR: 1,
  INTERNAL_ERROR: 2,
  FLOW_CONTROL_ERROR: 3,
  STREAM_CLOSED: 5,
  FRAME_SIZE_ERROR: 6,
  REFUSED_STREAM: 7,
  CANCEL: 8,
  COMPRESSION_ERROR: 9,
  ENHANCE_YOUR_CALM: 11,
} as const;

const FRAME = { DATA: 0, HEADERS: 1, PRIORITY: 2, RST_STREAM: 3, SETTINGS: 4, PUSH_PROMISE: 5, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;
const SETTING = {
  HEADER_TABLE_SIZE: 1,
  ENABLE_PUSH: 2,
  MAX_CONCURRENT_STREAMS: 3,
  INITIAL_WINDOW_SIZE: 4,
  MAX_FRAME_SIZE: 5,
  MAX_HEADER_LIST_SIZE: 6,
} as const;

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
/** What this side announces: the defaults, but push off, a larger stream window and a bound on header lists. */
const OWN_MAX_FRAME = 16_384;
const OWN_TABLE_SIZE = 4_096;
const OWN_STREAM_WINDOW = 1 << 20;
/** The connection's window, raised at once from the protocol's 65,535 and kept there as data arrives. */
const OWN_CONNECTION_WINDOW = 16 << 20;
/** A reply's headers or trailers: gRPC's are a few hundred bytes; a refusal's reason at most a few KiB. */
const MAX_HEADER_LIST = 256 * 1024;
const DEFAULT_WINDOW = 65_535;
const MAX_WINDOW = 2 ** 31 - 1;
/** A stream's queued writes past which write() asks the caller to wait for "drain". */
const WRITE_HIGH_WATER = 64 * 1024;
/** What this side lets wait in the socket unsent before it stops queueing DATA there (the rest stays in the streams' queues). */
const SOCKET_HIGH_WATER = 1 << 20;
/** A peer that makes this side answer (PING, SETTINGS) but does not read past this is refused: its answers would pile up here. */
const MAX_UNREAD = 4 << 20;
/** Each frame of a header block counts its 9-byte header too: empty CONTINUATIONs are no way past the bound. */
const FRAME_HEADER = 9;

/** A reply's headers as node:http2 gave them: lower-case names, a repeated one's values joined by ", ". */
export type H2Headers = Record<string, string>;

class ConnectionError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * One request. Events: "response" (the reply's first header block), "trailers" (a later one),
 * "data" (Buffer, unless paused), "drain", "close" (once: rstCode says how it ended).
 */
export class H2Stream extends EventEmitter {
  /** How the stream ended: NO_ERROR for a clean end, the peer's RST_STREAM code, or the code this side closed it with. */
  rstCode: number | undefined;
  destroyed = false;
  writableEnded = false;
  /** @internal */ sendWindow: number;
  /** @internal */ readonly queue: Buffer[] = [];
  /** @internal */ queued = 0;
  /** @internal */ endQueued = false;
  /** @internal */ endSent = false;
  /** @internal */ remoteEnded = false;
  /** @internal */ receiveWindow = OWN_STREAM_WINDOW;
  /** @internal */ consumed = 0;
  /** @internal */ headersSeen = false;
  /** @internal write() said to wait: "drain" is due when the queue empties. */ needDrain = false;
  private paused = false;
  /** What came while paused, given in the order it came once resumed: data, then the trailers, then the end. */
  private readonly held: Buffer[] = [];
  private heldTrailers: H2Headers | undefined;
  private heldEnd: number | undefined;

  /** 0 until the request is sent: a stream past the server's MAX_CONCURRENT_STREAMS waits, and ids go out in order. */
  id = 0;

  constructor(
    private readonly connection: H2Connection,
    /** @internal The request's header block, encoded when asked for and sent when the stream opens. */ readonly block: Buffer,
  ) {
    super();
    this.sendWindow = 0;
  }

  /** Queue bytes to send (DATA frames as the windows allow): false once the queue is past its high water, then "drain" when it empties. */
  write(bytes: Buffer): boolean {
    if (this.destroyed || this.writableEnded) return false;
    if (bytes.byteLength > 0) {
      this.queue.push(bytes);
      this.queued += bytes.byteLength;
    }
    this.connection.pump();
    if (this.queued < WRITE_HIGH_WATER) return true;
    this.needDrain = true;
    return false;
  }

  end(): void {
    if (this.destroyed || this.writableEnded) return;
    this.writableEnded = true;
    this.endQueued = true;
    this.connection.pump();
  }

  /** Hold "data" until resume(): what arrives meanwhile is kept (at most this side's window) and the peer is not credited for it. */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.release();
  }

  private release(): void {
    while (!this.paused && this.held.length > 0) this.deliver(this.held.shift() as Buffer);
    if (this.paused || this.held.length > 0) return;
    const trailers = this.heldTrailers;
    this.heldTrailers = undefined;
    if (trailers !== undefined) this.emit("trailers", trailers);
    if (this.heldEnd !== undefined) this.finish(this.heldEnd);
  }

  /** End the stream now with `code` (RST_STREAM to the peer). */
  close(code: number = H2_ERROR.NO_ERROR): void {
    if (this.destroyed) return;
    this.connection.reset(this, code);
  }

  /** @internal */ received(bytes: Buffer): void {
    if (this.paused || this.held.length > 0) this.held.push(bytes);
    else this.deliver(bytes);
  }

  /** @internal The reply's trailers: after the data that came before them. */
  trailersReceived(headers: H2Headers): void {
    if (this.paused || this.held.length > 0) this.heldTrailers = headers;
    else this.emit("trailers", headers);
  }

  /** @internal The reply has ended cleanly: the stream closes once what came before the end is given. */
  endReceived(code: number): void {
    if (this.paused || this.held.length > 0 || this.heldTrailers !== undefined) this.heldEnd = code;
    else this.finish(code);
  }

  private deliver(bytes: Buffer): void {
    this.consumed += bytes.byteLength;
    this.connection.credit(this);
    this.emit("data", bytes);
  }

  /** @internal Closed now: what is held is dropped (an RST_STREAM, a connection gone). */
  finish(code: number): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.rstCode = code;
    this.queue.length = 0;
    this.queued = 0;
    this.held.length = 0;
    this.heldTrailers = undefined;
    this.heldEnd = undefined;
    this.emit("close");
  }
}

/** Events: "remoteSettings" (the server's first SETTINGS), "goaway", "error", "close". */
export class H2Connection extends EventEmitter {
  closed = false;
  destroyed = false;
  private readonly streams = new Map<number, H2Stream>();
  /** Requests past the server's MAX_CONCURRENT_STREAMS, sent in order as streams end (nghttp2 ends the connection for one more). */
  private readonly waiting: H2Stream[] = [];
  private peerMaxStreams = Number.POSITIVE_INFINITY;
  private nextStreamId = 1;
  private readonly decoder = new HpackDecoder({ maxTableSize: OWN_TABLE_SIZE, maxListSize: MAX_HEADER_LIST });
  private input: Buffer = Buffer.alloc(0);
  private peerMaxFrame = OWN_MAX_FRAME;
  private peerStreamWindow = DEFAULT_WINDOW;
  private connectionSendWindow = DEFAULT_WINDOW;
  private connectionUncredited = 0;
  private settingsSeen = false;
  /** A header block in progress: its stream, flags and fragments, until END_HEADERS. */
  private continuing: { stream: number; endStream: boolean; fragments: Buffer[]; size: number } | undefined;
  /** The code of the server's GOAWAY: the streams it still had end with it when the connection goes (as node:http2 ended them). */
  private goawayCode: number | undefined;

  /** The requests already on the socket when this connection took it (`sent`), in their order: streams 1, 3, ... */
  readonly sentStreams: readonly H2Stream[];

  /**
   * `sent`: the socket already carries clientStart() and, after it, one wholeRequest() on each of
   * streams 1, 3, ... whose DATA held these many bytes (the shim's front wrote them before this
   * code loaded, issue 26). Those streams are this connection's from the start (sentStreams),
   * their requests sent and ended; the socket must not have been read.
   */
  constructor(
    private readonly socket: Socket,
    sent?: readonly number[],
  ) {
    super();
    const streams: H2Stream[] = [];
    if (sent === undefined) socket.write(clientStart());
    else
      for (const bytes of sent) {
        if (!(Number.isSafeInteger(bytes) && bytes >= 0 && bytes <= MAX_WHOLE_BODY))
          throw new Error(`a request sent whole carries at most ${MAX_WHOLE_BODY} bytes, not ${bytes}`);
        const stream = new H2Stream(this, Buffer.alloc(0));
        stream.id = this.nextStreamId;
        this.nextStreamId += 2;
        stream.sendWindow = DEFAULT_WINDOW - bytes;
        this.connectionSendWindow -= bytes;
        stream.writableEnded = stream.endQueued = stream.endSent = true;
        this.streams.set(stream.id, stream);
        streams.push(stream);
      }
    this.sentStreams = streams;
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("drain", () => this.pump());
    socket.on("error", (error: Error) => this.emit("error", error));
    socket.on("close", () => this.onSocketClose());
  }

  /** A new request: its header block sent at once (END_HEADERS; its body and end follow by write and end). */
  request(fields: readonly HeaderField[]): H2Stream {
    if (this.closed || this.destroyed) throw new Error("The session has been destroyed");
    // Encoded now, so a header this side may not send fails the call that asked, at once.
    const stream = new H2Stream(this, encodeHeaders(fields));
    if (this.streams.size < this.peerMaxStreams) this.open(stream);
    else this.waiting.push(stream);
    return stream;
  }

  private open(stream: H2Stream): void {
    const id = this.nextStreamId;
    this.nextStreamId += 2;
    stream.id = id;
    stream.sendWindow = this.peerStreamWindow;
    this.streams.set(id, stream);
    const block = stream.block;
    // A block past the peer's frame size goes out as HEADERS and CONTINUATIONs.
    const frames: Buffer[] = [];
    for (let at = 0; at < block.byteLength || at === 0; at += this.peerMaxFrame) {
      const part = block.subarray(at, at + this.peerMaxFrame);
      const last = at + this.peerMaxFrame >= block.byteLength;
      frames.push(frame(at === 0 ? FRAME.HEADERS : FRAME.CONTINUATION, last ? FLAG.END_HEADERS : 0, id, part));
    }
    this.socket.write(Buffer.concat(frames));
    this.pump();
  }

  /** Send the waiting requests the server's limit now has room for. */
  private openWaiting(): void {
    while (!this.destroyed && this.waiting.length > 0 && this.streams.size < this.peerMaxStreams) this.open(this.waiting.shift() as H2Stream);
  }

  ref(): void {
    this.socket.ref();
  }

  unref(): void {
    this.socket.unref();
  }

  /** No new requests; the connection goes once its streams have ended. */
  close(): void {
    this.closed = true;
    if (this.streams.size === 0 && this.waiting.length === 0) this.destroy();
  }

  /** Now: every stream ends (CANCEL), the socket closes. */
  destroy(error?: Error): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.closed = true;
    if (error !== undefined) this.emit("error", error);
    this.endAll(error === undefined ? (this.goawayCode ?? H2_ERROR.CANCEL) : H2_ERROR.CANCEL);
    this.socket.destroy();
  }

  /** @internal Send what the windows allow of each stream's queue, and each end that is due. */
  pump(): void {
    if (this.destroyed) return;
    // The frames of one pump leave in one write (writev): a 64 KiB message is four DATA frames
    // of 16 KiB, and a write each was a system call and a wake of the daemon each (issue 26).
    this.socket.cork();
    try {
      this.pumpStreams();
    } finally {
      this.socket.uncork();
    }
  }

  private pumpStreams(): void {
    for (const stream of this.streams.values()) {
      while (stream.queue.length > 0 && this.connectionSendWindow > 0 && stream.sendWindow > 0 && this.socket.writableLength < SOCKET_HIGH_WATER) {
        const head = stream.queue[0] as Buffer;
        const n = Math.min(head.byteLength, this.peerMaxFrame, this.connectionSendWindow, stream.sendWindow);
        const last = n === head.byteLength && stream.queue.length === 1 && stream.endQueued;
        this.socket.write(frame(FRAME.DATA, last ? FLAG.END_STREAM : 0, stream.id, head.subarray(0, n)));
        this.connectionSendWindow -= n;
        stream.sendWindow -= n;
        stream.queued -= n;
        if (n === head.byteLength) stream.queue.shift();
        else stream.queue[0] = head.subarray(n);
        if (last) stream.endSent = true;
      }
      if (stream.queue.length === 0 && stream.endQueued && !stream.endSent) {
        stream.endSent = true;
        this.socket.write(frame(FRAME.DATA, FLAG.END_STREAM, stream.id, Buffer.alloc(0)));
      }
      if (stream.queue.length === 0) {
        if (stream.endSent && stream.remoteEnded) this.settle(stream, H2_ERROR.NO_ERROR);
        else if (stream.needDrain) {
          stream.needDrain = false;
          stream.emit("drain");
        }
      }
    }
  }

  /** @internal The stream's consumed bytes credited back to the peer once they reach half its window. */
  credit(stream: H2Stream): void {
    if (stream.remoteEnded || stream.destroyed || stream.consumed < OWN_STREAM_WINDOW / 2) return;
    this.windowUpdate(stream.id, stream.consumed);
    stream.receiveWindow += stream.consumed;
    stream.consumed = 0;
  }

  /** @internal */ reset(stream: H2Stream, code: number): void {
    if (stream.id === 0) {
      // Never sent: nothing to tell the server.
      const at = this.waiting.indexOf(stream);
      if (at >= 0) this.waiting.splice(at, 1);
      stream.finish(code);
      return;
    }
    const rst = Buffer.alloc(4);
    rst.writeUInt32BE(code, 0);
    if (!this.destroyed) this.socket.write(frame(FRAME.RST_STREAM, 0, stream.id, rst));
    this.settle(stream, code);
  }

  private settle(stream: H2Stream, code: number): void {
    this.streams.delete(stream.id);
    stream.finish(code);
    this.streamGone();
  }

  /** A stream left the wire: a waiting request may go, or a closing connection may end. */
  private streamGone(): void {
    this.openWaiting();
    if (this.closed && this.streams.size === 0 && this.waiting.length === 0) this.destroy();
  }

  private endAll(code: number): void {
    const open = [...this.streams.values(), ...this.waiting];
    this.streams.clear();
    this.waiting.length = 0;
    for (const stream of open) stream.finish(code);
  }

  /** An answer this side owes the peer (a PING's, a SETTINGS's), unless the peer has stopped reading them. */
  private answer(bytes: Buffer): void {
    if (this.socket.writableLength > MAX_UNREAD) throw new ConnectionError(H2_ERROR.ENHANCE_YOUR_CALM, "the peer asks for answers it does not read");
    this.socket.write(bytes);
  }

  private windowUpdate(id: number, increment: number): void {
    const body = Buffer.alloc(4);
    body.writeUInt32BE(increment, 0);
    this.socket.write(frame(FRAME.WINDOW_UPDATE, 0, id, body));
  }

  private onSocketClose(): void {
    if (!this.destroyed) {
      this.destroyed = true;
      this.closed = true;
      this.endAll(this.goawayCode ?? H2_ERROR.CANCEL);
    }
    this.emit("close");
  }

  private onData(chunk: Buffer): void {
    if (this.destroyed) return;
    this.input = this.input.byteLength === 0 ? chunk : Buffer.concat([this.input, chunk]);
    try {
      while (this.input.byteLength >= 9) {
        const length = this.input.readUIntBE(0, 3);
        if (length > OWN_MAX_FRAME) throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, `a frame of ${length} bytes, past the ${OWN_MAX_FRAME} announced`);
        if (this.input.byteLength < 9 + length) break;
        const type = this.input.readUInt8(3);
        const flags = this.input.readUInt8(4);
        const id = this.input.readUInt32BE(5) & 0x7fffffff;
        const payload = this.input.subarray(9, 9 + length);
        this.input = this.input.subarray(9 + length);
        this.onFrame(type, flags, id, payload);
        if (this.destroyed) return;
      }
    } catch (error) {
      // A listener's own exception is the caller's, not the peer's: it propagates as node:http2's would.
      if (!(error instanceof ConnectionError) && !(error instanceof HpackError)) throw error;
      const code = error instanceof ConnectionError ? error.code : H2_ERROR.COMPRESSION_ERROR;
      const message = error instanceof Error ? error.message : String(error);
      const goaway = Buffer.alloc(8);
      goaway.writeUInt32BE(0, 0);
      goaway.writeUInt32BE(code, 4);
      this.socket.write(frame(FRAME.GOAWAY, 0, 0, goaway));
      this.destroy(Object.assign(new Error(`HTTP/2 protocol error: ${message}`), { code: "ERR_HTTP2_PROTOCOL" }));
    }
  }

  private onFrame(type: number, flags: number, id: number, payload: Buffer): void {
    if (this.continuing !== undefined && type !== FRAME.CONTINUATION) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "a frame inside a header block");
    switch (type) {
      case FRAME.DATA:
        return this.onDataFrame(flags, id, payload);
      case FRAME.HEADERS: {
        const body = unpad(flags, payload, id);
        const block = flags & FLAG.PRIORITY ? priorityless(body) : body;
        this.continuing = { stream: id, endStream: (flags & FLAG.END_STREAM) !== 0, fragments: [block], size: FRAME_HEADER + block.byteLength };
        if (flags & FLAG.END_HEADERS) this.endHeaders();
        return;
      }
      case FRAME.CONTINUATION: {
        const c = this.continuing;
        if (c === undefined || c.stream !== id) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "a CONTINUATION outside a header block");
        c.fragments.push(payload);
        c.size += FRAME_HEADER + payload.byteLength;
        if (c.size > MAX_HEADER_LIST) throw new ConnectionError(H2_ERROR.ENHANCE_YOUR_CALM, `a header block past ${MAX_HEADER_LIST} bytes`);
        if (flags & FLAG.END_HEADERS) this.endHeaders();
        return;
      }
      case FRAME.PRIORITY:
        if (payload.byteLength !== 5) throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "a PRIORITY frame not of 5 bytes");
        return;
      case FRAME.RST_STREAM: {
        if (id === 0 || payload.byteLength !== 4) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "a malformed RST_STREAM");
        const stream = this.streams.get(id);
        if (stream !== undefined) this.settle(stream, payload.readUInt32BE(0));
        return;
      }
      case FRAME.SETTINGS:
        return this.onSettings(flags, id, payload);
      case FRAME.PUSH_PROMISE:
        throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "a PUSH_PROMISE, with push disabled");
      case FRAME.PING:
        if (id !== 0 || payload.byteLength !== 8) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "a malformed PING");
        if ((flags & FLAG.ACK) === 0) this.answer(frame(FRAME.PING, FLAG.ACK, 0, payload));
        return;
      case FRAME.GOAWAY: {
        if (id !== 0 || payload.byteLength < 8) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "a malformed GOAWAY");
        const last = payload.readUInt32BE(0) & 0x7fffffff;
        this.goawayCode = payload.readUInt32BE(4);
        this.closed = true;
        // Streams the server never took, and those never sent, are refused: nothing of them was processed.
        const refused = [...this.waiting, ...[...this.streams.values()].filter((stream) => stream.id > last)];
        this.waiting.length = 0;
        for (const stream of refused) {
          this.streams.delete(stream.id);
          stream.finish(H2_ERROR.REFUSED_STREAM);
        }
        this.emit("goaway", this.goawayCode);
        if (this.streams.size === 0) this.destroy();
        return;
      }
      case FRAME.WINDOW_UPDATE: {
        if (payload.byteLength !== 4) throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "a WINDOW_UPDATE not of 4 bytes");
        const increment = payload.readUInt32BE(0) & 0x7fffffff;
        if (increment === 0) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "a WINDOW_UPDATE of 0");
        if (id === 0) {
          this.connectionSendWindow += increment;
          if (this.connectionSendWindow > MAX_WINDOW) throw new ConnectionError(H2_ERROR.FLOW_CONTROL_ERROR, "the connection's window past 2^31-1");
        } else {
          const stream = this.streams.get(id);
          if (stream === undefined) return;
          stream.sendWindow += increment;
          if (stream.sendWindow > MAX_WINDOW) throw new ConnectionError(H2_ERROR.FLOW_CONTROL_ERROR, "a stream's window past 2^31-1");
        }
        this.pump();
        return;
      }
      default:
        // Unknown frame types are ignored (RFC 7540 §4.1).
        return;
    }
  }

  private onDataFrame(flags: number, id: number, payload: Buffer): void {
    if (id === 0) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "DATA on stream 0");
    // The connection is credited as data arrives (a paused stream holds no other's window).
    this.connectionUncredited += payload.byteLength;
    if (this.connectionUncredited > OWN_CONNECTION_WINDOW) throw new ConnectionError(H2_ERROR.FLOW_CONTROL_ERROR, "data past the connection's window");
    if (this.connectionUncredited >= OWN_CONNECTION_WINDOW / 2) {
      this.windowUpdate(0, this.connectionUncredited);
      this.connectionUncredited = 0;
    }
    const stream = this.streams.get(id);
    if (stream === undefined) {
      if (id >= this.nextStreamId) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "DATA on a stream never opened");
      return; // a stream this side has closed: the frame still counted against the connection
    }
    if (!stream.headersSeen || stream.remoteEnded) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "DATA before the reply's headers or after its end");
    stream.receiveWindow -= payload.byteLength;
    if (stream.receiveWindow < 0) throw new ConnectionError(H2_ERROR.FLOW_CONTROL_ERROR, "data past a stream's window");
    const body = unpad(flags, payload, id);
    // Padding is never delivered: it is credited back with what is.
    stream.consumed += payload.byteLength - body.byteLength;
    if (body.byteLength > 0) stream.received(Buffer.from(body));
    else this.credit(stream);
    if (flags & FLAG.END_STREAM) this.remoteEnd(stream);
  }

  private endHeaders(): void {
    const c = this.continuing as NonNullable<typeof this.continuing>;
    this.continuing = undefined;
    // Decoded whatever the stream: the dynamic table is the connection's.
    const fields = this.decoder.decode(c.fragments.length === 1 ? (c.fragments[0] as Buffer) : Buffer.concat(c.fragments));
    const stream = this.streams.get(c.stream);
    if (stream === undefined) {
      if (c.stream === 0 || c.stream >= this.nextStreamId || c.stream % 2 === 0)
        throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "HEADERS on a stream never opened");
      return;
    }
    if (stream.remoteEnded) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "HEADERS after a stream's end");
    const headers = Object.create(null) as H2Headers;
    for (const [name, value] of fields) headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    const first = !stream.headersSeen;
    stream.headersSeen = true;
    if (first) stream.emit("response", headers);
    else stream.trailersReceived(headers);
    if (c.endStream && !stream.destroyed) this.remoteEnd(stream);
  }

  /**
   * The reply has ended: the stream is done with on the wire (a request still being written is
   * stopped, RST_STREAM NO_ERROR) and closes once its reader has taken what came before the end.
   */
  private remoteEnd(stream: H2Stream): void {
    stream.remoteEnded = true;
    if (stream.destroyed) return;
    stream.queue.length = 0;
    stream.queued = 0;
    stream.writableEnded = true;
    if (!stream.endSent) {
      const rst = Buffer.alloc(4);
      this.socket.write(frame(FRAME.RST_STREAM, 0, stream.id, rst));
    }
    this.streams.delete(stream.id);
    stream.endReceived(H2_ERROR.NO_ERROR);
    this.streamGone();
  }

  private onSettings(flags: number, id: number, payload: Buffer): void {
    if (id !== 0) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "SETTINGS on a stream");
    if (flags & FLAG.ACK) {
      if (payload.byteLength !== 0) throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "a SETTINGS ack with a payload");
      return;
    }
    if (payload.byteLength % 6 !== 0) throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "SETTINGS not in 6-byte entries");
    for (let at = 0; at < payload.byteLength; at += 6) {
      const key = payload.readUInt16BE(at);
      const value = payload.readUInt32BE(at + 2);
      if (key === SETTING.INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW) throw new ConnectionError(H2_ERROR.FLOW_CONTROL_ERROR, "an initial window past 2^31-1");
        const delta = value - this.peerStreamWindow;
        this.peerStreamWindow = value;
        for (const stream of this.streams.values()) {
          stream.sendWindow += delta;
          if (stream.sendWindow > MAX_WINDOW) throw new ConnectionError(H2_ERROR.FLOW_CONTROL_ERROR, "a stream's window past 2^31-1");
        }
      } else if (key === SETTING.MAX_FRAME_SIZE) {
        if (value < 16_384 || value > 16_777_215) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "a max frame size out of range");
        this.peerMaxFrame = value;
      } else if (key === SETTING.MAX_CONCURRENT_STREAMS) {
        this.peerMaxStreams = value;
      } else if (key === SETTING.ENABLE_PUSH && value > 1) {
        throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "ENABLE_PUSH past 1");
      }
      // HEADER_TABLE_SIZE bounds the peer's decoder of what this side encodes: never indexed, so nothing to do.
    }
    this.answer(frame(FRAME.SETTINGS, FLAG.ACK, 0, Buffer.alloc(0)));
    this.openWaiting();
    if (!this.settingsSeen) {
      this.settingsSeen = true;
      this.emit("remoteSettings");
    }
    this.pump();
  }
}

/** What a client sends first on a connection (RFC 7540 §3.5): the preface, its SETTINGS, and the connection's window raised. */
export function clientStart(): Buffer {
  const settings = Buffer.alloc(6 * 4);
  [
    [SETTING.ENABLE_PUSH, 0],
    [SETTING.INITIAL_WINDOW_SIZE, OWN_STREAM_WINDOW],
    [SETTING.HEADER_TABLE_SIZE, OWN_TABLE_SIZE],
    [SETTING.MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST],
  ].forEach(([id, value], i) => {
    settings.writeUInt16BE(id as number, i * 6);
    settings.writeUInt32BE(value as number, i * 6 + 2);
  });
  const raise = Buffer.alloc(4);
  raise.writeUInt32BE(OWN_CONNECTION_WINDOW - DEFAULT_WINDOW, 0);
  return Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0, settings), frame(FRAME.WINDOW_UPDATE, 0, 0, raise)]);
}

/**
 * The most a request sent whole before the server's SETTINGS may carry, and its header block:
 * one frame each of the size every peer takes (RFC 7540 §4.2), the body within the windows a
 * stream and the connection start with (§6.9.2).
 */
const MAX_WHOLE_BODY = 16_384;

/** A request sent whole on stream `id`: its header block in one HEADERS (END_HEADERS), its body in one DATA (END_STREAM). */
export function wholeRequest(id: number, fields: readonly HeaderField[], body: Uint8Array): Buffer {
  const block = encodeHeaders(fields);
  if (!(id > 0 && id % 2 === 1 && id < 2 ** 31)) throw new Error(`a client's stream has an odd id, not ${id}`);
  if (block.byteLength > MAX_WHOLE_BODY || body.byteLength > MAX_WHOLE_BODY)
    throw new Error(`a request sent whole has a header block and a body of at most ${MAX_WHOLE_BODY} bytes each`);
  return Buffer.concat([frame(FRAME.HEADERS, FLAG.END_HEADERS, id, block), frame(FRAME.DATA, FLAG.END_STREAM, id, body)]);
}

function frame(type: number, flags: number, id: number, payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(9 + payload.byteLength);
  out.writeUIntBE(payload.byteLength, 0, 3);
  out.writeUInt8(type, 3);
  out.writeUInt8(flags, 4);
  out.writeUInt32BE(id, 5);
  out.set(payload, 9);
  return out;
}

/** A padded frame's body without its padding (RFC 7540 §6.1). */
function unpad(flags: number, payload: Buffer, id: number): Buffer {
  if (id === 0) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "a stream frame on stream 0");
  if ((flags & FLAG.PADDED) === 0) return payload;
  if (payload.byteLength < 1) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "a padded frame without its pad length");
  const pad = payload.readUInt8(0);
  if (pad >= payload.byteLength) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "padding as long as its frame");
  return payload.subarray(1, payload.byteLength - pad);
}

/** A HEADERS frame's block without its priority fields (ignored: RFC 7540 §6.2). */
function priorityless(body: Buffer): Buffer {
  if (body.byteLength < 5) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "HEADERS with priority shorter than its fields");
  return body.subarray(5);
}
