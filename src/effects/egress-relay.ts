import type { Socket } from "node:net";
import type { BigReads } from "../rpc/big-reads.js";

/**
 * The byte path of one egress connection (§12): the seat's stream and the upstream socket
 * piped both ways — backpressure by pipe, a half-close passed on (both sockets allow half
 * open, so a client that ends its request still reads the answer), an idle timeout, and
 * either side's error ending both. What it counts is bytes, never content.
 */
export interface RelayResult {
  /** Bytes the seat sent upstream. */
  readonly up: number;
  /** Bytes upstream sent to the seat. */
  readonly down: number;
  readonly ms: number;
  /** Why it ended, when not by both sides closing ("idle", or an error code). */
  readonly ended?: string;
}

export interface RelayOptions {
  readonly idleMs: number;
  readonly now?: () => number;
  /** The upstream socket was connected with these reads (src/rpc/big-reads.ts): its bytes go to the seat through them. */
  readonly download?: BigReads;
}

export function relay(seat: Socket, upstream: Socket, options: RelayOptions): Promise<RelayResult> {
  const now = options.now ?? Date.now;
  const started = now();
  return new Promise((resolve) => {
    let ended: string | undefined;
    let open = 2;
    const done = () => {
      if (--open > 0) return;
      resolve({ up: upstream.bytesWritten, down: upstream.bytesRead, ms: now() - started, ...(ended !== undefined ? { ended } : {}) });
    };
    const fail = (why: string) => {
      ended ??= why;
      seat.destroy();
      upstream.destroy();
    };
    seat.once("close", done);
    upstream.once("close", done);
    seat.on("error", (error: NodeJS.ErrnoException) => fail(`seat ${error.code ?? "error"}`));
    upstream.on("error", (error: NodeJS.ErrnoException) => fail(`upstream ${error.code ?? "error"}`));
    seat.setTimeout(options.idleMs, () => fail("idle"));
    upstream.setTimeout(options.idleMs, () => fail("idle"));
    // end: true passes a FIN on as a half-close (pipe's own end handler runs first, being
    // registered first); once both directions ended, close both.
    seat.pipe(upstream);
    if (options.download !== undefined) {
      options.download.attach(seat, upstream);
      upstream.once("end", () => seat.end());
    } else upstream.pipe(seat);
    const closeWhenBothEnded = () => {
      if (seat.writableEnded && upstream.writableEnded) {
        seat.destroySoon();
        upstream.destroySoon();
      }
    };
    seat.on("end", closeWhenBothEnded);
    upstream.on("end", closeWhenBothEnded);
  });
}

/** The outcome note of a relayed connection: bytes each way and duration, in one fixed form `parseRelayNote` reads back. */
export function relayNote(result: RelayResult): string {
  return `up ${result.up} bytes, down ${result.down} bytes, ${result.ms} ms${result.ended ? `, ended: ${result.ended}` : ""}`;
}

/** A relay note's numbers (for `teamd log`), or undefined for any other note. */
export function parseRelayNote(note: string): { upBytes: number; downBytes: number; ms: number; ended?: string } | undefined {
  const match = /^up (\d+) bytes, down (\d+) bytes, (\d+) ms(?:, ended: (.*))?$/.exec(note);
  if (match === null) return undefined;
  return { upBytes: Number(match[1]), downBytes: Number(match[2]), ms: Number(match[3]), ...(match[4] !== undefined ? { ended: match[4] } : {}) };
}
