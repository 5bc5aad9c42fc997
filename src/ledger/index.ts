/**
 * The record ledger (§15): the library the daemon and the owner CLI call. See
 * docs in each module; the entry points are openLedger / initLedger (the daemon's side),
 * signOwnerAct and the *Draft builders (the owner's side), createFlags (a stop with the
 * daemon down), and verifyLedgerFiles (verify with the daemon down).
 */
export { openLedger, type Ledger, type LedgerOptions, type AppendedRecord, type RecordDraft, type FlagReply } from "./ledger.js";
export { initLedger, genesisDraft, type InitResult } from "./init.js";
export type { LedgerState } from "./state.js";
export { LedgerRefusal, CodecError } from "./errors.js";
export {
  signOwnerAct,
  checkOwnerAct,
  stopDraft,
  resumeDraft,
  revocationDraft,
  tombstoneDraft,
  archiveDraft,
  renewDraft,
  headReconcileDraft,
  outcomeReconcileDraft,
  type OwnerActDraft,
  type CheckedOwnerAct,
  type CapabilityUseInit,
  type HeadObservation,
} from "./owner-act.js";
export { ownerPublicKey, ownerSign, ownerVerify, generateOwnerSeed } from "./owner-signing.js";
export { createDaemonSigner, loadDaemonKey, loadOrCreateDaemonKey, publicKeyFromRaw, verifySignature, type DaemonSigner, type PublicKey } from "./keys.js";
export { createFlags, type Flag, type Flags, type FlagRead } from "./flags.js";
export { verifyLedgerFiles, verifyStore, type VerifyResult, type VerifyProgress } from "./verify.js";
export { openStore, type StoreReader, type LedgerStore, type StoredRecord } from "./store.js";
export { ledgerPaths, type LedgerPaths } from "./paths.js";
export { describeStored, type LedgerEntry } from "./entry.js";
export type { SubmitRequest, SubmitReply, Effect, EffectResult, TargetInit, IntentType } from "./dispatch.js";
export { targetKey, requestKey, artifactKey, type LedgerView, type RequestState, type StopState, type TeamState } from "./view.js";
export {
  createLeaseProjector,
  leaseDraft,
  leaseFactOf,
  leasePayload,
  leaseRevocationDraft,
  LEASE_ISSUE_ACTION,
  LEASE_REVOKE_ACTION,
  type LeaseFactsOfTeam,
  type LeaseProjector,
} from "./lease-records.js";
export { createTrunkProjector, type CommitAuthor, type TrunkQuery, type TrunkFactsView, type TrunkProjector } from "./trunk-facts.js";
export {
  recordTypeName,
  recordTypeFromName,
  principalKey,
  ownerPrincipal,
  daemonPrincipal,
  seatPrincipal,
  toHex,
  fromHex,
  sha256,
  decodeHeader,
  decodePayload,
  toSafeNumber,
  type PrincipalInit,
  type RecordPayloadInit,
} from "./codec.js";
export { tombstoneKept, stubMismatch, type TombstoneSubject } from "./tombstone.js";
export { archiveLedger, alignCut, type ArchiveOptions, type ArchiveReceipt } from "./archive.js";
export { openArchive, type ArchiveMeta, type OpenedArchive } from "./archive-file.js";
export { findCut, type CutCommitment } from "./cut.js";
