import { statSync } from "node:fs";
import Database from "better-sqlite3";

/**
 * The ledger's SQLite store (better-sqlite3 12.x). Append-only by construction: the API has
 * no update and no delete, and triggers refuse UPDATE and DELETE from any connection, so a
 * chain cannot be broken by an in-place edit (§15). WAL with synchronous=FULL: a committed
 * transaction has been fsynced before `appendBatch` returns.
 *
 * INSERT OR REPLACE deletes the old row without firing DELETE triggers (unless a connection
 * turns recursive_triggers on), so an insert over an existing seq is refused by its own
 * trigger too.
 *
 * One deletion path exists, and only for archival (archive.ts): `removeArchived` drops the
 * triggers, deletes the records below a cut that an owner-signed, daemon-sealed cut record
 * names as archived, and re-creates the triggers, in one transaction. What is left is checked
 * against that cut record on every walk (chain-walk.ts), so the path can remove nothing the
 * chain does not account for.
 *
 * The store knows bytes, not meaning: a record row is (seq, type, header, payload) and a seal
 * row is (last seq of its batch, seal bytes). The type column is an index for `teamd log
 * --type`; it is checked against the header on every walk, never trusted.
 */

export const SCHEMA_VERSION = 1;

export interface StoredRecord {
  readonly seq: number;
  readonly type: number;
  readonly header: Uint8Array;
  /** Null in an archive for a tombstoned record (archive-file.ts); the header's digest still commits to it. */
  readonly payload: Uint8Array | null;
}

export interface StoredSeal {
  /** The last seq of the batch the seal covers. */
  readonly seq: number;
  readonly body: Uint8Array;
}

/** Read access, shared by the writer and by read-only tools (log, verify with the daemon down). */
export interface StoreReader {
  readonly path: string;
  /** The highest stored record, if any. */
  tip(): StoredRecord | undefined;
  record(seq: number): StoredRecord | undefined;
  /** Records with seq >= fromSeq (and <= toSeq), ascending, at most limit. */
  records(fromSeq: number, limit: number, toSeq?: number): StoredRecord[];
  recordsOfType(type: number, fromSeq: number, limit: number): StoredRecord[];
  /** The record of this type with the highest seq, if any (the last archive cut). */
  lastOfType(type: number): StoredRecord | undefined;
  /** How many records have fromSeq <= seq <= toSeq. */
  countBetween(fromSeq: number, toSeq: number): number;
  /** Seals with seq >= fromSeq, ascending, at most limit. */
  seals(fromSeq: number, limit: number, toSeq?: number): StoredSeal[];
  count(): number;
  integrityCheck(): string[];
  /** The connection's durability settings, as SQLite reports them. */
  settings(): { readonly journalMode: string; readonly synchronous: "off" | "normal" | "full" | "extra" };
  close(): void;
}

export interface LedgerStore extends StoreReader {
  /** The identity (dev:inode) of the file this store opened. */
  readonly identity: string;
  /** Insert one commit batch and its seal in one durable transaction. */
  appendBatch(records: readonly StoredRecord[], seal: StoredSeal): void;
  /** Why the path no longer names the file this store opened, or undefined if it still does. */
  checkFile(): string | undefined;
  /** Write the WAL back into the database file (on close). */
  checkpoint(): void;
  /**
   * Archival's one deletion (archive.ts): every record below `cutSeq` but those in `keep`, and
   * every seal below `cutSeq`, in one transaction; then the freed pages are given back (VACUUM)
   * when `vacuum`. Returns how many records were removed. Only a ledger that has committed the
   * cut record naming exactly this calls it.
   */
  removeArchived(cutSeq: number, keep: readonly number[], vacuum: boolean): number;
}

export interface StoreOptions {
  /** Create the file and schema if absent (init only); otherwise a missing file is an error. */
  readonly create?: boolean;
  readonly readonly?: boolean;
  /** How long a write waits on another connection's lock; it blocks the event loop. */
  readonly busyTimeoutMs?: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS records (
  seq INTEGER PRIMARY KEY,
  type INTEGER NOT NULL,
  header BLOB NOT NULL,
  payload BLOB
);
CREATE INDEX IF NOT EXISTS records_by_type ON records(type, seq);
CREATE TABLE IF NOT EXISTS seals (
  seq INTEGER PRIMARY KEY,
  body BLOB NOT NULL
);
CREATE TRIGGER IF NOT EXISTS records_append_only_update BEFORE UPDATE ON records
  BEGIN SELECT RAISE(ABORT, 'teamd ledger is append-only: UPDATE refused'); END;
CREATE TRIGGER IF NOT EXISTS records_append_only_delete BEFORE DELETE ON records
  BEGIN SELECT RAISE(ABORT, 'teamd ledger is append-only: DELETE refused'); END;
CREATE TRIGGER IF NOT EXISTS records_append_only_replace BEFORE INSERT ON records
  WHEN EXISTS (SELECT 1 FROM records WHERE seq = NEW.seq)
  BEGIN SELECT RAISE(ABORT, 'teamd ledger is append-only: REPLACE refused'); END;
CREATE TRIGGER IF NOT EXISTS seals_append_only_replace BEFORE INSERT ON seals
  WHEN EXISTS (SELECT 1 FROM seals WHERE seq = NEW.seq)
  BEGIN SELECT RAISE(ABORT, 'teamd ledger is append-only: REPLACE refused'); END;
CREATE TRIGGER IF NOT EXISTS seals_append_only_update BEFORE UPDATE ON seals
  BEGIN SELECT RAISE(ABORT, 'teamd ledger is append-only: UPDATE refused'); END;
CREATE TRIGGER IF NOT EXISTS seals_append_only_delete BEFORE DELETE ON seals
  BEGIN SELECT RAISE(ABORT, 'teamd ledger is append-only: DELETE refused'); END;
`;

interface RecordRow {
  seq: number;
  type: number;
  header: Buffer;
  payload: Buffer | null;
}

/** Plain Uint8Array views of SQLite's Buffers, so decoded bytes compare equal to built ones. */
function bytes(buffer: Buffer): Uint8Array {
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

function toRecord(row: RecordRow): StoredRecord {
  return { seq: row.seq, type: row.type, header: bytes(row.header), payload: row.payload === null ? null : bytes(row.payload) };
}

function fileIdentity(path: string): string | undefined {
  try {
    const st = statSync(path);
    return st.isFile() ? `${st.dev}:${st.ino}` : undefined;
  } catch {
    return undefined;
  }
}

export function openStore(path: string, options: StoreOptions = {}): LedgerStore {
  if (!options.create && fileIdentity(path) === undefined) throw new Error(`no ledger database at ${path}`);
  const db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: !options.create });
  try {
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 250))}`);
    if (!options.readonly) {
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = FULL");
      // Re-create the triggers on every open: a connection that dropped them cannot make the
      // store mutable for the next writer (and any edit it made shows in the chain anyway).
      db.exec(SCHEMA);
      const version = db.pragma("user_version", { simple: true }) as number;
      if (version === 0) db.pragma(`user_version = ${SCHEMA_VERSION}`);
      else if (version !== SCHEMA_VERSION) throw new Error(`ledger schema version ${version}; this teamd reads ${SCHEMA_VERSION}`);
    } else {
      db.prepare("SELECT 1 FROM records LIMIT 1").get();
    }
  } catch (error) {
    db.close();
    throw error;
  }
  const identity = fileIdentity(path);
  if (identity === undefined) {
    db.close();
    throw new Error(`the ledger database ${path} is gone or not a regular file`);
  }
  const stmt = {
    tip: db.prepare<[], RecordRow>("SELECT seq, type, header, payload FROM records ORDER BY seq DESC LIMIT 1"),
    record: db.prepare<[number], RecordRow>("SELECT seq, type, header, payload FROM records WHERE seq = ?"),
    records: db.prepare<[number, number, number], RecordRow>("SELECT seq, type, header, payload FROM records WHERE seq >= ? AND seq <= ? ORDER BY seq LIMIT ?"),
    ofType: db.prepare<[number, number, number], RecordRow>("SELECT seq, type, header, payload FROM records WHERE type = ? AND seq >= ? ORDER BY seq LIMIT ?"),
    seals: db.prepare<[number, number, number], { seq: number; body: Buffer }>("SELECT seq, body FROM seals WHERE seq >= ? AND seq <= ? ORDER BY seq LIMIT ?"),
    count: db.prepare<[], { n: number }>("SELECT count(*) AS n FROM records"),
    lastOfType: db.prepare<[number], RecordRow>("SELECT seq, type, header, payload FROM records WHERE type = ? ORDER BY seq DESC LIMIT 1"),
    countBetween: db.prepare<[number, number], { n: number }>("SELECT count(*) AS n FROM records WHERE seq >= ? AND seq <= ?"),
  };
  const insertRecord = options.readonly ? undefined : db.prepare("INSERT INTO records (seq, type, header, payload) VALUES (?, ?, ?, ?)");
  const insertSeal = options.readonly ? undefined : db.prepare("INSERT INTO seals (seq, body) VALUES (?, ?)");
  const batch =
    insertRecord && insertSeal
      ? db.transaction((records: readonly StoredRecord[], seal: StoredSeal) => {
          for (const r of records) insertRecord.run(r.seq, r.type, r.header, r.payload);
          insertSeal.run(seal.seq, seal.body);
        })
      : undefined;
  const max = Number.MAX_SAFE_INTEGER;

  return {
    path,
    identity,
    tip: () => {
      const row = stmt.tip.get();
      return row ? toRecord(row) : undefined;
    },
    record: (seq) => {
      const row = stmt.record.get(seq);
      return row ? toRecord(row) : undefined;
    },
    records: (fromSeq, limit, toSeq = max) => stmt.records.all(fromSeq, toSeq, limit).map(toRecord),
    recordsOfType: (type, fromSeq, limit) => stmt.ofType.all(type, fromSeq, limit).map(toRecord),
    seals: (fromSeq, limit, toSeq = max) => stmt.seals.all(fromSeq, toSeq, limit).map((r) => ({ seq: r.seq, body: bytes(r.body) })),
    count: () => stmt.count.get()?.n ?? 0,
    lastOfType: (type) => {
      const row = stmt.lastOfType.get(type);
      return row ? toRecord(row) : undefined;
    },
    countBetween: (fromSeq, toSeq) => stmt.countBetween.get(fromSeq, toSeq)?.n ?? 0,
    removeArchived(cutSeq, keep, vacuum) {
      if (options.readonly) throw new Error("the ledger store is open read-only");
      const removed = db
        .transaction(() => {
          db.exec("DROP TRIGGER IF EXISTS records_append_only_delete; DROP TRIGGER IF EXISTS seals_append_only_delete;");
          db.exec("CREATE TEMP TABLE IF NOT EXISTS archive_keep (seq INTEGER PRIMARY KEY); DELETE FROM archive_keep;");
          const insert = db.prepare("INSERT OR IGNORE INTO archive_keep (seq) VALUES (?)");
          for (const seq of keep) insert.run(seq);
          const { changes } = db.prepare("DELETE FROM records WHERE seq < ? AND seq NOT IN (SELECT seq FROM archive_keep)").run(cutSeq);
          db.prepare("DELETE FROM seals WHERE seq < ?").run(cutSeq);
          db.exec("DROP TABLE archive_keep;");
          // The same triggers as SCHEMA's, back in the same transaction: no commit leaves them off.
          db.exec(SCHEMA);
          return changes;
        })
        .immediate();
      if (vacuum && removed > 0) {
        db.exec("VACUUM");
        db.pragma("wal_checkpoint(TRUNCATE)");
      }
      return removed;
    },
    settings: () => ({
      journalMode: String(db.pragma("journal_mode", { simple: true })),
      synchronous: (["off", "normal", "full", "extra"] as const)[Number(db.pragma("synchronous", { simple: true }))] ?? "off",
    }),
    integrityCheck: () => (db.pragma("integrity_check") as { integrity_check: string }[]).map((r) => r.integrity_check),
    appendBatch(records, seal) {
      if (!batch) throw new Error("the ledger store is open read-only");
      // IMMEDIATE: take the write lock first, so a busy store fails before any row is written.
      batch.immediate(records, seal);
    },
    checkFile() {
      const now = fileIdentity(path);
      if (now === undefined) return `the ledger database ${path} is gone or not a regular file`;
      if (now !== identity) return `the ledger database ${path} was replaced by another file`;
      return undefined;
    },
    checkpoint() {
      if (!options.readonly) db.pragma("wal_checkpoint(TRUNCATE)");
    },
    close() {
      if (db.open) db.close();
    },
  };
}
