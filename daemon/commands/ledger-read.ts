import { describeStored, openStore, type LedgerEntry, type StoreReader } from "../../src/ledger/index.js";
import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { UsageError } from "../../src/rpc/errors.js";
import { parseDuration } from "../../src/kernel/delegation-input.js";
import { resolveHome } from "../host/home.js";
import { ledgerExists, ledgerLayout } from "../host/ledger-host.js";

/**
 * The owner's commands that read the ledger's records directly (`teamd log`, `teamd egress
 * refused`): read-only, beside a running daemon (SQLite's WAL lets a reader in beside the
 * writer), page by page so a long history is never held whole.
 */
const PAGE = 500;

export function openLedgerReader(): StoreReader {
  const layout = ledgerLayout(resolveHome());
  if (!ledgerExists(layout)) throw new Error(`no ledger at ${layout.db}: run teamd init`);
  return openStore(layout.db, { readonly: true });
}

/** The records from `from` on, decoded, in order; `next()` is where a later read resumes. */
export function* entriesFrom(store: StoreReader, from: number, at: { next: number } = { next: from }): Generator<LedgerEntry> {
  at.next = from;
  for (;;) {
    const rows = store.records(at.next, PAGE);
    if (rows.length === 0) return;
    for (const row of rows) {
      at.next = Number(row.seq) + 1;
      yield describeStored(row);
    }
  }
}

/** A record's tombstone (§15): the record that hides its content, and why. */
export interface TombstoneMark {
  readonly by: number;
  readonly reason: string;
}

/** Every tombstone from `from` on, by the seq it hides (the type index: tombstones are few). */
export function tombstonesFrom(store: StoreReader, from: number, into: Map<number, TombstoneMark> = new Map()): Map<number, TombstoneMark> {
  for (let at = from; ;) {
    const rows = store.recordsOfType(RecordType.TOMBSTONE, at, PAGE);
    if (rows.length === 0) return into;
    for (const row of rows) {
      at = Number(row.seq) + 1;
      const detail = describeStored(row).payload?.detail;
      if (detail?.case === "tombstone") into.set(Number(detail.value.seq), { by: Number(row.seq), reason: detail.value.reason });
    }
  }
}

/** `--since`: a duration back from now (30m, 2h, 1d) or an RFC 3339 time; unix ms. */
export function sinceTime(text: string, now: number): number {
  const back = parseDuration(text);
  if (back !== undefined) return now - back;
  const at = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+)?(Z|[+-]\d{2}:?\d{2})?$/.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(at)) throw new UsageError(`--since takes a duration (30m, 2h, 1d) or a time (2026-12-01T10:00:00Z), not '${text}'`);
  return at;
}

/** A record's time as the tables print it. */
export function recordTime(unixMs: number): string {
  return new Date(unixMs)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, "Z");
}
