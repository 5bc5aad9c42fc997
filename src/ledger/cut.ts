import { PrincipalKind, RecordType } from "../gen/teamd/v1/ledger_pb.js";
import { bytesEqual, decodeHeader, decodePayload, sha256, toSafeNumber } from "./codec.js";
import { CodecError } from "./errors.js";
import type { StoreReader } from "./store.js";

/**
 * The cut commitment (§15 "archival moves records and keeps the head commitment"): what the
 * live store's last cut record says. The live chain resumes at `cutSeq`, its first record
 * linking to `cutHash` (the header hash of record cutSeq - 1, now in an archive); below it the
 * live store holds exactly the `kept` records, each with the header hash the cut record names.
 *
 * The cut record is read before the walk that verifies it (it is needed to walk what comes
 * before it), and is then verified by that same walk like any record above the cut: sealed
 * by the daemon, chained, under the signed head, and preceded by the owner-signed archive act
 * it carries out (checkCutAct). A cut record that is not what the daemon sealed fails the walk.
 */
export const CUT_ACTION = "archive.cut";
export const ARCHIVE_ACTION = "archive";

export interface CutCommitment {
  /** The cut record's own seq. */
  readonly seq: number;
  readonly fromSeq: number;
  readonly cutSeq: number;
  readonly cutHash: Uint8Array;
  /** The kept records below the cut: seq -> header hash. */
  readonly kept: ReadonlyMap<number, Uint8Array>;
  readonly fileDigest: Uint8Array;
  readonly file: string;
}

/** The last cut record in the store, if an archive was made; throws CodecError for one that does not read. */
export function findCut(reader: StoreReader): CutCommitment | undefined {
  const row = reader.lastOfType(RecordType.ARCHIVE);
  if (row === undefined) return undefined;
  const header = decodeHeader(row.header);
  if (header.action !== CUT_ACTION) {
    throw new CodecError(`record ${row.seq}: the last archive record is not a cut (an archive act without its cut record)`);
  }
  if (row.payload === null || !bytesEqual(sha256(row.payload), header.payloadDigest))
    throw new CodecError(`record ${row.seq}: the cut record's payload does not match its digest`);
  const detail = decodePayload(row.payload).detail;
  if (detail.case !== "archive") throw new CodecError(`record ${row.seq}: the cut record carries no archive detail`);
  const d = detail.value;
  const cutSeq = toSafeNumber(d.cutSeq, "cut seq");
  const kept = new Map<number, Uint8Array>();
  for (const k of d.kept) {
    const seq = toSafeNumber(k.seq, "kept seq");
    if (seq >= cutSeq || k.hash.byteLength !== 32) throw new CodecError(`record ${row.seq}: the cut record's kept record ${seq} is not below the cut`);
    kept.set(seq, k.hash);
  }
  if (cutSeq < 1 || cutSeq > row.seq || d.cutHash.byteLength !== 32) throw new CodecError(`record ${row.seq}: the cut record's cut does not read`);
  return {
    seq: row.seq,
    fromSeq: toSafeNumber(d.fromSeq, "from seq"),
    cutSeq,
    cutHash: d.cutHash,
    kept,
    fileDigest: d.fileDigest,
    file: d.file,
  };
}

/** The record before a cut record must be the owner-signed archive act it carries out; why not, or undefined. */
export function checkCutAct(reader: StoreReader, cut: CutCommitment): string | undefined {
  const row = reader.record(cut.seq - 1);
  if (row === undefined || row.payload === null) return `the archive act before the cut record ${cut.seq} is absent`;
  const header = decodeHeader(row.header);
  if (header.type !== RecordType.ARCHIVE || header.action !== ARCHIVE_ACTION || header.signer?.kind !== PrincipalKind.OWNER || !header.signature) {
    return `record ${cut.seq - 1} is not an owner-signed archive act; the cut record ${cut.seq} carries out none`;
  }
  const detail = decodePayload(row.payload).detail;
  if (detail.case !== "archive") return `record ${cut.seq - 1} carries no archive detail`;
  if (toSafeNumber(detail.value.beforeSeq, "before seq") < cut.cutSeq) return `the cut at ${cut.cutSeq} is past what the owner's act ${cut.seq - 1} allowed`;
  return undefined;
}
