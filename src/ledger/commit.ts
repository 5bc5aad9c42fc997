import { refuse, type Refusal } from "../kernel/decision.js";
import { bytesEqual, decodeHeader, headerHash, toSafeNumber } from "./codec.js";
import { damageDigest, type WalkedRecord } from "./chain-walk.js";
import { describeError, LedgerRefusal } from "./errors.js";
import type { DaemonSigner } from "./keys.js";
import { sameObservation } from "./open-check.js";
import { buildRecord, type PendingRecord } from "./record.js";
import { makeSeal, type Head } from "./seal.js";
import type { LedgerStore, StoredRecord } from "./store.js";
import { StoreTipMismatch, type StoreWriter } from "./store-writer.js";
import type { ViewProjector } from "./view.js";
import type { LedgerState } from "./state.js";

/**
 * One commit batch (the group commit's commit function): place every pending record after
 * the tip, seal the batch, insert records and seal in one durable transaction, then apply
 * the records to the view and hand the signed head to its writer. The store is checked
 * against the head the daemon last signed — the file is the one it opened, and its tip is the
 * daemon's tip (with a writer, inside the write transaction itself) — so a store swapped or
 * written behind the daemon's back fails closed instead of being extended.
 *
 * The seal is one per batch (the daemon's signature over every header hash of the batch,
 * stored in the same transaction): with 64 concurrent writers that is one signature and one
 * fsync for 64 records, and every committed record is still sealed if the process dies right
 * after the commit.
 */

export type AppendResult = { readonly seq: number; readonly hash: Uint8Array; readonly timeUnixMs: number; readonly replayed: boolean };

/** What a commit reads and changes of the ledger it belongs to. */
export interface CommitContext {
  readonly signer: DaemonSigner;
  readonly clock: () => number;
  store(): LedgerStore | undefined;
  /** Where batches are written durably (a worker thread); the store's own appendBatch otherwise. */
  writer?(): StoreWriter | undefined;
  state(): LedgerState;
  view(): ViewProjector;
  /** The last committed record, which the head signed last names. */
  tip(): { readonly seq: number; readonly hash: Uint8Array } | undefined;
  committed(tip: { seq: number; hash: Uint8Array }, head: Head, records: readonly WalkedRecord[]): void;
  fail(status: "unavailable" | "blocked", refusal: Refusal): void;
  /** Make this head durable soon; callers wait for it before they are answered. */
  writeHead(head: Head): void;
}

export async function commitBatch(ctx: CommitContext, items: readonly PendingRecord[]): Promise<(AppendResult | LedgerRefusal)[]> {
  // Every slot is filled below (a record, a replay or a refusal); errors are made only for refusals.
  const results: (AppendResult | LedgerRefusal)[] = new Array<AppendResult | LedgerRefusal>(items.length);
  const state = ctx.state();
  const live: number[] = [];
  items.forEach((item, i) => {
    if (state.status === "ready" && !item.reconcilesHead) live.push(i);
    else if (state.status === "blocked" && item.reconcilesHead) live.push(i);
    else if (item.reconcilesHead) results[i] = new LedgerRefusal("ledger.reconcile-stale", "the ledger is not blocked; there is no head to reconcile");
    else
      results[i] =
        state.status === "blocked"
          ? new LedgerRefusal(state.rule, state.reason)
          : new LedgerRefusal("ledger.unavailable", state.status === "unavailable" ? state.reason : "");
  });
  if (live.length === 0) return results;
  const failAll = (status: "unavailable" | "blocked", refusal: Refusal) => {
    if (status === "unavailable" || state.status === "ready") ctx.fail(status, refusal);
    for (const i of live) results[i] = LedgerRefusal.of(refusal);
    return results;
  };

  const store = ctx.store();
  if (!store) return failAll("unavailable", refuse("ledger.unavailable", "the ledger store is not open"));
  const gone = store.checkFile();
  if (gone) return failAll("unavailable", refuse("ledger.unavailable", gone));
  const writer = ctx.writer?.();
  // With a writer on a ready ledger, the store's tip is checked by the worker inside the write
  // transaction itself (store-writer.ts); otherwise it is read here, before anything is written.
  let stored: StoredRecord | undefined;
  if (!writer || state.status !== "ready") {
    try {
      stored = store.tip();
    } catch (error) {
      return failAll("unavailable", refuse("ledger.unavailable", `the store cannot be read: ${describeError(error)}`));
    }
  }
  let base: { seq: number; hash: Uint8Array };
  if (state.status === "ready") {
    const tip = ctx.tip();
    if (!tip) return failAll("blocked", refuse("ledger.head-mismatch", "the daemon has no signed record to extend"));
    if (!writer && (!stored || stored.seq !== tip.seq || !bytesEqual(headerHash(stored.header), tip.hash))) {
      const found = stored ? `record ${stored.seq}` : "no record";
      return failAll("blocked", refuse("ledger.head-mismatch", `the store's tip (${found}) is not the record ${tip.seq} the daemon last signed`));
    }
    base = tip;
  } else {
    // The owner's head reconciliation: the store must still be exactly what the owner saw.
    if (!stored) return failAll("unavailable", refuse("ledger.unavailable", "the store has no records"));
    const obs = items[live[0] as number]?.reconcilesHead;
    const seen = state.status === "blocked" ? state.observation : undefined;
    const now = seen && { ...seen, tipSeq: BigInt(stored.seq), tipHash: headerHash(stored.header) };
    if (seen?.damaged && now) now.damageDigest = damageDigest(store, Number(seen.damageFromSeq ?? 0n), stored.seq);
    if (!obs || !seen || !now || !sameObservation(obs, seen) || !sameObservation(obs, now)) {
      for (const i of live) results[i] = new LedgerRefusal("ledger.reconcile-stale", "the store changed since it was observed; observe it again and sign that");
      return results;
    }
    base = { seq: stored.seq, hash: headerHash(stored.header) };
    for (const i of live.splice(1)) results[i] = new LedgerRefusal("ledger.reconcile-stale", "another reconciliation is committing");
  }

  const time = ctx.clock();
  const view = ctx.view();
  const built: { index: number; row: StoredRecord; walked: WalkedRecord }[] = [];
  const onceInBatch = new Map<string, number>();
  const replays: { index: number; seq: number }[] = [];
  for (const i of live) {
    const item = items[i] as PendingRecord;
    const prior = item.once && (item.once.recorded(view) ?? onceInBatch.get(item.once.key));
    if (prior !== undefined) {
      replays.push({ index: i, seq: prior });
      continue;
    }
    const refusal = item.check?.(view);
    if (refusal) {
      results[i] = LedgerRefusal.of(refusal);
      continue;
    }
    // The record, then its companions, in one transaction: all of them commit or none.
    for (const [k, part] of [item, ...(item.companions ?? [])].entries()) {
      const prev = built.length > 0 ? (built[built.length - 1] as { walked: WalkedRecord }).walked.hash : base.hash;
      const { row, walked } = buildRecord(part, base.seq + 1 + built.length, prev, time);
      if (k === 0 && item.once) onceInBatch.set(item.once.key, row.seq);
      built.push({ index: k === 0 ? i : -1, row, walked });
    }
  }

  if (built.length > 0) {
    const first = built[0] as (typeof built)[number];
    const last = built[built.length - 1] as (typeof built)[number];
    const seal = makeSeal(
      ctx.signer,
      first.row.seq,
      built.map((b) => b.walked.hash),
    );
    const rows = built.map((b) => b.row);
    const sealRow = { seq: last.row.seq, body: seal };
    try {
      if (writer) await writer.append(rows, sealRow, base);
      else store.appendBatch(rows, sealRow);
    } catch (error) {
      if (error instanceof StoreTipMismatch) return failAll("blocked", refuse("ledger.head-mismatch", error.message));
      return failAll("unavailable", refuse("ledger.unavailable", `the store refused the write: ${describeError(error)}`));
    }
    // Durable from here: every caller of this batch is answered with its record.
    const head: Head = { seq: last.row.seq, hash: last.walked.hash, timeUnixMs: time };
    ctx.committed(
      { seq: last.row.seq, hash: last.walked.hash },
      head,
      built.map((b) => b.walked),
    );
    for (const b of built) if (b.index >= 0) results[b.index] = { seq: b.row.seq, hash: b.walked.hash, timeUnixMs: time, replayed: false };
    // The head file is written beside the next batches (head-writer.ts); each caller is
    // answered only once a head naming its record is durable (ledger.ts `commit`).
    ctx.writeHead(head);
  }
  for (const r of replays) {
    const inBatch = built.find((b) => b.row.seq === r.seq);
    if (inBatch) {
      results[r.index] = { seq: r.seq, hash: inBatch.walked.hash, timeUnixMs: time, replayed: true };
      continue;
    }
    const row = store.record(r.seq);
    results[r.index] = row
      ? { seq: r.seq, hash: headerHash(row.header), timeUnixMs: toSafeNumber(decodeHeader(row.header).timeUnixMs, "time"), replayed: true }
      : new LedgerRefusal("ledger.missing-record", `record ${r.seq} is absent from the store`);
  }
  for (let i = 0; i < results.length; i++) results[i] ??= new LedgerRefusal("ledger.unavailable", "not committed");
  return results;
}
