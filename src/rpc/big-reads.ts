import type { Socket } from "node:net";

/**
 * Transport for the egress byte stream beside gRPC (the shim's proxy and the daemon both use
 * it; the shim may import only src/gen and src/rpc, and this file imports no gRPC).
 *
 * The download direction of an egress connection, lean (§12, the bench's byte path): a socket
 * connected with `onread` reads into 256 KiB buffers of ours, up to what the kernel holds,
 * where a stream's 'data' events come in 64 KiB chunks — fewer reads, callbacks and
 * allocations per byte (one such hop measured about 1.4x a pipe() hop; 256 KiB, about a unix
 * socket's send buffer, did better than 1 MiB, whose chunks are rarely written out at once).
 * A buffer is reused only when the chunk it held was written out at once; when the
 * destination queued it, the next read gets a fresh one.
 *
 * Until a destination is attached, what arrives is kept (copied) and visible through
 * `pending()`: the proxy reads the daemon's one-line answer from it before relaying.
 */
const READ_BYTES = 256 * 1024;

export interface BigReads {
  /** Give to `net.connect({ ..., onread })`. */
  readonly onread: { buffer: () => Uint8Array; callback: (bytes: number, buffer: Uint8Array) => boolean };
  /** Bytes that arrived before `attach` (not yet sent anywhere). */
  pending(): Buffer;
  /** Drop the first `bytes` of what is pending (a header line read by the caller). */
  consume(bytes: number): void;
  /** Called whenever bytes arrive before `attach`. */
  onPending(listener: () => void): void;
  /** From now on, write every chunk to `destination`, pausing `source` while it is full; pending bytes go first. */
  attach(destination: Socket, source: Socket): void;
}

export function bigReads(): BigReads {
  let spare: Buffer | undefined;
  let destination: Socket | undefined;
  let source: Socket | undefined;
  let early: Buffer = Buffer.alloc(0);
  let listener: (() => void) | undefined;
  const write = (chunk: Buffer, reusable: Buffer | undefined): void => {
    const dest = destination as Socket;
    const flowing = dest.write(chunk);
    if (reusable !== undefined && dest.writableLength === 0) spare = reusable;
    if (!flowing && source !== undefined) {
      const from = source;
      from.pause();
      dest.once("drain", () => from.resume());
    }
  };
  return {
    onread: {
      buffer: () => {
        const next = spare ?? Buffer.allocUnsafe(READ_BYTES);
        spare = undefined;
        return next;
      },
      callback: (bytes, buffer) => {
        const view = Buffer.from(buffer.buffer, buffer.byteOffset, bytes);
        if (destination === undefined) {
          early = Buffer.concat([early, view]);
          listener?.();
        } else write(view, Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength));
        return true;
      },
    },
    pending: () => early,
    consume: (bytes) => void (early = early.subarray(bytes)),
    onPending: (next) => void (listener = next),
    attach(dest, from) {
      destination = dest;
      source = from;
      listener = undefined;
      if (early.length > 0) write(early, undefined);
      early = Buffer.alloc(0);
    },
  };
}
