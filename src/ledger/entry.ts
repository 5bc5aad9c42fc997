import { GateResult, OutcomeResult, ReconcileDecision, TargetKind, type RecordHeader, type RecordPayload } from "../gen/teamd/v1/ledger_pb.js";
import { decodeHeader, decodePayload, headerHash, principalKey, recordTypeName, toHex, toSafeNumber } from "./codec.js";
import { describeError } from "./errors.js";
import type { StoredRecord } from "./store.js";

/**
 * One record as `teamd log` shows it: seq, time, type, actor, action, target, result — the
 * readable columns — plus the decoded header and payload for `--json`. Building an entry
 * never throws: a row that does not decode is shown as such (verify says why).
 */
export interface LedgerEntry {
  readonly seq: number;
  readonly hash: string;
  readonly timeUnixMs: number;
  readonly type: string;
  readonly team: string;
  readonly actor: string;
  readonly signer: string;
  /** A two-granter record's second principal (§9, §10: its co-authorization); "" when none. */
  readonly coAuthorizer: string;
  /** An unauthenticated name the caller gave, if any. */
  readonly claimedName: string;
  readonly action: string;
  readonly target: string;
  readonly result: string;
  /** A stop or revocation recorded after it took effect as a local flag. */
  readonly late: boolean;
  /** The effect id (§15) a gated act or its outcome carries, hex; "" when none. */
  readonly effectId: string;
  /** For an outcome, the intent it settles; 0 otherwise. */
  readonly intentSeq: number;
  readonly header: RecordHeader | undefined;
  readonly payload: RecordPayload | undefined;
  /** Why the row could not be decoded, if it could not. */
  readonly error?: string;
}

const TARGET_KINDS: Partial<Record<TargetKind, string>> = {
  [TargetKind.REF]: "ref",
  [TargetKind.ENVIRONMENT]: "env",
  [TargetKind.ACCOUNT]: "account",
  [TargetKind.TASK]: "task",
  [TargetKind.TEAM]: "team",
  [TargetKind.SEAT]: "seat",
  [TargetKind.LEASE]: "lease",
  [TargetKind.GRANT]: "grant",
  [TargetKind.MACHINE]: "machine",
  [TargetKind.LEDGER]: "ledger",
};

function resultOf(payload: RecordPayload): string {
  const d = payload.detail;
  switch (d.case) {
    case "outcome":
      return { [OutcomeResult.DONE]: "done", [OutcomeResult.REFUSED]: "refused", [OutcomeResult.UNKNOWN]: "unknown" }[d.value.result as 1] ?? "";
    case "gate":
      return d.value.result === GateResult.PASS ? "pass" : d.value.result === GateResult.FAIL ? "fail" : "";
    case "refusal":
      return d.value.rule;
    case "reconcile":
      if (d.value.subject.case === "head") return `accepted ${d.value.subject.value.rule}`;
      if (d.value.subject.case === "outcome") {
        const o = d.value.subject.value;
        const name = {
          [ReconcileDecision.ACCEPT_DONE]: "accept-done",
          [ReconcileDecision.REPEAT]: `repeat as ${o.newRequestId}`,
          [ReconcileDecision.RESOLVED_DONE]: "resolved-done",
          [ReconcileDecision.RESOLVED_NOT_DONE]: "resolved-not-done",
        }[o.decision as 1];
        return `${name ?? ""} (intent ${o.intentSeq})`;
      }
      return "";
    default:
      return "";
  }
}

export function describeStored(row: StoredRecord): LedgerEntry {
  const hash = headerHash(row.header);
  let header: RecordHeader | undefined;
  let payload: RecordPayload | undefined;
  try {
    header = decodeHeader(row.header);
    payload = row.payload ? decodePayload(row.payload) : undefined;
  } catch (error) {
    return {
      seq: row.seq,
      hash: toHex(hash),
      timeUnixMs: 0,
      type: "undecodable",
      team: "",
      actor: "",
      signer: "",
      coAuthorizer: "",
      claimedName: "",
      action: "",
      target: "",
      result: "",
      late: false,
      effectId: "",
      intentSeq: 0,
      header,
      payload,
      error: describeError(error),
    };
  }
  return describeRecord(row.seq, hash, header, payload);
}

/**
 * A record already decoded (the daemon's own commit holds every record it just built): the
 * same entry as `describeStored` gives for its stored bytes, without decoding or hashing again.
 */
export function describeRecord(seq: number, hash: Uint8Array, header: RecordHeader, payload: RecordPayload | undefined): LedgerEntry {
  const target = payload?.target;
  return {
    seq,
    hash: toHex(hash),
    timeUnixMs: toSafeNumber(header.timeUnixMs, "time"),
    type: recordTypeName(header.type),
    team: header.team,
    actor: principalKey(header.actor),
    signer: principalKey(header.signer),
    coAuthorizer: header.coAuthorization?.principal !== undefined ? principalKey(header.coAuthorization.principal) : "",
    claimedName: header.claimedName,
    action: header.action,
    target: target && target.kind !== TargetKind.UNSPECIFIED ? `${TARGET_KINDS[target.kind] ?? "target"}${target.name ? `:${target.name}` : ""}` : "",
    result: payload ? resultOf(payload) : "",
    late: header.flag?.late ?? false,
    effectId: payload && payload.effectId.byteLength > 0 ? toHex(payload.effectId) : "",
    intentSeq: payload?.detail.case === "outcome" ? Number(payload.detail.value.intentSeq) : 0,
    header,
    payload,
  };
}

/** Whether a record is this seat's: its act (actor or signer), or about it (a target under seat:SEAT). */
export function isSeatRecord(entry: LedgerEntry, seat: string, team: string | undefined): boolean {
  const own = (principal: string) => {
    const match = /^seat:([^/]+)\/(.+)$/.exec(principal);
    return match !== null && match[2] === seat && (team === undefined || match[1] === team);
  };
  if (own(entry.actor) || own(entry.signer)) return true;
  const about = entry.target === `seat:${seat}` || entry.target.startsWith(`seat:${seat}/`);
  return about && (team === undefined || entry.team === team);
}
