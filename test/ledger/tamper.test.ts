import Database from "better-sqlite3";
import { readFileSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { KeySignatureSchema, PrincipalKind, RecordType, type RecordHeader } from "../../src/gen/teamd/v1/ledger_pb.js";
import { daemonPrincipal, decodeHeader, headerHash } from "../../src/ledger/codec.js";
import { publicKeyFromRaw, resumeDraft, signOwnerAct, stopDraft, verifyLedgerFiles, verifyStore, type VerifyResult } from "../../src/ledger/index.js";
import { buildRecord, daemonRecord } from "../../src/ledger/record.js";
import { makeSeal } from "../../src/ledger/seal.js";
import { openStore } from "../../src/ledger/store.js";
import { initEnv, request, type TestEnv } from "./helpers.js";

/**
 * Tamper: flipping any single bit of any stored header (its prev hash and seq included),
 * payload, or seal makes verify fail at exactly that record's seq (a seal: the seq it is
 * stored under, its batch's last). Golden cases name the field; a seeded sweep flips random
 * bits everywhere.
 */

let env: TestEnv;
let raw: Database.Database;
const seals: { seq: number; first: number }[] = [];
let tip = 0;

const verify = (): Promise<VerifyResult> => verifyLedgerFiles({ dir: env.dir, daemonPublicKey: env.signer.publicKey.raw, ownerPublicKey: env.ownerPublic });

function flip(table: "records" | "seals", column: "header" | "payload" | "body", seq: number, bit: number): () => void {
  const row = raw.prepare(`SELECT ${column} AS v FROM ${table} WHERE seq = ?`).get(seq) as { v: Buffer };
  const original = Buffer.from(row.v);
  const changed = Buffer.from(row.v);
  changed[bit >> 3] = (changed[bit >> 3] as number) ^ (1 << (bit & 7));
  raw.prepare(`UPDATE ${table} SET ${column} = ? WHERE seq = ?`).run(changed, seq);
  return () => void raw.prepare(`UPDATE ${table} SET ${column} = ? WHERE seq = ?`).run(original, seq);
}

async function expectFailAt(undo: () => void, seq: number, what: string): Promise<void> {
  try {
    const result = await verify();
    expect(result.ok, `${what}: verify passed`).toBe(false);
    if (!result.ok) expect(result.seq, `${what}: ${result.reason}`).toBe(seq);
  } finally {
    undo();
  }
}

function headerOf(seq: number): { bytes: Buffer; header: RecordHeader } {
  const row = raw.prepare("SELECT header FROM records WHERE seq = ?").get(seq) as { header: Buffer };
  return { bytes: row.header, header: decodeHeader(row.header) };
}

beforeAll(async () => {
  const made = await initEnv("tamper");
  env = made.env;
  const l = made.ledger;
  for (let round = 0; round < 3; round++) {
    await Promise.all(
      [1, 2, 3, 4].map((i) =>
        l.append({ type: RecordType.NOTICE, actor: daemonPrincipal(), action: "notice", payload: { fields: [{ key: "n", value: `${round}.${i}` }] } }),
      ),
    );
    await Promise.all(["a", "b", "c"].map((s) => l.submit(request(s, `r${round}`), async () => ({ result: "done", reply: new Uint8Array([round]) }))));
  }
  const stop = await l.stop(await signOwnerAct(stopDraft({ team: "alpha", reason: "tamper test" }), env.ownerSeed));
  await l.resume(await signOwnerAct(resumeDraft({ team: "alpha", flagIds: [stop.flagId] }), env.ownerSeed));
  await l.close();
  raw = new Database(`${env.dir}/ledger.db`);
  for (const name of ["records_append_only_update", "seals_append_only_update"]) raw.exec(`DROP TRIGGER ${name}`);
  const store = openStore(`${env.dir}/ledger.db`, { readonly: true });
  tip = store.tip()?.seq ?? 0;
  let first = 0;
  for (const s of store.seals(0, 1000)) {
    seals.push({ seq: s.seq, first });
    first = s.seq + 1;
  }
  store.close();
});

afterAll(() => {
  raw?.close();
  env?.cleanup();
});

describe("tamper", () => {
  it("the untouched ledger verifies, with several multi-record batches and owner-signed records", async () => {
    expect(await verify()).toMatchObject({ ok: true, tip: { seq: tip } });
    expect(seals.some((s) => s.seq - s.first >= 3)).toBe(true);
    expect(seals.length).toBeGreaterThan(6);
    const owners = Array.from({ length: tip + 1 }, (_, i) => headerOf(i).header).filter((h) => h.signer?.kind === PrincipalKind.OWNER);
    expect(owners.length).toBeGreaterThanOrEqual(3);
  });

  it("golden: a bit of a record's prev hash → that seq", async () => {
    for (const seq of [1, 5, tip]) {
      const { bytes, header } = headerOf(seq);
      const at = bytes.indexOf(Buffer.from(header.prevHash));
      expect(at).toBeGreaterThan(0);
      await expectFailAt(flip("records", "header", seq, at * 8 + 3), seq, `prev hash of ${seq}`);
    }
  });

  it("golden: a bit of a header's seq field → that seq", async () => {
    for (const seq of [1, 7, tip]) {
      const { bytes } = headerOf(seq);
      // format = 2 is field 1 (0x08 0x02); seq is field 2: tag 0x10, then its varint.
      expect([bytes[0], bytes[1], bytes[2]]).toEqual([0x08, 0x02, 0x10]);
      await expectFailAt(flip("records", "header", seq, 3 * 8), seq, `seq field of ${seq}`);
    }
  });

  it("golden: a bit of a payload, of the owner's signature, of the type → that seq", async () => {
    await expectFailAt(flip("records", "payload", 3, 5), 3, "payload of 3");
    const ownerSeq = Array.from({ length: tip + 1 }, (_, i) => i).filter((i) => headerOf(i).header.signature)[1] as number;
    const { bytes, header } = headerOf(ownerSeq);
    const at = bytes.indexOf(Buffer.from(header.signature?.signature ?? []));
    await expectFailAt(flip("records", "header", ownerSeq, at * 8 + 9), ownerSeq, "owner signature");
    const type = (raw.prepare("SELECT type FROM records WHERE seq = 4").get() as { type: number }).type;
    raw.prepare("UPDATE records SET type = ? WHERE seq = 4").run(type ^ 2);
    await expectFailAt(() => void raw.prepare("UPDATE records SET type = ? WHERE seq = 4").run(type), 4, "type column of 4");
  });

  it("golden: a bit of a seal → the seq the seal is stored under", async () => {
    for (const s of [seals[0], seals[3], seals[seals.length - 1]]) {
      if (!s) throw new Error("no seal");
      const length = (raw.prepare("SELECT length(body) AS n FROM seals WHERE seq = ?").get(s.seq) as { n: number }).n;
      await expectFailAt(flip("seals", "body", s.seq, 0), s.seq, `seal ${s.seq} tag`);
      await expectFailAt(flip("seals", "body", s.seq, (length - 1) * 8 + 7), s.seq, `seal ${s.seq} signature`);
      await expectFailAt(flip("seals", "body", s.seq, 5 * 8 + 1), s.seq, `seal ${s.seq} statement`);
    }
  });

  it("golden: moving a record to another seq → missing at that seq; a damaged head file → head-mismatch", async () => {
    raw.exec("DROP TRIGGER IF EXISTS records_append_only_replace");
    raw.prepare("UPDATE records SET seq = ? WHERE seq = 6").run(10_000);
    await expectFailAt(() => void raw.prepare("UPDATE records SET seq = 6 WHERE seq = 10000").run(), 6, "seq column of 6");
    const head = readFileSync(`${env.dir}/head`);
    const bad = Buffer.from(head);
    bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 1;
    writeFileSync(`${env.dir}/head`, bad);
    try {
      expect(await verify()).toMatchObject({ ok: false, rule: "ledger.head-mismatch", seq: undefined });
    } finally {
      writeFileSync(`${env.dir}/head`, head);
    }
  });

  it("a record the daemon sealed but the owner never signed fails at its seq (the seal is not the owner's word)", async () => {
    // Appended to a copy-free branch: insert after the tip, then remove it again.
    const last = headerOf(tip);
    const forged = buildRecord(
      {
        ...daemonRecord({ type: RecordType.GRANT, team: "alpha", actor: { kind: PrincipalKind.OWNER }, action: "grant", payload: {} }),
        signature: create(KeySignatureSchema, { keyId: last.header.signature?.keyId ?? new Uint8Array(32), signature: new Uint8Array(64).fill(1) }),
      },
      tip + 1,
      headerHash(last.bytes),
      env.now,
    );
    raw.prepare("INSERT INTO records (seq, type, header, payload) VALUES (?, ?, ?, ?)").run(tip + 1, forged.row.type, forged.row.header, forged.row.payload);
    raw.prepare("INSERT INTO seals (seq, body) VALUES (?, ?)").run(tip + 1, makeSeal(env.signer, tip + 1, [forged.walked.hash]));
    raw.exec("DROP TRIGGER IF EXISTS records_append_only_delete; DROP TRIGGER IF EXISTS seals_append_only_delete");
    await expectFailAt(
      () => {
        raw.prepare("DELETE FROM records WHERE seq = ?").run(tip + 1);
        raw.prepare("DELETE FROM seals WHERE seq = ?").run(tip + 1);
      },
      tip + 1,
      "forged owner record",
    );
  });

  it("randomized sweep: 150 single-bit flips anywhere in headers, payloads and seals", async () => {
    let state = 0x5eed1234;
    const rand = (n: number) => {
      state = (Math.imul(state ^ (state >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
      return state % n;
    };
    const sealOf = new Map(seals.map((s) => [s.seq, s]));
    const sealSeqs = [...sealOf.keys()];
    for (let i = 0; i < 150; i++) {
      const pick = rand(3);
      const table = pick === 2 ? "seals" : "records";
      const column = pick === 0 ? "header" : pick === 1 ? "payload" : "body";
      const seq = table === "seals" ? (sealSeqs[rand(sealSeqs.length)] as number) : rand(tip + 1);
      const length = (raw.prepare(`SELECT length(${column}) AS n FROM ${table} WHERE seq = ?`).get(seq) as { n: number }).n;
      if (length === 0) continue;
      const bit = rand(length * 8);
      await expectFailAt(flip(table, column, seq, bit), seq, `sweep ${i}: ${table}.${column}[${seq}] bit ${bit}`);
    }
    expect(await verify()).toMatchObject({ ok: true });
  });
});

describe("tamper, exhaustive on a small ledger", () => {
  it("every single bit of a header, a payload, an owner-signed header and a seal", async () => {
    const { env: small, ledger } = await initEnv("tamper-exhaustive");
    try {
      await ledger.append({
        type: RecordType.NOTICE,
        team: "alpha",
        actor: daemonPrincipal(),
        action: "notice",
        payload: { fields: [{ key: "k", value: "v" }] },
      });
      await ledger.close();
      const db = new Database(`${small.dir}/ledger.db`);
      db.exec("DROP TRIGGER records_append_only_update; DROP TRIGGER seals_append_only_update");
      const reader = openStore(`${small.dir}/ledger.db`, { readonly: true });
      const ownerKey = publicKeyFromRaw(small.ownerPublic);
      let checked = 0;
      try {
        for (const [table, column, seq] of [
          ["records", "header", 1],
          ["records", "payload", 1],
          ["records", "header", 0],
          ["seals", "body", 1],
          ["seals", "body", 0],
        ] as const) {
          const original = (db.prepare(`SELECT ${column} AS v FROM ${table} WHERE seq = ?`).get(seq) as { v: Buffer }).v;
          for (let bit = 0; bit < original.length * 8; bit++) {
            const changed = Buffer.from(original);
            changed[bit >> 3] = (changed[bit >> 3] as number) ^ (1 << (bit & 7));
            db.prepare(`UPDATE ${table} SET ${column} = ? WHERE seq = ?`).run(changed, seq);
            const result = await verifyStore({ reader, headPath: `${small.dir}/head`, daemonKey: small.signer.publicKey, ownerKey });
            db.prepare(`UPDATE ${table} SET ${column} = ? WHERE seq = ?`).run(original, seq);
            if (result.ok || result.seq !== seq) throw new Error(`${table}.${column}[${seq}] bit ${bit}: ${JSON.stringify(result)}`);
            checked++;
          }
        }
        expect(await verifyStore({ reader, headPath: `${small.dir}/head`, daemonKey: small.signer.publicKey, ownerKey })).toMatchObject({ ok: true });
        expect(checked).toBeGreaterThan(2000);
      } finally {
        reader.close();
        db.close();
      }
    } finally {
      small.cleanup();
    }
  });
});
