import { describe, expect, it } from "vitest";
import type { LedgerEntry } from "../../src/ledger/index.js";
import { noticeFor } from "../../daemon/notices.js";

/** Which committed records call for a notice (§11: every change to what a team may do), as a table. */
function entry(type: string, more: Partial<LedgerEntry> & { fields?: Record<string, string> } = {}): LedgerEntry {
  const { fields, ...rest } = more;
  const payload = fields ? ({ fields: Object.entries(fields).map(([key, value]) => ({ key, value })) } as unknown as LedgerEntry["payload"]) : undefined;
  return { seq: 7, hash: "", timeUnixMs: 0, type, team: "proj", actor: "daemon", signer: "daemon", claimedName: "", action: "", target: "", result: "", late: false, effectId: "", intentSeq: 0, header: undefined, payload, ...rest };
}

const CASES: [string, LedgerEntry, string | undefined][] = [
  ["a policy applied", entry("policy", { actor: "owner" }), "policy applied (team proj)"],
  ["a revocation", entry("revocation", { target: "lease:L1" }), "revoked (team proj)"],
  ["a machine-wide stop", entry("stop", { team: "" }), "stop (this machine)"],
  ["a resume", entry("resume", { team: "" }), "resumed (this machine)"],
  ["a reconciliation", entry("reconcile"), "reconciled (team proj)"],
  ["an unknown outcome", entry("outcome", { result: "unknown", intentSeq: 5 }), "unknown outcome (team proj)"],
  ["a done outcome", entry("outcome", { result: "done" }), undefined],
  ["a refused owner act", entry("refusal", { actor: "owner", result: "owner.replay" }), "owner act refused"],
  ["a seat's refusal (its own business, in the log)", entry("refusal", { actor: "seat:proj/dev", result: "scope.path" }), undefined],
  ["a seat that halted by itself", entry("seat_stop", { target: "seat:dev", fields: { reason: "the seat's command ended (exit 1)" } }), "seat halted (team proj)"],
  ["a seat the owner stopped", entry("seat_stop", { target: "seat:dev", fields: { reason: "stopped by the owner" } }), undefined],
  ["a notice (never a notice about a notice)", entry("notice"), undefined],
  ["an intent", entry("intent"), undefined],
];

describe("noticeFor", () => {
  it.each(CASES)("%s", (_name, e, subject) => {
    expect(noticeFor(e)?.subject).toBe(subject);
  });

  it("names the record it is about and whether it was recorded late", () => {
    expect(noticeFor(entry("stop", { seq: 42, late: true }))?.text).toMatch(/record 42, recorded late/);
  });
});
