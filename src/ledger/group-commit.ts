/**
 * Group commit: durable throughput from batching, not from weakening fsync. Every submit
 * made while a commit is in progress waits for the next one, and all of them go into that
 * single transaction; each caller's promise settles only when its own batch has committed
 * (or failed). With one writer this is one fsync per item; with many concurrent writers it
 * is one fsync per batch.
 *
 * The commit function receives the items in submission order and returns one result per
 * item, or throws to fail the whole batch. Batches never overlap: the next one starts after
 * the previous one settled, so the chain is extended strictly in order.
 */
export interface GroupCommit<T, R> {
  submit(item: T): Promise<R>;
  /** Resolves when every submitted item has settled. */
  drain(): Promise<void>;
  readonly queued: number;
}

export interface GroupCommitOptions<T, R> {
  readonly commit: (items: readonly T[]) => Promise<readonly R[]>;
  /** Upper bound on one batch (default 1024). */
  readonly maxBatch?: number;
  /** How the first batch waits for concurrent submits (default: one setImmediate turn). */
  readonly schedule?: (run: () => void) => void;
}

interface Pending<T, R> {
  readonly item: T;
  readonly resolve: (value: R) => void;
  readonly reject: (error: unknown) => void;
}

export function createGroupCommit<T, R>(options: GroupCommitOptions<T, R>): GroupCommit<T, R> {
  const maxBatch = options.maxBatch ?? 1024;
  const schedule = options.schedule ?? ((run) => void setImmediate(run));
  let queue: Pending<T, R>[] = [];
  let running: Promise<void> | undefined;

  async function loop(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      try {
        const results = await options.commit(batch.map((p) => p.item));
        if (results.length !== batch.length) throw new Error(`commit returned ${results.length} results for ${batch.length} items`);
        batch.forEach((p, i) => p.resolve(results[i] as R));
      } catch (error) {
        for (const p of batch) p.reject(error);
      }
    }
  }

  function start(): void {
    running = new Promise<void>((resolve) => {
      schedule(() => {
        loop().finally(() => {
          running = undefined;
          resolve();
          // Items submitted after the loop saw an empty queue but before `running` cleared.
          if (queue.length > 0) start();
        });
      });
    });
  }

  return {
    submit(item) {
      return new Promise<R>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (!running) start();
      });
    },
    async drain() {
      while (running) await running;
    },
    get queued() {
      return queue.length;
    },
  };
}
