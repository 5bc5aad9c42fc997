import type { RecordType } from "../gen/teamd/v1/ledger_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CoAuthorizationSchema } from "../gen/teamd/v1/ledger_pb.js";
import type { Refusal } from "../kernel/decision.js";
import type { PrincipalInit, RecordPayloadInit } from "./codec.js";
import type { CapabilityUseInit } from "./owner-act.js";

// Its own file because the ledger's contract (ledger-api.ts) names the implementation's types
// (commit, dispatch, view), and the builders of records that implementation uses (record.ts,
// lease-records.ts) take drafts: with the type in ledger-api.ts, they imported each other.

/** What a draft's commit-time check reads of the view: which policy record is in force (view.ts has the whole view). */
export interface PolicySeqView {
  policy(team: string): { readonly seq: number } | undefined;
}

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
  /** A two-granter record's second principal (§9, §10): format 2's co-authorization. */
  readonly coAuthorization?: MessageInitShape<typeof CoAuthorizationSchema>;
  /** Re-checked at commit time against the view as of the previous batch (the policy a grant was decided over still in force). */
  readonly check?: (view: PolicySeqView) => Refusal | undefined;
}
