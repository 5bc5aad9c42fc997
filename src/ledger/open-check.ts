import { PrincipalKind, RecordType } from "../gen/teamd/v1/ledger_pb.js";
import type { RuleId } from "../kernel/rules.js";
import { bytesEqual, decodeHeader, decodePayload, encodeProposal, headerHash, proposalOf, sha256, signingMessage, toSafeNumber } from "./codec.js";
import { damageDigest, walkChain, type DamageAck, type WalkedRecord, type WalkResult } from "./chain-walk.js";
import type { HeadRead } from "./head-file.js";
import { verifySignature, type PublicKey } from "./keys.js";
import type { HeadObservation } from "./owner-act.js";
import type { Head } from "./seal.js";
import type { StoreReader } from "./store.js";
import { checkCutAct, findCut, type CutCommitment } from "./cut.js";
import { CodecError } from "./errors.js";

/**
 * What the ledger finds when it opens (§15 "A trusted head, not a valid prefix"): the chain
 * walked against its seals, then the store's tip against the signed head.
 *
 * - head == tip: ready.
 * - head behind the tip by a suffix that is chained and daemon-sealed (a crash between the
 *   commit and the head write): ready, and the head rolls forward by itself.
 * - store behind the head (an older copy): ledger.rollback.
 * - the record at the head's seq is another one (copies grown apart): ledger.fork.
 * - a record absent (a hole): ledger.missing-record; a record, link or seal that does not
 *   verify: ledger.chain-broken; no verifiable head: ledger.head-mismatch.
 * - genesis pinning other keys than this daemon holds: ledger.key-mismatch.
 *
 * After an archive (cut.ts), the store below the last cut holds only the records that cut
 * keeps, each checked against the hash it names, and the chain resumes at the cut. A store
 * that still holds its whole history below the cut (a daemon that stopped between recording
 * the cut and dropping the records) is walked whole, and the record before the cut must be the
 * one the cut names; `pendingDrop` says so, and the ledger drops them once the walk is clean.
 *
 * Every blocked verdict but the last carries an observation: the exact state an owner signs
 * to reconcile it (owner-act.ts headReconcileDraft).
 */

export type OpenVerdict =
  | {
      readonly status: "ready";
      readonly tip: { readonly seq: number; readonly hash: Uint8Array };
      /** The head the verdict trusted. */
      readonly head: Head;
      /** Records the head lags behind the tip (0: none; > 0: roll forward). */
      readonly headLag: number;
      /** The last archive cut, if any. */
      readonly cut: CutCommitment | undefined;
      /** The store still holds records the cut moved to its archive (dropped by the ledger at open). */
      readonly pendingDrop: boolean;
    }
  | {
      readonly status: "blocked";
      readonly rule: RuleId;
      readonly reason: string;
      /** The first bad seq, where one is known. */
      readonly seq: number | undefined;
      /** What an owner-signed reconciliation must name; absent when none can help. */
      readonly observation: HeadObservation | undefined;
    };

export interface CheckOptions {
  readonly reader: StoreReader;
  readonly daemonKey: PublicKey;
  readonly ownerKey: PublicKey;
  readonly head: HeadRead;
  /** "open": seals after the head only, owner signatures only where acks need them. "verify": everything. */
  readonly mode: "open" | "verify";
  readonly onRecord?: (record: WalkedRecord) => void;
  readonly progress?: (done: number, total: number) => void;
  readonly yieldBetweenPages?: boolean;
  /**
   * "live" (default): the live store, walked from its last cut. "whole": a history put back
   * together from archives and the live store (verify --archive), walked from genesis; every
   * cut's hash (and each archive's signed cut head, `expectHash`) must be the record's own.
   */
  readonly history?: "live" | "whole";
  readonly expectHash?: ReadonlyMap<number, Uint8Array>;
  readonly payloadless?: (seq: number) => boolean;
}

/** Owner-signed acceptances of damaged ranges, by the seq each starts at. */
export function loadDamageAcks(reader: StoreReader, ownerKey: PublicKey): Map<number, DamageAck[]> {
  const acks = new Map<number, DamageAck[]>();
  for (let cursor = 0; ;) {
    const page = reader.recordsOfType(RecordType.RECONCILE, cursor, 256);
    if (page.length === 0) break;
    for (const row of page) {
      try {
        const header = decodeHeader(row.header);
        if (header.signer?.kind !== PrincipalKind.OWNER || !header.signature || !bytesEqual(header.signature.keyId, ownerKey.keyId)) continue;
        if (row.payload === null || !bytesEqual(sha256(row.payload), header.payloadDigest)) continue;
        const message = signingMessage("proposal", encodeProposal(proposalOf(header)));
        if (!verifySignature(ownerKey, message, header.signature.signature)) continue;
        const detail = decodePayload(row.payload).detail;
        if (detail.case !== "reconcile" || detail.value.subject.case !== "head" || !detail.value.subject.value.damaged) continue;
        const h = detail.value.subject.value;
        const tipSeq = toSafeNumber(h.tipSeq, "tip seq");
        if (row.seq !== tipSeq + 1) continue;
        const fromSeq = toSafeNumber(h.damageFromSeq, "damage seq");
        const list = acks.get(fromSeq) ?? [];
        list.push({ fromSeq, tipSeq, digest: h.damageDigest, reconcileSeq: row.seq });
        acks.set(fromSeq, list);
      } catch {
        continue;
      }
    }
    cursor = (page[page.length - 1] as { seq: number }).seq + 1;
  }
  return acks;
}

function genesisKeys(reader: StoreReader): { owner: Uint8Array; daemon: Uint8Array } | undefined {
  const row = reader.record(0);
  if (!row?.payload) return undefined;
  try {
    const detail = decodePayload(row.payload).detail;
    return detail.case === "genesis" ? { owner: detail.value.ownerPublicKey, daemon: detail.value.daemonPublicKey } : undefined;
  } catch {
    return undefined;
  }
}

export async function checkLedger(options: CheckOptions): Promise<{ verdict: OpenVerdict; walk: WalkResult | undefined }> {
  const { reader, daemonKey, ownerKey } = options;
  const tipRow = reader.tip();
  if (!tipRow) return { verdict: blocked("ledger.missing-record", "the ledger has no records (not initialized)", 0, undefined), walk: undefined };
  const keys = genesisKeys(reader);
  if (keys && (!bytesEqual(keys.owner, ownerKey.raw) || !bytesEqual(keys.daemon, daemonKey.raw))) {
    const which = bytesEqual(keys.owner, ownerKey.raw) ? "daemon" : "owner";
    return { verdict: blocked("ledger.key-mismatch", `genesis pins another ${which} key than this daemon holds`, 0, undefined), walk: undefined };
  }
  const head = options.head.status === "ok" ? options.head.head : undefined;
  let cut: CutCommitment | undefined;
  try {
    cut = findCut(reader);
  } catch (error) {
    if (!(error instanceof CodecError)) throw error;
    return { verdict: blocked("ledger.chain-broken", error.message, undefined, undefined), walk: undefined };
  }
  // Below the cut: only the kept records (cut.ts), unless the whole history is still there.
  const whole = cut === undefined || options.history === "whole" || reader.countBetween(0, cut.cutSeq - 1) === cut.cutSeq;
  const expectHash = new Map(options.expectHash ?? []);
  if (cut && whole) expectHash.set(cut.cutSeq - 1, cut.cutHash);
  let headHashSeen: Uint8Array | undefined;
  const walk = await walkChain({
    ...(cut && !whole ? { cut } : {}),
    expectHash,
    payloadless: options.payloadless,
    reader,
    daemonKey,
    ownerKey,
    sealSignaturesAfter: options.mode === "verify" || !head ? -1 : head.seq,
    ownerSignatures: options.mode === "verify",
    untilSeq: tipRow.seq,
    acks: loadDamageAcks(reader, ownerKey),
    onRecord: (record) => {
      if (head && record.seq === head.seq) headHashSeen = record.hash;
      options.onRecord?.(record);
    },
    progress: options.progress,
    yieldBetweenPages: options.yieldBetweenPages,
  });
  const tipSeq = tipRow.seq;
  const tipHash = headerHash(tipRow.header);
  const observe = (rule: RuleId, damage?: { from: number }): HeadObservation | undefined => {
    if (damage && damage.from === 0) return undefined;
    return {
      rule,
      tipSeq: BigInt(tipSeq),
      tipHash,
      headSeq: BigInt(head?.seq ?? 0),
      headHash: head?.hash ?? new Uint8Array(0),
      damaged: damage !== undefined,
      damageFromSeq: BigInt(damage?.from ?? 0),
      damageDigest: damage ? damageDigest(reader, damage.from, tipSeq) : new Uint8Array(0),
    };
  };
  if (!walk.ok) {
    const f = walk.failure;
    const rule: RuleId = f.code === "missing" ? "ledger.missing-record" : "ledger.chain-broken";
    return { verdict: blocked(rule, `record ${f.seq}: ${f.reason}`, f.seq, observe(rule, { from: f.damageFrom })), walk };
  }
  if (!head) {
    const why = options.head.status === "missing" ? "the signed head file is missing" : options.head.status === "invalid" ? options.head.reason : "";
    return { verdict: blocked("ledger.head-mismatch", why, undefined, observe("ledger.head-mismatch")), walk };
  }
  if (head.seq > tipSeq) {
    const reason = `the store ends at record ${tipSeq} but the signed head names record ${head.seq}: an older copy (rollback)`;
    return { verdict: blocked("ledger.rollback", reason, tipSeq + 1, observe("ledger.rollback")), walk };
  }
  if (!headHashSeen || !bytesEqual(headHashSeen, head.hash)) {
    const reason = `record ${head.seq} in the store is not the one the signed head names: the store diverged (fork)`;
    return { verdict: blocked("ledger.fork", reason, head.seq, observe("ledger.fork")), walk };
  }
  const cutProblem = cut && checkCutAct(reader, cut);
  if (cut && cutProblem) return { verdict: blocked("ledger.chain-broken", `record ${cut.seq}: ${cutProblem}`, cut.seq, undefined), walk };
  const pendingDrop = cut !== undefined && options.history !== "whole" && reader.countBetween(0, cut.cutSeq - 1) > cut.kept.size;
  return { verdict: { status: "ready", tip: { seq: tipSeq, hash: tipHash }, head, headLag: tipSeq - head.seq, cut, pendingDrop }, walk };
}

function blocked(rule: RuleId, reason: string, seq: number | undefined, observation: HeadObservation | undefined): OpenVerdict {
  return { status: "blocked", rule, reason, seq, observation };
}

/** Do two observations name the same state (every field equal)? */
export function sameObservation(a: HeadObservation, b: HeadObservation): boolean {
  return (
    a.rule === b.rule &&
    a.tipSeq === b.tipSeq &&
    bytesEqual(a.tipHash, b.tipHash) &&
    a.headSeq === b.headSeq &&
    bytesEqual(a.headHash, b.headHash) &&
    (a.damaged ?? false) === (b.damaged ?? false) &&
    (a.damageFromSeq ?? 0n) === (b.damageFromSeq ?? 0n) &&
    bytesEqual(a.damageDigest ?? new Uint8Array(0), b.damageDigest ?? new Uint8Array(0))
  );
}
