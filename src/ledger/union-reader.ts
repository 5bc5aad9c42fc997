import { bytesEqual } from "./codec.js";
import { CodecError } from "./errors.js";
import type { StoredRecord, StoredSeal, StoreReader } from "./store.js";

/**
 * A ledger's history put back together from its archives and its live store (`teamd verify
 * --archive`): one reader over several stores, by seq. A record or seal held by more than one
 * (a kept record is in the live store and in its archive) must be the same bytes in each, or
 * the read fails naming it; a tombstoned record an archive holds without its payload is read
 * with the payload another store still has. Read-only; `close` closes every store.
 */
export function unionReader(sources: readonly StoreReader[]): StoreReader {
  const [first] = sources;
  if (first === undefined) throw new Error("a union of no stores");

  function mergeRecords(lists: readonly StoredRecord[][], limit: number): StoredRecord[] {
    const bySeq = new Map<number, StoredRecord>();
    for (const list of lists)
      for (const row of list) {
        const known = bySeq.get(row.seq);
        if (known === undefined) {
          bySeq.set(row.seq, row);
          continue;
        }
        if (known.type !== row.type || !bytesEqual(known.header, row.header))
          throw new CodecError(`record ${row.seq} differs between the archive and the live store`);
        if (known.payload !== null && row.payload !== null && !bytesEqual(known.payload, row.payload))
          throw new CodecError(`the payload of record ${row.seq} differs between the archive and the live store`);
        if (known.payload === null && row.payload !== null) bySeq.set(row.seq, row);
      }
    return [...bySeq.values()].sort((a, b) => a.seq - b.seq).slice(0, limit);
  }

  function mergeSeals(lists: readonly StoredSeal[][], limit: number): StoredSeal[] {
    const bySeq = new Map<number, StoredSeal>();
    for (const list of lists)
      for (const seal of list) {
        const known = bySeq.get(seal.seq);
        if (known !== undefined && !bytesEqual(known.body, seal.body)) throw new CodecError(`seal ${seal.seq} differs between the archive and the live store`);
        bySeq.set(seal.seq, seal);
      }
    return [...bySeq.values()].sort((a, b) => a.seq - b.seq).slice(0, limit);
  }

  const highest = (rows: (StoredRecord | undefined)[]): StoredRecord | undefined =>
    rows.reduce<StoredRecord | undefined>((best, row) => (row !== undefined && (best === undefined || row.seq > best.seq) ? row : best), undefined);

  const reader: StoreReader = {
    path: sources.map((s) => s.path).join(" + "),
    tip: () => highest(sources.map((s) => s.tip())),
    record: (seq) =>
      mergeRecords(
        sources.map((s) => [s.record(seq)].filter((r): r is StoredRecord => r !== undefined)),
        1,
      )[0],
    records: (fromSeq, limit, toSeq) =>
      mergeRecords(
        sources.map((s) => s.records(fromSeq, limit, toSeq)),
        limit,
      ),
    recordsOfType: (type, fromSeq, limit) =>
      mergeRecords(
        sources.map((s) => s.recordsOfType(type, fromSeq, limit)),
        limit,
      ),
    lastOfType: (type) => highest(sources.map((s) => s.lastOfType(type))),
    seals: (fromSeq, limit, toSeq) =>
      mergeSeals(
        sources.map((s) => s.seals(fromSeq, limit, toSeq)),
        limit,
      ),
    countBetween(fromSeq, toSeq) {
      let n = 0;
      for (let at = fromSeq; at <= toSeq;) {
        const page = reader.records(at, 4096, toSeq);
        if (page.length === 0) break;
        n += page.length;
        at = (page[page.length - 1] as StoredRecord).seq + 1;
      }
      return n;
    },
    count: () => reader.countBetween(0, Number.MAX_SAFE_INTEGER),
    integrityCheck: () => sources.flatMap((s) => s.integrityCheck()),
    settings: () => first.settings(),
    close() {
      for (const s of sources) s.close();
    },
  };
  return reader;
}
