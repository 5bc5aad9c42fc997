import { existsSync, readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { writeFileAtomic } from "../../src/ledger/atomic-file.js";
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { loadDaemonKey, loadOrCreateDaemonKey, openLedger, type DaemonSigner, type Ledger } from "../../src/ledger/index.js";
import { HeadReconciliationSchema } from "../../src/gen/teamd/v1/ledger_pb.js";
import type { LedgerStatusResponseSchema } from "../../src/gen/teamd/v1/control_pb.js";
import type { TeamdHome } from "./home.js";
import { ledgerExists, ledgerLayout, type LedgerLayout } from "./ledger-layout.js";

export { ledgerExists, ledgerLayout, type LedgerLayout } from "./ledger-layout.js";

/**
 * Where the ledger's pieces live under TEAMD_HOME, and how the daemon (or, in user mode
 * with the daemon down, the owner's CLI) opens it. keys/ holds the daemon's private key and
 * a copy of the owner's public key; the ledger's genesis pins both, and opening checks that
 * the copy matches the genesis (a swapped copy fails closed).
 */
/** The daemon's key, made on first use (keys/ is the daemon's alone: 0700, the key 0600). */
export async function daemonKey(layout: LedgerLayout): Promise<DaemonSigner> {
  await mkdir(layout.keysDir, { recursive: true, mode: 0o700 });
  const { signer } = await loadOrCreateDaemonKey(layout.daemonKey);
  // The public half beside it, for readers that must not hold the private key (verify).
  await writeHexKey(layout.daemonPublicKey, signer.publicKey.raw);
  return signer;
}

/** A raw public key as hex, written atomically (temp, fsync, rename, directory fsync). */
async function writeHexKey(path: string, key: Uint8Array): Promise<void> {
  await writeFileAtomic(path, Buffer.from(Buffer.from(key).toString("hex") + "\n"), { mode: 0o644 });
}

export function readHexKey(path: string): Uint8Array | undefined {
  if (!existsSync(path)) return undefined;
  const hex = readFileSync(path, "utf8").trim();
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`${path} is not a 32-byte hex public key`);
  return Uint8Array.from(Buffer.from(hex, "hex"));
}

/** The owner's public key as pinned under TEAMD_HOME (hex file), if init wrote it. */
export function readPinnedOwnerKey(layout: LedgerLayout): Uint8Array | undefined {
  return readHexKey(layout.ownerPublicKey);
}

export async function writePinnedOwnerKey(layout: LedgerLayout, publicKey: Uint8Array): Promise<void> {
  await mkdir(layout.keysDir, { recursive: true, mode: 0o700 });
  await writeHexKey(layout.ownerPublicKey, publicKey);
}

/**
 * Open the machine's ledger, or undefined when there is none yet (teamd init makes it).
 * openLedger never throws for the store's condition: a bad store shows in ledger.state.
 * `serving`: the daemon's ledger, whose batches are written on a worker thread (its event
 * loop serves every seat); a command with the daemon down writes inline.
 */
export async function openHostLedger(home: TeamdHome, log?: (line: string) => void, serving = false): Promise<Ledger | undefined> {
  const layout = ledgerLayout(home);
  if (!ledgerExists(layout)) return undefined;
  const ownerPublicKey = readPinnedOwnerKey(layout);
  if (ownerPublicKey === undefined) throw new Error(`the ledger exists but ${layout.ownerPublicKey} is missing: run teamd init again with your owner key`);
  const daemonSigner = await loadDaemonKey(layout.daemonKey);
  return openLedger({ dir: layout.dir, flagsDir: layout.flagsDir, daemonSigner, ownerPublicKey, writeOnWorker: serving, ...(log ? { log } : {}) });
}

/** The ledger's state as the control service reports it (and the CLI shows it). */
export function describeLedger(ledger: Ledger | undefined, daemonPublicKey: Uint8Array): MessageInitShape<typeof LedgerStatusResponseSchema> {
  if (ledger === undefined) return { state: "absent", reason: "no ledger yet: run teamd init", daemonPublicKey };
  const s = ledger.state;
  const head = ledger.head;
  return {
    state: s.status,
    rule: s.status === "blocked" ? s.rule : "",
    reason: s.status === "ready" ? "" : s.reason,
    headSeq: BigInt(head?.seq ?? 0),
    headHash: head ? Buffer.from(head.hash).toString("hex") : "",
    observation:
      s.status === "blocked" && s.observation ? toBinary(HeadReconciliationSchema, create(HeadReconciliationSchema, s.observation)) : new Uint8Array(0),
    ownerPublicKey: ledger.ownerKey.raw,
    daemonPublicKey,
  };
}
