import { describe, expect, it } from "vitest";
import type { LedgerEntry } from "../../src/ledger/index.js";
import { composeHandoff, HANDOFF_LIMITS, lastHandoffs, runEvidence } from "../../src/ledger/handoff.js";

/**
 * The handoff checkpoint's evidence, as tables (src/ledger/handoff.ts): which records are the
 * halted run's acts, which are its notes, and the bounds that keep a handoff a handoff.
 */
let next = 100;
function entry(type: string, more: Partial<LedgerEntry> & { fields?: Record<string, string>; detail?: unknown } = {}): LedgerEntry {
  const { fields, detail, ...rest } = more;
  const payload = {
    fields: Object.entries(fields ?? {}).map(([key, value]) => ({ key, value })),
    detail: detail ?? { case: undefined },
  } as unknown as LedgerEntry["payload"];
  return {
    seq: next++,
    hash: "",
    timeUnixMs: 0,
    type,
    team: "proj",
    actor: "seat:proj/w",
    signer: "seat:proj/w",
    coAuthorizer: "",
    claimedName: "",
    action: "file.write",
    target: "ref:refs/heads/seat/w/x",
    result: "",
    late: false,
    effectId: "",
    intentSeq: 0,
    header: undefined,
    payload,
    ...rest,
  };
}

const RUN = { team: "proj", seat: "w", runId: "r1", startSeq: 99, startedAt: "2026-12-04T00:00:00.000Z", haltedBy: "owner", reason: "r" };

describe("the run's evidence", () => {
  it.each([
    ["the seat's intent", entry("intent"), 1],
    ["its outcome (the daemon writes it, signed for the seat)", entry("outcome", { actor: "daemon", result: "done" }), 1],
    ["its refusal", entry("refusal", { result: "scope.path" }), 1],
    ["another seat's act", entry("intent", { actor: "seat:proj/w2", signer: "seat:proj/w2" }), 0],
    ["the same seat name in another team", entry("intent", { team: "other", actor: "seat:other/w", signer: "seat:other/w" }), 0],
    ["the daemon's record about the seat (its start)", entry("seat_start", { actor: "daemon", signer: "daemon", target: "seat:w" }), 0],
    ["the owner's record about the seat", entry("notice", { actor: "owner", signer: "owner", target: "seat:w" }), 0],
  ])("%s: %i act(s)", (_name, record, acts) => {
    expect(runEvidence([record], "proj", "w").total).toBe(acts);
  });

  it("counts served reads apart, never lists them", () => {
    const e = runEvidence([entry("served"), entry("served"), entry("intent")], "proj", "w");
    expect(e).toMatchObject({ total: 1, served: 2 });
    expect(e.acts.map((a) => a.type)).toEqual(["intent"]);
  });

  it("keeps the newest acts and notes, counting the rest; the last refusal is the newest", () => {
    const many = Array.from({ length: HANDOFF_LIMITS.acts + 50 }, (_, i) =>
      i % 10 === 0
        ? entry("intent", { action: "seat.checkpoint", target: "seat:w", fields: { note: `note ${i}` } })
        : entry("refusal", { detail: { case: "refusal", value: { rule: `rule.${i}`, reason: "why" } } }),
    );
    const e = runEvidence(many, "proj", "w");
    expect(e.total).toBe(HANDOFF_LIMITS.acts + 50);
    expect(e.acts).toHaveLength(HANDOFF_LIMITS.acts);
    expect(e.acts.at(-1)?.seq).toBe(many.at(-1)?.seq);
    expect(e.noteCount).toBe(25);
    expect(e.notes).toHaveLength(HANDOFF_LIMITS.notes);
    expect(e.notes.at(-1)?.note).toBe(`note ${HANDOFF_LIMITS.acts + 40}`);
    expect(e.lastRefusal?.rule).toBe(`rule.${HANDOFF_LIMITS.acts + 49}`);
  });

  it("a handoff stays within its bytes: the oldest listed acts go first, the count stays", () => {
    const long = Array.from({ length: HANDOFF_LIMITS.acts }, () => entry("intent", { target: `ref:refs/heads/seat/w/${"x".repeat(900)}` }));
    const e = runEvidence(long, "proj", "w");
    const h = composeHandoff(RUN, 0, { refs: [], total: 0 }, e, { from: 100, to: 400 }, null);
    expect(Buffer.byteLength(JSON.stringify(h))).toBeLessThanOrEqual(HANDOFF_LIMITS.bytes);
    expect(h.facts.acts.total).toBe(HANDOFF_LIMITS.acts);
    expect(h.facts.acts.list.length).toBeLessThan(HANDOFF_LIMITS.acts);
    expect(h.facts.acts.list.at(-1)?.seq).toBe(long.at(-1)?.seq);
  });
});

describe("the last handoff on record", () => {
  const checkpoint = (team: string, seat: string, handoff: string) =>
    entry("checkpoint", { team, actor: "daemon", signer: "daemon", detail: { case: "checkpoint", value: { runId: "r", handoff } } });
  const withTarget = (e: LedgerEntry, seat: string) => ({ ...e, payload: { ...e.payload, target: { name: seat } } }) as unknown as LedgerEntry;
  it("is the newest of this seat's, per team; another seat's and an unreadable one are not", () => {
    const records = [
      withTarget(checkpoint("proj", "w", '{"n":1}'), "w"),
      withTarget(checkpoint("proj", "w", '{"n":2}'), "w"),
      withTarget(checkpoint("proj", "w2", '{"n":3}'), "w2"),
      withTarget(checkpoint("proj", "w", "{not json"), "w"),
      withTarget(checkpoint("other", "w", '{"n":4}'), "w"),
    ];
    const read = (from: number, limit: number) => records.filter((r) => r.seq >= from).slice(0, limit);
    const found = lastHandoffs(read, "w");
    expect(found.get("proj")?.handoff).toEqual({ n: 2 });
    expect(found.get("other")?.handoff).toEqual({ n: 4 });
    expect([...lastHandoffs(read, "w", "proj").keys()]).toEqual(["proj"]);
    // The newest tombstoned: none is handed on (not the older one in its place).
    const newest = records[1]?.seq ?? 0;
    expect(lastHandoffs(read, "w", "proj", (seq) => seq === newest).get("proj")).toBeUndefined();
  });
});
