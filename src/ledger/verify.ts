import { RecordType } from "../gen/teamd/v1/ledger_pb.js";
import type { RuleId } from "../kernel/rules.js";
import { fileDigest, openArchive, type OpenedArchive } from "./archive-file.js";
import { bytesEqual, decodeHeader, decodePayload, toHex, toSafeNumber } from "./codec.js";
import { CUT_ACTION, findCut } from "./cut.js";
import { describeError } from "./errors.js";
import { readHeadFile } from "./head-file.js";
import { publicKeyFromRaw, type PublicKey } from "./keys.js";
import { checkLedger } from "./open-check.js";
import { ledgerPaths } from "./paths.js";
import { openStore, type StoreReader } from "./store.js";
import { unionReader } from "./union-reader.js";

/**
 * `teamd verify`: the whole chain (every record against its seal, every link, every payload
 * digest), every signature (each seal, each owner signature and co-signature, genesis), and
 * the signed head against the tip. It answers ok, or the first bad seq and why — the same
 * verdict open would reach, with every signature checked instead of only the unsigned suffix.
 *
 * After an archive the live store verifies alone against its last cut (cut.ts): the kept
 * records below it against the hashes the cut names, the chain from the cut on; `cut` in the
 * result says where the live history starts and which file holds what came before. With the
 * archives (`teamd verify --archive FILE...`), the whole history is walked from genesis across
 * them and the live store, every archive's signed ends must be the chain's own records, and
 * each file must be the one a cut record names (its SHA-256).
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
      /** The last archive cut, when the live store has one: the live chain starts there. */
      readonly cut?: { readonly seq: number; readonly cutSeq: number; readonly kept: number; readonly file: string };
      /** The archives verified with the live store (verify --archive). */
      readonly archives?: readonly { readonly file: string; readonly fromSeq: number; readonly cutSeq: number }[];
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
  /** Archive files to verify together with the store (the whole history). */
  readonly archives?: readonly string[];
}): Promise<VerifyResult> {
  const head = await readHeadFile(options.headPath, options.daemonKey);
  const archives: OpenedArchive[] = [];
  try {
    for (const path of options.archives ?? []) archives.push(openArchive(path, options.daemonKey));
  } catch (error) {
    for (const a of archives) a.reader.close();
    return { ok: false, seq: undefined, rule: "ledger.chain-broken", reason: describeError(error), records: 0 };
  }
  const reader = archives.length > 0 ? unionReader([options.reader, ...archives.map((a) => a.reader)]) : options.reader;
  const gap = archives.length > 0 ? coverageGap(options.reader, archives) : undefined;
  if (gap !== undefined) {
    for (const a of archives) a.reader.close();
    return { ok: false, seq: gap.seq, rule: "ledger.missing-record", reason: gap.reason, records: 0 };
  }
  try {
    return await verifyReader(options, reader, head, archives);
  } finally {
    for (const a of archives) a.reader.close();
  }
}

async function verifyReader(
  options: { readonly daemonKey: PublicKey; readonly ownerKey: PublicKey; readonly progress?: VerifyProgress },
  reader: StoreReader,
  head: Awaited<ReturnType<typeof readHeadFile>>,
  archives: readonly OpenedArchive[],
): Promise<VerifyResult> {
  const expectHash = new Map<number, Uint8Array>();
  for (const a of archives) {
    expectHash.set(a.meta.cutSeq - 1, a.meta.cutHead.hash);
    if (a.meta.startHead) expectHash.set(a.meta.fromSeq - 1, a.meta.startHead.hash);
  }
  const tombstoned = archives.length > 0 ? tombstonedSeqs(reader) : new Set<number>();
  const { verdict, walk } = await checkLedger({
    reader,
    daemonKey: options.daemonKey,
    ownerKey: options.ownerKey,
    head,
    mode: "verify",
    progress: options.progress,
    yieldBetweenPages: true,
    ...(archives.length > 0 ? { history: "whole" as const, expectHash, payloadless: (seq: number) => tombstoned.has(seq) } : {}),
  });
  if (verdict.status === "blocked") {
    return { ok: false, seq: verdict.seq, rule: verdict.rule, reason: verdict.reason, records: walk?.records ?? 0 };
  }
  // Each archive must be the very file a cut record names (its bytes as written).
  const named = cutDigests(reader);
  for (const a of archives) {
    const digest = named.get(a.meta.cutSeq);
    if (digest === undefined)
      return {
        ok: false,
        seq: undefined,
        rule: "ledger.chain-broken",
        reason: `${a.path}: no cut record of this ledger names an archive cut at ${a.meta.cutSeq}`,
        records: walk?.records ?? 0,
      };
    if (!bytesEqual(await fileDigest(a.path), digest))
      return {
        ok: false,
        seq: undefined,
        rule: "ledger.chain-broken",
        reason: `${a.path}: the file is not the archive the ledger recorded (its SHA-256 differs from the cut record's)`,
        records: walk?.records ?? 0,
      };
  }
  const cut = verdict.cut;
  return {
    ok: true,
    records: walk?.records ?? 0,
    seals: walk?.seals ?? 0,
    tip: { seq: verdict.tip.seq, hash: toHex(verdict.tip.hash) },
    head: { seq: verdict.head.seq, hash: toHex(verdict.head.hash) },
    headLag: verdict.headLag,
    acknowledged: (walk?.acknowledged ?? []).map(({ fromSeq, tipSeq, reconcileSeq }) => ({ fromSeq, tipSeq, reconcileSeq })),
    ...(cut ? { cut: { seq: cut.seq, cutSeq: cut.cutSeq, kept: cut.kept.size, file: cut.file } } : {}),
    ...(archives.length > 0 ? { archives: archives.map((a) => ({ file: a.path, fromSeq: a.meta.fromSeq, cutSeq: a.meta.cutSeq })) } : {}),
  };
}

/** The whole history needs every archive from genesis to the live store's cut, each starting where the one before ended. */
function coverageGap(live: StoreReader, archives: readonly OpenedArchive[]): { seq: number; reason: string } | undefined {
  let cut;
  try {
    cut = findCut(live);
  } catch {
    return undefined; // the walk names it
  }
  const end = cut?.cutSeq ?? 0;
  const sorted = [...archives].sort((a, b) => a.meta.fromSeq - b.meta.fromSeq);
  let at = 0;
  for (const a of sorted) {
    if (a.meta.fromSeq > at)
      return { seq: at, reason: `records ${at} to ${a.meta.fromSeq - 1} are in an archive not given (the archives given start at ${a.meta.fromSeq})` };
    at = Math.max(at, a.meta.cutSeq);
  }
  if (at < end)
    return { seq: at, reason: `records ${at} to ${end - 1} are in an archive not given (the live store's cut at ${end} names ${cut?.file ?? "?"})` };
  return undefined;
}

/** The seqs a tombstone names: an archive holds them without their payload. */
function tombstonedSeqs(reader: StoreReader): Set<number> {
  const out = new Set<number>();
  for (let at = 0; ;) {
    const page = reader.recordsOfType(RecordType.TOMBSTONE, at, 512);
    if (page.length === 0) return out;
    for (const row of page) {
      at = row.seq + 1;
      try {
        const detail = row.payload ? decodePayload(row.payload).detail : undefined;
        if (detail?.case === "tombstone") out.add(toSafeNumber(detail.value.seq, "tombstoned seq"));
      } catch {
        // The walk names a record that does not decode.
      }
    }
  }
}

/** Each cut's file digest, by the cut seq it names (every cut record in the history read). */
function cutDigests(reader: StoreReader): Map<number, Uint8Array> {
  const out = new Map<number, Uint8Array>();
  for (let at = 0; ;) {
    const page = reader.recordsOfType(RecordType.ARCHIVE, at, 512);
    if (page.length === 0) return out;
    for (const row of page) {
      at = row.seq + 1;
      if (row.payload === null || decodeHeader(row.header).action !== CUT_ACTION) continue;
      const detail = decodePayload(row.payload).detail;
      if (detail.case === "archive") out.set(toSafeNumber(detail.value.cutSeq, "cut seq"), detail.value.fileDigest);
    }
  }
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
  /** Archive files to verify with the live store (`teamd verify --archive`). */
  readonly archives?: readonly string[];
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
      archives: options.archives,
    });
  } finally {
    reader.close();
  }
}
