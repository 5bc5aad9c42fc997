import type { Head } from "./seal.js";

/**
 * The signed head's writer, pipelined with the commits it covers. A record is answered only
 * once a head naming it (or a later one) is durable — so an acknowledged record is never
 * outside the rollback check — but the next batch's transaction does not wait for this
 * batch's head file: while one head is being written, further batches commit, and the next
 * write covers them all (one atomic file write for many batches, the newest head only).
 */
export interface HeadWriter {
  /** A newer head to make durable (older ones are dropped: the newest covers them). */
  request(head: Head): void;
  /** Settles when a head naming `seq` or later is durable, or its write failed (reported once). */
  covered(seq: number): Promise<void>;
  /** Settles when no write is pending. */
  drain(): Promise<void>;
}

export function createHeadWriter(write: (head: Head) => Promise<void>, onError: (error: unknown) => void, writtenSeq: number): HeadWriter {
  let written = writtenSeq;
  let latest: Head | undefined;
  let running: Promise<void> | undefined;
  let waiters: { seq: number; resolve: () => void }[] = [];

  const release = () => {
    const ready = waiters.filter((w) => w.seq <= written);
    waiters = waiters.filter((w) => w.seq > written);
    for (const w of ready) w.resolve();
  };

  async function loop(): Promise<void> {
    while (latest !== undefined && latest.seq > written) {
      const head = latest;
      try {
        await write(head);
      } catch (error) {
        // The records are durable; the head lags and rolls forward on the next open. The
        // caller learns it through onError (the ledger turns unavailable), not by hanging.
        onError(error);
      }
      written = head.seq;
      release();
    }
    running = undefined;
  }

  return {
    request(head) {
      if (latest === undefined || head.seq > latest.seq) latest = head;
      running ??= loop();
    },
    covered(seq) {
      if (seq <= written) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ seq, resolve }));
    },
    async drain() {
      while (running) await running;
    },
  };
}
