import { generateKeyPairSync, sign, verify } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { daemonPrincipal } from "../../src/ledger/codec.js";
import { createDaemonSigner, genesisDraft, initLedger, openStore, signOwnerAct, type Ledger } from "../../src/ledger/index.js";
import { percentile, type BenchRow } from "./report.js";

/**
 * The ledger's two figures (§15, issue 3), measured in the same run as their baselines:
 *
 * - durable appends/s with 1, 8 and 64 concurrent writers, synchronous=FULL, each append
 *   awaited until its batch has committed and the head file is written. Group commit should
 *   make 64 writers at least 5× one writer: throughput from batching, not from weaker fsync.
 * - verify throughput (records/s) on the 1-writer ledger, where every record is its own commit
 *   batch and so carries its own seal — one signature per record, the worst case — next to
 *   raw node:crypto Ed25519 verifies/s on this machine; target ≥ 0.7× (verify should cost
 *   little beyond its signatures).
 *
 * Keys are generated for the run; every ledger lives in a temp dir and is removed.
 */

const APPEND_SECONDS = 2.5;

async function freshLedger(root: string): Promise<Ledger> {
  const seed = new Uint8Array(32).fill(0x61);
  const ownerSeed = new Uint8Array(32).fill(0x62);
  const signer = createDaemonSigner(seed);
  const ownerPublicKey = createDaemonSigner(ownerSeed).publicKey.raw;
  const genesisAct = await signOwnerAct(genesisDraft({ ownerPublicKey, daemonPublicKey: signer.publicKey.raw }), ownerSeed);
  const { ledger } = await initLedger({ dir: join(root, "ledger"), flagsDir: join(root, "flags"), daemonSigner: signer, ownerPublicKey, genesisAct });
  return ledger;
}

interface AppendRun {
  readonly rate: number;
  readonly appends: number;
  readonly batches: number;
  readonly p50Ms: number;
  readonly ledger: Ledger;
}

async function appendRun(root: string, writers: number): Promise<AppendRun> {
  const ledger = await freshLedger(root);
  const latencies: number[] = [];
  let appends = 0;
  const deadline = performance.now() + APPEND_SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        await ledger.append({ type: RecordType.NOTICE, actor: daemonPrincipal(), action: "bench", payload: { fields: [{ key: "w", value: String(w) }] } });
        latencies.push(performance.now() - t0);
        appends++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const store = openStore(ledger.paths.db, { readonly: true });
  const batches = store.seals(1, 1_000_000).length;
  store.close();
  latencies.sort((a, b) => a - b);
  return { rate: appends / elapsed, appends, batches, p50Ms: percentile(latencies, 50), ledger };
}

/** Raw node:crypto Ed25519 verifies/s over messages the size of a one-record seal statement. */
function createRawVerify(): () => number {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const message = new Uint8Array(80).map((_, i) => i);
  const signature = sign(null, message, privateKey);
  for (let i = 0; i < 200; i++) verify(null, message, publicKey, signature);
  return () => {
    const n = 1500;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) if (!verify(null, message, publicKey, signature)) throw new Error("verify failed");
    return n / ((performance.now() - t0) / 1000);
  };
}

async function verifyOnce(ledger: Ledger): Promise<{ rate: number; records: number }> {
  const t0 = performance.now();
  const result = await ledger.verify();
  const seconds = (performance.now() - t0) / 1000;
  if (!result.ok) throw new Error(`bench ledger does not verify: ${result.reason}`);
  return { rate: result.records / seconds, records: result.records };
}

const median = (values: number[]): number =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

/**
 * Verify and raw verify measured in alternation, seven pairs, the median of the per-pair
 * ratios: a machine whose speed drifts during the run (a shared host) moves both sides of a
 * pair together instead of skewing the ratio.
 */
async function verifyAgainstRaw(ledger: Ledger): Promise<{ rate: number; raw: number; ratio: number; records: number }> {
  const raw = createRawVerify();
  const rates: number[] = [];
  const raws: number[] = [];
  const ratios: number[] = [];
  let records = 0;
  // Warm the JIT on both paths before measuring.
  await verifyOnce(ledger);
  await verifyOnce(ledger);
  raw();
  for (let i = 0; i < 7; i++) {
    const before = raw();
    const v = await verifyOnce(ledger);
    const after = raw();
    records = v.records;
    rates.push(v.rate);
    raws.push((before + after) / 2);
    ratios.push(v.rate / ((before + after) / 2));
  }
  return { rate: median(rates), raw: median(raws), ratio: median(ratios), records };
}

export async function benchLedger(): Promise<BenchRow[]> {
  const root = mkdtempSync(join(tmpdir(), "teamd-bench-ledger-"));
  const rows: BenchRow[] = [];
  try {
    const runs = new Map<number, AppendRun>();
    for (const writers of [1, 8, 64]) {
      const run = await appendRun(join(root, `w${writers}`), writers);
      runs.set(writers, run);
      rows.push({
        name: `ledger.append.${writers}w`,
        value: run.rate,
        unit: "appends/s",
        note: `synchronous=FULL, ${run.appends} appends in ${run.batches} commits, p50 ${run.p50Ms.toFixed(2)} ms`,
      });
    }
    const one = runs.get(1) as AppendRun;
    const many = runs.get(64) as AppendRun;
    rows.push({
      name: "ledger.append.64w/1w",
      value: many.rate / one.rate,
      unit: "ratio",
      target: { min: 5, text: "64 writers ≥ 5× one writer (group commit)" },
    });
    const worst = await verifyAgainstRaw(one.ledger);
    const batched = await verifyOnce(many.ledger);
    rows.push({ name: "ledger.ed25519.verify.raw", value: worst.raw, unit: "verifies/s", note: "node:crypto, 80-byte messages, alternated with verify" });
    rows.push({ name: "ledger.verify.1w", value: worst.rate, unit: "records/s", note: `${worst.records} records, one seal each (worst case)` });
    rows.push({ name: "ledger.verify.64w", value: batched.rate, unit: "records/s", note: `${batched.records} records, one seal per commit batch` });
    rows.push({
      name: "ledger.verify/raw",
      value: worst.ratio,
      unit: "ratio",
      note: "median of 7 alternated pairs, 1-writer ledger",
      target: { min: 0.7, text: "verify ≥ 0.7× raw Ed25519 verify rate" },
    });
    for (const run of runs.values()) await run.ledger.close();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return rows;
}
