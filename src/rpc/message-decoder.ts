import { StreamDecoder } from "@grpc/grpc-js/build/src/stream-decoder.js";

/**
 * grpc-js's server reads each gRPC message with its StreamDecoder, which keeps an unfinished
 * message as one slice per chunk node's http2 hands it — one chunk per DATA frame. A frame may
 * carry one byte, so a message under the receive cap cost the daemon one Buffer object per byte
 * the seat sent: found by an attack (issue 26's round eighteen), 4 MiB sent on one seat
 * connection as 1-byte DATA frames, never finishing its 16 messages, held ~500 MiB, and 32 MiB
 * on eight connections ~3.9 GiB, near node's heap limit, where every seat's calls end with the
 * daemon. The bound of the seat socket (channel-options.ts) counts bytes; this makes the bytes
 * what it costs: every chunk is copied into one buffer for the message, which grows (fourfold
 * from 16 KiB, never past the size its 5-byte prefix declared, held to the receive cap and
 * refused as before past it) as the bytes arrive — not allocated whole at the prefix, where 5
 * bytes sent on a stream opened and reset in a loop would each have cost the daemon 256 KiB. An
 * unfinished message holds at most four times what was sent of it, and nothing per frame; the
 * buffers it outgrew are a third of its size in all (doubling left as much again: 8 x 16 streams
 * of 256 KiB messages grew the daemon past 64 MiB in a run of seat-frames-attack.test.ts's
 * control). The message given to grpc-js is the same bytes as before, prefix and all.
 *
 * grpc-js exports no way to change its decoder; its class is patched in place, once, for every
 * server in the process (grpc-js 1.14.x, pinned; `test/rpc/message-decoder.test.ts` fails if the
 * class moves or its output changes).
 */
interface DecoderFields {
  maxReadMessageLength: number;
  prefix?: Buffer;
  prefixRead?: number;
  message?: Buffer | undefined;
  filled?: number;
  size?: number;
}

/** A message's first buffer: small messages need no more, large ones grow fourfold from it. */
const FIRST_BYTES = 16 * 1024;

function write(this: DecoderFields, data: Buffer): Buffer[] {
  const messages: Buffer[] = [];
  let at = 0;
  while (at < data.length) {
    if (this.message === undefined) {
      const prefix = (this.prefix ??= Buffer.alloc(5));
      const read = this.prefixRead ?? 0;
      const take = Math.min(5 - read, data.length - at);
      data.copy(prefix, read, at, at + take);
      at += take;
      if (read + take < 5) {
        this.prefixRead = read + take;
        break;
      }
      this.prefixRead = 0;
      const size = prefix.readUInt32BE(1);
      // grpc-js's own check and words: the server answers RESOURCE_EXHAUSTED with them.
      if (this.maxReadMessageLength !== -1 && size > this.maxReadMessageLength)
        throw new Error(`Received message larger than max (${size} vs ${this.maxReadMessageLength})`);
      this.size = 5 + size;
      this.message = Buffer.allocUnsafeSlow(Math.min(this.size, FIRST_BYTES));
      prefix.copy(this.message, 0, 0, 5);
      this.filled = 5;
    }
    const whole = this.size ?? 5;
    let message = this.message;
    const filled = this.filled ?? 5;
    const take = Math.min(whole - filled, data.length - at);
    if (filled + take > message.length) {
      // Its own backing store, never node's shared pool: a small buffer left alive there keeps the whole slab.
      const grown = Buffer.allocUnsafeSlow(Math.min(whole, Math.max(filled + take, message.length * 4)));
      message.copy(grown, 0, 0, filled);
      message = this.message = grown;
    }
    data.copy(message, filled, at, at + take);
    at += take;
    this.filled = filled + take;
    if (this.filled === whole) {
      messages.push(message.length === whole ? message : message.subarray(0, whole));
      this.message = undefined;
    }
  }
  return messages;
}

/** Install the decoder above in grpc-js (installing it again changes nothing). */
export function boundMessageDecoding(): void {
  (StreamDecoder.prototype as unknown as { write: typeof write }).write = write;
}

/** Whether grpc-js's decoder is the one above (tests). */
export function messageDecodingBound(): boolean {
  return (StreamDecoder.prototype as unknown as { write: unknown }).write === write;
}
