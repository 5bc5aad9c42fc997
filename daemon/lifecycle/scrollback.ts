/**
 * The last `capacity` bytes a seat's pty wrote, for `teamd attach` to replay. Held in the
 * daemon's memory only: a seat's output is never recorded in the ledger (it can hold
 * anything the seat read), and it goes when the seat stops.
 */
export class Scrollback {
  private readonly buffer: Buffer;
  private start = 0;
  private length = 0;

  constructor(readonly capacity: number) {
    this.buffer = Buffer.alloc(capacity);
  }

  push(chunk: Uint8Array): void {
    let data = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (data.length >= this.capacity) {
      data.copy(this.buffer, 0, data.length - this.capacity);
      this.start = 0;
      this.length = this.capacity;
      return;
    }
    let end = (this.start + this.length) % this.capacity;
    while (data.length > 0) {
      const n = Math.min(data.length, this.capacity - end);
      data.copy(this.buffer, end, 0, n);
      data = data.subarray(n);
      end = (end + n) % this.capacity;
    }
    const total = this.length + chunk.byteLength;
    if (total > this.capacity) {
      this.start = (this.start + total - this.capacity) % this.capacity;
      this.length = this.capacity;
    } else this.length = total;
  }

  /** A copy of what is held, oldest first. */
  snapshot(): Buffer {
    const first = this.buffer.subarray(this.start, Math.min(this.start + this.length, this.capacity));
    const rest = this.buffer.subarray(0, this.length - first.length);
    return Buffer.concat([first, rest]);
  }
}

export const SCROLLBACK_BYTES = 64 * 1024;
