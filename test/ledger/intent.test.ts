import { createHash } from "node:crypto";
import { rmSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { OutcomeResult, ReconcileDecision, RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { daemonPrincipal, outcomeReconcileDraft, signOwnerAct, type Ledger, type SubmitReply } from "../../src/ledger/index.js";
import { START_LOST_NOTE } from "../../src/ledger/recovery.js";
import { initEnv, request, type TestEnv } from "./helpers.js";

let env: TestEnv | undefined;
let ledger: Ledger | undefined;
afterEach(async () => {
  await ledger?.close();
  env?.cleanup();
  env = undefined;
  ledger = undefined;
});

async function setup(label: string): Promise<{ e: TestEnv; l: Ledger }> {
  const made = await initEnv(label);
  env = made.env;
  ledger = made.ledger;
  return { e: made.env, l: made.ledger };
}

const count = (l: Ledger, type: string) => l.entries(0, 10_000).filter((x) => x.type === type).length;

describe("intent / outcome and request ids", () => {
  it("100 concurrent duplicates of one request: one dispatch, one intent/outcome pair, identical replies", async () => {
    const { l } = await setup("dupes");
    let dispatched = 0;
    const effect = async () => {
      dispatched++;
      await new Promise((r) => setTimeout(r, 20));
      return { result: "done" as const, note: "merged", reply: new TextEncoder().encode("refs/heads/main@abc") };
    };
    const replies = await Promise.all(Array.from({ length: 100 }, () => l.submit(request("dev", "req-1"), effect)));
    expect(dispatched).toBe(1);
    expect(count(l, "intent")).toBe(1);
    expect(count(l, "outcome")).toBe(1);
    for (const reply of replies) expect(reply).toEqual(replies[0]);
    expect(replies[0]).toMatchObject({ requestId: "req-1", status: "done", intentSeq: 1, outcomeSeq: 2, note: "merged" });
    // A later byte-identical retry returns the recorded state, also after a restart — never a second dispatch.
    expect(await l.submit(request("dev", "req-1"), effect)).toEqual(replies[0]);
    await l.close();
    ledger = await env!.open();
    expect(await ledger.submit(request("dev", "req-1"), effect)).toEqual(replies[0]);
    expect(dispatched).toBe(1);
    expect(count(ledger, "intent")).toBe(1);
  });

  it("the intent records the digest of the canonical request bytes, and the caller's payload beside it", async () => {
    const { l } = await setup("digest");
    const req = request("dev", "d1", "exactly these bytes");
    await l.submit({ ...req, payload: { inputState: { teamFileHash: new Uint8Array([7, 7, 7]) } } }, async () => ({ result: "done" }));
    const intent = l.entries(1, 10).find((e) => e.type === "intent");
    expect(Buffer.from(intent?.payload?.requestDigest ?? []).toString("hex")).toBe(createHash("sha256").update("exactly these bytes").digest("hex"));
    expect([...(intent?.payload?.inputState?.teamFileHash ?? [])]).toEqual([7, 7, 7]);
    expect(intent?.payload?.requestId).toBe("d1");
  });

  it("the same id with another payload is refused, in flight and after; the same id from another seat is another request", async () => {
    const { l } = await setup("mismatch");
    let release: (() => void) | undefined;
    const slow = () => new Promise<{ result: "done" }>((r) => (release = () => r({ result: "done" })));
    const first = l.submit(request("dev", "r"), slow);
    await new Promise((r) => setTimeout(r, 20));
    await expect(l.submit(request("dev", "r", "another payload"), slow)).rejects.toMatchObject({ rule: "request.replay-mismatch" });
    release?.();
    await first;
    await expect(l.submit(request("dev", "r", "another payload"), slow)).rejects.toMatchObject({ rule: "request.replay-mismatch" });
    const other = await l.submit(request("ops", "r"), async () => ({ result: "refused", note: "not mergeable" }));
    expect(other).toMatchObject({ status: "refused", note: "not mergeable" });
    expect(count(l, "intent")).toBe(2);
    // Both refused attempts are recorded, naming the rule.
    expect(
      l
        .entries(0, 100)
        .filter((x) => x.type === "refusal")
        .map((x) => x.result),
    ).toEqual(["request.replay-mismatch", "request.replay-mismatch"]);
  });

  it("an effect that throws is `unknown`: the target and the request id stay blocked until reconciled", async () => {
    const { e, l } = await setup("unknown");
    let calls = 0;
    const reply = await l.submit(request("dev", "boom"), async () => {
      calls++;
      throw new Error("connection reset");
    });
    expect(reply).toMatchObject({ status: "unknown", note: expect.stringMatching(/may or may not have happened/) });
    expect(await l.submit(request("dev", "boom"), async () => ({ result: "done" }))).toEqual(reply);
    expect(calls).toBe(1);
    await expect(l.submit(request("ops", "other"), async () => ({ result: "done" }))).rejects.toMatchObject({ rule: "ledger.unknown-outcome" });
    // Another target is not blocked.
    const elsewhere = { ...request("ops", "elsewhere"), target: { kind: 1, name: "refs/heads/dev" } };
    expect(await l.submit(elsewhere, async () => ({ result: "done" }))).toMatchObject({ status: "done" });
    // The owner accepts it as done: the target unblocks; the old request id answers with the resolution.
    const act = await signOwnerAct(outcomeReconcileDraft({ team: "alpha", intentSeq: reply.intentSeq, decision: ReconcileDecision.ACCEPT_DONE }), e.ownerSeed);
    const rec = await l.reconcile(act);
    expect(await l.reconcile(act)).toMatchObject({ seq: rec.seq, replayed: true });
    expect(await l.submit(request("dev", "boom"), async () => ({ result: "done" }))).toMatchObject({
      status: "unknown",
      resolution: { decision: "accept-done", seq: rec.seq },
    });
    expect(await l.submit(request("ops", "other"), async () => ({ result: "done" }))).toMatchObject({ status: "done" });
    await expect(l.reconcile(act.slice(0, act.length - 1))).rejects.toMatchObject({ rule: expect.stringMatching(/owner\./) });
  });

  it("a crash between intent and outcome: recovery writes `unknown` on open; repeat under a new id, or the daemon's resolution, unblocks", async () => {
    const { e, l } = await setup("crash-inproc");
    const never = () => new Promise<never>(() => undefined);
    void l.submit(request("dev", "a"), never);
    void l.submit({ ...request("dev", "b"), target: { kind: 1, name: "refs/heads/b" } }, never);
    await new Promise((r) => setTimeout(r, 30));
    await l.close(); // the effects never answered: as if the daemon died here
    ledger = await e.open();
    const outcomes = ledger.entries(0, 100).filter((x) => x.type === "outcome");
    expect(outcomes.map((x) => x.result)).toEqual(["unknown", "unknown"]);
    expect(ledger.view.pendingIntents()).toEqual([]);
    const a = ledger.view.request("seat:alpha/dev", "a");
    expect(a).toMatchObject({ status: "unknown" });
    await expect(ledger.submit(request("ops", "c"), async () => ({ result: "done" }))).rejects.toMatchObject({ rule: "ledger.unknown-outcome" });
    // The owner repeats it under a new request id.
    await ledger.reconcile(
      await signOwnerAct(
        outcomeReconcileDraft({ team: "alpha", intentSeq: a!.intentSeq, decision: ReconcileDecision.REPEAT, newRequestId: "a-2" }),
        e.ownerSeed,
      ),
    );
    expect(await ledger.submit(request("dev", "a-2"), async () => ({ result: "done" }))).toMatchObject({ status: "done" });
    // The daemon asked the service for b: it was made.
    const b = ledger.view.request("seat:alpha/dev", "b")!;
    await ledger.resolveUnknown(b.intentSeq, true, "the remote has the ref");
    expect(ledger.view.request("seat:alpha/dev", "b")).toMatchObject({ resolution: { decision: "resolved-done" } });
    await expect(ledger.resolveUnknown(b.intentSeq, true, "again")).rejects.toMatchObject({ rule: "owner.act-invalid" });
    // Recovery is idempotent: a second open adds nothing.
    const before = ledger.entries(0, 1000).length;
    await ledger.close();
    ledger = await e.open();
    expect(ledger.entries(0, 1000)).toHaveLength(before);
    expect(await ledger.verify()).toMatchObject({ ok: true });
  });

  it("a seat start is its own intent: closed once by its outcome; a dead daemon's is settled refused, and holds up no act of the seat", async () => {
    const { e, l } = await setup("seat-start");
    const startDraft = (runId: string) => ({
      type: RecordType.SEAT_START,
      team: "alpha",
      actor: daemonPrincipal(),
      signer: daemonPrincipal(),
      action: "seat.start",
      payload: { target: { kind: TargetKind.SEAT, name: "dev" }, requestId: runId, detail: { case: "seat" as const, value: { seat: "dev", runId } } },
    });
    const outcome = (intentSeq: number, result: OutcomeResult) => ({
      type: RecordType.OUTCOME,
      team: "alpha",
      actor: daemonPrincipal(),
      signer: daemonPrincipal(),
      action: "seat.start",
      payload: {
        target: { kind: TargetKind.SEAT, name: "dev" },
        detail: { case: "outcome" as const, value: { intentSeq: BigInt(intentSeq), result, note: "" } },
      },
    });
    const started = await l.append(startDraft("run-1"));
    expect(l.view.pendingIntents().map((s) => s.intentSeq)).toEqual([started.seq]);
    // Not through append (a gated act's outcome is the dispatcher's), and only for an open start.
    await expect(l.append(outcome(started.seq, OutcomeResult.DONE))).rejects.toThrow(/own entry point/);
    await l.closeStart(started.seq, outcome(started.seq, OutcomeResult.DONE));
    expect(l.view.intent(started.seq)).toMatchObject({ status: "done" });
    await expect(l.closeStart(started.seq, outcome(started.seq, OutcomeResult.REFUSED))).rejects.toThrow(/not an open seat start/);
    const gated = await l.submit(request("dev", "g"), async () => ({ result: "done" }));
    await expect(l.closeStart(gated.intentSeq, outcome(gated.intentSeq, OutcomeResult.DONE))).rejects.toThrow(/not an open seat start/);
    // The daemon dies between a start's intent and its outcome.
    const lost = await l.append(startDraft("run-2"));
    await l.close();
    ledger = await e.open();
    expect(ledger.view.intent(lost.seq)).toMatchObject({ status: "refused", note: START_LOST_NOTE });
    expect(ledger.view.unresolvedUnknowns()).toEqual([]);
    // The seat's acts on its own target go on (a checkpoint targets the seat).
    const seatAct = { ...request("dev", "cp"), target: { kind: TargetKind.SEAT, name: "dev" } };
    expect(await ledger.submit(seatAct, async () => ({ result: "done" }))).toMatchObject({ status: "done" });
    expect(await ledger.verify()).toMatchObject({ ok: true });
  });

  it("an intent that cannot be appended means the effect never runs", async () => {
    const { l } = await setup("no-intent");
    rmSync(l.paths.db);
    let ran = false;
    await expect(l.submit(request("dev", "x"), async () => ((ran = true), { result: "done" as const }))).rejects.toMatchObject({ rule: "ledger.unavailable" });
    expect(ran).toBe(false);
  });

  it("outcome records carry the intent's effect id, so a refused outcome voids a pass for it", async () => {
    const { l } = await setup("void");
    const effectId = new Uint8Array(32).fill(3);
    const reply: SubmitReply = await l.submit({ ...request("dev", "m"), payload: { effectId } }, async () => ({ result: "refused", note: "hook failed" }));
    const outcome = l.entries(reply.outcomeSeq!, 1)[0];
    expect(outcome?.payload?.effectId).toEqual(effectId);
    expect(outcome?.payload?.detail.case === "outcome" && outcome.payload.detail.value.result).toBe(OutcomeResult.REFUSED);
    expect(l.view.voidingOutcomes("03".repeat(32))).toEqual([reply.outcomeSeq]);
    expect(l.entries(0, 100, RecordType.INTENT)).toHaveLength(1);
  });
});
