import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import type { LedgerEntry } from "../../src/ledger/entry.js";
import type { TeamdHome } from "./home.js";

/**
 * The owner's inbox of notices: which records are notices the daemon told (action `notice`,
 * daemon/server/notices.ts), and the last one the owner has seen, kept beside the ledger
 * (the owner's own state, not a record). Read by `teamd notices`, which moves the mark, and by
 * the daemon, which counts the unseen ones for `teamd status`.
 */

/** Other records of the notice type (an owner's `teamd exec`, recorded as `seat.exec`) are the log's, not the owner's inbox. */
export const isTold = (entry: LedgerEntry): boolean => entry.action === "notice" && entry.actor === "daemon";

export const noticesSeenPath = (home: TeamdHome): string => join(home.root, "notices.seen");

/** A seq and a newline; anything longer is not a mark `teamd notices` wrote. */
const MARK_BYTES = 32;

/**
 * The seq of the last notice the owner saw; -1 when none (no mark, or one that is not a seq).
 * Read by the daemon on every status: no link followed, no FIFO waited on, a few bytes at most.
 */
export function lastSeenNotice(home: TeamdHome): number {
  let fd: number | undefined;
  try {
    fd = openSync(noticesSeenPath(home), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    if (!fstatSync(fd).isFile()) return -1;
    const buffer = Buffer.alloc(MARK_BYTES + 1);
    const read = readSync(fd, buffer, 0, buffer.length, 0);
    if (read > MARK_BYTES) return -1;
    const n = Number(buffer.subarray(0, read).toString("utf8").trim());
    return Number.isSafeInteger(n) && n >= 0 ? n : -1;
  } catch {
    return -1;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Notices past the mark, counted a page of records at a time from `page(fromSeq)` (records of the notice type, in seq order). */
export function countUnseen(home: TeamdHome, page: (fromSeq: number, limit: number) => readonly LedgerEntry[], pageSize = 500): number {
  let n = 0;
  for (let from = lastSeenNotice(home) + 1; ;) {
    const rows = page(from, pageSize);
    n += rows.filter(isTold).length;
    const last = rows[rows.length - 1];
    if (rows.length < pageSize || last === undefined) return n;
    from = last.seq + 1;
  }
}
