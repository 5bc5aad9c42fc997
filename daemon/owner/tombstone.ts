import { refuse, type Refusal } from "../../src/kernel/decision.js";
import { stubMismatch, tombstoneKept, type CheckedOwnerAct, type Ledger, type TombstoneSubject } from "../../src/ledger/index.js";

/**
 * The owner's tombstone (§15), checked before it is recorded: the record it names exists, is
 * of the act's team, the stub names it exactly (type, target, payload digest, what a
 * revocation revoked), and it is not one the gate reads in full (src/ledger/tombstone.ts).
 */
export function subjectOf(ledger: Ledger, seq: number): TombstoneSubject | undefined {
  const [entry] = ledger.entries(seq, 1);
  if (entry === undefined || entry.seq !== seq || entry.header === undefined) return undefined;
  return { seq, header: entry.header, payload: entry.payload, payloadDigest: entry.header.payloadDigest };
}

export function checkTombstone(ledger: Ledger, team: string, act: CheckedOwnerAct): Refusal | undefined {
  const detail = act.payload.detail;
  if (detail.case !== "tombstone") return refuse("owner.act-invalid", "a tombstone act carries a tombstone");
  const seq = Number(detail.value.seq);
  if (!Number.isSafeInteger(seq) || seq < 1) return refuse("owner.act-invalid", `${detail.value.seq} is not a record a tombstone can name`);
  const subject = subjectOf(ledger, seq);
  if (subject === undefined) return refuse("owner.act-invalid", `the ledger has no record ${seq}`);
  if (subject.header.team !== team)
    return refuse(
      "owner.act-invalid",
      `record ${seq} is ${subject.header.team ? `team ${subject.header.team}'s` : "the machine's"}, not ${team ? `team ${team}'s` : "the machine's"}`,
    );
  const mismatch = stubMismatch(subject, {
    type: detail.value.type,
    ...(detail.value.target !== undefined ? { target: detail.value.target } : {}),
    payloadDigest: detail.value.payloadDigest,
    revokedSubject: detail.value.revokedSubject,
    revokedId: detail.value.revokedId,
  });
  if (mismatch !== undefined) return refuse("owner.act-invalid", mismatch);
  return tombstoneKept(subject, ledger.view);
}
