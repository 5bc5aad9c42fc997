import { mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { daemonPrincipal } from "../../src/ledger/codec.js";
import type { Ledger } from "../../src/ledger/index.js";
import { openStore, type LedgerStore, type StoredRecord } from "../../src/ledger/store.js";
import { openStoreWriter, StoreTipMismatch, type StoreWriter } from "../../src/ledger/store-writer.js";
import { sha256 } from "../../src/ledger/codec.js";
import Database from "better-sqlite3";
import { initEnv, request, type TestEnv } from "./helpers.js";

/**
 * The daemon's store writes run on a worker thread with its own connection (store-writer.ts).
 * These tests use real SQLite files: what the worker commits is read back through another
 * connection, the append-only triggers still refuse, and a replaced file is never extended.
 */
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function freshStore(): { path: string; store: LedgerStore } {
  const dir = mkdtempSync(join(tmpdir(), "teamd-writer-"));
  const path = join(dir, "ledger.db");
  const store = openStore(path, { create: true });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => store.close());
  return { path, store };
}

async function writerFor(path: string, store: LedgerStore): Promise<StoreWriter> {
  const writer = await openStoreWriter(path, { identity: store.identity });
  cleanups.push(() => writer.close());
  return writer;
}

const row = (seq: number): StoredRecord => ({
  seq,
  type: RecordType.NOTICE,
  header: new Uint8Array([seq, 1, 2]),
  payload: seq % 2 === 0 ? null : new Uint8Array([seq]),
});
/** The record a batch extends, as the daemon names it: seq and header hash. */
const after = (seq: number) => ({ seq, hash: sha256(row(seq).header) });

describe("store writer: batches on a worker thread", () => {
  it("commits batches in order, readable at once from the main connection, seals included", async () => {
    const { path, store } = freshStore();
    const writer = await writerFor(path, store);
    await writer.append([row(0), row(1), row(2)], { seq: 2, body: new Uint8Array([9]) }, null);
    await writer.append([row(3)], { seq: 3, body: new Uint8Array([8]) }, after(2));
    expect(store.tip()?.seq).toBe(3);
    expect(store.records(0, 10).map((r) => [r.seq, [...r.header], r.payload && [...r.payload]])).toEqual([
      [0, [0, 1, 2], null],
      [1, [1, 1, 2], [1]],
      [2, [2, 1, 2], null],
      [3, [3, 1, 2], [3]],
    ]);
    expect(store.seals(0, 10).map((s) => [s.seq, [...s.body]])).toEqual([
      [2, [9]],
      [3, [8]],
    ]);
  });

  it("a batch the append-only triggers refuse commits nothing of itself, and the writer goes on", async () => {
    const { path, store } = freshStore();
    const writer = await writerFor(path, store);
    await writer.append([row(0)], { seq: 0, body: new Uint8Array([1]) }, null);
    // Record 1 is new, record 0 exists: the whole transaction rolls back.
    await expect(writer.append([row(1), row(0)], { seq: 1, body: new Uint8Array([1]) }, after(0))).rejects.toThrow(/append-only: REPLACE refused/);
    expect(store.count()).toBe(1);
    expect(store.seals(0, 10)).toHaveLength(1);
    await writer.append([row(1)], { seq: 1, body: new Uint8Array([2]) }, after(0));
    expect(store.count()).toBe(2);
  });

  it("writes nothing unless the store ends with the record the batch extends (checked inside the transaction)", async () => {
    const { path, store } = freshStore();
    const writer = await writerFor(path, store);
    // An empty store is extended only by a batch that says so.
    await expect(writer.append([row(0)], { seq: 0, body: new Uint8Array([1]) }, after(5))).rejects.toThrow(StoreTipMismatch);
    await writer.append([row(0), row(1)], { seq: 1, body: new Uint8Array([1]) }, null);
    await expect(writer.append([row(2)], { seq: 2, body: new Uint8Array([1]) }, null)).rejects.toThrow(/tip \(record 1\) is not empty/);
    // The right seq with another header: another record at that place.
    await expect(writer.append([row(2)], { seq: 2, body: new Uint8Array([1]) }, { seq: 1, hash: sha256(new Uint8Array([1, 1, 3])) })).rejects.toThrow(
      StoreTipMismatch,
    );
    // A record written behind the writer's back (another connection): the next batch is refused.
    const raw = new Database(path);
    raw.prepare("INSERT INTO records (seq, type, header, payload) VALUES (2, ?, ?, NULL)").run(RecordType.NOTICE, Buffer.from(row(2).header));
    raw.close();
    await expect(writer.append([row(2)], { seq: 2, body: new Uint8Array([1]) }, after(1))).rejects.toThrow(/tip \(record 2\) is not the record 1/);
    expect(store.count()).toBe(3);
    expect(store.seals(0, 10)).toHaveLength(1);
    await writer.append([row(3)], { seq: 3, body: new Uint8Array([1]) }, after(2));
    expect(store.tip()?.seq).toBe(3);
  });

  it("refuses to open when the path no longer names the file the caller opened", async () => {
    const { path, store } = freshStore();
    const other = join(path, "..", "other.db");
    openStore(other, { create: true }).close();
    renameSync(other, path);
    await expect(openStoreWriter(path, { identity: store.identity })).rejects.toThrow(/replaced while it was being opened/);
  });

  it("refuses to open a missing store, and refuses appends once closed", async () => {
    const { path, store } = freshStore();
    await expect(openStoreWriter(`${path}.absent`, { identity: store.identity })).rejects.toThrow(/cannot open the store/);
    const writer = await openStoreWriter(path, { identity: store.identity });
    await writer.close();
    await expect(writer.append([row(0)], { seq: 0, body: new Uint8Array([1]) }, null)).rejects.toThrow(/closed/);
    expect(store.count()).toBe(0);
  });
});

describe("ledger with its writes on a worker (the daemon's ledger)", () => {
  let env: TestEnv | undefined;
  let ledger: Ledger | undefined;
  afterEach(async () => {
    await ledger?.close();
    env?.cleanup();
    env = undefined;
    ledger = undefined;
  });

  it("concurrent appends and submits group into batches, survive a reopen, and verify", async () => {
    const made = await initEnv("worker-writer");
    env = made.env;
    await made.ledger.close();
    ledger = await env.open({ writeOnWorker: true });
    const l = ledger;
    expect(l.state.status).toBe("ready");
    const appends = Array.from({ length: 40 }, (_, i) =>
      l.append({ type: RecordType.NOTICE, actor: daemonPrincipal(), action: "notice", payload: { fields: [{ key: "i", value: String(i) }] } }),
    );
    const submits = Array.from({ length: 24 }, (_, i) => l.submit(request(`s${i % 3}`, `r${i}`), async () => ({ result: "done" })));
    const seqs = (await Promise.all(appends)).map((a) => a.seq);
    const replies = await Promise.all(submits);
    expect(new Set(seqs).size).toBe(40);
    expect(replies.every((r) => r.status === "done")).toBe(true);
    // Fewer seals than records: the writes were grouped while the worker was on the disk.
    const store = openStore(l.paths.db, { readonly: true });
    try {
      expect(store.count()).toBe(1 + 40 + 24 * 2);
      expect(store.seals(0, 1000).length).toBeLessThan(store.count());
    } finally {
      store.close();
    }
    expect((await l.verify()).ok).toBe(true);
    await l.close();
    ledger = await (env as TestEnv).open({ writeOnWorker: true });
    expect(ledger.state.status).toBe("ready");
    expect(ledger.head?.seq).toBe(40 + 48);
    expect((await ledger.verify()).ok).toBe(true);
  });

  it("a record written behind the daemon's back: the worker's write refuses it (head-mismatch), nothing is appended", async () => {
    const made = await initEnv("worker-behind");
    env = made.env;
    await made.ledger.close();
    ledger = await env.open({ writeOnWorker: true });
    const l = ledger;
    await l.append({ type: RecordType.NOTICE, actor: daemonPrincipal(), action: "notice", payload: {} });
    const raw = new Database(l.paths.db);
    const tip = raw.prepare("SELECT header, payload, type FROM records WHERE seq = 1").get() as { header: Buffer; payload: Buffer; type: number };
    raw.prepare("INSERT INTO records (seq, type, header, payload) VALUES (2, ?, ?, ?)").run(tip.type, tip.header, tip.payload);
    raw.close();
    await expect(l.append({ type: RecordType.NOTICE, actor: daemonPrincipal(), action: "notice", payload: {} })).rejects.toMatchObject({
      rule: "ledger.head-mismatch",
    });
    expect(l.state).toMatchObject({ status: "blocked", rule: "ledger.head-mismatch" });
    expect(l.observation()).toMatchObject({ tipSeq: 2n, headSeq: 1n });
    const store = openStore(l.paths.db, { readonly: true });
    try {
      expect(store.count()).toBe(3);
    } finally {
      store.close();
    }
  });
});
