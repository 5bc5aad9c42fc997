import { describe, expect, it } from "vitest";
import type { LedgerEntry } from "../../../src/ledger/index.js";
import { noticeFor, untold } from "../../../daemon/server/notices.js";

/** Which committed records call for a notice (§11: every change to what a team may do), as a table. */
function entry(type: string, more: Partial<LedgerEntry> & { fields?: Record<string, string>; detail?: unknown } = {}): LedgerEntry {
  const { fields, detail, ...rest } = more;
  const payload = fields
    ? ({ fields: Object.entries(fields).map(([key, value]) => ({ key, value })), detail: detail ?? { case: undefined } } as unknown as LedgerEntry["payload"])
    : undefined;
  return {
    seq: 7,
    hash: "",
    timeUnixMs: 0,
    type,
    team: "proj",
    actor: "daemon",
    signer: "daemon",
    coAuthorizer: "",
    claimedName: "",
    action: "",
    target: "",
    result: "",
    late: false,
    effectId: "",
    intentSeq: 0,
    header: undefined,
    payload,
    ...rest,
  };
}

const CASES: [string, LedgerEntry, string | undefined][] = [
  ["a policy applied", entry("policy", { actor: "owner" }), "policy applied (team proj)"],
  ["a revocation", entry("revocation", { target: "lease:L1" }), "revoked (team proj)"],
  [
    "a lease issued to a seat",
    entry("lease", {
      target: "lease:L2",
      actor: "seat:proj/lead",
      fields: { issuer: "lead", capability: "merge" },
      detail: { case: "lease", value: { holder: { seat: "mrg" }, expiresUnixMs: 0n } },
    }),
    "lease issued (team proj)",
  ],
  ["a machine-wide stop", entry("stop", { team: "" }), "stop (this machine)"],
  ["a resume", entry("resume", { team: "" }), "resumed (this machine)"],
  ["a reconciliation", entry("reconcile"), "reconciled (team proj)"],
  ["an unknown outcome", entry("outcome", { result: "unknown", intentSeq: 5 }), "unknown outcome (team proj)"],
  ["a done outcome", entry("outcome", { result: "done" }), undefined],
  ["a refused owner act", entry("refusal", { actor: "owner", result: "owner.replay" }), "owner act refused"],
  ["a seat's refusal (its own business, in the log)", entry("refusal", { actor: "seat:proj/dev", result: "scope.path" }), undefined],
  [
    "a seat that halted by itself",
    entry("seat_stop", { target: "seat:dev", fields: { reason: "the seat's command ended (exit 1)" } }),
    "seat halted (team proj)",
  ],
  ["a seat the owner stopped", entry("seat_stop", { target: "seat:dev", fields: { reason: "stopped by the owner" } }), undefined],
  [
    "a seat teamd stopped for its refusal budget",
    entry("seat_stop", {
      target: "seat:dev",
      fields: { reason: "halted: refusal budget (301 refusals this run; the budget is 300 at once, then 60 a minute)" },
    }),
    "seat halted (team proj)",
  ],
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

/** A ledger's records as `untold` reads them (entries by seq range, the last seq). */
function chain(entries: LedgerEntry[]) {
  const bySeq = entries.map((e, i) => ({ ...e, seq: i + 1 }));
  return {
    view: { lastSeq: bySeq.length } as never,
    entries: (from: number, limit: number) => bySeq.slice(from - 1, from - 1 + limit),
  };
}
const noticeAbout = (seq: number) => entry("notice", { fields: { about: String(seq) } });

describe("untold: records that call for a notice and have none, found at the daemon's start", () => {
  const seqs = (entries: LedgerEntry[]) => untold(chain(entries)).map((u) => u.entry.seq);

  it("finds every notice-worthy record when none was ever told", () => {
    expect(seqs([entry("genesis"), entry("policy"), entry("intent"), entry("stop", { team: "" })])).toEqual([2, 4]);
  });
  it("finds nothing when every one was told", () => {
    expect(seqs([entry("policy"), noticeAbout(1), entry("intent")])).toEqual([]);
  });
  it("finds a record that landed between another record and its notice, the daemon dying before its own", () => {
    expect(seqs([entry("policy"), entry("stop", { team: "" }), noticeAbout(1)])).toEqual([2]);
  });
  it("looks no further back than the record the newest notice is about", () => {
    // Record 1 lost its notice long ago; the scan stops at what notice 3 is about (2).
    expect(seqs([entry("policy"), entry("resume"), noticeAbout(2), entry("stop", { team: "" })])).toEqual([4]);
  });
  it("ignores records of type notice that are not notices (an owner's exec) and pages through long chains", () => {
    const long = [
      entry("policy"),
      noticeAbout(1),
      ...Array.from({ length: 1200 }, () => entry("intent")),
      entry("notice", { action: "seat.exec" }),
      entry("revocation"),
    ];
    expect(seqs(long)).toEqual([long.length]);
  });
});
