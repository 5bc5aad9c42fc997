import { createHash } from "node:crypto";
import { createReadStream, existsSync } from "node:fs";
import { link, open, unlink } from "node:fs/promises";
import { dirname } from "node:path";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import Database from "better-sqlite3";
import { fsyncDir, tempPathFor } from "./atomic-file.js";
import { CodecError } from "./errors.js";
import type { DaemonSigner, PublicKey } from "./keys.js";
import { makeSignedHead, readSignedHead, type Head } from "./seal.js";
import { openStore, type StoreReader } from "./store.js";

/**
 * An archive file (§15 archival; docs/records.md "Archival"): the records [fromSeq, cutSeq) of a
 * ledger and the seals of their commit batches, byte for byte as the live store held them, in
 * an SQLite file of the live store's own schema (so the same reader and the same chain walk
 * read it), plus the daemon's signed heads at both ends:
 *
 * - `cut_head`: a signed head naming record cutSeq - 1 and its hash — the head commitment at
 *   the cut, the hash the live chain resumes from;
 * - `start_head` (a later archive only): a signed head naming record fromSeq - 1, where the
 *   previous archive ended, so an archive's chain checks from its first record on.
 *
 * Self-verifying: its records chain from its start head to its cut head under seals the daemon
 * signed, so a record changed, dropped or added breaks it, and the live store's cut record
 * names the file's SHA-256. A tombstoned record is kept without its payload (§15: a tombstone
 * hides a record's content from the archive); its header, and so its digest, stays.
 *
 * Written once: into a temp file beside the target (mode 0600), fsynced, then linked to its
 * name — link(2) never replaces an existing file — and the directory fsynced. Only after that
 * does the live store record the cut and drop the records (archive.ts).
 */

export const ARCHIVE_FORMAT = "teamd.ledger.archive.v1";

const ARCHIVE_SCHEMA = `
CREATE TABLE records (seq INTEGER PRIMARY KEY, type INTEGER NOT NULL, header BLOB NOT NULL, payload BLOB);
CREATE INDEX records_by_type ON records(type, seq);
CREATE TABLE seals (seq INTEGER PRIMARY KEY, body BLOB NOT NULL);
CREATE TABLE archive (key TEXT PRIMARY KEY, value BLOB NOT NULL);
`;

export interface ArchiveMeta {
  readonly format: string;
  readonly fromSeq: number;
  readonly cutSeq: number;
  readonly cutHead: Head;
  readonly startHead: Head | undefined;
}

export interface WriteArchiveOptions {
  readonly path: string;
  readonly source: StoreReader;
  readonly fromSeq: number;
  readonly cutSeq: number;
  readonly cutHash: Uint8Array;
  /** The hash of record fromSeq - 1 (a later archive): where this one's chain starts. */
  readonly startHash: Uint8Array | undefined;
  readonly signer: DaemonSigner;
  readonly time: number;
  /** Is this record's content hidden by a tombstone (its payload is left out)? */
  readonly tombstoned: (seq: number) => boolean;
  readonly progress?: (done: number, total: number) => void;
}

export class ArchiveExists extends Error {
  override readonly name = "ArchiveExists";
}

const PAGE = 4096;

/** Write the archive; returns the SHA-256 of the file as written. Never replaces a file. */
export async function writeArchiveFile(options: WriteArchiveOptions): Promise<Uint8Array> {
  const { path, source, fromSeq, cutSeq } = options;
  if (existsSync(path)) throw new ArchiveExists(`${path} exists already; an archive never replaces a file (choose another name)`);
  const temp = tempPathFor(path);
  // The temp file is made here, 0600, so SQLite opens a file no one else could read meanwhile.
  await (await open(temp, "wx", 0o600)).close();
  try {
    const db = new Database(temp);
    try {
      // Durability comes from the fsync below, once, not from SQLite's journal.
      db.pragma("journal_mode = OFF");
      db.pragma("synchronous = OFF");
      db.exec(ARCHIVE_SCHEMA);
      const meta = db.prepare("INSERT INTO archive (key, value) VALUES (?, ?)");
      const cutHead = makeSignedHead(options.signer, { seq: cutSeq - 1, hash: options.cutHash, timeUnixMs: options.time });
      meta.run("format", Buffer.from(ARCHIVE_FORMAT));
      meta.run("from_seq", Buffer.from(String(fromSeq)));
      meta.run("cut_seq", Buffer.from(String(cutSeq)));
      meta.run("cut_head", cutHead);
      if (fromSeq > 0) {
        if (options.startHash === undefined) throw new Error("a later archive needs the hash it starts from");
        meta.run("start_head", makeSignedHead(options.signer, { seq: fromSeq - 1, hash: options.startHash, timeUnixMs: options.time }));
      }
      const insertRecord = db.prepare("INSERT INTO records (seq, type, header, payload) VALUES (?, ?, ?, ?)");
      const insertSeal = db.prepare("INSERT INTO seals (seq, body) VALUES (?, ?)");
      let expected = fromSeq;
      for (let at = fromSeq; at < cutSeq;) {
        const rows = source.records(at, PAGE, cutSeq - 1);
        if (rows.length === 0) break;
        db.transaction(() => {
          for (const row of rows) {
            if (row.seq !== expected) throw new Error(`record ${expected} is not in the live store; it cannot be archived`);
            insertRecord.run(row.seq, row.type, row.header, options.tombstoned(row.seq) ? null : row.payload);
            expected++;
          }
        })();
        at = expected;
        options.progress?.(at - fromSeq, cutSeq - fromSeq);
        // A long archive in the daemon lets its other work through between pages.
        await yieldToLoop();
      }
      if (expected !== cutSeq) throw new Error(`record ${expected} is not in the live store; it cannot be archived`);
      for (let at = fromSeq; at < cutSeq;) {
        const seals = source.seals(at, PAGE, cutSeq - 1);
        if (seals.length === 0) break;
        db.transaction(() => {
          for (const seal of seals) insertSeal.run(seal.seq, seal.body);
        })();
        at = (seals[seals.length - 1] as { seq: number }).seq + 1;
      }
    } finally {
      db.close();
    }
    const handle = await open(temp, "r+");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    const digest = await fileDigest(temp);
    try {
      await link(temp, path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") throw new ArchiveExists(`${path} exists already; an archive never replaces a file`);
      throw error;
    }
    await unlink(temp);
    await fsyncDir(dirname(path));
    return digest;
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

export async function fileDigest(path: string): Promise<Uint8Array> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return new Uint8Array(hash.digest());
}

/** An archive opened read-only: its records and seals as a store reader, and its signed ends checked. */
export interface OpenedArchive {
  readonly path: string;
  readonly reader: StoreReader;
  readonly meta: ArchiveMeta;
}

export function openArchive(path: string, daemonKey: PublicKey): OpenedArchive {
  if (!existsSync(path)) throw new Error(`no archive at ${path}`);
  const db = new Database(path, { readonly: true, fileMustExist: true });
  let meta: ArchiveMeta;
  try {
    const rows = db.prepare<[], { key: string; value: Buffer }>("SELECT key, value FROM archive").all();
    const get = (key: string) => rows.find((r) => r.key === key)?.value;
    const text = (key: string) => get(key)?.toString("utf8") ?? "";
    const format = text("format");
    if (format !== ARCHIVE_FORMAT) throw new CodecError(`${path} is not a teamd ledger archive (format '${format}')`);
    const fromSeq = Number(text("from_seq"));
    const cutSeq = Number(text("cut_seq"));
    const cutHeadBytes = get("cut_head");
    if (!Number.isSafeInteger(fromSeq) || !Number.isSafeInteger(cutSeq) || cutSeq <= fromSeq || cutHeadBytes === undefined)
      throw new CodecError(`${path}: the archive's range does not read`);
    const cutHead = readSignedHead(new Uint8Array(cutHeadBytes), daemonKey);
    if (cutHead.seq !== cutSeq - 1) throw new CodecError(`${path}: the cut head names record ${cutHead.seq}, not ${cutSeq - 1}`);
    const startBytes = get("start_head");
    const startHead = startBytes === undefined ? undefined : readSignedHead(new Uint8Array(startBytes), daemonKey);
    if (fromSeq > 0 && startHead?.seq !== fromSeq - 1) throw new CodecError(`${path}: the archive starts at ${fromSeq} without a signed head before it`);
    meta = { format, fromSeq, cutSeq, cutHead, startHead };
  } catch (error) {
    db.close();
    if (error instanceof CodecError) throw error;
    throw new CodecError(`${path}: the archive does not read: ${error instanceof Error ? error.message : String(error)}`);
  }
  db.close();
  return { path, reader: openStore(path, { readonly: true }), meta };
}
