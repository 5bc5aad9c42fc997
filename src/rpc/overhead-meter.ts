/**
 * What a seat's connection sends that carries nothing for a call, bounded (§11: the seat is
 * hostile, and the daemon's CPU is every seat's). Node's HTTP/2 layer reads and drops, one by
 * one and out of JavaScript's sight, frames on streams that are closed, frames of types HTTP/2
 * ignores, and WINDOW_UPDATE or PING frames past need; grpc-js reads and drops what a seat
 * goes on sending on a call it has answered. None of it ends the connection, and a seat sending
 * it as fast as its socket takes it held ~0.4 of one of the daemon's cores (docs/enforcement.md).
 *
 * The meter compares what each connection's socket read with what reached a call: the bytes of
 * DATA frames on streams the daemon has not yet answered (`useful`). The rest is overhead. It
 * is paid from one bucket for the seat's socket that starts full and is credited, never past its size, for what honest
 * traffic costs besides its data: each stream opened (its HEADERS, its first frames' headers),
 * a part of the data (a DATA frame's 9-byte header, at the frames' 1 KiB average that
 * server.ts's boundDataFrames holds a seat to), a part of what the daemon wrote (the
 * WINDOW_UPDATE frames that let it write), and a little each second (SETTINGS, keepalive
 * PINGs). A connection that runs the bucket dry is closed. The arithmetic is here, pure; the
 * sockets' counters are read by the caller.
 */

/** The bucket's size, and what a seat's socket starts with: more than honest traffic has in flight when calls are answered early (streams' and connections' windows of data still coming). */
export const OVERHEAD_BURST_BYTES = 1024 * 1024;
/** Credited for each stream the connection opens: its HEADERS (a few hundred bytes before HPACK's table is warm) and the headers of its first, possibly small, DATA frames. */
export const OVERHEAD_STREAM_BYTES = 1024;
/** One byte credited for this many bytes of a call's data (a DATA frame's header is 9 bytes: 1/114 of a 1 KiB frame). */
export const OVERHEAD_DATA_RATIO = 16;
/** One byte credited for this many bytes the daemon wrote (a client's WINDOW_UPDATE, 13 bytes, for each part of a window it read). */
export const OVERHEAD_WRITTEN_RATIO = 64;
/** Credited each second to the seat's socket, whatever its connections do (SETTINGS and their acks, keepalive PINGs). */
export const OVERHEAD_BYTES_PER_SECOND = 16 * 1024;

/** One connection's counters, each a running total since it opened. */
export interface ConnectionTotals {
  /** Bytes its socket has read. */
  readonly read: number;
  /** Bytes its socket has written. */
  readonly written: number;
  /** Bytes of DATA frames that reached a call not yet answered. */
  readonly useful: number;
  /** Streams it has opened. */
  readonly streams: number;
  /** Bytes counted in `useful` that made no message: the unfinished message of a stream that ended (overhead after all). */
  readonly lost: number;
}

/** What the meter says of a seat socket after a connection's latest totals. */
export interface OverheadReading {
  /** The socket's bucket now; below zero, the seat is over its bound. */
  readonly tokens: number;
  /** The overhead this connection sent since it opened. */
  readonly overhead: number;
}

const ZERO: ConnectionTotals = { read: 0, written: 0, useful: 0, streams: 0, lost: 0 };

/**
 * One seat socket's bucket, which all its connections pay from: a bucket of a connection's own
 * let a seat open a connection, send most of a bucket, close it and open the next (found by an
 * attack on this bound: a core of the daemon's at ~130 connections a second, never cut). Feed it
 * each connection's totals as they grow, and last when it closes; the time credit is the
 * socket's, not each connection's.
 */
export class OverheadMeter {
  #tokens = OVERHEAD_BURST_BYTES;
  #atMs: number;
  readonly #last = new WeakMap<object, ConnectionTotals>();
  readonly #overhead = new WeakMap<object, number>();

  constructor(startMs: number) {
    this.#atMs = startMs;
  }

  /** `connection`'s totals now (any object that stands for it, the same each time), at `nowMs` (monotonic). */
  observe(connection: object, now: ConnectionTotals, nowMs: number): OverheadReading {
    const last = this.#last.get(connection) ?? ZERO;
    const dataIn = Math.max(0, now.useful - last.useful);
    const overhead = Math.max(0, now.read - last.read - dataIn) + Math.max(0, now.lost - last.lost);
    const credit =
      Math.max(0, now.streams - last.streams) * OVERHEAD_STREAM_BYTES +
      dataIn / OVERHEAD_DATA_RATIO +
      Math.max(0, now.written - last.written) / OVERHEAD_WRITTEN_RATIO +
      (Math.max(0, nowMs - this.#atMs) / 1000) * OVERHEAD_BYTES_PER_SECOND;
    // What a reading's traffic earned pays for its overhead; what is left is never kept past the bucket's size (a quiet hour is not a licence to flood).
    this.#tokens = Math.min(OVERHEAD_BURST_BYTES, this.#tokens + credit - overhead);
    this.#atMs = Math.max(this.#atMs, nowMs);
    this.#last.set(connection, now);
    const total = (this.#overhead.get(connection) ?? 0) + overhead;
    this.#overhead.set(connection, total);
    return { tokens: this.#tokens, overhead: total };
  }

  /**
   * After a cut: the cool-down answers for the overdraft, and the bucket is full again. Left in
   * debt, or empty, the seat's honest traffic after the cool-down (a call's preface read before
   * its stream's credit, a refused write's data still in flight) was cut again and again, each
   * cut doubling the cool-down. What a seat gets per cut is then at most a bucket and what its
   * open connections send before their next reading, and the cool-down closes new ones.
   */
  forgive(): void {
    this.#tokens = OVERHEAD_BURST_BYTES;
  }
}

/** The first cool-down after a connection is closed for its overhead, ms. */
export const COOL_DOWN_MS = 2000;
/**
 * The longest cool-down, ms: each close within `COOL_DOWN_FORGET_MS` of the last cool-down's end
 * doubles it, up to this. Under a seat client's one call deadline (30 s), which remakes a
 * connection closed before the daemon spoke: a call made in a cool-down is served when it ends.
 */
export const COOL_DOWN_MAX_MS = 16_000;
/** A seat quiet this long after its last cool-down ended starts again from `COOL_DOWN_MS`. */
export const COOL_DOWN_FORGET_MS = 60_000;

/**
 * One seat socket's cool-down: after a connection of it is closed for its overhead, new
 * connections are closed on arrival until the cool-down ends. Closing alone let a seat reconnect
 * at once and go on (a core of the daemon's, its connection closed ten times a second); a flood
 * now gets at most what it sends before the meter next reads, in every cool-down, and the
 * cool-downs double while it goes on.
 */
export class CoolDown {
  #until = -Infinity;
  #strikes = 0;

  /** A connection was closed for its overhead at `nowMs`: the cool-down's end. */
  strike(nowMs: number): number {
    // Forgotten after a quiet spell past the last cool-down's end, not its start (a long cool-down would otherwise forget itself).
    this.#strikes = nowMs - this.#until > COOL_DOWN_FORGET_MS ? 1 : this.#strikes + 1;
    this.#until = nowMs + Math.min(COOL_DOWN_MAX_MS, COOL_DOWN_MS * 2 ** Math.min(this.#strikes - 1, 30));
    return this.#until;
  }

  /** Whether a connection arriving at `nowMs` is served. */
  open(nowMs: number): boolean {
    return nowMs >= this.#until;
  }
}
