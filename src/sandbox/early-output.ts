/**
 * What a pty seat prints before anyone listens (launcher-pty.ts), held for the first listener:
 * at most `maxBytes`, and at most about that much of the daemon's memory whatever the seat's
 * writes look like. A pty read can return a single byte; held as one Buffer each, output in
 * tiny writes cost ~40 times its bytes (one object per chunk: 1 MiB of one-byte writes held
 * 38-48 MiB of heap, found by an attack, round seven). Small chunks are packed into shared
 * blocks of PACK_BYTES; a chunk that large or larger is held as it came. Past maxBytes the
 * rest is dropped, as before.
 */
export const PACK_BYTES = 16 * 1024;

export class EarlyOutput {
  private readonly held: Buffer[] = [];
  private bytes = 0;
  private block: Buffer | undefined;
  private used = 0;

  constructor(private readonly maxBytes: number) {}

  /** Holds `chunk` whole when it fits under the bound; drops it otherwise. */
  hold(chunk: Buffer): void {
    if (chunk.length === 0 || this.bytes + chunk.length > this.maxBytes) return;
    this.bytes += chunk.length;
    if (chunk.length >= PACK_BYTES) {
      this.seal();
      this.held.push(chunk);
      return;
    }
    if (this.block === undefined || this.used + chunk.length > this.block.length) {
      this.seal();
      this.block = Buffer.allocUnsafe(PACK_BYTES);
    }
    chunk.copy(this.block, this.used);
    this.used += chunk.length;
  }

  /** Everything held, in order, and the hold emptied. */
  drain(): Buffer[] {
    this.seal();
    const out = this.held.splice(0);
    this.bytes = 0;
    return out;
  }

  /** The bytes held now. */
  get size(): number {
    return this.bytes;
  }

  private seal(): void {
    if (this.block !== undefined && this.used > 0) this.held.push(this.block.subarray(0, this.used));
    this.block = undefined;
    this.used = 0;
  }
}
