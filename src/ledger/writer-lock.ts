import Database from "better-sqlite3";

/**
 * One writer per ledger. Two processes appending to one chain would each extend it from the
 * head they hold in memory and fork it; the head check would catch that after the fact, and
 * this lock prevents it. The lock is an SQLite file held in EXCLUSIVE locking mode after one
 * write: an fcntl lock the kernel drops when the process dies (kill -9 included), so a crash
 * never leaves a stale lock behind, unlike a pid file.
 */
export interface WriterLock {
  release(): void;
}

export function acquireWriterLock(path: string): WriterLock {
  const db = new Database(path, { timeout: 0 });
  try {
    db.pragma("busy_timeout = 0");
    db.pragma("locking_mode = EXCLUSIVE");
    db.exec("CREATE TABLE IF NOT EXISTS writer (pid INTEGER)");
    db.exec("BEGIN EXCLUSIVE");
    db.exec("COMMIT");
  } catch (error) {
    db.close();
    const code = (error as { code?: string }).code;
    if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
      throw new Error(`another process is writing this ledger (${path} is locked)`);
    }
    throw error;
  }
  return {
    release() {
      if (db.open) db.close();
    },
  };
}
