import { create, toBinary } from "@bufbuild/protobuf";
import { PayloadType, RecordHeaderSchema, RecordPayloadSchema, type KeySignature, type RecordPayload, type RecordType } from "../gen/teamd/v1/ledger_pb.js";
import type { Refusal } from "../kernel/decision.js";
import { HEADER_FORMAT, headerHash, ownerPrincipal, sha256, type PrincipalInit } from "./codec.js";
import type { WalkedRecord } from "./chain-walk.js";
import type { Flag } from "./flags.js";
import type { CapabilityUseInit, CheckedOwnerAct, HeadObservation } from "./owner-act.js";
import type { StoredRecord } from "./store.js";
import type { RecordDraft } from "./record-draft.js";
import type { LedgerView } from "./view.js";

/**
 * A record on its way into the chain: everything but its place (seq, time, prev hash), which
 * the commit assigns under the one serialization. Owner acts arrive with their payload bytes
 * fixed (the owner signed their digest); the daemon's own records are encoded here.
 */
export interface PendingRecord {
  readonly type: RecordType;
  readonly team: string;
  readonly actor: PrincipalInit;
  readonly signer: PrincipalInit;
  readonly claimedName: string;
  readonly action: string;
  readonly capability: CapabilityUseInit | undefined;
  readonly payloadBytes: Uint8Array;
  readonly payload: RecordPayload;
  readonly signature?: KeySignature;
  readonly coSignature?: KeySignature;
  readonly coAuthorization?: RecordDraft["coAuthorization"];
  readonly flag?: { readonly flagId: string; readonly late: boolean };
  /** Set only on the owner's head reconciliation: the one record appended while blocked. */
  readonly reconcilesHead?: HeadObservation;
  /** Recorded at most once: a second submit returns the first record (owner acts, flags, recovery). */
  readonly once?: { readonly key: string; readonly recorded: (view: LedgerView) => number | undefined };
  /** Re-checked at commit time, against the view as of the previous batch. */
  readonly check?: (view: LedgerView) => Refusal | undefined;
  /**
   * Records that commit right after this one in the same transaction, or not at all (a
   * change and its cascade of revocations, §7): one atomic batch, never torn by a crash.
   */
  readonly companions?: readonly PendingRecord[];
}

export function daemonRecord(draft: RecordDraft): PendingRecord {
  const payload = create(RecordPayloadSchema, draft.payload);
  return {
    type: draft.type,
    team: draft.team ?? "",
    actor: draft.actor,
    signer: draft.signer ?? draft.actor,
    claimedName: draft.claimedName ?? "",
    action: draft.action,
    capability: draft.capability,
    payloadBytes: toBinary(RecordPayloadSchema, payload),
    payload,
    ...(draft.coAuthorization !== undefined ? { coAuthorization: draft.coAuthorization } : {}),
    ...(draft.check !== undefined ? { check: draft.check } : {}),
  };
}

export function ownerRecord(act: CheckedOwnerAct, extra: Partial<Pick<PendingRecord, "flag" | "reconcilesHead" | "check" | "companions">> = {}): PendingRecord {
  return {
    type: act.proposal.type,
    team: act.proposal.team,
    actor: ownerPrincipal(),
    signer: ownerPrincipal(),
    claimedName: act.claimedName,
    action: act.proposal.action,
    capability: act.proposal.capability,
    payloadBytes: act.payloadBytes,
    payload: act.payload,
    signature: act.signature,
    coSignature: act.coSignature,
    once: { key: `act:${act.id}`, recorded: (view) => view.ownerAct(act.id) },
    ...extra,
  };
}

/** A flag's act as a record; `late` when the store could not record it as it took effect. */
export function flagRecord(flag: Flag, late: boolean): PendingRecord {
  return ownerRecord(flag.act, { flag: { flagId: flag.id, late } });
}

export interface BuiltRecord {
  readonly row: StoredRecord;
  readonly walked: WalkedRecord;
}

/** Place a pending record at seq, after prevHash, at time: encode its header once. */
export function buildRecord(pending: PendingRecord, seq: number, prevHash: Uint8Array, timeUnixMs: number): BuiltRecord {
  const header = create(RecordHeaderSchema, {
    format: HEADER_FORMAT,
    seq: BigInt(seq),
    type: pending.type,
    timeUnixMs: BigInt(timeUnixMs),
    prevHash,
    team: pending.team,
    actor: pending.actor,
    signer: pending.signer,
    claimedName: pending.claimedName,
    action: pending.action,
    capability: pending.capability,
    payloadDigest: sha256(pending.payloadBytes),
    payloadType: PayloadType.RECORD_PAYLOAD_V1,
    signature: pending.signature,
    coSignature: pending.coSignature,
    coAuthorization: pending.coAuthorization,
    flag: pending.flag,
  });
  const headerBytes = toBinary(RecordHeaderSchema, header);
  const hash = headerHash(headerBytes);
  return {
    row: { seq, type: pending.type, header: headerBytes, payload: pending.payloadBytes },
    walked: { seq, hash, header, payload: pending.payload },
  };
}
