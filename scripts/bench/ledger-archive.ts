import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import {
  archiveDraft,
  createDaemonSigner,
  daemonPrincipal,
  genesisDraft,
  initLedger,
  leaseDraft,
  openLedger,
  openStore,
  seatPrincipal,
  signOwnerAct,
  toHex,
  verifyLedgerFiles,
} from "../../src/ledger/index.js";
import { headerHash } from "../../src/ledger/codec.js";
import { writeHeadFile } from "../../src/ledger/head-file.js";
import { buildRecord, daemonRecord } from "../../src/ledger/record.js";
import { makeSeal } from "../../src/ledger/seal.js";
import type { BenchRow } from "./report.js";

/**
 * Archival's figures (§15, issue 25): a ledger of 1,000,000 records (TEAMD_BENCH_ARCHIVE_RECORDS
 * to change it), opened before and after archiving all but its last 1%: the open's time and the
 * process's resident memory and heap, each in a fresh process (ledger-open-probe.ts). The
 * daemon's open walks the live store and rebuilds its view from it, so both should follow the
 * live state, not the history.
 *
 * The history is made fast but real: every record is built, chained and sealed by the ledger's
 * own code (buildRecord, makeSeal; a commit batch of 1,000 records under one seal) and appended
 * to the real store, and the head file signed at its tip — the same path a commit takes, without
 * a million awaits; `teamd verify` passes on it. Per 1,000 records: 250 gated acts (an intent
 * and its done outcome, the view keeps each request), 300 served reads, 150 notices, 50
 * refusals. Before them: a team, its policy, and 50 live leases (kept by the archive).
 */

const BATCH = 1000;
const KEEP_LIVE = 0.01;
const run = promisify(execFile);

interface Probe {
  readonly status: string;
  readonly openMs: number;
  readonly rssBytes: number;
  readonly heapBytes: number;
  readonly baseRssBytes: number;
  readonly lastSeq: number;
}

async function probe(root: string, seed: Uint8Array, ownerPublic: Uint8Array): Promise<Probe> {
  const here = fileURLToPath(import.meta.url);
  const script = join(here, "..", `ledger-open-probe${extname(here)}`);
  const { stdout } = await run(process.execPath, [...process.execArgv, "--expose-gc", script, root, toHex(seed), toHex(ownerPublic)], {
    maxBuffer: 1 << 20,
  });
  const result = JSON.parse(stdout.trim().split("\n").at(-1) as string) as Probe;
  if (result.status !== "ready") throw new Error(`the bench ledger opened ${result.status}`);
  return result;
}

/** The history: `total` records after genesis, built and sealed by the ledger's own code, straight into the store. */
async function generate(root: string, total: number, signer: ReturnType<typeof createDaemonSigner>): Promise<number> {
  const store = openStore(join(root, "ledger", "ledger.db"));
  const tip = store.tip();
  if (tip === undefined) throw new Error("no genesis");
  let seq = tip.seq + 1;
  let prev = headerHash(tip.header);
  let time = Date.now() - 30 * 24 * 3_600_000;
  const team = "bench";
  const seat = seatPrincipal(team, "dev");
  const head = [
    daemonRecord({
      type: RecordType.TEAM,
      team,
      actor: daemonPrincipal(),
      action: "team.register",
      payload: { detail: { case: "team", value: { repository: "/repo/bench", hub: "/home/hubs/bench.git" } } },
    }),
    daemonRecord({
      type: RecordType.POLICY,
      team,
      actor: daemonPrincipal(),
      action: "policy.apply",
      payload: { detail: { case: "policy", value: { teamFileHash: new Uint8Array(32).fill(7), canonical: "{}", startFileHashes: {} } } },
    }),
    ...Array.from({ length: 50 }, (_, i) =>
      daemonRecord(
        leaseDraft(
          team,
          {
            id: `bench-lease-${i}`,
            rootGrant: "leads",
            issuer: "lead",
            holder: "dev",
            capability: "write",
            scope: { path: "src/" },
            issuedAt: time,
            expiresAt: Date.now() + 365 * 24 * 3_600_000,
          },
          seatPrincipal(team, "lead"),
        ),
      ),
    ),
  ];
  let made = 0;
  let act = 0;
  while (made < total) {
    const pending = made === 0 ? [...head] : [];
    while (pending.length < BATCH && made + pending.length < total) {
      const k = (made + pending.length) % 20;
      if (k < 10) {
        // An intent and its outcome: the view keeps the request (its digest, status, reply).
        const requestId = `r-${act++}`;
        pending.push(
          daemonRecord({
            type: RecordType.INTENT,
            team,
            actor: seat,
            action: "egress.connect",
            payload: { target: { kind: TargetKind.ACCOUNT, name: "api.example.com:443" }, requestId, requestDigest: new Uint8Array(32).fill(act % 251) },
          }),
        );
        pending.push(
          daemonRecord({
            type: RecordType.OUTCOME,
            team,
            actor: daemonPrincipal(),
            signer: seat,
            action: "egress.connect",
            payload: {
              target: { kind: TargetKind.ACCOUNT, name: "api.example.com:443" },
              requestId,
              detail: { case: "outcome", value: { intentSeq: BigInt(seq + pending.length - 1), result: 1, note: "" } },
            },
          }),
        );
      } else if (k < 16) {
        pending.push(
          daemonRecord({
            type: RecordType.SERVED,
            team,
            actor: seat,
            signer: daemonPrincipal(),
            action: "file.read",
            payload: {
              target: { kind: TargetKind.REF, name: "refs/heads/main" },
              fields: [
                { key: "path", value: `src/f${k}.ts` },
                { key: "size", value: "1234" },
              ],
            },
          }),
        );
      } else if (k < 19) {
        pending.push(
          daemonRecord({
            type: RecordType.NOTICE,
            team,
            actor: daemonPrincipal(),
            action: "notice",
            payload: { detail: { case: "notice", value: { subject: "bench", text: `a notice ${made}` } } },
          }),
        );
      } else {
        pending.push(
          daemonRecord({
            type: RecordType.REFUSAL,
            team,
            actor: seat,
            signer: daemonPrincipal(),
            action: "file.write",
            payload: { requestId: `x-${made}`, detail: { case: "refusal", value: { rule: "scope.path", reason: "docs/ is outside the seat's write scope" } } },
          }),
        );
      }
    }
    const rows = [];
    const hashes = [];
    const first = seq;
    for (const p of pending) {
      const { row, walked } = buildRecord(p, seq, prev, time);
      rows.push(row);
      hashes.push(walked.hash);
      prev = walked.hash;
      seq++;
    }
    store.appendBatch(rows, { seq: seq - 1, body: makeSeal(signer, first, hashes) });
    made += pending.length;
    time += 2_000;
  }
  await writeHeadFile(join(root, "ledger", "head"), signer, { seq: seq - 1, hash: prev, timeUnixMs: time });
  store.checkpoint();
  store.close();
  return seq - 1;
}

const mb = (bytes: number) => bytes / (1024 * 1024);

export async function benchLedgerArchive(): Promise<BenchRow[]> {
  const total = Number(process.env.TEAMD_BENCH_ARCHIVE_RECORDS ?? 1_000_000);
  const root = mkdtempSync(join(tmpdir(), "teamd-bench-archive-"));
  const seed = new Uint8Array(32).fill(0x71);
  const ownerSeed = new Uint8Array(32).fill(0x72);
  const signer = createDaemonSigner(seed);
  const ownerPublic = createDaemonSigner(ownerSeed).publicKey.raw;
  try {
    const genesisAct = await signOwnerAct(genesisDraft({ ownerPublicKey: ownerPublic, daemonPublicKey: signer.publicKey.raw }), ownerSeed);
    const { ledger: init } = await initLedger({
      dir: join(root, "ledger"),
      flagsDir: join(root, "flags"),
      daemonSigner: signer,
      ownerPublicKey: ownerPublic,
      genesisAct,
    });
    await init.close();
    const g0 = performance.now();
    const tip = await generate(root, total, signer);
    const generateS = (performance.now() - g0) / 1000;
    const dbBytesBefore = statSync(join(root, "ledger", "ledger.db")).size;

    const before = await probe(root, seed, ownerPublic);

    const lines: string[] = [];
    const ledger = await openLedger({
      dir: join(root, "ledger"),
      flagsDir: join(root, "flags"),
      daemonSigner: signer,
      ownerPublicKey: ownerPublic,
      log: (line) => void lines.push(line),
    });
    const cutAt = Math.floor((tip + 1) * (1 - KEEP_LIVE));
    const file = join(root, "archive-1.db");
    const act = await signOwnerAct(archiveDraft({ beforeSeq: cutAt, file, keep: true }), ownerSeed);
    const a0 = performance.now();
    const steps = new Map<string, number>();
    const receipt = await ledger.archive(act, { onStep: (step) => void steps.set(step, performance.now()) });
    const a1 = performance.now();
    const archiveS = (a1 - a0) / 1000;
    // The steps: plan (one read of the store below the cut), write (the archive file), record
    // (the act and the cut record, one commit), then drop, VACUUM and reopen — the only part
    // during which the daemon's acts wait (its ledger reopens).
    const at = (step: string) => steps.get(step) ?? a0;
    const phases = `plan ${((at("planned") - a0) / 1000).toFixed(1)} s, write ${((at("written") - at("planned")) / 1000).toFixed(1)} s, record ${(at("recorded") - at("written")).toFixed(0)} ms`;
    const reopenMs = a1 - at("recorded");
    const dropped = lines.find((l) => l.includes("dropped from the live store")) ?? "";
    await ledger.close();
    const dbBytesAfter = statSync(join(root, "ledger", "ledger.db")).size;

    const after = await probe(root, seed, ownerPublic);
    const v0 = performance.now();
    const verified = await verifyLedgerFiles({ dir: join(root, "ledger"), daemonPublicKey: signer.publicKey.raw, ownerPublicKey: ownerPublic });
    const verifyMs = performance.now() - v0;
    if (!verified.ok) throw new Error(`the live store does not verify after the archive: ${verified.reason}`);
    const liveRecords = verified.records;
    const w0 = performance.now();
    const whole = await verifyLedgerFiles({
      dir: join(root, "ledger"),
      daemonPublicKey: signer.publicKey.raw,
      ownerPublicKey: ownerPublic,
      archives: [file],
    });
    const wholeMs = performance.now() - w0;
    if (!whole.ok) throw new Error(`the archive and the live store do not verify as one history: ${whole.reason}`);
    const note = `${tip + 1} records; archived ${receipt.archived} before ${receipt.cutSeq}, kept ${receipt.kept.length} below the cut, ${liveRecords} live`;
    return [
      {
        name: "ledger-archive.generate",
        value: (tip + 1) / generateS,
        unit: "records/s",
        note: `${tip + 1} records built, chained, sealed (1,000 a batch) into the store`,
      },
      { name: "ledger-archive.open.before", value: before.openMs, unit: "ms", note: `${tip + 1} live records (the whole history)` },
      {
        name: "ledger-archive.rss.before",
        value: mb(before.rssBytes),
        unit: "MiB",
        note: `heap ${mb(before.heapBytes).toFixed(1)} MiB after GC; a bare process ${mb(before.baseRssBytes).toFixed(1)} MiB`,
      },
      {
        name: "ledger-archive.archive",
        value: archiveS,
        unit: "s",
        note: `${note}; archive file ${mb(statSync(file).size).toFixed(0)} MiB; db ${mb(dbBytesBefore).toFixed(0)} -> ${mb(dbBytesAfter).toFixed(1)} MiB`,
      },
      {
        name: "ledger-archive.drop-and-reopen",
        value: reopenMs,
        unit: "ms",
        note: `after the cut is recorded: the records dropped, VACUUM, the view rebuilt — the daemon's acts wait meanwhile (${phases}; ${dropped.replace(/^ledger archive: /, "")})`,
      },
      { name: "ledger-archive.open.after", value: after.openMs, unit: "ms", note: `${liveRecords} live records` },
      { name: "ledger-archive.rss.after", value: mb(after.rssBytes), unit: "MiB", note: `heap ${mb(after.heapBytes).toFixed(1)} MiB after GC` },
      { name: "ledger-archive.verify.after", value: verifyMs, unit: "ms", note: "teamd verify of the live store alone, against its cut" },
      {
        name: "ledger-archive.verify.whole",
        value: whole.records / (wholeMs / 1000),
        unit: "records/s",
        note: `teamd verify --archive: the archive and the live store as one history, ${whole.records} records in ${(wholeMs / 1000).toFixed(1)} s`,
      },
      {
        name: "ledger-archive.open.after/before",
        value: after.openMs / before.openMs,
        unit: "ratio",
        target: { max: 0.1, text: "open after archiving 99% ≤ 0.1× before" },
      },
      {
        name: "ledger-archive.heap.after/before",
        value: after.heapBytes / before.heapBytes,
        unit: "ratio",
        target: { max: 0.5, text: "heap after archiving 99% ≤ 0.5× before" },
      },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
