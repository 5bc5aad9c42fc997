/**
 * A queue a callback side pushes to and an async generator drains: how events from a seat
 * (exec output, pty data) become a gRPC stream. Unbounded by itself; its producers cap what
 * they push (exec's 4 MiB per stream, the pty's relay dropping for a stalled attacher).
 */
export class AsyncQueue<T> {
  private readonly items: T[] = [];
  private wake: (() => void) | undefined;
  private closed = false;
  bytes = 0;

  push(item: T, size = 0): void {
    if (this.closed) return;
    this.items.push(item);
    this.bytes += size;
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async *drain(sizeOf: (item: T) => number = () => 0): AsyncGenerator<T> {
    for (;;) {
      const item = this.items.shift();
      if (item !== undefined) {
        this.bytes -= sizeOf(item);
        yield item;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}
