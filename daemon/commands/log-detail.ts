import { GateResult } from "../../src/gen/teamd/v1/ledger_pb.js";
import { parseRelayNote } from "../../src/effects/egress-relay.js";
import type { LedgerEntry } from "../../src/ledger/index.js";
import { principalKey } from "../../src/ledger/index.js";

/**
 * What a record says beyond its header, for a person (`teamd log`) and a script (`--json`):
 * a refusal's rule and reason, an outcome's note (for an egress connection: bytes each way and
 * duration), an intent's named fields (an exec's argv as recorded, a connection's host, address
 * and allowing pattern), a stop's reason, a notice's text, a lease's holder and expiry, a trunk
 * act's effect id. Read from the record as stored, nothing added or inferred; every text is
 * the seat's or the owner's as recorded, so the printer passes it through terminalText.
 */
export type RecordDetail = Readonly<Record<string, string | number | boolean>>;

export function recordDetail(entry: LedgerEntry): RecordDetail | undefined {
  const detail = entry.payload?.detail;
  switch (detail?.case) {
    case "refusal":
      return { rule: detail.value.rule, reason: detail.value.reason };
    case "outcome": {
      const note = detail.value.note;
      const relay = entry.action === "egress.connect" ? parseRelayNote(note) : undefined;
      return { intentSeq: Number(detail.value.intentSeq), ...(note !== "" ? { note } : {}), ...relay };
    }
    case "stop":
      return { ...(detail.value.team !== "" ? { team: detail.value.team } : {}), reason: detail.value.reason };
    case "notice":
      return { subject: detail.value.subject, text: detail.value.text };
    case "lease":
      return {
        leaseId: detail.value.leaseId,
        ...(detail.value.parentLeaseId !== "" ? { parentLeaseId: detail.value.parentLeaseId } : {}),
        ...(detail.value.holder !== undefined ? { holder: principalKey(detail.value.holder) } : {}),
        expiresUnixMs: Number(detail.value.expiresUnixMs),
      };
    case "seat":
      return { seat: detail.value.seat, runId: detail.value.runId };
    case "policy":
      return {
        teamFileHash: Buffer.from(detail.value.teamFileHash).toString("hex"),
        // A delegate's grant or agreement (§10): the change it made over the policy before it.
        ...(detail.value.change !== "" ? { change: detail.value.change } : {}),
      };
    case "review":
      return { verdict: detail.value.verdict };
    case "gate":
      return { result: detail.value.result === GateResult.PASS ? "pass" : detail.value.result === GateResult.FAIL ? "fail" : "unspecified" };
    case "checkpoint":
      // The handoff itself is long: teamd checkpoint show prints it.
      return { runId: detail.value.runId, handoffBytes: Buffer.byteLength(detail.value.handoff) };
    case "meter":
      return {
        meter: detail.value.meter,
        kind: detail.value.kind,
        lab: detail.value.lab,
        amount: Number(detail.value.amount),
        currency: detail.value.currency,
        from: new Date(Number(detail.value.fromUnixMs)).toISOString(),
        to: new Date(Number(detail.value.toUnixMs)).toISOString(),
      };
    case "reserve":
      return {
        seat: detail.value.seat,
        runId: detail.value.runId,
        lab: detail.value.lab,
        amount: Number(detail.value.amount),
        currency: detail.value.currency,
        why: detail.value.why,
      };
    default:
      return undefined;
  }
}

/** The detail column of `teamd log`'s table: the few words that say what happened. */
export function detailText(entry: LedgerEntry, detail: RecordDetail | undefined): string {
  const parts: string[] = [];
  const fields = entry.payload?.fields ?? [];
  if (entry.type === "refusal" && detail !== undefined) parts.push(String(detail.reason));
  else if (entry.type === "outcome" && typeof detail?.note === "string") parts.push(detail.note);
  else if (detail !== undefined && entry.type !== "refusal") {
    for (const [key, value] of Object.entries(detail)) if (key !== "intentSeq") parts.push(`${key}=${String(value)}`);
  }
  if (entry.type !== "outcome") for (const field of fields) parts.push(`${field.key}=${field.value}`);
  if (entry.effectId !== "") parts.push(`effect ${entry.effectId.slice(0, 12)}`);
  return parts.join("; ");
}
