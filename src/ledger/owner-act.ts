import { randomBytes } from "node:crypto";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import type { CapabilityUseSchema, HeadReconciliationSchema } from "../gen/teamd/v1/ledger_pb.js";
import {
  OwnerActSchema,
  PayloadType,
  PrincipalKind,
  ReconcileDecision,
  RecordType,
  RevocationSubject,
  StopScope,
  TargetKind,
  type KeySignature,
  type Proposal,
  type RecordPayload,
} from "../gen/teamd/v1/ledger_pb.js";
import { refuse, type Refusal } from "../kernel/decision.js";
import {
  bytesEqual,
  decodePayload,
  decodeProposal,
  encodePayload,
  encodeProposal,
  isKnownRecordType,
  ownerPrincipal,
  sha256,
  signingMessage,
  toHex,
  type RecordPayloadInit,
} from "./codec.js";
import { publicKeyFromRaw, verifySignature, type PublicKey } from "./keys.js";
import { ownerPublicKey, ownerSign } from "./owner-signing.js";

/**
 * An owner act (§9, §10, §11): a proposal the owner signed with the key pinned at genesis,
 * and the payload it commits to. The owner signs before the daemon decides where the act
 * goes in the chain, so the signature covers the canonical proposal (type, team, action,
 * capability, payload digest, signer) and not seq, time or prev hash. A second granter's
 * co-signature covers the same proposal bytes. The same encoded act is what a local stop or
 * revocation flag file holds, so a flag and its later record are one signed statement.
 */

export type CapabilityUseInit = MessageInitShape<typeof CapabilityUseSchema>;

export interface OwnerActDraft {
  readonly type: RecordType;
  readonly team?: string;
  readonly action: string;
  readonly capability?: CapabilityUseInit;
  readonly payload: RecordPayloadInit;
  /** A caller-supplied name, recorded as an unauthenticated claim. */
  readonly claimedName?: string;
}

export interface SignOptions {
  /** A second granter's seed (two-granter record). */
  readonly coSignerSeed?: Uint8Array;
}

/** Sign a draft with the owner's seed (@noble/ed25519) and return the encoded OwnerAct. */
export async function signOwnerAct(draft: OwnerActDraft, ownerSeed: Uint8Array, options: SignOptions = {}): Promise<Uint8Array> {
  const payload = encodePayload(draft.payload);
  const proposal = encodeProposal({
    type: draft.type,
    team: draft.team ?? "",
    action: draft.action,
    capability: draft.capability,
    payloadType: PayloadType.RECORD_PAYLOAD_V1,
    payloadDigest: sha256(payload),
    signer: ownerPrincipal(),
  });
  const message = signingMessage("proposal", proposal);
  const signature = { keyId: sha256(await ownerPublicKey(ownerSeed)), signature: await ownerSign(ownerSeed, message) };
  let coSignature;
  if (options.coSignerSeed) {
    const coPublic = await ownerPublicKey(options.coSignerSeed);
    coSignature = { keyId: sha256(coPublic), signature: await ownerSign(options.coSignerSeed, message), publicKey: coPublic };
  }
  return toBinary(OwnerActSchema, create(OwnerActSchema, { proposal, payload, signature, coSignature, claimedName: draft.claimedName ?? "" }));
}

/** An owner act whose bytes decoded, whose proposal is canonical and whose signatures verify. */
export interface CheckedOwnerAct {
  /** Hex SHA-256 of the proposal bytes: the act's identity (and a flag's file name). */
  readonly id: string;
  readonly proposal: Proposal;
  readonly payloadBytes: Uint8Array;
  readonly payload: RecordPayload;
  readonly signature: KeySignature;
  readonly coSignature: KeySignature | undefined;
  readonly claimedName: string;
}

/**
 * Check a co-signature over a proposal. A key genesis pins (the owner's) is named by id; any
 * other key must carry its public key, whose id must match. Whether that key held authority
 * is the kernel's question; this only proves the bytes were signed by it.
 */
export function verifyKeySignature(sig: KeySignature, message: Uint8Array, ownerKey: PublicKey): boolean {
  if (bytesEqual(sig.keyId, ownerKey.keyId)) return verifySignature(ownerKey, message, sig.signature);
  if (sig.publicKey.byteLength !== 32 || !bytesEqual(sha256(sig.publicKey), sig.keyId)) return false;
  return verifySignature(publicKeyFromRaw(sig.publicKey), message, sig.signature);
}

/** Decode and check an encoded owner act against the pinned owner key. Never throws. */
export function checkOwnerAct(bytes: Uint8Array, ownerKey: PublicKey): CheckedOwnerAct | Refusal {
  let proposal: Proposal;
  let payload: RecordPayload;
  let act;
  try {
    act = fromBinary(OwnerActSchema, bytes);
    proposal = decodeProposal(act.proposal);
    payload = decodePayload(act.payload);
  } catch {
    return refuse("owner.act-invalid", "the owner act does not decode");
  }
  if (!bytesEqual(encodeProposal(proposal), act.proposal)) return refuse("owner.act-invalid", "the proposal is not in canonical form");
  if (!isKnownRecordType(proposal.type)) return refuse("owner.act-invalid", `unknown record type ${proposal.type}`);
  if (proposal.signer?.kind !== PrincipalKind.OWNER) return refuse("owner.act-invalid", "the proposal's signer is not the owner");
  if (proposal.payloadType !== PayloadType.RECORD_PAYLOAD_V1) return refuse("owner.act-invalid", "unknown payload type");
  if (!bytesEqual(sha256(act.payload), proposal.payloadDigest)) return refuse("owner.act-invalid", "the payload does not match the proposal's digest");
  const signature = act.signature;
  const message = signingMessage("proposal", act.proposal);
  if (!signature || !bytesEqual(signature.keyId, ownerKey.keyId))
    return refuse("owner.signature", "the act is not signed with the owner key pinned at genesis");
  if (!verifySignature(ownerKey, message, signature.signature)) return refuse("owner.signature", "the owner signature does not verify");
  if (act.coSignature && !verifyKeySignature(act.coSignature, message, ownerKey)) return refuse("owner.signature", "the co-signature does not verify");
  return Object.freeze({
    id: toHex(sha256(act.proposal)),
    proposal,
    payloadBytes: act.payload,
    payload,
    signature,
    coSignature: act.coSignature,
    claimedName: act.claimedName,
  });
}

export function isRefusal(value: unknown): value is Refusal {
  return typeof value === "object" && value !== null && (value as { decision?: unknown }).decision === "refuse";
}

function nonceOr(nonce: Uint8Array | undefined): Uint8Array {
  return nonce ?? new Uint8Array(randomBytes(16));
}

/** The machine-wide stop, or one team's (§11). */
export function stopDraft(options: { team?: string; reason: string; nonce?: Uint8Array }): OwnerActDraft {
  const team = options.team ?? "";
  return {
    type: RecordType.STOP,
    team,
    action: team ? "stop.team" : "stop.machine",
    payload: {
      target: team ? { kind: TargetKind.TEAM, name: team } : { kind: TargetKind.MACHINE, name: "" },
      detail: { case: "stop", value: { scope: team ? StopScope.TEAM : StopScope.MACHINE, team, reason: options.reason, nonce: nonceOr(options.nonce) } },
    },
  };
}

/** Clear the named stops (their flag ids); only this act clears a stop. */
export function resumeDraft(options: { flagIds: readonly string[]; team?: string; nonce?: Uint8Array }): OwnerActDraft {
  return {
    type: RecordType.RESUME,
    team: options.team ?? "",
    action: "resume",
    payload: { detail: { case: "resume", value: { flagIds: [...options.flagIds], nonce: nonceOr(options.nonce) } } },
  };
}

export function revocationDraft(options: { team: string; subject: RevocationSubject; subjectId: string; reason: string; nonce?: Uint8Array }): OwnerActDraft {
  const kind =
    options.subject === RevocationSubject.LEASE ? TargetKind.LEASE : options.subject === RevocationSubject.GRANT ? TargetKind.GRANT : TargetKind.SEAT;
  return {
    type: RecordType.REVOCATION,
    team: options.team,
    action: "revoke",
    payload: {
      target: { kind, name: options.subjectId },
      detail: { case: "revocation", value: { subject: options.subject, subjectId: options.subjectId, reason: options.reason, nonce: nonceOr(options.nonce) } },
    },
  };
}

/** Renew a team's unattended runtime (§8): its clock starts again from this record. */
export function renewDraft(options: { team: string; nonce?: Uint8Array }): OwnerActDraft {
  return {
    type: RecordType.RENEW,
    team: options.team,
    action: "renew",
    payload: { target: { kind: TargetKind.TEAM, name: options.team }, detail: { case: "renew", value: { nonce: nonceOr(options.nonce) } } },
  };
}

/** Tombstone a record (§15): hide its content, keep its stub (src/ledger/tombstone.ts decides which records may be). */
export function tombstoneDraft(options: {
  subject: { seq: number; header: { type: RecordType; team: string }; payload: RecordPayload | undefined; payloadDigest: Uint8Array };
  reason: string;
  nonce?: Uint8Array;
}): OwnerActDraft {
  const { subject } = options;
  const revoked = subject.payload?.detail.case === "revocation" ? subject.payload.detail.value : undefined;
  return {
    type: RecordType.TOMBSTONE,
    team: subject.header.team,
    action: "tombstone",
    payload: {
      target: { kind: TargetKind.LEDGER, name: String(subject.seq) },
      detail: {
        case: "tombstone",
        value: {
          seq: BigInt(subject.seq),
          reason: options.reason,
          type: subject.header.type,
          ...(subject.payload?.target !== undefined ? { target: { kind: subject.payload.target.kind, name: subject.payload.target.name } } : {}),
          payloadDigest: subject.payloadDigest,
          ...(revoked !== undefined ? { revokedSubject: revoked.subject, revokedId: revoked.subjectId } : {}),
          nonce: nonceOr(options.nonce),
        },
      },
    },
  };
}

/**
 * Archive the records before `beforeSeq` to `file` (§15 archival, archive.ts): the owner signs
 * the request; the daemon's cut record, committed with it, says what was done. Without `keep`,
 * a cut through a record the gate still reads is refused (ledger.archive-needed).
 */
export function archiveDraft(options: { beforeSeq: number; file: string; keep: boolean; nonce?: Uint8Array }): OwnerActDraft {
  return {
    type: RecordType.ARCHIVE,
    action: "archive",
    payload: {
      target: { kind: TargetKind.LEDGER, name: options.file },
      detail: { case: "archive", value: { beforeSeq: BigInt(options.beforeSeq), file: options.file, keep: options.keep, nonce: nonceOr(options.nonce) } },
    },
  };
}

export type HeadObservation = MessageInitShape<typeof HeadReconciliationSchema>;

/** Accept the state the ledger observed when it failed closed (ledger.observation()). */
export function headReconcileDraft(observation: HeadObservation, nonce?: Uint8Array): OwnerActDraft {
  return {
    type: RecordType.RECONCILE,
    action: "reconcile.head",
    payload: {
      target: { kind: TargetKind.LEDGER, name: "" },
      detail: { case: "reconcile", value: { subject: { case: "head", value: observation }, nonce: nonceOr(nonce) } },
    },
  };
}

/** Resolve an unknown outcome: accept it as done, or repeat it under a new request id. */
export function outcomeReconcileDraft(options: {
  team: string;
  intentSeq: number;
  decision: ReconcileDecision.ACCEPT_DONE | ReconcileDecision.REPEAT;
  newRequestId?: string;
  nonce?: Uint8Array;
}): OwnerActDraft {
  return {
    type: RecordType.RECONCILE,
    team: options.team,
    action: options.decision === ReconcileDecision.REPEAT ? "reconcile.repeat" : "reconcile.accept-done",
    payload: {
      detail: {
        case: "reconcile",
        value: {
          subject: { case: "outcome", value: { intentSeq: BigInt(options.intentSeq), decision: options.decision, newRequestId: options.newRequestId ?? "" } },
          nonce: nonceOr(options.nonce),
        },
      },
    },
  };
}
