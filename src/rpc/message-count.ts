/**
 * Counts the gRPC messages a stream's bytes begin (each a 5-byte prefix, its length in bytes 1-4,
 * then that many bytes), without keeping them: fed the DATA chunks as they come, in order, cut
 * anywhere. A seat's stream is held to messages of a size (server.ts, boundDataFrames), since
 * each message costs the daemon an object, a decode and a turn of its handler whatever it
 * carries: found by a review (issue 26's twenty-sixth round), a file write's content sent as
 * empty data parts, seven bytes each, in full-sized DATA frames, was bounded by nothing (its
 * bytes by what they added up to, none) and held ~680 bytes of the daemon a message.
 */
export class MessageCounter {
  #messages = 0;
  #prefixRead = 0;
  #length = 0;
  #remaining = 0;
  #current = 0;

  /** Bytes of a message begun and not yet whole (its prefix's and its body's so far): what a stream ending now sent for no message. */
  unfinished(): number {
    return this.#current;
  }

  /** Reads `chunk`; the messages begun so far. */
  feed(chunk: Uint8Array): number {
    let at = 0;
    while (at < chunk.length) {
      if (this.#remaining > 0) {
        const take = Math.min(this.#remaining, chunk.length - at);
        at += take;
        this.#remaining -= take;
        this.#current = this.#remaining === 0 ? 0 : this.#current + take;
        continue;
      }
      const byte = chunk[at] as number;
      at += 1;
      // Byte 0 is the compressed flag; bytes 1-4 the length, big-endian (kept a number: a length is under 2^32).
      if (this.#prefixRead > 0) this.#length = this.#length * 256 + byte;
      this.#prefixRead += 1;
      this.#current += 1;
      if (this.#prefixRead === 5) {
        this.#messages += 1;
        this.#remaining = this.#length;
        this.#prefixRead = 0;
        this.#length = 0;
        if (this.#remaining === 0) this.#current = 0;
      }
    }
    return this.#messages;
  }
}
