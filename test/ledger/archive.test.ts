import { copyFileSync, existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { RecordType, RevocationSubject, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import {
  archiveDraft,
  daemonPrincipal,
  leaseDraft,
  LedgerRefusal,
  openStore,
  renewDraft,
  seatPrincipal,
  signOwnerAct,
  verifyLedgerFiles,
  type Ledger,
} from "../../src/ledger/index.js";
import type { LeaseFact } from "../../src/kernel/facts.js";
import { expectState, initEnv, request, type TestEnv } from "./helpers.js";

/**
 * Archival (§15, src/ledger/archive.ts) on real SQLite files: the records before a cut move to
 * a self-verifying archive, what the gate still reads stays in the live store, the live store
 * verifies alone against its cut and with the archive as one history, the head still catches
 * a rollback, and a crash between the steps loses nothing.
 */

let made: Array<{ env: TestEnv; ledger: Ledger }> = [];
afterEach(async () => {
  for (const { env, ledger } of made) {
    await ledger.close().catch(() => undefined);
    env.cleanup();
  }
  made = [];
});

const HOUR = 3_600_000;

function lease(id: string, expiresAt: number, parent?: string): LeaseFact {
  return {
    id,
    ...(parent !== undefined ? { parent } : {}),
    rootGrant: "leads",
    issuer: "lead",
    holder: "dev",
    capability: "merge",
    scope: { branch: "main" },
    issuedAt: 1_800_000_000_000,
    expiresAt,
  };
}

function notice(ledger: Ledger, i: number) {
  return ledger.append({
    type: RecordType.NOTICE,
    team: "alpha",
    actor: daemonPrincipal(),
    action: "bench",
    payload: { detail: { case: "notice", value: { subject: `n${i}`, text: `notice ${i}` } } },
  });
}

/** A ledger with history: a team, a policy, two owner renewals, a live lease (on a parent), an expired one, acts, an unknown outcome, notices. */
async function history(label: string) {
  const { env, ledger } = await initEnv(`archive-${label}`);
  made.push({ env, ledger });
  type Seqs = "team" | "policy" | "firstRenew" | "renew" | "parent" | "live" | "expired" | "doneIntent" | "unknownIntent";
  const seqs = {} as Record<Seqs, number>;
  seqs.team = (
    await ledger.append({
      type: RecordType.TEAM,
      team: "alpha",
      actor: daemonPrincipal(),
      action: "team.register",
      payload: { detail: { case: "team", value: { repository: "/repo/alpha", hub: "/home/hubs/alpha.git" } } },
    })
  ).seq;
  seqs.policy = (
    await ledger.append({
      type: RecordType.POLICY,
      team: "alpha",
      actor: daemonPrincipal(),
      action: "policy.apply",
      payload: { detail: { case: "policy", value: { teamFileHash: new Uint8Array(32).fill(1), canonical: "{}", startFileHashes: {} } } },
    })
  ).seq;
  const firstRenew = await signOwnerAct(renewDraft({ team: "alpha" }), env.ownerSeed);
  seqs.firstRenew = (await ledger.appendOwnerAct(firstRenew)).seq;
  seqs.renew = (await ledger.appendOwnerAct(await signOwnerAct(renewDraft({ team: "alpha" }), env.ownerSeed))).seq;
  seqs.parent = (await ledger.append(leaseDraft("alpha", lease("L-parent", env.now + 10 * HOUR), seatPrincipal("alpha", "lead")))).seq;
  seqs.live = (await ledger.append(leaseDraft("alpha", lease("L-live", env.now + HOUR, "L-parent"), seatPrincipal("alpha", "lead")))).seq;
  seqs.expired = (await ledger.append(leaseDraft("alpha", lease("L-old", env.now - HOUR), seatPrincipal("alpha", "lead")))).seq;
  for (let i = 0; i < 20; i++) await notice(ledger, i);
  const done = await ledger.submit({ ...request("dev", "r-done"), action: "egress.connect" }, async () => ({ result: "done" }));
  seqs.doneIntent = done.intentSeq;
  const unknown = await ledger.submit({ ...request("dev", "r-unknown"), action: "egress.connect", target: { name: "x" } }, async () => {
    throw new Error("the effect died");
  });
  seqs.unknownIntent = unknown.intentSeq;
  for (let i = 20; i < 30; i++) await notice(ledger, i);
  return { env, ledger, seqs, firstRenew };
}

async function archive(env: TestEnv, ledger: Ledger, beforeSeq: number, file: string, keep: boolean, onStep?: (step: string) => void) {
  const act = await signOwnerAct(archiveDraft({ beforeSeq, file, keep }), env.ownerSeed);
  return ledger.archive(act, onStep ? { onStep } : {});
}

const verify = (env: TestEnv, archives?: string[]) =>
  verifyLedgerFiles({ dir: env.dir, daemonPublicKey: env.signer.publicKey.raw, ownerPublicKey: env.ownerPublic, ...(archives ? { archives } : {}) });

function liveSeqs(env: TestEnv): number[] {
  const store = openStore(join(env.dir, "ledger.db"), { readonly: true });
  try {
    return store.records(0, 1_000_000).map((r) => r.seq);
  } finally {
    store.close();
  }
}

describe("ledger archive", () => {
  it("refuses a cut through a live lease, the policy in force and an unresolved intent, naming each record, the rule and the fix", async () => {
    const { env, ledger, seqs } = await history("refuse");
    const tip = ledger.view.lastSeq;
    const file = join(env.root, "a1.db");
    const refused = await archive(env, ledger, tip + 1, file, false).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(LedgerRefusal);
    const { rule, reason } = (refused as LedgerRefusal).refusal;
    expect(rule).toBe("ledger.archive-needed");
    expect(reason).toContain(`record ${seqs.live}: lease L-live`);
    expect(reason).toContain(`record ${seqs.parent}: lease L-parent`);
    expect(reason).toContain(`record ${seqs.policy}: the policy in force of team alpha`);
    expect(reason).toContain(`record ${seqs.unknownIntent}: intent ${seqs.unknownIntent} (egress.connect) has no settled outcome`);
    expect(reason).toMatch(/Fix: cut before them \(--before \d+\).*--keep/);
    // Nothing was written, nothing left the store.
    expect(existsSync(file)).toBe(false);
    expect(readdirSync(env.root).filter((n) => n.endsWith(".tmp"))).toEqual([]);
    expect(liveSeqs(env)).toHaveLength(tip + 1);
  });

  it("keeps what the gate reads, drops the rest; the live store verifies alone, and with the archive as one history", async () => {
    const { env, ledger, seqs, firstRenew } = await history("keep");
    const leasesBefore = ledger.view.leaseFacts("alpha");
    const tip = ledger.view.lastSeq;
    const file = join(env.root, "a1.db");
    const receipt = await archive(env, ledger, tip + 1, file, true);
    expect(receipt.cutSeq).toBe(tip + 1);
    const keptSeqs = receipt.kept.map((k) => k.seq);
    for (const s of [0, seqs.team, seqs.policy, seqs.renew, seqs.parent, seqs.live, seqs.unknownIntent, seqs.unknownIntent + 1]) expect(keptSeqs).toContain(s);
    for (const s of [seqs.firstRenew, seqs.expired, seqs.doneIntent]) expect(keptSeqs).not.toContain(s);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    // The live store holds the kept records and the two archive records, nothing else below the cut.
    expect(liveSeqs(env)).toEqual([...keptSeqs, receipt.seq, receipt.seq + 1]);
    expectState(ledger, "ready");
    // The view rebuilt from the live store decides as before.
    expect(ledger.view.policy("alpha")?.seq).toBe(seqs.policy);
    expect(Object.keys(ledger.view.leaseFacts("alpha").leases).sort()).toEqual(["L-live", "L-parent"]);
    expect(ledger.view.leaseFacts("alpha").leases["L-live"]).toEqual(leasesBefore.leases["L-live"]);
    expect(ledger.view.intent(seqs.unknownIntent)?.status).toBe("unknown");
    expect(ledger.view.unknownOn(ledger.view.intent(seqs.unknownIntent)?.target ?? "")).toHaveLength(1);
    expect(ledger.view.request("seat:alpha/dev", "r-done")).toBeUndefined();
    // An archived owner act's replay is answered as recorded, never recorded again.
    const replay = await ledger.appendOwnerAct(firstRenew);
    expect(replay.replayed).toBe(true);
    expect(ledger.view.lastSeq).toBe(receipt.seq + 1);

    const alone = await verify(env);
    expect(alone).toMatchObject({ ok: true, cut: { cutSeq: receipt.cutSeq, kept: keptSeqs.length, file } });
    const whole = await verify(env, [file]);
    expect(whole).toMatchObject({ ok: true, archives: [{ file, fromSeq: 0, cutSeq: receipt.cutSeq }] });
    if (whole.ok) expect(whole.records).toBe(receipt.seq + 2);

    // The ledger reopens (a daemon restart) from the live store and appends on.
    await ledger.close();
    const again = await env.open();
    made.push({ env, ledger: again });
    expectState(again, "ready");
    expect(Object.keys(again.view.leaseFacts("alpha").leases).sort()).toEqual(["L-live", "L-parent"]);
    await notice(again, 99);
    expect((await verify(env, [file])).ok).toBe(true);
  });

  it("keeps the spend envelope's recent meter reports and reservations and each seat's last handoff; older ones leave", async () => {
    const { env, ledger } = await history("spend");
    const handoff = (seat: string, runId: string) =>
      ledger.append({
        type: RecordType.CHECKPOINT,
        team: "alpha",
        actor: daemonPrincipal(),
        action: "seat.handoff",
        payload: { target: { kind: TargetKind.SEAT, name: seat }, detail: { case: "checkpoint", value: { runId, handoff: "{}" } } },
      });
    const meter = () =>
      ledger.append({
        type: RecordType.METER,
        team: "alpha",
        actor: daemonPrincipal(),
        action: "spend.meter",
        payload: {
          detail: {
            case: "meter",
            value: { meter: "m", kind: "command", lab: "a", periodStartUnixMs: 0n, fromUnixMs: 0n, toUnixMs: 1n, amount: 5n, currency: "USD" },
          },
        },
      });
    const reserve = () =>
      ledger.append({
        type: RecordType.RESERVE,
        team: "alpha",
        actor: daemonPrincipal(),
        action: "spend.reserve",
        payload: {
          detail: { case: "reserve", value: { seat: "dev", runId: "r", lab: "a", amount: 5n, currency: "USD", periodStartUnixMs: 0n, why: "dispatch" } },
        },
      });
    const oldHandoff = (await handoff("dev", "run-1")).seq;
    const lastHandoff = (await handoff("dev", "run-2")).seq;
    const otherSeat = (await handoff("ops", "run-3")).seq;
    const recentMeter = (await meter()).seq;
    const recentReserve = (await reserve()).seq;
    const receipt = await archive(env, ledger, ledger.view.lastSeq + 1, join(env.root, "spend.db"), true);
    const kept = receipt.kept.map((k) => k.seq);
    for (const s of [lastHandoff, otherSeat, recentMeter, recentReserve]) expect(kept).toContain(s);
    expect(kept).not.toContain(oldHandoff);
    expect((await verify(env, [join(env.root, "spend.db")])).ok).toBe(true);
  });

  it("a revoked lease a live lease rests on stays revoked after the archive (its revocation stays with it)", async () => {
    const { env, ledger } = await initEnv("archive-revoked-parent");
    made.push({ env, ledger });
    await ledger.append(leaseDraft("alpha", lease("P", env.now + 10 * HOUR), seatPrincipal("alpha", "lead")));
    await ledger.append(leaseDraft("alpha", lease("C", env.now + HOUR, "P"), seatPrincipal("alpha", "lead")));
    // Only the parent's revocation is on record (a cascade would revoke C too; this is the case without one).
    await ledger.append({
      type: RecordType.REVOCATION,
      team: "alpha",
      actor: seatPrincipal("alpha", "lead"),
      action: "lease.revoke",
      payload: {
        target: { kind: TargetKind.LEASE, name: "P" },
        detail: { case: "revocation", value: { subject: RevocationSubject.LEASE, subjectId: "P", reason: "r" } },
      },
    });
    for (let i = 0; i < 5; i++) await notice(ledger, i);
    expect(ledger.view.leaseFacts("alpha").revokedLeases).toEqual(["P"]);
    await archive(env, ledger, ledger.view.lastSeq + 1, join(env.root, "a1.db"), true);
    expect(Object.keys(ledger.view.leaseFacts("alpha").leases).sort()).toEqual(["C", "P"]);
    expect(ledger.view.leaseFacts("alpha").revokedLeases).toEqual(["P"]);
  });

  it("a changed archive fails verify; so does a kept record missing from the live store", async () => {
    const { env, ledger } = await history("tamper");
    const file = join(env.root, "a1.db");
    const receipt = await archive(env, ledger, ledger.view.lastSeq + 1, file, true);
    await ledger.close();
    expect((await verify(env, [file])).ok).toBe(true);

    const copy = join(env.root, "copy.db");
    copyFileSync(file, copy);
    const db = new Database(copy);
    db.prepare("UPDATE records SET payload = ? WHERE seq = ?").run(Buffer.from("forged"), 10);
    db.close();
    const changed = await verify(env, [copy]);
    expect(changed).toMatchObject({ ok: false, seq: 10, rule: "ledger.chain-broken" });

    // A record dropped from the archive: the whole history has a hole.
    copyFileSync(file, join(env.root, "copy2.db"));
    const db2 = new Database(join(env.root, "copy2.db"));
    db2.prepare("DELETE FROM records WHERE seq = ?").run(12);
    db2.close();
    expect(await verify(env, [join(env.root, "copy2.db")])).toMatchObject({ ok: false, seq: 12, rule: "ledger.missing-record" });

    // A kept record removed from the live store behind the ledger's back.
    const kept = receipt.kept.find((k) => k.type === "lease") as { seq: number };
    const live = new Database(join(env.dir, "ledger.db"));
    live.exec("DROP TRIGGER records_append_only_delete");
    live.prepare("DELETE FROM records WHERE seq = ?").run(kept.seq);
    live.close();
    expect(await verify(env)).toMatchObject({ ok: false, seq: kept.seq, rule: "ledger.missing-record" });
  });

  it("a record put back below the cut that the cut did not keep fails the live store's verify", async () => {
    const { env, ledger, seqs } = await history("put-back");
    const file = join(env.root, "a1.db");
    await archive(env, ledger, ledger.view.lastSeq + 1, file, true);
    await ledger.close();
    expect((await verify(env)).ok).toBe(true);
    // A genuine record (sealed once, chained once) the archive took, copied back into the live store.
    const archived = new Database(file, { readonly: true });
    const row = archived.prepare("SELECT seq, type, header, payload FROM records WHERE seq = ?").get(seqs.doneIntent) as {
      seq: number;
      type: number;
      header: Buffer;
      payload: Buffer;
    };
    archived.close();
    const live = new Database(join(env.dir, "ledger.db"));
    live.prepare("INSERT INTO records (seq, type, header, payload) VALUES (?, ?, ?, ?)").run(row.seq, row.type, row.header, row.payload);
    live.close();
    expect(await verify(env)).toMatchObject({ ok: false, seq: seqs.doneIntent, rule: "ledger.chain-broken" });
    const reopened = await env.open();
    made.push({ env, ledger: reopened });
    expectState(reopened, "blocked", "ledger.chain-broken");
  });

  it("the signed head still catches a rollback to the store as it was before the archive", async () => {
    const { env, ledger } = await history("rollback");
    await ledger.close();
    const old = join(env.root, "before.db");
    copyFileSync(join(env.dir, "ledger.db"), old);
    const reopened = await env.open();
    made.push({ env, ledger: reopened });
    await archive(env, reopened, reopened.view.lastSeq + 1, join(env.root, "a1.db"), true);
    await reopened.close();
    copyFileSync(old, join(env.dir, "ledger.db"));
    const back = await env.open();
    made.push({ env, ledger: back });
    expectState(back, "blocked", "ledger.rollback");
  });

  it("a crash after the file is written loses nothing: the live store is untouched and the name is not reused", async () => {
    const { env, ledger } = await history("crash-written");
    const tip = ledger.view.lastSeq;
    const file = join(env.root, "a1.db");
    const stopped = await archive(env, ledger, tip + 1, file, true, (step) => {
      if (step === "written") throw new Error("crash after the file");
    }).catch((e: unknown) => e);
    expect(String(stopped)).toContain("crash after the file");
    expect(existsSync(file)).toBe(true);
    expect(liveSeqs(env)).toHaveLength(tip + 1);
    expect((await verify(env)).ok).toBe(true);
    const again = await archive(env, ledger, tip + 1, file, true).catch((e: unknown) => e);
    expect((again as LedgerRefusal).refusal?.reason).toMatch(/exists already/);
  });

  it("a crash after the cut is recorded loses nothing: the next open checks the records whole and drops them then", async () => {
    const { env, ledger } = await history("crash-recorded");
    const tip = ledger.view.lastSeq;
    const file = join(env.root, "a1.db");
    await archive(env, ledger, tip + 1, file, true, (step) => {
      if (step === "recorded") throw new Error("crash after the record");
    }).catch(() => undefined);
    await ledger.close();
    // Everything is still there, and verifies whole, with the cut's hash checked against it.
    expect(liveSeqs(env)).toHaveLength(tip + 3);
    expect((await verify(env)).ok).toBe(true);
    const reopened = await env.open();
    made.push({ env, ledger: reopened });
    expectState(reopened, "ready");
    expect(liveSeqs(env).length).toBeLessThan(tip);
    expect((await verify(env)).ok).toBe(true);
    expect((await verify(env, [file])).ok).toBe(true);
  });

  it("a second archive starts where the first ended; the whole history needs both files", async () => {
    const { env, ledger } = await history("twice");
    const a1 = join(env.root, "a1.db");
    const a2 = join(env.root, "a2.db");
    const first = await archive(env, ledger, ledger.view.lastSeq + 1, a1, true);
    for (let i = 100; i < 140; i++) await notice(ledger, i);
    const second = await archive(env, ledger, ledger.view.lastSeq + 1, a2, true);
    expect(second.fromSeq).toBe(first.cutSeq);
    await ledger.close();
    expect((await verify(env)).ok).toBe(true);
    expect(await verify(env, [a1, a2])).toMatchObject({ ok: true });
    const partial = await verify(env, [a2]);
    expect(partial.ok).toBe(false);
    if (!partial.ok)
      expect(partial).toMatchObject({ rule: "ledger.missing-record", seq: 0, reason: expect.stringContaining("in an archive not given") as string });
  });
});
