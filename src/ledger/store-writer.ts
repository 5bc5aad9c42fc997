import { createRequire } from "node:module";
import type { StoredRecord, StoredSeal } from "./store.js";
import { startWorkerCalls, WorkerCallError } from "./worker-calls.js";

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
 * one IMMEDIATE transaction, with synchronous=FULL on its own connection — after checking,
 * in that transaction, that the store still ends with the record the batch extends. Batches
 * are sent one at a time (the group commit never overlaps them), so the order on disk is the
 * chain's.
 *
 * The worker opens the same file the main connection opened: it reports the file's identity
 * (dev:inode) after opening, and a different one (the path replaced in between) fails the
 * writer instead of extending another file.
 */
export interface StoreWriter {
  /**
   * Insert one commit batch and its seal in one durable transaction; rejects if it did not
   * commit. `after` is the record the batch extends (null: the store must be empty). Inside
   * the same transaction, under SQLite's write lock, the store's last record must be exactly
   * it — the same seq, and a header whose hash is `hash` — or nothing is written and the
   * call rejects with a StoreTipMismatch: a store written behind the daemon's back is never
   * extended, and no write can come between the check and the insert.
   */
  append(records: readonly StoredRecord[], seal: StoredSeal, after: StoreTip | null): Promise<void>;
  /** Finish and close the worker's connection (after the last append settled). */
  close(): Promise<void>;
}

export interface StoreTip {
  readonly seq: number;
  /** headerHash of the record's header: SHA-256 of its bytes (codec.ts). */
  readonly hash: Uint8Array;
}

/** The store's last record was not the one the batch extends; nothing was written. */
export class StoreTipMismatch extends Error {
  override readonly name = "StoreTipMismatch";
}

const TIP_MISMATCH = "tip-mismatch";

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
const { createHash } = require("node:crypto");
const Database = require(workerData.sqlite);

// This thread's one connection: opened here, used only by serve() below, closed on { close }.
// It lives and dies with the worker (a worker is made per writer by openStoreWriter), so it is
// the writer's, never shared across writers.
function openConnection() {
  const db = new Database(workerData.path, { fileMustExist: true });
  db.pragma("busy_timeout = " + workerData.busyTimeoutMs);
  db.pragma("synchronous = FULL");
  if (String(db.pragma("journal_mode", { simple: true })) !== "wal") throw new Error("the ledger store is not in WAL mode");
  return db;
}

function serve(db) {
  const insertRecord = db.prepare("INSERT INTO records (seq, type, header, payload) VALUES (?, ?, ?, ?)");
  const insertSeal = db.prepare("INSERT INTO seals (seq, body) VALUES (?, ?)");
  const lastRecord = db.prepare("SELECT seq, header FROM records ORDER BY seq DESC LIMIT 1");
  // The batch extends exactly the record the daemon last committed (after: { seq, hash }, the
  // hash being SHA-256 of its header as codec.ts headerHash), or an empty store (after: null).
  function checkTip(after) {
    const last = lastRecord.get();
    const ok = after === null ? last === undefined : last !== undefined && last.seq === after.seq && createHash("sha256").update(last.header).digest().equals(Buffer.from(after.hash));
    if (ok) return;
    const found = last === undefined ? "no record" : "record " + last.seq;
    const error = new Error("the store's tip (" + found + ") is not " + (after === null ? "empty" : "the record " + after.seq + " the daemon last signed"));
    error.code = "${TIP_MISMATCH}";
    throw error;
  }
  // A batch arrives packed (packBatch below): one transferred buffer and an index of
  // [seq, type, header length, payload length or -1] per record, then the seal's seq and length.
  const batch = db.transaction((bytes, index, after) => {
    checkTip(after);
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
      batch.immediate(new Uint8Array(m.bytes), m.index, m.after);
      parentPort.postMessage({ id: m.id });
    } catch (error) {
      parentPort.postMessage({ id: m.id, error: String(error && error.message || error), code: error && error.code === "${TIP_MISMATCH}" ? error.code : undefined });
    }
  });
}

// The first message says which file was opened, or why none was (and the worker ends).
function openOrReport() {
  try {
    const db = openConnection();
    const st = statSync(workerData.path);
    parentPort.postMessage({ id: 0, identity: st.dev + ":" + st.ino });
    return db;
  } catch (error) {
    parentPort.postMessage({ id: 0, error: String(error && error.message || error) });
    process.exit(0);
    return undefined;
  }
}

const connection = openOrReport();
if (connection !== undefined) serve(connection);
`;

const sqlitePath = createRequire(import.meta.url).resolve("better-sqlite3");

export async function openStoreWriter(path: string, options: StoreWriterOptions): Promise<StoreWriter> {
  const { calls, hello } = await startWorkerCalls(
    WORKER_SOURCE,
    { sqlite: sqlitePath, path, busyTimeoutMs: Math.max(0, Math.floor(options.busyTimeoutMs ?? 250)) },
    "ledger writer",
  );
  if (hello.error !== undefined) {
    await calls.close();
    throw new Error(`the ledger writer cannot open the store: ${hello.error}`);
  }
  if (hello.identity !== options.identity) {
    await calls.close();
    throw new Error(`the ledger database ${path} was replaced while it was being opened`);
  }
  return {
    append: async (records, seal, after) => {
      const { bytes, index } = packBatch(records, seal);
      try {
        await calls.call({ bytes: bytes.buffer, index, after }, [bytes.buffer]);
      } catch (error) {
        if (error instanceof WorkerCallError && error.code === TIP_MISMATCH) throw new StoreTipMismatch(error.message);
        throw error;
      }
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
