import { createHash } from "node:crypto";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { PrincipalKind, RecordPayloadSchema, RecordType, type RecordHeader, type RecordPayload } from "../gen/teamd/v1/ledger_pb.js";
import {
  bytesEqual,
  decodeHeader,
  decodePayload,
  encodeProposal,
  HEADER_FORMATS_READ,
  headerHash,
  proposalOf,
  sha256,
  signingMessage,
  toSafeNumber,
} from "./codec.js";
import { CodecError, describeError } from "./errors.js";
import type { PublicKey } from "./keys.js";
import { verifyKeySignature } from "./owner-act.js";
import { readSeal, type Seal } from "./seal.js";
import type { StoredRecord, StoredSeal, StoreReader } from "./store.js";

/**
 * The one walk over the chain, shared by open (which rebuilds the view as it goes) and
 * verify. Every record is checked against the seal of its batch (the header bytes as stored
 * must hash to what the daemon signed), its link to the previous header, its payload digest
 * and, when asked, its owner signature. The first failure names exactly one seq: a record
 * whose own bytes are wrong is that record's seq; a seal that does not verify is the seq it
 * is stored under (its batch's last).
 */

export type FailureCode =
  "missing" | "unsealed" | "seal" | "header" | "sealed-hash" | "seq" | "type-column" | "prev-link" | "payload" | "genesis" | "signature" | "cut";

export interface WalkFailure {
  readonly seq: number;
  readonly code: FailureCode;
  readonly reason: string;
  /** The first seq whose verification this failure affects: just after the last wholly verified batch. */
  readonly damageFrom: number;
}

export interface WalkedRecord {
  readonly seq: number;
  readonly hash: Uint8Array;
  readonly header: RecordHeader;
  readonly payload: RecordPayload;
}

/** An owner's acceptance of a damaged range (HeadReconciliation with damaged = true). */
export interface DamageAck {
  readonly fromSeq: number;
  readonly tipSeq: number;
  readonly digest: Uint8Array;
  readonly reconcileSeq: number;
}

export interface WalkOptions {
  readonly reader: StoreReader;
  readonly daemonKey: PublicKey;
  readonly ownerKey: PublicKey;
  /** Check the signature of every seal stored under a seq above this (-1: all of them). */
  readonly sealSignaturesAfter: number;
  /** Check the owner signature (and co-signature) of every owner-signed record. */
  readonly ownerSignatures: boolean;
  /** Walk up to this seq (default: the store's tip). */
  readonly untilSeq?: number;
  /** Owner-accepted damaged ranges, by the seq they start at. */
  readonly acks?: ReadonlyMap<number, readonly DamageAck[]>;
  readonly onRecord?: (record: WalkedRecord) => void;
  readonly progress?: (done: number, total: number) => void;
  /** Yield to the event loop between pages, so a long verify does not stall the daemon. */
  readonly yieldBetweenPages?: boolean;
  readonly pageSize?: number;
  /**
   * Walk a live store an archive cut (cut.ts): below `cutSeq` only the kept records, each
   * checked against the hash the cut record names (not against seals or links: their
   * neighbours are in the archive); from `cutSeq` on, the chain as usual, its first record
   * linking to `cutHash`.
   */
  readonly cut?: { readonly cutSeq: number; readonly cutHash: Uint8Array; readonly kept: ReadonlyMap<number, Uint8Array> };
  /** Records that must have exactly this header hash (a whole history walked across a cut: the cut's own hash). */
  readonly expectHash?: ReadonlyMap<number, Uint8Array>;
  /** Records whose payload may be absent: tombstoned records in an archive (their header still commits to it). */
  readonly payloadless?: (seq: number) => boolean;
}

export interface WalkSummary {
  /** The last record walked (the tip unless untilSeq was given). */
  readonly last: { readonly seq: number; readonly hash: Uint8Array } | undefined;
  readonly records: number;
  readonly seals: number;
  readonly acknowledged: readonly DamageAck[];
}

export type WalkResult = ({ readonly ok: true } & WalkSummary) | ({ readonly ok: false; readonly failure: WalkFailure } & WalkSummary);

/** SHA-256 over every stored byte of records and seals in [fromSeq, toSeq], framed. */
export function damageDigest(reader: StoreReader, fromSeq: number, toSeq: number): Uint8Array {
  const hash = createHash("sha256");
  const frame = (n: number, bytes: Uint8Array | null) => {
    const head = Buffer.alloc(12);
    head.writeBigUInt64BE(BigInt(n), 0);
    head.writeUInt32BE(bytes === null ? 0xffffffff : bytes.byteLength, 8);
    hash.update(head);
    if (bytes) hash.update(bytes);
  };
  for (let cursor = fromSeq; cursor <= toSeq;) {
    const page = reader.records(cursor, 512, toSeq);
    if (page.length === 0) break;
    for (const r of page) {
      frame(r.seq, r.header);
      frame(r.type, r.payload);
    }
    cursor = (page[page.length - 1] as StoredRecord).seq + 1;
  }
  for (let cursor = fromSeq; cursor <= toSeq;) {
    const page = reader.seals(cursor, 512, toSeq);
    if (page.length === 0) break;
    for (const s of page) frame(s.seq, s.body);
    cursor = (page[page.length - 1] as { seq: number }).seq + 1;
  }
  return new Uint8Array(hash.digest());
}

const EMPTY_PAYLOAD: RecordPayload = Object.freeze(create(RecordPayloadSchema));

class Failure extends Error {
  constructor(
    readonly seq: number,
    readonly code: FailureCode,
    readonly reason: string,
  ) {
    super(reason);
  }
}

export async function walkChain(options: WalkOptions): Promise<WalkResult> {
  const { reader, daemonKey, ownerKey } = options;
  const until = options.untilSeq ?? reader.tip()?.seq ?? -1;
  const pageSize = options.pageSize ?? 1024;
  const acknowledged: DamageAck[] = [];
  let expected = 0;
  let prevHash: Uint8Array = new Uint8Array(0);
  let seal: Seal | undefined;
  let lastGoodEnd = -1;
  let last: { seq: number; hash: Uint8Array } | undefined;
  let records = 0;
  let seals = 0;

  const summary = (): WalkSummary => ({ last, records, seals, acknowledged });

  // Seals are read a page at a time too: one query per batch would cost as much as its signature.
  let sealPage: StoredSeal[] = [];
  let sealAt = 0;
  function nextSeal(fromSeq: number): StoredSeal | undefined {
    while (sealAt < sealPage.length && (sealPage[sealAt] as StoredSeal).seq < fromSeq) sealAt++;
    if (sealAt >= sealPage.length) {
      sealPage = reader.seals(fromSeq, pageSize);
      sealAt = 0;
    }
    return sealPage[sealAt];
  }

  const cut = options.cut;
  const keptSeen = new Set<number>();

  function checkKept(row: StoredRecord, keptHash: Uint8Array | undefined): void {
    if (keptHash === undefined) {
      throw new Failure(row.seq, "cut", `record ${row.seq} is below the archive cut at ${cut?.cutSeq} and not one the cut record keeps`);
    }
    const hash = headerHash(row.header);
    if (!bytesEqual(hash, keptHash)) throw new Failure(row.seq, "sealed-hash", `the header of record ${row.seq} is not the one the cut record kept`);
    const { header, payload } = checkContent(row);
    options.onRecord?.({ seq: row.seq, hash, header, payload });
    keptSeen.add(row.seq);
    records++;
  }

  /** Past the kept records, the chain resumes at the cut: every kept record must have been there. */
  function enterCut(): void {
    if (!cut || expected >= cut.cutSeq) return;
    if (keptSeen.size !== cut.kept.size) {
      const missing = [...cut.kept.keys()].sort((a, b) => a - b).find((seq) => !keptSeen.has(seq)) ?? cut.cutSeq;
      throw new Failure(missing, "missing", `record ${missing}, which the archive cut keeps in the live store, is absent from it`);
    }
    expected = cut.cutSeq;
    prevHash = cut.cutHash;
    lastGoodEnd = cut.cutSeq - 1;
  }

  /** The checks on a record's own bytes (not its place in the chain); its decoded header and payload. */
  function checkContent(row: StoredRecord): { header: RecordHeader; payload: RecordPayload } {
    let header: RecordHeader;
    let payload: RecordPayload;
    try {
      header = decodeHeader(row.header);
    } catch (error) {
      throw new Failure(row.seq, "header", describeError(error));
    }
    if (!HEADER_FORMATS_READ.includes(header.format)) throw new Failure(row.seq, "header", `unknown header format ${header.format}`);
    if (header.format < 2 && header.coAuthorization !== undefined)
      throw new Failure(row.seq, "header", `a format-${header.format} header carries a co-authorization, which format 2 introduced`);
    let headerSeq: number;
    try {
      headerSeq = toSafeNumber(header.seq, "seq");
    } catch (error) {
      throw new Failure(row.seq, "seq", describeError(error));
    }
    if (headerSeq !== row.seq) throw new Failure(row.seq, "seq", `stored as ${row.seq}, the header says ${headerSeq}`);
    if (header.type !== row.type) throw new Failure(row.seq, "type-column", `the type column says ${row.type}, the header ${header.type}`);
    if (row.payload === null) {
      if (row.seq === 0 || !options.payloadless?.(row.seq)) throw new Failure(row.seq, "payload", `record ${row.seq} has no payload and no tombstone names it`);
      payload = EMPTY_PAYLOAD;
    } else {
      if (!bytesEqual(sha256(row.payload), header.payloadDigest))
        throw new Failure(row.seq, "payload", `the payload of record ${row.seq} does not match its digest`);
      // The digest already proves these are the bytes sealed; decode only what is used.
      const needPayload = row.seq === 0 || options.onRecord !== undefined;
      try {
        payload = needPayload ? decodePayload(row.payload) : EMPTY_PAYLOAD;
      } catch (error) {
        throw new Failure(row.seq, "payload", describeError(error));
      }
    }
    const checkOwner = options.ownerSignatures || row.seq === 0;
    if (row.seq === 0) checkGenesis(header, payload);
    else if (header.type === RecordType.GENESIS) throw new Failure(row.seq, "genesis", "a second genesis record");
    if (checkOwner && (header.signer?.kind === PrincipalKind.OWNER || header.signature)) {
      const message = signingMessage("proposal", encodeProposal(proposalOf(header)));
      if (!header.signature || !bytesEqual(header.signature.keyId, ownerKey.keyId) || !verifyKeySignature(header.signature, message, ownerKey)) {
        throw new Failure(row.seq, "signature", `the owner signature of record ${row.seq} does not verify`);
      }
      if (header.coSignature && !verifyKeySignature(header.coSignature, message, ownerKey)) {
        throw new Failure(row.seq, "signature", `the co-signature of record ${row.seq} does not verify`);
      }
    }
    return { header, payload };
  }

  function checkRecord(row: StoredRecord): void {
    if (cut && row.seq < cut.cutSeq) return checkKept(row, cut.kept.get(row.seq));
    enterCut();
    if (row.seq !== expected) throw new Failure(expected, "missing", `record ${expected} is absent from the store`);
    if (!seal || row.seq > seal.lastSeq) {
      const stored = nextSeal(row.seq);
      if (!stored) throw new Failure(row.seq, "unsealed", `record ${row.seq} is covered by no seal`);
      try {
        seal = readSeal(stored.body, daemonKey, stored.seq > options.sealSignaturesAfter);
      } catch (error) {
        throw new Failure(stored.seq, "seal", `seal ${stored.seq}: ${describeError(error)}`);
      }
      if (seal.lastSeq !== stored.seq) throw new Failure(stored.seq, "seal", `seal stored under ${stored.seq} covers up to ${seal.lastSeq}`);
      if (seal.firstSeq > row.seq) throw new Failure(row.seq, "unsealed", `record ${row.seq} is covered by no seal`);
      if (seal.firstSeq < row.seq) throw new Failure(stored.seq, "seal", `seal ${stored.seq} overlaps an earlier batch`);
      seals++;
    }
    const hash = headerHash(row.header);
    if (!bytesEqual(hash, seal.headerHashes[row.seq - seal.firstSeq])) {
      throw new Failure(row.seq, "sealed-hash", `the header of record ${row.seq} is not the one the daemon sealed`);
    }
    const expectedHash = options.expectHash?.get(row.seq);
    if (expectedHash !== undefined && !bytesEqual(hash, expectedHash))
      throw new Failure(row.seq, "cut", `record ${row.seq} is not the one an archive cut names as its last (the archive and the live store grew apart)`);
    const { header, payload } = checkContent(row);
    if (!bytesEqual(header.prevHash, prevHash)) throw new Failure(row.seq, "prev-link", `record ${row.seq} does not link to record ${row.seq - 1}`);
    options.onRecord?.({ seq: row.seq, hash, header, payload });
    prevHash = hash;
    last = { seq: row.seq, hash };
    records++;
    expected++;
    if (row.seq === seal.lastSeq) lastGoodEnd = row.seq;
  }

  function checkGenesis(header: RecordHeader, payload: RecordPayload): void {
    if (header.type !== RecordType.GENESIS || payload.detail.case !== "genesis") throw new Failure(0, "genesis", "record 0 is not a genesis record");
    const g = payload.detail.value;
    if (!bytesEqual(g.ownerPublicKey, ownerKey.raw)) throw new Failure(0, "genesis", "genesis pins another owner key");
    if (!bytesEqual(g.daemonPublicKey, daemonKey.raw)) throw new Failure(0, "genesis", "genesis pins another daemon key");
  }

  /** Skip an owner-accepted damaged range; true if the failure was acknowledged. */
  function acknowledge(failure: Failure): boolean {
    const ack = (options.acks?.get(lastGoodEnd + 1) ?? []).find(
      (a) => failure.seq <= a.tipSeq && bytesEqual(damageDigest(reader, a.fromSeq, a.tipSeq), a.digest),
    );
    const tip = ack && reader.record(ack.tipSeq);
    if (!ack || !tip) return false;
    acknowledged.push(ack);
    prevHash = headerHash(tip.header);
    last = { seq: ack.tipSeq, hash: prevHash };
    expected = ack.tipSeq + 1;
    lastGoodEnd = ack.tipSeq;
    seal = undefined;
    return true;
  }

  let cursor = 0;
  try {
    while (cursor <= until) {
      const page = reader.records(cursor, pageSize, until);
      if (page.length === 0) {
        const at = cut && cursor < cut.cutSeq ? cut.cutSeq : cursor;
        throw new Failure(at, "missing", `record ${at} is absent from the store`);
      }
      let next = (page[page.length - 1] as StoredRecord).seq + 1;
      for (const row of page) {
        try {
          checkRecord(row);
        } catch (error) {
          if (!(error instanceof Failure)) throw error;
          if (!acknowledge(error)) throw error;
          next = expected;
          break;
        }
      }
      cursor = next;
      options.progress?.(Math.min(cursor, until + 1), until + 1);
      if (options.yieldBetweenPages) await yieldToLoop();
    }
    // The batch of the last record walked must be whole: a seal naming records past it means
    // records of a committed batch are gone (a batch commits atomically).
    if (seal && seal.lastSeq > until && expected === until + 1) {
      throw new Failure(until + 1, "missing", `record ${until + 1} is sealed but absent from the store`);
    }
  } catch (error) {
    if (error instanceof Failure) {
      return { ok: false, failure: { seq: error.seq, code: error.code, reason: error.reason, damageFrom: lastGoodEnd + 1 }, ...summary() };
    }
    if (error instanceof CodecError) {
      return { ok: false, failure: { seq: expected, code: "header", reason: error.message, damageFrom: lastGoodEnd + 1 }, ...summary() };
    }
    throw error;
  }
  return { ok: true, ...summary() };
}
