import Database from "better-sqlite3";
import { copyFileSync, cpSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fromBinary } from "@bufbuild/protobuf";
import { RecordType, SealSchema, SealStatementSchema } from "../../src/gen/teamd/v1/ledger_pb.js";
import { daemonPrincipal } from "../../src/ledger/codec.js";
import { createDaemonSigner, headReconcileDraft, signOwnerAct, type Ledger } from "../../src/ledger/index.js";
import { makeSeal } from "../../src/ledger/seal.js";
import { initEnv, seedOf, type TestEnv } from "./helpers.js";

let env: TestEnv | undefined;
let ledger: Ledger | undefined;
afterEach(async () => {
  await ledger?.close();
  env?.cleanup();
  env = undefined;
  ledger = undefined;
});

async function setup(label: string, records = 3): Promise<{ e: TestEnv; l: Ledger }> {
  const made = await initEnv(label);
  env = made.env;
  ledger = made.ledger;
  await appendN(made.ledger, records);
  return { e: made.env, l: made.ledger };
}

function appendN(l: Ledger, n: number, tag = "x"): Promise<unknown> {
  return Promise.all(
    Array.from({ length: n }, (_, i) =>
      l.append({ type: RecordType.NOTICE, actor: daemonPrincipal(), action: "notice", payload: { fields: [{ key: tag, value: String(i) }] } }),
    ),
  );
}

function restoreDb(e: TestEnv, from: string): void {
  for (const suffix of ["-wal", "-shm"]) rmSync(join(e.dir, `ledger.db${suffix}`), { force: true });
  copyFileSync(from, join(e.dir, "ledger.db"));
}

async function reopen(e: TestEnv): Promise<Ledger> {
  await ledger?.close();
  ledger = await e.open();
  return ledger;
}

async function reconcile(e: TestEnv, l: Ledger): Promise<void> {
  const observation = l.observation();
  if (!observation) throw new Error("no observation to reconcile");
  await l.reconcile(await signOwnerAct(headReconcileDraft(observation), e.ownerSeed));
}

async function expectRefusedEverywhere(l: Ledger, rule: string): Promise<void> {
  expect(l.state).toMatchObject({ status: "blocked", rule });
  expect(l.guard("alpha")).toMatchObject({ rule });
  await expect(appendN(l, 1)).rejects.toMatchObject({ rule });
}

describe("the signed head: open-time checks", () => {
  it("a head lagging by a daemon-sealed suffix rolls forward by itself", async () => {
    const { e, l } = await setup("lag");
    const oldHead = readFileSync(l.paths.head);
    await appendN(l, 4);
    await l.close();
    writeFileSync(l.paths.head, oldHead); // a crash between the commit and the head write
    const logs: string[] = [];
    ledger = await e.open({ log: (line) => logs.push(line) });
    expect(ledger.state.status).toBe("ready");
    expect(ledger.head?.seq).toBe(7);
    expect(logs.some((x) => /rolled forward from 3 to 7/.test(x))).toBe(true);
    expect(await ledger.verify()).toMatchObject({ ok: true, headLag: 0, head: { seq: 7 } });
  });

  it("a suffix the daemon did not seal is not rolled forward: chain-broken", async () => {
    const { e, l } = await setup("unsealed-suffix");
    const oldHead = readFileSync(l.paths.head);
    await appendN(l, 2);
    await l.close();
    writeFileSync(l.paths.head, oldHead);
    // Re-seal the suffix with another key: chained, but not the daemon's seal.
    const raw = new Database(join(e.dir, "ledger.db"));
    raw.exec("DROP TRIGGER seals_append_only_delete");
    const body = (raw.prepare("SELECT body FROM seals WHERE seq = 5").get() as { body: Buffer }).body;
    raw.prepare("DELETE FROM seals WHERE seq = 5").run();
    const statement = fromBinary(SealStatementSchema, fromBinary(SealSchema, body).statement);
    raw.prepare("INSERT INTO seals (seq, body) VALUES (5, ?)").run(makeSeal(createDaemonSigner(seedOf("mallory")), 4, statement.headerHashes));
    raw.close();
    ledger = await e.open();
    expect(ledger.state).toMatchObject({ status: "blocked", rule: "ledger.chain-broken", seq: 5 });
  });

  it("an older copy of the database is refused as rollback until the owner reconciles", async () => {
    const { e, l } = await setup("rollback");
    await l.close();
    const copy = join(e.root, "old.db");
    copyFileSync(l.paths.db, copy);
    ledger = await e.open();
    await appendN(ledger, 3);
    await ledger.close();
    restoreDb(e, copy);
    const r = await reopen(e);
    await expectRefusedEverywhere(r, "ledger.rollback");
    expect(r.state).toMatchObject({ seq: 4 });
    expect(r.observation()).toMatchObject({ rule: "ledger.rollback", tipSeq: 3n, headSeq: 6n });
    // A reconciliation naming another state is refused.
    const stale = { ...r.observation()!, tipSeq: 2n };
    await expect(r.reconcile(await signOwnerAct(headReconcileDraft(stale), e.ownerSeed))).rejects.toMatchObject({ rule: "ledger.reconcile-stale" });
    // One signed by another key is refused before anything else.
    await expect(r.reconcile(await signOwnerAct(headReconcileDraft(r.observation()!), seedOf("mallory")))).rejects.toMatchObject({ rule: "owner.signature" });
    await reconcile(e, r);
    expect(r.state.status).toBe("ready");
    const entry = r.entries(4, 1)[0];
    expect(entry).toMatchObject({ seq: 4, type: "reconcile", signer: "owner", result: "accepted ledger.rollback" });
    await appendN(r, 1);
    expect(await r.verify()).toMatchObject({ ok: true, tip: { seq: 5 }, head: { seq: 5 } });
    // And it stays reconciled across a restart.
    expect((await reopen(e)).state.status).toBe("ready");
  });

  it("two copies grown apart: the one that does not match the head is refused (fork, or rollback if shorter)", async () => {
    const { e, l } = await setup("fork");
    await l.close();
    const twin = join(e.root, "twin");
    cpSync(e.dir, twin, { recursive: true });
    // Copy A (the real one) grows by 2; copy B, a daemon run on the twin directory, grows by 4.
    ledger = await e.open();
    await appendN(ledger, 2, "a");
    await ledger.close();
    const b = await e.open({ dir: twin });
    await appendN(b, 4, "b");
    await b.close();
    const aDb = join(e.root, "a.db");
    copyFileSync(join(e.dir, "ledger.db"), aDb);
    // B's database under A's head: record 5 differs → fork.
    restoreDb(e, join(twin, "ledger.db"));
    ledger = await e.open();
    await expectRefusedEverywhere(ledger, "ledger.fork");
    await ledger.close();
    // A's database under B's head: A ends before B's head → rollback.
    restoreDb(e, aDb);
    copyFileSync(join(twin, "head"), join(e.dir, "head"));
    ledger = await e.open();
    await expectRefusedEverywhere(ledger, "ledger.rollback");
    await reconcile(e, ledger);
    expect(ledger.state.status).toBe("ready");
    expect(await ledger.verify()).toMatchObject({ ok: true });
  });

  it("a head naming a record the database lacks, a hole in the chain: fail closed, reconciled with the damage pinned", async () => {
    const { e, l } = await setup("missing", 5);
    await l.close();
    const raw = new Database(l.paths.db);
    raw.exec("DROP TRIGGER records_append_only_delete");
    raw.prepare("DELETE FROM records WHERE seq = 3").run();
    raw.exec("CREATE TRIGGER records_append_only_delete BEFORE DELETE ON records BEGIN SELECT RAISE(ABORT, 'x'); END");
    ledger = await e.open();
    await expectRefusedEverywhere(ledger, "ledger.missing-record");
    expect(ledger.state).toMatchObject({ seq: 3 });
    expect(ledger.observation()).toMatchObject({ damaged: true, damageFromSeq: 1n, tipSeq: 5n });
    await reconcile(e, ledger);
    expect(ledger.state.status).toBe("ready");
    await appendN(ledger, 2);
    const verified = await ledger.verify();
    expect(verified).toMatchObject({ ok: true, tip: { seq: 8 }, acknowledged: [{ fromSeq: 1, tipSeq: 5, reconcileSeq: 6 }] });
    await ledger.close();
    // The acceptance covers exactly the bytes the owner saw: a later change inside the range is caught.
    raw.exec("DROP TRIGGER records_append_only_update");
    raw.prepare("UPDATE records SET payload = x'00' WHERE seq = 4").run();
    raw.close();
    ledger = await e.open();
    expect(ledger.state).toMatchObject({ status: "blocked", rule: "ledger.missing-record", seq: 3 });
  });

  it("a missing or unreadable head file fails closed (head-mismatch); the owner's reconcile re-signs it", async () => {
    const { e, l } = await setup("head-missing");
    await l.close();
    rmSync(l.paths.head);
    ledger = await e.open();
    await expectRefusedEverywhere(ledger, "ledger.head-mismatch");
    await ledger.close();
    writeFileSync(l.paths.head, "not a head");
    ledger = await e.open();
    await expectRefusedEverywhere(ledger, "ledger.head-mismatch");
    expect(ledger.state).toMatchObject({ reason: expect.stringMatching(/head/) });
    await reconcile(e, ledger);
    expect(ledger.state.status).toBe("ready");
    expect(await ledger.verify()).toMatchObject({ ok: true });
  });

  it("a broken chain blocks; reconciling a ledger that is not blocked is refused", async () => {
    const { e, l } = await setup("broken");
    await expect(l.reconcile(await signOwnerAct(headReconcileDraft({ rule: "ledger.fork" }), e.ownerSeed))).rejects.toMatchObject({
      rule: "ledger.reconcile-stale",
    });
    await l.close();
    const raw = new Database(l.paths.db);
    raw.exec("DROP TRIGGER records_append_only_update");
    raw.prepare("UPDATE records SET payload = x'0102' WHERE seq = 2").run();
    raw.close();
    ledger = await e.open();
    await expectRefusedEverywhere(ledger, "ledger.chain-broken");
    expect(ledger.state).toMatchObject({ seq: 2 });
  });

  it("genesis pinning other keys: key-mismatch, and no reconciliation can help", async () => {
    const { e, l } = await setup("keys");
    await l.close();
    ledger = await e.open({ daemonSigner: createDaemonSigner(seedOf("another daemon")) });
    expect(ledger.state).toMatchObject({ status: "blocked", rule: "ledger.key-mismatch" });
    expect(ledger.observation()).toBeUndefined();
  });
});

describe("the signed head: checked at every append", () => {
  it("a record written behind the daemon's back: head-mismatch, every append refused", async () => {
    const { l } = await setup("behind");
    const raw = new Database(l.paths.db);
    const tip = raw.prepare("SELECT header, payload, type FROM records WHERE seq = 3").get() as { header: Buffer; payload: Buffer; type: number };
    raw.prepare("INSERT INTO records (seq, type, header, payload) VALUES (4, ?, ?, ?)").run(tip.type, tip.header, tip.payload);
    raw.close();
    await expect(appendN(l, 1)).rejects.toMatchObject({ rule: "ledger.head-mismatch" });
    expect(l.guard("alpha")).toMatchObject({ rule: "ledger.head-mismatch" });
    expect(l.observation()).toMatchObject({ tipSeq: 4n, headSeq: 3n });
    // The owner accepts the store as it is; the foreign record is not sealed, so the next
    // check blocks on it as damage, which the owner accepts too (pinned by digest).
    await reconcile(env!, l);
    expect(l.state).toMatchObject({ status: "blocked", rule: "ledger.chain-broken", seq: 4 });
    await reconcile(env!, l);
    expect(l.state.status).toBe("ready");
    await appendN(l, 1);
    expect(await l.verify()).toMatchObject({ ok: true, acknowledged: [{ fromSeq: 4 }] });
  });

  it("a database file swapped under the daemon: unavailable, then on reopen the older copy is a rollback", async () => {
    const { e, l } = await setup("swap");
    await l.close();
    const copy = join(e.root, "old.db");
    copyFileSync(l.paths.db, copy);
    ledger = await e.open();
    await appendN(ledger, 2);
    // A restore done behind the daemon: the old file renamed into place, its WAL and index gone.
    copyFileSync(copy, join(e.root, "swap.db"));
    renameSync(join(e.root, "swap.db"), l.paths.db);
    for (const suffix of ["-wal", "-shm"]) rmSync(`${l.paths.db}${suffix}`, { force: true });
    await expect(appendN(ledger, 1)).rejects.toMatchObject({ rule: "ledger.unavailable", reason: expect.stringMatching(/replaced/) });
    await expect(appendN(ledger, 1)).rejects.toMatchObject({ rule: "ledger.rollback" });
    expect(ledger.state).toMatchObject({ status: "blocked", rule: "ledger.rollback" });
  });
});
