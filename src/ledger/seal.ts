import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { HeadStatementSchema, SealSchema, SealStatementSchema, SignedHeadSchema, type HeadStatement } from "../gen/teamd/v1/ledger_pb.js";
import { bytesEqual, signingMessage, toSafeNumber } from "./codec.js";
import { CodecError } from "./errors.js";
import { verifySignature, type DaemonSigner, type PublicKey } from "./keys.js";

/**
 * The daemon's two signatures. A **seal** is one per commit batch, stored in the batch's own
 * transaction: it signs the header hash of every record of the batch, so every committed
 * record is sealed even if the process dies right after the commit, and a verifier can say
 * exactly which record of a batch was altered. A **head** is the latest (seq, hash), signed
 * and kept outside the database, so a database that is an older or another copy is caught.
 *
 * Both sign the statement bytes exactly as stored, behind a domain string, so a seal can
 * never pass for a head or a proposal.
 */

export interface Seal {
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly headerHashes: readonly Uint8Array[];
}

export interface Head {
  readonly seq: number;
  readonly hash: Uint8Array;
  readonly timeUnixMs: number;
}

export function makeSeal(signer: DaemonSigner, firstSeq: number, headerHashes: readonly Uint8Array[]): Uint8Array {
  const statement = toBinary(
    SealStatementSchema,
    create(SealStatementSchema, {
      firstSeq: BigInt(firstSeq),
      lastSeq: BigInt(firstSeq + headerHashes.length - 1),
      headerHashes: [...headerHashes],
      keyId: signer.publicKey.keyId,
    }),
  );
  const signature = signer.sign(signingMessage("seal", statement));
  return toBinary(SealSchema, create(SealSchema, { statement, signature }));
}

/**
 * Split a stored Seal into its statement and signature, accepting only the exact encoding
 * the daemon writes: field 1 (statement, length-delimited), then field 2 (a 64-byte
 * signature), nothing else. protobuf-es decodes leniently (a tag with the wrong wire type
 * still reads), and a stored seal must be exactly the bytes written, so the framing is
 * checked here by hand — which is also what keeps verify close to the raw signature rate.
 */
function splitSeal(body: Uint8Array): { statement: Uint8Array; signature: Uint8Array } {
  if (body[0] !== 0x0a) throw new CodecError("the seal is not in canonical form");
  let length = 0;
  let shift = 0;
  let at = 1;
  for (;;) {
    const byte = body[at++];
    if (byte === undefined || shift > 28) throw new CodecError("the seal does not decode");
    length |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) break;
    shift += 7;
  }
  // A canonical varint has no trailing zero groups (except the single byte 0).
  if (at > 2 && body[at - 1] === 0) throw new CodecError("the seal is not in canonical form");
  const statementEnd = at + length;
  if (length === 0 || statementEnd + 66 !== body.byteLength || body[statementEnd] !== 0x12 || body[statementEnd + 1] !== 0x40) {
    throw new CodecError("the seal is not in canonical form");
  }
  return { statement: body.subarray(at, statementEnd), signature: body.subarray(statementEnd + 2) };
}

/**
 * Decode a stored seal; check its signature unless `checkSignature` is false (the open path
 * skips signatures the signed head already vouches for through the chain). Throws CodecError
 * naming what is wrong.
 */
export function readSeal(body: Uint8Array, daemonKey: PublicKey, checkSignature: boolean): Seal {
  const { statement: statementBytes, signature } = splitSeal(body);
  if (checkSignature && !verifySignature(daemonKey, signingMessage("seal", statementBytes), signature)) {
    throw new CodecError("the seal's signature does not verify");
  }
  const statement = parseSealStatement(statementBytes);
  if (!bytesEqual(statement.keyId, daemonKey.keyId)) throw new CodecError("the seal names another daemon key");
  const { firstSeq, lastSeq, headerHashes } = statement;
  if (lastSeq < firstSeq || headerHashes.length !== lastSeq - firstSeq + 1) {
    throw new CodecError("the seal's range and hash list disagree");
  }
  return { firstSeq, lastSeq, headerHashes };
}

/**
 * A SealStatement in exactly the encoding makeSeal writes (protobuf-es: fields in number
 * order, zero seqs omitted, 32-byte hashes): anything else is refused. Verify reads one per
 * commit batch, so this avoids protobuf-es's generic decode and re-encode on that path;
 * test/ledger/seal.test.ts checks it against protobuf-es on every shape it can take.
 */
export function parseSealStatement(bytes: Uint8Array): { firstSeq: number; lastSeq: number; headerHashes: Uint8Array[]; keyId: Uint8Array } {
  let at = 0;
  const fail = (): never => {
    throw new CodecError("the seal statement is not in canonical form");
  };
  const varint = (): number => {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const byte = bytes[at++];
      if (byte === undefined) return fail();
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) {
        if (i > 0 && byte === 0) fail();
        if (value > Number.MAX_SAFE_INTEGER) fail();
        return value;
      }
      scale *= 128;
    }
    return fail();
  };
  const chunk = (): Uint8Array => {
    const length = varint();
    if (at + length > bytes.byteLength) fail();
    const out = bytes.subarray(at, at + length);
    at += length;
    return out;
  };
  let firstSeq = 0;
  let lastSeq = 0;
  const headerHashes: Uint8Array[] = [];
  if (bytes[at] === 0x08) {
    at++;
    firstSeq = varint();
    if (firstSeq === 0) fail();
  }
  if (bytes[at] === 0x10) {
    at++;
    lastSeq = varint();
    if (lastSeq === 0) fail();
  }
  while (bytes[at] === 0x1a) {
    at++;
    const hash = chunk();
    if (hash.byteLength !== 32) fail();
    headerHashes.push(hash);
  }
  if (bytes[at++] !== 0x22) fail();
  const keyId = chunk();
  if (keyId.byteLength !== 32 || at !== bytes.byteLength) fail();
  return { firstSeq, lastSeq, headerHashes, keyId };
}

export function makeSignedHead(signer: DaemonSigner, head: Head): Uint8Array {
  const statement = toBinary(
    HeadStatementSchema,
    create(HeadStatementSchema, {
      seq: BigInt(head.seq),
      hash: head.hash,
      timeUnixMs: BigInt(head.timeUnixMs),
      keyId: signer.publicKey.keyId,
    }),
  );
  const signature = signer.sign(signingMessage("head", statement));
  return toBinary(SignedHeadSchema, create(SignedHeadSchema, { statement, signature }));
}

/** Decode and verify a signed head; throws CodecError if it is not one the daemon signed. */
export function readSignedHead(bytes: Uint8Array, daemonKey: PublicKey): Head {
  let statement: HeadStatement;
  try {
    const signed = fromBinary(SignedHeadSchema, bytes);
    if (!bytesEqual(toBinary(SignedHeadSchema, signed), bytes)) throw new CodecError("the head is not in canonical form");
    if (!verifySignature(daemonKey, signingMessage("head", signed.statement), signed.signature)) {
      throw new CodecError("the head's signature does not verify");
    }
    statement = fromBinary(HeadStatementSchema, signed.statement);
    if (!bytesEqual(toBinary(HeadStatementSchema, statement), signed.statement)) throw new CodecError("the head statement is not in canonical form");
  } catch (error) {
    if (error instanceof CodecError) throw error;
    throw new CodecError("the head does not decode");
  }
  if (!bytesEqual(statement.keyId, daemonKey.keyId)) throw new CodecError("the head names another daemon key");
  if (statement.hash.byteLength !== 32) throw new CodecError("the head's hash is not 32 bytes");
  return {
    seq: toSafeNumber(statement.seq, "head seq"),
    hash: statement.hash,
    timeUnixMs: toSafeNumber(statement.timeUnixMs, "head time"),
  };
}
