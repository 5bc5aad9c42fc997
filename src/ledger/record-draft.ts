import type { RecordType } from "../gen/teamd/v1/ledger_pb.js";
import type { PrincipalInit, RecordPayloadInit } from "./codec.js";
import type { CapabilityUseInit } from "./owner-act.js";

// Its own file because the ledger's contract (ledger-api.ts) names the implementation's types
// (commit, dispatch, view), and the builders of records that implementation uses (record.ts,
// lease-records.ts) take drafts: with the type in ledger-api.ts, they imported each other.

/** A record the daemon (or a seat through it) appends: never an owner act, never intent/outcome. */
export interface RecordDraft {
  readonly type: RecordType;
  readonly team?: string;
  readonly actor: PrincipalInit;
  readonly signer?: PrincipalInit;
  readonly claimedName?: string;
  readonly action: string;
  readonly capability?: CapabilityUseInit;
  readonly payload: RecordPayloadInit;
}
