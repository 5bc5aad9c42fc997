import type { RuleId } from "../kernel/rules.js";
import { toHex } from "./codec.js";
import { readHeadFile } from "./head-file.js";
import { publicKeyFromRaw, type PublicKey } from "./keys.js";
import { checkLedger } from "./open-check.js";
import { ledgerPaths } from "./paths.js";
import { openStore, type StoreReader } from "./store.js";

/**
 * `teamd verify`: the whole chain (every record against its seal, every link, every payload
 * digest), every signature (each seal, each owner signature and co-signature, genesis), and
 * the signed head against the tip. It answers ok, or the first bad seq and why — the same
 * verdict open would reach, with every signature checked instead of only the unsigned suffix.
 */

export type VerifyResult =
  | {
      readonly ok: true;
      readonly records: number;
      readonly seals: number;
      readonly tip: { readonly seq: number; readonly hash: string };
      readonly head: { readonly seq: number; readonly hash: string };
      /** Records sealed after the head file was last written (rolled forward on the next open). */
      readonly headLag: number;
      /** Damaged ranges the owner accepted by a signed reconciliation. */
      readonly acknowledged: readonly { readonly fromSeq: number; readonly tipSeq: number; readonly reconcileSeq: number }[];
    }
  | {
      readonly ok: false;
      /** The first bad seq, when the failure is one record's (undefined for a missing head). */
      readonly seq: number | undefined;
      readonly rule: RuleId;
      readonly reason: string;
      /** Records verified before the failure. */
      readonly records: number;
    };

export type VerifyProgress = (done: number, total: number) => void;

export async function verifyStore(options: {
  readonly reader: StoreReader;
  readonly headPath: string;
  readonly daemonKey: PublicKey;
  readonly ownerKey: PublicKey;
  readonly progress?: VerifyProgress;
}): Promise<VerifyResult> {
  const head = await readHeadFile(options.headPath, options.daemonKey);
  const { verdict, walk } = await checkLedger({
    reader: options.reader,
    daemonKey: options.daemonKey,
    ownerKey: options.ownerKey,
    head,
    mode: "verify",
    progress: options.progress,
    yieldBetweenPages: true,
  });
  if (verdict.status === "blocked") {
    return { ok: false, seq: verdict.seq, rule: verdict.rule, reason: verdict.reason, records: walk?.records ?? 0 };
  }
  return {
    ok: true,
    records: walk?.records ?? 0,
    seals: walk?.seals ?? 0,
    tip: { seq: verdict.tip.seq, hash: toHex(verdict.tip.hash) },
    head: { seq: verdict.head.seq, hash: toHex(verdict.head.hash) },
    headLag: verdict.headLag,
    acknowledged: (walk?.acknowledged ?? []).map(({ fromSeq, tipSeq, reconcileSeq }) => ({ fromSeq, tipSeq, reconcileSeq })),
  };
}

/**
 * Verify a ledger directory with no daemon running: a read-only connection, so it can run
 * beside a live daemon too (WAL readers never block the writer).
 */
export async function verifyLedgerFiles(options: {
  readonly dir: string;
  readonly headPath?: string;
  readonly daemonPublicKey: Uint8Array;
  readonly ownerPublicKey: Uint8Array;
  readonly progress?: VerifyProgress;
}): Promise<VerifyResult> {
  const paths = ledgerPaths(options.dir, options.headPath);
  let reader: StoreReader;
  try {
    reader = openStore(paths.db, { readonly: true });
  } catch (error) {
    return { ok: false, seq: undefined, rule: "ledger.unavailable", reason: `cannot open the ledger: ${(error as Error).message}`, records: 0 };
  }
  try {
    return await verifyStore({
      reader,
      headPath: paths.head,
      daemonKey: publicKeyFromRaw(options.daemonPublicKey),
      ownerKey: publicKeyFromRaw(options.ownerPublicKey),
      progress: options.progress,
    });
  } finally {
    reader.close();
  }
}
