import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { RecordType, TargetKind } from "../gen/teamd/v1/ledger_pb.js";
import { bytesEqual } from "./codec.js";
import { LedgerRefusal } from "./errors.js";
import { writeHeadFile } from "./head-file.js";
import { publicKeyFromRaw } from "./keys.js";
import { openLedger, type Ledger, type LedgerOptions } from "./ledger.js";
import { checkOwnerAct, isRefusal, type OwnerActDraft } from "./owner-act.js";
import { ledgerPaths } from "./paths.js";
import { buildRecord, ownerRecord } from "./record.js";
import { makeSeal } from "./seal.js";
import { openStore } from "./store.js";
import { acquireWriterLock } from "./writer-lock.js";

/**
 * `teamd init`'s part of the ledger: record 0, the genesis, which pins the owner's public key
 * and the daemon's. The owner signs it (so the pinned key is one the owner holds), the daemon
 * seals it and signs the first head. Init never touches an existing ledger: if the database
 * exists, it says so and opens it instead, so re-running init is safe.
 */

export function genesisDraft(options: { ownerPublicKey: Uint8Array; daemonPublicKey: Uint8Array; ledgerId?: Uint8Array }): OwnerActDraft {
  return {
    type: RecordType.GENESIS,
    action: "genesis",
    payload: {
      target: { kind: TargetKind.LEDGER, name: "" },
      detail: {
        case: "genesis",
        value: {
          ownerPublicKey: options.ownerPublicKey,
          daemonPublicKey: options.daemonPublicKey,
          ledgerId: options.ledgerId ?? new Uint8Array(randomBytes(16)),
        },
      },
    },
  };
}

export interface InitResult {
  readonly ledger: Ledger;
  /** False when a ledger already existed and was opened as it is. */
  readonly created: boolean;
}

/** Create the ledger with the owner-signed genesis act (genesisDraft + signOwnerAct), or open the existing one. */
export async function initLedger(options: LedgerOptions & { readonly genesisAct: Uint8Array }): Promise<InitResult> {
  const paths = ledgerPaths(options.dir, options.headPath);
  if (existsSync(paths.db)) return { ledger: await openLedger(options), created: false };
  const ownerKey = publicKeyFromRaw(options.ownerPublicKey);
  const act = checkOwnerAct(options.genesisAct, ownerKey);
  if (isRefusal(act)) throw LedgerRefusal.of(act);
  const detail = act.payload.detail;
  if (act.proposal.type !== RecordType.GENESIS || detail.case !== "genesis") throw new LedgerRefusal("owner.act-invalid", "init needs a genesis act");
  if (!bytesEqual(detail.value.ownerPublicKey, ownerKey.raw) || !bytesEqual(detail.value.daemonPublicKey, options.daemonSigner.publicKey.raw)) {
    throw new LedgerRefusal("ledger.key-mismatch", "the genesis act pins other keys than the owner's and this daemon's");
  }
  await mkdir(paths.dir, { recursive: true, mode: 0o700 });
  const lock = acquireWriterLock(paths.lock);
  try {
    const store = openStore(paths.db, { create: true });
    try {
      if (store.tip()) return { ledger: await openLedger(options), created: false };
      const time = (options.clock ?? Date.now)();
      const { row, walked } = buildRecord(ownerRecord(act), 0, new Uint8Array(0), time);
      store.appendBatch([row], { seq: 0, body: makeSeal(options.daemonSigner, 0, [walked.hash]) });
      await writeHeadFile(paths.head, options.daemonSigner, { seq: 0, hash: walked.hash, timeUnixMs: time });
      store.checkpoint();
    } finally {
      store.close();
    }
  } finally {
    lock.release();
  }
  return { ledger: await openLedger(options), created: true };
}
