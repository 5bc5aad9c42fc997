import { Worker } from "node:worker_threads";

/**
 * Calls to a worker thread, one reply per call: the ledger's blocking work (an SQLite
 * transaction's fsync, the head file's fsyncs) runs beside the daemon's event loop instead of
 * on it.
 *
 * The worker is CommonJS source (it runs the same from the compiled daemon and from the test
 * runner's TypeScript). Its protocol: it first posts `{ id: 0, ... }` (its hello, or
 * `{ id: 0, error }` when it could not start), then answers each message `{ id, ...call }`
 * with `{ id }` or `{ id, error, code? }`, and closes its port on `{ close: true }`.
 *
 * An idle worker never keeps the process alive; one with a call in flight does, so a
 * short-lived command awaiting its write is not cut off. A worker that errors or exits fails
 * every call in flight and every later one: the caller learns it, nothing hangs.
 */
export interface WorkerCalls {
  /** `transfer`: buffers moved to the worker instead of copied (unusable here afterwards). */
  call(message: Record<string, unknown>, transfer?: readonly ArrayBuffer[]): Promise<void>;
  /** The worker died or was closed (calls now reject with this). */
  readonly dead: Error | undefined;
  close(): Promise<void>;
}

export type WorkerHello = { readonly error?: string } & Record<string, unknown>;

type Reply = { readonly id: number; readonly error?: string; readonly code?: string } & Record<string, unknown>;

/** A call the worker answered with an error; `code` names a failure the caller handles apart. */
export class WorkerCallError extends Error {
  override readonly name = "WorkerCallError";
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** Start a worker; resolves with its hello once it posted it (rejects if it could not start). */
export function startWorkerCalls(source: string, workerData: unknown, name: string): Promise<{ calls: WorkerCalls; hello: WorkerHello }> {
  const worker = new Worker(source, { eval: true, workerData });
  const pending = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  let nextId = 1;
  let dead: Error | undefined;
  let exited = false;
  const exit = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  const refresh = () => (pending.size > 0 ? worker.ref() : worker.unref());
  const failAll = (error: Error) => {
    dead ??= error;
    for (const p of pending.values()) p.reject(error);
    pending.clear();
    refresh();
  };

  const calls: WorkerCalls = {
    call(message, transfer) {
      if (dead) return Promise.reject(dead);
      const id = nextId++;
      return new Promise<void>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        refresh();
        worker.postMessage({ ...message, id }, transfer ? [...transfer] : undefined);
      });
    },
    get dead() {
      return dead;
    },
    async close() {
      if (exited) return;
      dead ??= new Error(`the ${name} is closed`);
      worker.ref();
      worker.postMessage({ close: true });
      const timer = setTimeout(() => void worker.terminate(), 5000);
      await exit;
      clearTimeout(timer);
    },
  };

  return new Promise((resolveStart, rejectStart) => {
    let started = false;
    worker.on("message", (reply: Reply) => {
      if (reply.id === 0) {
        started = true;
        worker.unref();
        return resolveStart({ calls, hello: reply });
      }
      const p = pending.get(reply.id);
      if (!p) return;
      pending.delete(reply.id);
      refresh();
      if (reply.error !== undefined) p.reject(new WorkerCallError(reply.error, reply.code));
      else p.resolve();
    });
    worker.on("error", (error) => {
      failAll(error);
      if (!started) rejectStart(error);
    });
    worker.once("exit", (code) => {
      exited = true;
      failAll(new Error(`the ${name} stopped (exit ${code})`));
      if (!started) rejectStart(new Error(`the ${name} stopped before it started (exit ${code})`));
    });
  });
}
