import { createHash, hash as oneShotHash, timingSafeEqual } from "node:crypto";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import type { PrincipalSchema } from "../gen/teamd/v1/ledger_pb.js";
import {
  PayloadType,
  PrincipalKind,
  ProposalSchema,
  RecordHeaderSchema,
  RecordPayloadSchema,
  RecordType,
  type Principal,
  type Proposal,
  type RecordHeader,
  type RecordPayload,
} from "../gen/teamd/v1/ledger_pb.js";
import { CodecError } from "./errors.js";

/**
 * The record codec (§15): a record is a header that commits to its payload by SHA-256, and
 * the chain hashes the header bytes exactly as stored. Nothing here ever re-encodes a stored
 * header to hash it; a stored record is (header bytes, payload bytes) and both digests are
 * taken over those bytes. Encoding happens once, when the daemon builds a record.
 */

/**
 * The header format this code writes. 2 adds the co-authorization of a two-granter record (the
 * second principal, attested by the daemon's seal) in place of a second key signature; a
 * format-1 header (what earlier releases wrote) is still read and verified.
 */
export const HEADER_FORMAT = 2;
export const HEADER_FORMATS_READ: readonly number[] = [1, 2];

/**
 * Domain strings prefixed to every signed message, so a signature made for one purpose
 * (a proposal, a seal, a head) can never be presented as another.
 */
export const SIGNING_DOMAIN = {
  proposal: "teamd.v1.proposal\0",
  seal: "teamd.v1.seal\0",
  head: "teamd.v1.head\0",
} as const;

export type RecordHeaderInit = MessageInitShape<typeof RecordHeaderSchema>;
export type RecordPayloadInit = MessageInitShape<typeof RecordPayloadSchema>;
export type PrincipalInit = MessageInitShape<typeof PrincipalSchema>;

export function sha256(...parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) {
    // The one-shot form is about twice as fast; verify hashes every header and payload.
    const digest = oneShotHash("sha256", parts[0] as Uint8Array, "buffer");
    return new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength);
  }
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return new Uint8Array(hash.digest());
}

export function bytesEqual(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.byteLength !== b.byteLength) return false;
  // Native compare: a JS loop here goes megamorphic (Buffer and Uint8Array both arrive).
  return timingSafeEqual(a, b);
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

export function fromHex(hex: string): Uint8Array {
  if (!/^(?:[0-9a-f]{2})*$/i.test(hex)) throw new CodecError(`not a hex string: ${hex.slice(0, 16)}…`);
  return new Uint8Array(Buffer.from(hex, "hex"));
}

const DOMAIN_BYTES: Readonly<Record<keyof typeof SIGNING_DOMAIN, Uint8Array>> = Object.freeze({
  proposal: new TextEncoder().encode(SIGNING_DOMAIN.proposal),
  seal: new TextEncoder().encode(SIGNING_DOMAIN.seal),
  head: new TextEncoder().encode(SIGNING_DOMAIN.head),
});

/** The message a signature covers: a domain string, then the exact bytes. */
export function signingMessage(domain: keyof typeof SIGNING_DOMAIN, bytes: Uint8Array): Uint8Array {
  const prefix = DOMAIN_BYTES[domain];
  const out = new Uint8Array(prefix.byteLength + bytes.byteLength);
  out.set(prefix, 0);
  out.set(bytes, prefix.byteLength);
  return out;
}

/** uint64 fields are bigint in protobuf-es; the ledger counts in safe JS integers. */
export function toSafeNumber(value: bigint, what: string): number {
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) throw new CodecError(`${what} out of range: ${value}`);
  return Number(value);
}

export function encodeHeader(init: RecordHeaderInit): Uint8Array {
  return toBinary(RecordHeaderSchema, create(RecordHeaderSchema, init));
}

export function decodeHeader(bytes: Uint8Array): RecordHeader {
  try {
    return fromBinary(RecordHeaderSchema, bytes);
  } catch (error) {
    throw new CodecError(`header does not decode: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export function encodePayload(init: RecordPayloadInit): Uint8Array {
  return toBinary(RecordPayloadSchema, create(RecordPayloadSchema, init));
}

export function decodePayload(bytes: Uint8Array): RecordPayload {
  try {
    return fromBinary(RecordPayloadSchema, bytes);
  } catch (error) {
    throw new CodecError(`payload does not decode: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The chain's link: SHA-256 of the header bytes as stored. */
export function headerHash(headerBytes: Uint8Array): Uint8Array {
  return sha256(headerBytes);
}

export function payloadDigest(payloadBytes: Uint8Array): Uint8Array {
  return sha256(payloadBytes);
}

/**
 * The canonical proposal of a header: the fields of an act that do not depend on where the
 * daemon places it (seq, time, prev hash are added later and are not signed by the owner).
 * Canonical means protobuf-es's binary encoding of a freshly created Proposal: fields in
 * number order, defaults omitted, no unknown fields. An owner act whose proposal bytes are
 * not exactly this encoding is refused at append, so verification can rebuild it.
 */
export function proposalOf(header: RecordHeader): Proposal {
  return create(ProposalSchema, {
    type: header.type,
    team: header.team,
    action: header.action,
    capability: header.capability,
    payloadType: header.payloadType,
    payloadDigest: header.payloadDigest,
    signer: header.signer,
  });
}

export function encodeProposal(proposal: Proposal | MessageInitShape<typeof ProposalSchema>): Uint8Array {
  return toBinary(ProposalSchema, create(ProposalSchema, proposal));
}

export function decodeProposal(bytes: Uint8Array): Proposal {
  try {
    return fromBinary(ProposalSchema, bytes);
  } catch (error) {
    throw new CodecError(`proposal does not decode: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export const DEFAULT_PAYLOAD_TYPE = PayloadType.RECORD_PAYLOAD_V1;

const TYPE_NAMES: Readonly<Record<RecordType, string>> = {
  [RecordType.UNSPECIFIED]: "unspecified",
  [RecordType.GENESIS]: "genesis",
  [RecordType.POLICY]: "policy",
  [RecordType.GRANT]: "grant",
  [RecordType.AGREEMENT]: "agreement",
  [RecordType.LEASE]: "lease",
  [RecordType.REVOCATION]: "revocation",
  [RecordType.INTENT]: "intent",
  [RecordType.OUTCOME]: "outcome",
  [RecordType.REVIEW]: "review",
  [RecordType.GATE]: "gate",
  [RecordType.REFUSAL]: "refusal",
  [RecordType.NOTICE]: "notice",
  [RecordType.STOP]: "stop",
  [RecordType.RESUME]: "resume",
  [RecordType.RECONCILE]: "reconcile",
  [RecordType.SEAT_START]: "seat_start",
  [RecordType.SEAT_STOP]: "seat_stop",
  [RecordType.CHECKPOINT]: "checkpoint",
  [RecordType.TEAM]: "team",
  [RecordType.SERVED]: "served",
  [RecordType.TOMBSTONE]: "tombstone",
  [RecordType.RENEW]: "renew",
  [RecordType.METER]: "meter",
  [RecordType.RESERVE]: "reserve",
  [RecordType.ARCHIVE]: "archive",
  [RecordType.CREATE_BOUND]: "create_bound",
};

/** The lower-case name `teamd log` prints and `--type` accepts. */
export function recordTypeName(type: RecordType): string {
  return TYPE_NAMES[type] ?? `type-${type as number}`;
}

export function recordTypeFromName(name: string): RecordType | undefined {
  for (const [value, label] of Object.entries(TYPE_NAMES)) if (label === name) return Number(value) as RecordType;
  return undefined;
}

/** A record type this code knows (an unknown type is refused, never guessed). */
export function isKnownRecordType(type: number): type is RecordType {
  return type !== RecordType.UNSPECIFIED && Object.prototype.hasOwnProperty.call(TYPE_NAMES, type);
}

export function ownerPrincipal(): PrincipalInit {
  return { kind: PrincipalKind.OWNER };
}

export function daemonPrincipal(): PrincipalInit {
  return { kind: PrincipalKind.DAEMON };
}

export function seatPrincipal(team: string, seat: string): PrincipalInit {
  return { kind: PrincipalKind.SEAT, team, seat };
}

/** A stable string for a principal: "owner", "daemon", "seat:team/name". */
export function principalKey(principal: Principal | PrincipalInit | undefined): string {
  switch (principal?.kind) {
    case PrincipalKind.OWNER:
      return "owner";
    case PrincipalKind.DAEMON:
      return "daemon";
    case PrincipalKind.SEAT:
      return `seat:${principal.team ?? ""}/${principal.seat ?? ""}`;
    default:
      return "unknown";
  }
}
