import type { RecordType, RevocationSubject } from "../gen/teamd/v1/ledger_pb.js";
import type { Refusal } from "../kernel/decision.js";
import type { ArchiveOptions, ArchiveReceipt } from "./archive.js";
import type { AppendResult } from "./commit.js";
import type { DecisionCache } from "./decision-cache.js";
import type { Effect, SubmitReply, SubmitRequest } from "./dispatch.js";
import type { LedgerEntry } from "./entry.js";
import type { FlagRead } from "./flags.js";
import type { DaemonSigner, PublicKey } from "./keys.js";
import type { HeadObservation } from "./owner-act.js";
import type { LedgerPaths } from "./paths.js";
import type { RecordDraft } from "./record-draft.js";
import type { Head } from "./seal.js";
import type { LedgerState } from "./state.js";
import type { VerifyProgress, VerifyResult } from "./verify.js";
import type { LedgerView } from "./view.js";

/**
 * The ledger's contract with its callers: the daemon (every entry point) and the owner CLI
 * (through the daemon, or `teamd init`/`verify` with it down). Refusals are LedgerRefusal
 * errors carrying a kernel Refusal (rule id + reason); guard() returns the Refusal as a value.
 */

export type AppendedRecord = AppendResult;

export interface LedgerOptions {
  /** Directory of ledger.db (TEAMD_HOME/ledger). */
  readonly dir: string;
  /** The signed head's file (default: `head` in dir). */
  readonly headPath?: string;
  /** TEAMD_HOME/flags: local stop and revocation flags. */
  readonly flagsDir: string;
  readonly daemonSigner: DaemonSigner;
  /** The owner's raw public key, as pinned at init; genesis must pin the same. */
  readonly ownerPublicKey: Uint8Array;
  /** The daemon's clock, unix ms (injected for tests). */
  readonly clock?: () => number;
  /** How long a write waits on another connection's lock (blocks the event loop). Default 250. */
  readonly busyTimeoutMs?: number;
  /**
   * Write batches and head files on worker threads (store-writer.ts, head-file-writer.ts), so an fsync never blocks the event
   * loop: the daemon, which serves every seat and the owner's stop from one loop. A one-shot
   * command has no loop to protect and skips the worker's start-up (~50–150 ms). Default false.
   */
  readonly writeOnWorker?: boolean;
  /** Least time between two attempts to reopen an unavailable store. Default 1000. */
  readonly reopenIntervalMs?: number;
  readonly log?: (line: string) => void;
}

/** A stop or revocation: in force as a flag at once; recorded now if the store allows. */
export interface FlagReply {
  readonly flagId: string;
  readonly recorded: AppendedRecord | undefined;
  /** Why it is not recorded yet (it will be, marked late, when the store returns). */
  readonly reason?: string;
}

export interface Ledger {
  readonly paths: LedgerPaths;
  readonly state: LedgerState;
  readonly view: LedgerView;
  /** The head the daemon last signed. */
  readonly head: Head | undefined;
  readonly ownerKey: PublicKey;
  readonly daemonKey: PublicKey;
  /** What the decision view keeps between requests (the loaded policy in force): this ledger's own, never a module's. */
  readonly decisionCache: DecisionCache;
  /** The gate's store-free checks, before any record: flags, stops, the store's state. */
  guard(team: string): Refusal | undefined;
  isRevoked(subject: RevocationSubject, subjectId: string): boolean;
  append(draft: RecordDraft): Promise<AppendedRecord>;
  /** Several records in one transaction: all commit or none (a revocation and those below it). Answers the first. */
  appendBatch(drafts: readonly RecordDraft[]): Promise<AppendedRecord>;
  /**
   * An owner-signed act (grant, policy, lease, agreement...); a replay returns the first
   * record. `companions` commit with it in the same transaction or not at all (the cascade
   * of lease revocations a policy change makes, §7); a replay appends none again.
   */
  /** `check`: re-run at commit time against the view as of the previous batch (an apply's policy in force still the one it was decided over). */
  appendOwnerAct(act: Uint8Array, companions?: readonly RecordDraft[], check?: RecordDraft["check"]): Promise<AppendedRecord>;
  /** §9: leads stops its own team — a stop record leads signs, held until an owner's resume names it (`seq:N`). */
  leadsStop(team: string, leads: string, reason: string): Promise<AppendedRecord>;
  /**
   * The owner's archive act (§15 archival, archive.ts): move the records below the cut to an
   * archive file, keep what the gate reads, record the cut, drop the rest, reopen. A replay
   * returns the first record and does nothing again.
   */
  archive(act: Uint8Array, options?: ArchiveOptions): Promise<ArchiveReceipt>;
  /** The subjects ("<RevocationSubject>:<id>") of every revocation flag: in force before, and without, the store. */
  revocationFlags(): readonly string[];
  /** Every flag present now (stops and revocations), and the files that do not verify: what status shows. */
  readFlags(): FlagRead;
  submit(request: SubmitRequest, effect: Effect): Promise<SubmitReply>;
  /** A seat start's outcome (done, or refused with why), closing its seat_start intent. */
  closeStart(intentSeq: number, draft: RecordDraft): Promise<AppendedRecord>;
  stop(act: Uint8Array): Promise<FlagReply>;
  revoke(act: Uint8Array): Promise<FlagReply>;
  resume(act: Uint8Array): Promise<AppendedRecord>;
  /** Owner-signed: accept a blocked head's observed state, or resolve an unknown outcome. */
  reconcile(act: Uint8Array): Promise<AppendedRecord>;
  /** The daemon asked the external service: the unknown effect was (not) made. */
  resolveUnknown(intentSeq: number, done: boolean, note: string): Promise<AppendedRecord>;
  /** When blocked: the state an owner signs to reconcile. */
  observation(): HeadObservation | undefined;
  reopen(): Promise<LedgerState>;
  verify(progress?: VerifyProgress): Promise<VerifyResult>;
  entries(fromSeq: number, limit: number, type?: RecordType): LedgerEntry[];
  onAppend(listener: (entries: readonly LedgerEntry[]) => void): () => void;
  integrityCheck(): string[];
  close(): Promise<void>;
}
