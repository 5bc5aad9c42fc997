import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type { StoredRecord, StoredSeal } from "./store.js";

/**
 * The ledger store's writes, on a worker thread with its own SQLite connection.
 *
 * A durable commit is an fsync, and better-sqlite3 is synchronous: on the daemon's event
 * loop every batch would stop every seat's request, the owner's stop included, for as long
 * as the disk takes. Here the transaction (insert the batch and its seal, fsync the WAL) runs
 * beside the loop: while one batch is on its way to the disk the daemon keeps deciding, and
 * the requests that arrive meanwhile form the next batch (group commit; group-commit.ts).
 *
 * The worker knows bytes, not meaning, like the store: the chain is built and sealed on the
 * main thread, which alone decides what is appended; the worker only makes it durable, in
 * one IMMEDIATE transaction, with synchronous=FULL on its own connection. Batches are sent
 * one at a time (the group commit never overlaps them), so the order on disk is the chain's.
 *
 * The worker opens the same file the main connection opened: it reports the file's identity
 * (dev:inode) after opening, and a different one (the path replaced in between) fails the
 * writer instead of extending another file.
 */
export interface StoreWriter {
  /** Insert one commit batch and its seal in one durable transaction; rejects if it did not commit. */
  append(records: readonly StoredRecord[], seal: StoredSeal): Promise<void>;
  /** Finish and close the worker's connection (after the last append settled). */
  close(): Promise<void>;
}

export interface StoreWriterOptions {
  /** How long the worker's write waits on another connection's lock. */
  readonly busyTimeoutMs?: number;
  /** The identity (dev:inode) of the file the caller's own connection opened. */
  readonly identity: string;
}

type Reply = { readonly id: number; readonly error?: string; readonly identity?: string };

// CommonJS, evaluated in the worker (a source string, so it runs the same from the compiled
// daemon and from the test runner's TypeScript). better-sqlite3 is resolved by the main
// thread and passed in: the worker's require would resolve from the process's cwd.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { statSync } = require("node:fs");
const Database = require(workerData.sqlite);
let db;
try {
  db = new Database(workerData.path, { fileMustExist: true });
  db.pragma("busy_timeout = " + workerData.busyTimeoutMs);
  db.pragma("synchronous = FULL");
  if (String(db.pragma("journal_mode", { simple: true })) !== "wal") throw new Error("the ledger store is not in WAL mode");
  const st = statSync(workerData.path);
  parentPort.postMessage({ id: 0, identity: st.dev + ":" + st.ino });
} catch (error) {
  parentPort.postMessage({ id: 0, error: String(error && error.message || error) });
  process.exit(0);
}
const insertRecord = db.prepare("INSERT INTO records (seq, type, header, payload) VALUES (?, ?, ?, ?)");
const insertSeal = db.prepare("INSERT INTO seals (seq, body) VALUES (?, ?)");
const batch = db.transaction((records, seal) => {
  for (const r of records) insertRecord.run(r.seq, r.type, r.header, r.payload);
  insertSeal.run(seal.seq, seal.body);
});
parentPort.on("message", (m) => {
  if (m.close) {
    db.close();
    parentPort.close();
    return;
  }
  try {
    batch.immediate(m.records, m.seal);
    parentPort.postMessage({ id: m.id });
  } catch (error) {
    parentPort.postMessage({ id: m.id, error: String(error && error.message || error) });
  }
});
`;

const sqlitePath = createRequire(import.meta.url).resolve("better-sqlite3");

export function openStoreWriter(path: string, options: StoreWriterOptions): Promise<StoreWriter> {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { sqlite: sqlitePath, path, busyTimeoutMs: Math.max(0, Math.floor(options.busyTimeoutMs ?? 250)) },
  });
  const pending = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  let nextId = 1;
  let dead: Error | undefined;
  let exited = false;
  const exit = new Promise<void>((resolve) => worker.once("exit", () => resolve()));

  // An idle writer never keeps the process alive; one with a write in flight does, so a
  // short-lived command awaiting its append is not cut off.
  const refresh = () => (pending.size > 0 ? worker.ref() : worker.unref());
  const failAll = (error: Error) => {
    dead ??= error;
    for (const p of pending.values()) p.reject(error);
    pending.clear();
    refresh();
  };

  return new Promise<StoreWriter>((resolveOpen, rejectOpen) => {
    let opened = false;
    worker.on("message", (reply: Reply) => {
      if (reply.id === 0) {
        opened = true;
        if (reply.error !== undefined) return rejectOpen(new Error(`the ledger writer cannot open the store: ${reply.error}`));
        if (reply.identity !== options.identity) {
          void worker.terminate();
          return rejectOpen(new Error(`the ledger database ${path} was replaced while it was being opened`));
        }
        worker.unref();
        return resolveOpen(writer);
      }
      const p = pending.get(reply.id);
      if (!p) return;
      pending.delete(reply.id);
      refresh();
      if (reply.error !== undefined) p.reject(new Error(reply.error));
      else p.resolve();
    });
    worker.on("error", (error) => {
      failAll(error);
      if (!opened) rejectOpen(error);
    });
    worker.once("exit", (code) => {
      exited = true;
      failAll(new Error(`the ledger writer stopped (exit ${code})`));
      if (!opened) rejectOpen(new Error(`the ledger writer stopped before it opened the store (exit ${code})`));
    });

    const writer: StoreWriter = {
      append(records, seal) {
        if (dead) return Promise.reject(dead);
        const id = nextId++;
        return new Promise<void>((resolve, reject) => {
          pending.set(id, { resolve, reject });
          refresh();
          worker.postMessage({ id, records, seal });
        });
      },
      async close() {
        if (exited) return;
        dead ??= new Error("the ledger writer is closed");
        worker.ref();
        worker.postMessage({ close: true });
        const timer = setTimeout(() => void worker.terminate(), 5000);
        await exit;
        clearTimeout(timer);
      },
    };
  });
}
