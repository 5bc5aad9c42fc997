import { createRequire } from "node:module";
import type { StoredRecord, StoredSeal } from "./store.js";
import { startWorkerCalls } from "./worker-calls.js";

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
// A batch arrives packed (packBatch below): one transferred buffer and an index of
// [seq, type, header length, payload length or -1] per record, then the seal's seq and length.
const batch = db.transaction((bytes, index) => {
  let at = 0;
  let i = 0;
  for (; i < index.length - 2; i += 4) {
    const header = bytes.subarray(at, at + index[i + 2]);
    at += index[i + 2];
    let payload = null;
    if (index[i + 3] >= 0) {
      payload = bytes.subarray(at, at + index[i + 3]);
      at += index[i + 3];
    }
    insertRecord.run(index[i], index[i + 1], header, payload);
  }
  insertSeal.run(index[i], bytes.subarray(at, at + index[i + 1]));
});
parentPort.on("message", (m) => {
  if (m.close) {
    db.close();
    parentPort.close();
    return;
  }
  try {
    batch.immediate(new Uint8Array(m.bytes), m.index);
    parentPort.postMessage({ id: m.id });
  } catch (error) {
    parentPort.postMessage({ id: m.id, error: String(error && error.message || error) });
  }
});
`;

const sqlitePath = createRequire(import.meta.url).resolve("better-sqlite3");

export async function openStoreWriter(path: string, options: StoreWriterOptions): Promise<StoreWriter> {
  const { calls, hello } = await startWorkerCalls(WORKER_SOURCE, { sqlite: sqlitePath, path, busyTimeoutMs: Math.max(0, Math.floor(options.busyTimeoutMs ?? 250)) }, "ledger writer");
  if (hello.error !== undefined) {
    await calls.close();
    throw new Error(`the ledger writer cannot open the store: ${hello.error}`);
  }
  if (hello.identity !== options.identity) {
    await calls.close();
    throw new Error(`the ledger database ${path} was replaced while it was being opened`);
  }
  return {
    append: (records, seal) => {
      const { bytes, index } = packBatch(records, seal);
      return calls.call({ bytes: bytes.buffer, index }, [bytes.buffer]);
    },
    close: () => calls.close(),
  };
}

/**
 * One buffer for a whole batch, moved to the worker rather than copied: cloning a message of
 * many small arrays was a twentieth of the daemon's CPU for a gated request.
 */
export function packBatch(records: readonly StoredRecord[], seal: StoredSeal): { bytes: Uint8Array<ArrayBuffer>; index: number[] } {
  let total = seal.body.byteLength;
  for (const r of records) total += r.header.byteLength + (r.payload?.byteLength ?? 0);
  const bytes = new Uint8Array(total);
  const index: number[] = [];
  let at = 0;
  for (const r of records) {
    bytes.set(r.header, at);
    at += r.header.byteLength;
    if (r.payload) {
      bytes.set(r.payload, at);
      at += r.payload.byteLength;
    }
    index.push(r.seq, r.type, r.header.byteLength, r.payload ? r.payload.byteLength : -1);
  }
  bytes.set(seal.body, at);
  index.push(seal.seq, seal.body.byteLength);
  return { bytes, index };
}
