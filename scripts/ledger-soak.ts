/**
 * Crash soak for the ledger (§15): a real writer process is killed with SIGKILL at a random
 * point — while opening, recovering, appending in group commits, or between an intent and
 * its outcome — and the ledger is reopened and checked:
 *
 * - every record the writer saw acknowledged is present, byte for byte (same header hash);
 * - chain, seals, owner signatures and the signed head verify;
 * - PRAGMA integrity_check is ok;
 * - every intent left without an outcome gets exactly one `unknown` outcome on open.
 *
 *   node dist/scripts/ledger-soak.js [--rounds N] [--ledgers N] [--seed S]
 *
 * The same file is the writer (`--child`), so it runs from a fresh clone after `npm run
 * build`; test/ledger/crash.test.ts runs a few hundred rounds of it in the suite.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { OutcomeResult, RecordType, TargetKind } from "../src/gen/teamd/v1/ledger_pb.js";
import { daemonPrincipal, decodeHeader, decodePayload, headerHash, seatPrincipal, toHex, toSafeNumber } from "../src/ledger/codec.js";
import { createDaemonSigner, genesisDraft, initLedger, LedgerRefusal, openLedger, signOwnerAct, type LedgerOptions } from "../src/ledger/index.js";
import { UNKNOWN_NOTE } from "../src/ledger/recovery.js";
import { openStore } from "../src/ledger/store.js";

/** The compiled writer: this file under dist/ (a test imports the .ts source, which node cannot run). */
const LANES = Number(process.env.SOAK_LANES ?? 2);
const SELF = import.meta.url.endsWith(".ts") ? fileURLToPath(new URL("../dist/scripts/ledger-soak.js", import.meta.url)) : fileURLToPath(import.meta.url);

/** Fixed test keys: a crash ledger is scratch data, never a real deployment's. */
const DAEMON_SEED = new Uint8Array(32).fill(0x44);
const OWNER_SEED = new Uint8Array(32).fill(0x55);

function optionsFor(root: string): LedgerOptions {
  return {
    dir: join(root, "ledger"),
    flagsDir: join(root, "flags"),
    daemonSigner: createDaemonSigner(DAEMON_SEED),
    // node:crypto derives the same public key as @noble/ed25519, without noble's first-use table build.
    ownerPublicKey: createDaemonSigner(OWNER_SEED).publicKey.raw,
  };
}

/** A small deterministic generator (mulberry32), so a failing run can be replayed by seed. */
export function createRng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The writer: open (recovering), then append and dispatch concurrently until killed. */
async function child(root: string, seed: number): Promise<void> {
  const rng = createRng(seed);
  // The writer is the daemon's: its batches go to disk on a worker thread, as in teamd serve.
  const ledger = await openLedger({ ...optionsFor(root), writeOnWorker: true });
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out(`open ${ledger.state.status}`);
  if (ledger.state.status !== "ready") return;
  let n = 0;
  const worker = async (w: number) => {
    for (;;) {
      const i = n++;
      if (rng() < 0.6) {
        const r = await ledger.append({
          type: RecordType.NOTICE,
          actor: daemonPrincipal(),
          action: "notice",
          payload: { fields: [{ key: "i", value: `${seed}.${i}` }] },
        });
        out(`a ${r.seq} ${toHex(r.hash)}`);
      } else {
        const requestId = `s${seed}-${i}`;
        const delay = Math.floor(rng() * 4);
        const reply = await ledger
          .submit(
            {
              actor: seatPrincipal("alpha", `w${w}`),
              team: "alpha",
              requestId,
              request: new TextEncoder().encode(requestId),
              action: "merge",
              target: { kind: TargetKind.REF, name: `refs/heads/${seed}-${w}-${i}` },
            },
            async (intent) => {
              out(`i ${intent.seq}`);
              await new Promise((r) => setTimeout(r, delay));
              return { result: "done" };
            },
          )
          .catch((error: unknown) => {
            if (error instanceof LedgerRefusal) return undefined;
            throw error;
          });
        if (reply) out(`r ${reply.intentSeq} ${reply.status}`);
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, (_, w) => worker(w)));
}

export interface CrashRound {
  readonly acked: number;
  readonly orphans: number;
  readonly records: number;
  readonly openedBeforeKill: boolean;
}

/** Create a ledger for crash rounds (genesis only). */
export async function createCrashLedger(root: string): Promise<void> {
  const options = optionsFor(root);
  const genesisAct = await signOwnerAct(
    genesisDraft({ ownerPublicKey: options.ownerPublicKey, daemonPublicKey: options.daemonSigner.publicKey.raw }),
    OWNER_SEED,
  );
  const { ledger } = await initLedger({ ...options, genesisAct });
  await ledger.close();
}

/** Intents without an outcome, read from the store as the crash left it. */
function orphanIntents(root: string): number[] {
  const store = openStore(join(root, "ledger", "ledger.db"));
  try {
    const intents = new Set<number>();
    for (let cursor = 0; ;) {
      const page = store.records(cursor, 1000);
      if (page.length === 0) break;
      for (const row of page) {
        if (row.type === RecordType.INTENT) intents.add(row.seq);
        if (row.type === RecordType.OUTCOME && row.payload) {
          const d = decodePayload(row.payload).detail;
          if (d.case === "outcome") intents.delete(toSafeNumber(d.value.intentSeq, "intent"));
        }
      }
      cursor = (page[page.length - 1] as { seq: number }).seq + 1;
    }
    return [...intents];
  } finally {
    store.close();
  }
}

/** One round: run the writer, kill -9 it at a random point, reopen and check everything. */
export async function runCrashRound(root: string, seed: number): Promise<CrashRound> {
  const rng = createRng(seed ^ 0x9e3779b9);
  const acked = new Map<number, string>();
  let opened = false;
  const early = rng() < 0.15;
  const killAfterMs = early ? Math.floor(rng() * 90) : 2 + Math.floor(rng() * 80);
  const proc = spawn(process.execPath, [SELF, "--child", root, String(seed)], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  let buffer = "";
  let timer: NodeJS.Timeout | undefined;
  const kill = () => proc.kill("SIGKILL");
  if (early) timer = setTimeout(kill, killAfterMs);
  proc.stdout.on("data", (d: Buffer) => {
    buffer += d.toString();
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      const [kind, a, b] = line.split(" ");
      if (kind === "open") {
        opened = true;
        if (a !== "ready") stderr += `writer opened ${a}\n`;
        if (!early) timer = setTimeout(kill, killAfterMs);
      } else if (kind === "a" && a && b) acked.set(Number(a), b);
      else if (kind === "i" && a) acked.set(Number(a), "");
    }
  });
  await exited;
  if (timer) clearTimeout(timer);
  if (proc.exitCode !== null) throw new Error(`writer exited by itself (${proc.exitCode}): ${stderr.slice(0, 500)}`);
  if (stderr.includes("writer opened")) throw new Error(stderr);

  const orphans = orphanIntents(root);
  const ledger = await openLedger(optionsFor(root));
  try {
    if (ledger.state.status !== "ready") throw new Error(`reopened ${JSON.stringify({ ...ledger.state, observation: undefined })}`);
    const store = openStore(join(root, "ledger", "ledger.db"), { readonly: true });
    try {
      for (const [seq, hash] of acked) {
        const row = store.record(seq);
        if (!row) throw new Error(`acknowledged record ${seq} is missing`);
        if (hash && toHex(headerHash(row.header)) !== hash) throw new Error(`acknowledged record ${seq} changed`);
      }
      for (const seq of orphans) {
        const state = ledger.view.intent(seq);
        if (state?.status !== "unknown" || state.note !== UNKNOWN_NOTE)
          throw new Error(`intent ${seq} without outcome did not become unknown: ${JSON.stringify(state?.status)}`);
        const outcomes = ledger
          .entries(seq, 100_000)
          .filter((e) => e.payload?.detail.case === "outcome" && toSafeNumber(e.payload.detail.value.intentSeq, "i") === seq);
        if (outcomes.length !== 1 || outcomes[0]?.payload?.detail.case !== "outcome" || outcomes[0].payload.detail.value.result !== OutcomeResult.UNKNOWN) {
          throw new Error(`intent ${seq} has ${outcomes.length} outcomes after recovery`);
        }
        if (decodeHeader(store.record(outcomes[0].seq)?.header ?? new Uint8Array()).actor?.kind !== daemonPrincipal().kind)
          throw new Error("recovery outcome not by the daemon");
      }
    } finally {
      store.close();
    }
    if (ledger.view.pendingIntents().length > 0) throw new Error("intents still pending after open");
    const integrity = ledger.integrityCheck();
    if (integrity.join() !== "ok") throw new Error(`integrity_check: ${integrity.join("; ")}`);
    const verified = await ledger.verify();
    if (!verified.ok) throw new Error(`verify failed at ${verified.seq}: ${verified.reason}`);
    return { acked: acked.size, orphans: orphans.length, records: verified.records, openedBeforeKill: opened };
  } finally {
    await ledger.close();
  }
}

async function main(argv: readonly string[]): Promise<void> {
  if (argv[0] === "--child") {
    await child(argv[1] as string, Number(argv[2]));
    return;
  }
  const usage = "usage: node dist/scripts/ledger-soak.js [--rounds N] [--ledgers N] [--seed S]";
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${usage}\n  kill -9 a ledger writer at random points, N rounds, and check every acknowledged record\n`);
    return;
  }
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i] as string;
    if (!["--rounds", "--ledgers", "--seed"].includes(flag) || !/^\d+$/.test(argv[i + 1] ?? "")) {
      throw new Error(`unexpected argument '${flag}${argv[i + 1] !== undefined ? ` ${argv[i + 1]}` : ""}'; ${usage}`);
    }
  }
  const arg = (name: string, fallback: number) => {
    const i = argv.indexOf(name);
    return i >= 0 ? Number(argv[i + 1]) : fallback;
  };
  const rounds = arg("--rounds", 1000);
  const ledgers = arg("--ledgers", 20);
  const seed = arg("--seed", Date.now() % 1_000_000);
  const perLedger = Math.ceil(rounds / ledgers);
  const started = Date.now();
  let done = 0;
  let acked = 0;
  let orphans = 0;
  console.log(`ledger soak: ${rounds} crash rounds over ${ledgers} ledgers, seed ${seed}`);
  const lanes = Array.from({ length: LANES }, async (_, lane) => {
    for (let l = lane; l < ledgers; l += LANES) {
      const root = mkdtempSync(join(tmpdir(), "teamd-soak-"));
      try {
        await createCrashLedger(root);
        for (let r = 0; r < perLedger && done < rounds; r++) {
          const roundSeed = seed * 7919 + l * 1009 + r;
          try {
            const result = await runCrashRound(root, roundSeed);
            acked += result.acked;
            orphans += result.orphans;
          } catch (error) {
            throw new Error(`round seed ${roundSeed} (ledger ${l}, round ${r}): ${(error as Error).message}`);
          }
          done++;
          if (done % 50 === 0)
            console.log(
              `  ${done} rounds, ${acked} acknowledged records checked, ${orphans} orphan intents recovered, ${((Date.now() - started) / 1000).toFixed(1)} s`,
            );
        }
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    }
  });
  await Promise.all(lanes);
  console.log(`ok: ${done} rounds, ${acked} acknowledged records, ${orphans} orphan intents → unknown, in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
