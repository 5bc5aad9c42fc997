import { afterEach, describe, expect, it } from "vitest";
import { ReconcileDecision, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { readFacts } from "../../src/kernel/facts.js";
import { seatPrincipal } from "../../src/ledger/codec.js";
import type { Effect, SubmitRequest } from "../../src/ledger/dispatch.js";
import { outcomeReconcileDraft, signOwnerAct, type Ledger } from "../../src/ledger/index.js";
import { initEnv, type TestEnv } from "./helpers.js";

let env: TestEnv | undefined;
let ledger: Ledger | undefined;
afterEach(async () => {
  await ledger?.close();
  env?.cleanup();
  env = undefined;
  ledger = undefined;
});

async function setup(label: string): Promise<{ e: TestEnv; l: () => Ledger }> {
  const made = await initEnv(label);
  env = made.env;
  ledger = made.ledger;
  return { e: made.env, l: () => ledger as Ledger };
}

const done: Effect = async () => ({ result: "done" });
const refused: Effect = async () => ({ result: "refused", note: "no" });
const lost: Effect = async () => {
  throw new Error("connection reset");
};
const never: Effect = () => new Promise(() => undefined);

const E1 = new Uint8Array(32).fill(1);
const E2 = new Uint8Array(32).fill(2);
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

let ids = 0;

interface Act {
  readonly team?: string;
  /** The actor's own team, when it is not the record's (a foreign seat). */
  readonly actorTeam?: string;
  readonly effectId?: Uint8Array;
  readonly rootGrant?: string;
  readonly fields: readonly (readonly [string, string])[];
}

/** A seat act exactly as the daemon appends it: one target per request, so none blocks another. */
function act(seat: string, action: string, a: Act): SubmitRequest {
  const requestId = `r${++ids}`;
  const team = a.team ?? "alpha";
  return {
    actor: seatPrincipal(a.actorTeam ?? team, seat),
    team,
    requestId,
    request: new TextEncoder().encode(`${action} ${requestId}`),
    action,
    target: { kind: TargetKind.REF, name: `refs/heads/${requestId}` },
    payload: { effectId: a.effectId, rootGrant: a.rootGrant, fields: a.fields.map(([key, value]) => ({ key, value })) },
  };
}

const push = (seat: string, commits: readonly string[], run: string, home: string, team?: string): SubmitRequest =>
  act(seat, "git.push", { team, fields: [...commits.map((c) => ["commit", c] as const), ["run", run], ["home", home]] });
const review = (seat: string, effectId: Uint8Array, verdict: string, team?: string) => act(seat, "review", { team, effectId, fields: [["verdict", verdict]] });
const gate = (seat: string, effectId: Uint8Array, result: string, team?: string) =>
  act(seat, "gate", { team, effectId, rootGrant: `${seat}/role:gater/gate/0`, fields: [["result", result]] });
const merge = (seat: string, effectId: Uint8Array, consumes: string, team?: string) => act(seat, "merge", { team, effectId, fields: [["consumes", consumes]] });
const deploy = (seat: string, effectId: Uint8Array, envName: string, team?: string) => act(seat, "deploy", { team, effectId, fields: [["env", envName]] });

/** Submit an act whose effect never answers, and wait until its intent is in the view. */
async function pending(l: Ledger, req: SubmitRequest): Promise<number> {
  void l.submit(req, never);
  for (let i = 0; i < 200; i++) {
    const state = l.view.request(`seat:${req.team}/${(req.actor as { seat: string }).seat}`, req.requestId);
    if (state) return state.intentSeq;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error("the pending intent never reached the view");
}

describe("trunk facts: the projection of pushes, reviews, gates, merges and deploys", () => {
  it("commitAuthor: known after a done push, not after a refused or unknown one; the first done push wins", async () => {
    const { l } = await setup("authors");
    await l().submit(push("dev", ["c1"], "run-a", "/homes/dev"), refused);
    expect(l().view.commitAuthor("alpha", "c1")).toBeUndefined();
    await l().submit(push("ops", ["c1", "c2"], "run-b", "/homes/ops"), lost);
    expect(l().view.commitAuthor("alpha", "c1")).toBeUndefined();
    await l().submit(push("dev", ["c1", "c2"], "run-a", "/homes/dev"), done);
    expect(l().view.commitAuthor("alpha", "c1")).toEqual({ seat: "dev", run: "run-a", home: "/homes/dev" });
    expect(l().view.commitAuthor("alpha", "c2")).toEqual({ seat: "dev", run: "run-a", home: "/homes/dev" });
    // A later done push of the same commit by another seat does not displace the first.
    await l().submit(push("qa", ["c2", "c3"], "run-c", "/homes/qa"), done);
    expect(l().view.commitAuthor("alpha", "c2")?.seat).toBe("dev");
    expect(l().view.commitAuthor("alpha", "c3")?.seat).toBe("qa");
    expect(l().view.commitAuthor("alpha", "nope")).toBeUndefined();
  });

  it("a push without its run or home, or by a seat of another team, establishes no author", async () => {
    const { l } = await setup("authors-bad");
    await l().submit(
      act("dev", "git.push", {
        fields: [
          ["commit", "c1"],
          ["home", "/h"],
        ],
      }),
      done,
    );
    await l().submit(
      act("dev", "git.push", {
        fields: [
          ["commit", "c2"],
          ["run", "r1"],
          ["run", "r2"],
          ["home", "/h"],
        ],
      }),
      done,
    );
    await l().submit(
      act("dev", "git.push", {
        actorTeam: "beta",
        fields: [
          ["commit", "c3"],
          ["run", "r"],
          ["home", "/h"],
        ],
      }),
      done,
    );
    for (const c of ["c1", "c2", "c3"]) expect(l().view.commitAuthor("alpha", c)).toBeUndefined();
  });

  it("trunkFacts: authors[effectId] only when every commit has a known author, deduplicated; runs passed through", async () => {
    const { l } = await setup("author-set");
    await l().submit(push("dev", ["c1", "c2"], "run-a", "/homes/dev"), done);
    await l().submit(push("ops", ["c3"], "run-b", "/homes/ops"), done);
    await l().submit(push("qa", ["c4"], "run-c", "/homes/qa"), refused);
    const runs = { gater: { run: "run-g", home: "/homes/gater" } };
    const facts = l().view.trunkFacts("alpha", { effectId: hex(E1), commits: ["c1", "c2", "c3"], runs });
    expect(facts.authors).toEqual({
      [hex(E1)]: [
        { seat: "dev", run: "run-a", home: "/homes/dev" },
        { seat: "ops", run: "run-b", home: "/homes/ops" },
      ],
    });
    expect(facts.runs).toBe(runs);
    expect(l().view.trunkFacts("alpha", { effectId: hex(E1), commits: ["c1", "c4"] }).authors).toBeUndefined();
    expect(l().view.trunkFacts("alpha", { effectId: hex(E1), commits: [] }).authors).toBeUndefined();
    expect(l().view.trunkFacts("alpha", { effectId: hex(E1) }).authors).toBeUndefined();
    expect(l().view.trunkFacts("alpha", { commits: ["c1"] }).authors).toBeUndefined();
    expect(l().view.trunkFacts("alpha", { effectId: hex(E1) }).runs).toBeUndefined();
    // The kernel's own reader accepts the projection as it stands.
    expect(readFacts(JSON.parse(JSON.stringify(facts)))).toEqual(facts);
  });

  it("gates and reviews count only when done; intents and outcomes list every gated act of the effect id", async () => {
    const { l } = await setup("gates");
    const g1 = await l().submit(gate("gater", E1, "pass"), done);
    const g2 = await l().submit(gate("gater2", E1, "pass"), refused);
    const g3 = await l().submit(gate("gater", E1, "refuse"), done);
    await l().submit(review("rev", E1, "approve"), done);
    await l().submit(review("rev2", E1, "approve"), refused);
    await l().submit(review("rev3", E1, "reject"), done);
    await l().submit(review("rev4", E1, "maybe"), done);
    const g4 = await pending(l(), gate("gater3", E1, "pass"));
    await l().submit(gate("gater", E2, "pass"), done);
    await l().submit(review("rev", E2, "approve"), done);
    const facts = l().view.trunkFacts("alpha", { effectId: hex(E1) });
    expect(facts.gates).toEqual([
      { id: String(g1.intentSeq), effectId: hex(E1), signer: "gater", authority: "gater/role:gater/gate/0", result: "pass", at: g1.intentSeq },
      { id: String(g3.intentSeq), effectId: hex(E1), signer: "gater", authority: "gater/role:gater/gate/0", result: "refuse", at: g3.intentSeq },
    ]);
    expect(facts.reviews).toEqual([
      { effectId: hex(E1), seat: "rev", verdict: "approve" },
      { effectId: hex(E1), seat: "rev3", verdict: "reject" },
    ]);
    expect(facts.intents?.map((i) => `${i.act}:${i.seat}`)).toEqual([
      "gate:gater",
      "gate:gater2",
      "gate:gater",
      "review:rev",
      "review:rev2",
      "review:rev3",
      "review:rev4",
      "gate:gater3",
    ]);
    expect(facts.intents?.every((i) => i.effectId === hex(E1))).toBe(true);
    // The pending gate has an intent and no outcome.
    expect(facts.outcomes?.map((o) => `${o.act}:${o.result}`)).toEqual([
      "gate:done",
      "gate:refused",
      "gate:done",
      "review:done",
      "review:refused",
      "review:done",
      "review:done",
    ]);
    expect(facts.outcomes).toHaveLength(7);
    expect(g2.status).toBe("refused");
    expect(g4).toBeGreaterThan(g3.intentSeq);
    // Without an effect id: the whole team's.
    const all = l().view.trunkFacts("alpha", {});
    expect(all.gates).toHaveLength(3);
    expect(all.reviews).toHaveLength(3);
    expect(all.intents).toHaveLength(10);
    expect(l().view.trunkFacts("alpha", { effectId: hex(E2) }).gates).toEqual([expect.objectContaining({ effectId: hex(E2) })]);
    expect(l().view.trunkFacts("alpha", { effectId: "ff".repeat(32) })).toEqual({ gates: [], reviews: [], intents: [], outcomes: [], consumed: [] });
  });

  it("consumed: a done, pending or unknown merge holds its gate's pass; a refused one releases it", async () => {
    const { l } = await setup("consumed");
    const gDone = await l().submit(gate("gater", E1, "pass"), done);
    const gPending = await l().submit(gate("gater", E1, "pass"), done);
    const gRefused = await l().submit(gate("gater", E1, "pass"), done);
    const gUnknown = await l().submit(gate("gater", E1, "pass"), done);
    const gFree = await l().submit(gate("gater", E1, "pass"), done);
    await l().submit(merge("merger", E1, String(gDone.intentSeq)), done);
    await pending(l(), merge("merger", E1, String(gPending.intentSeq)));
    await l().submit(merge("merger", E1, String(gRefused.intentSeq)), refused);
    await l().submit(merge("merger", E1, String(gUnknown.intentSeq)), lost);
    const facts = l().view.trunkFacts("alpha", { effectId: hex(E1) });
    expect([...(facts.consumed ?? [])].sort()).toEqual([gDone, gPending, gUnknown].map((g) => String(g.intentSeq)).sort());
    expect(facts.consumed).not.toContain(String(gRefused.intentSeq));
    expect(facts.consumed).not.toContain(String(gFree.intentSeq));
    // The unknown merge's outcome voids (the kernel reads it); the pending one has none yet.
    expect(facts.outcomes?.filter((o) => o.act === "merge").map((o) => o.result)).toEqual(["done", "refused", "unknown"]);
    // The team-wide answer names the same consumed gates; another effect id's answer none of them.
    expect([...(l().view.trunkFacts("alpha", {}).consumed ?? [])].sort()).toEqual([...(facts.consumed ?? [])].sort());
    expect(l().view.trunkFacts("alpha", { effectId: hex(E2) }).consumed).toEqual([]);
  });

  it("deploy outcomes carry their env; an unknown outcome is listed as unknown", async () => {
    const { l } = await setup("deploy");
    await l().submit(deploy("ops", E1, "staging"), done);
    const lostDeploy = await l().submit(deploy("ops", E1, "prod"), lost);
    const facts = l().view.trunkFacts("alpha", { effectId: hex(E1) });
    expect(facts.outcomes).toEqual([
      { effectId: hex(E1), act: "deploy", result: "done", env: "staging" },
      { effectId: hex(E1), act: "deploy", result: "unknown", env: "prod", at: expect.any(Number) },
    ]);
    // A voiding outcome is placed where its outcome record is, after its intent.
    expect(facts.outcomes?.[1]?.at).toBeGreaterThan(lostDeploy.intentSeq);
    expect(facts.intents).toEqual([
      { effectId: hex(E1), act: "deploy", seat: "ops" },
      { effectId: hex(E1), act: "deploy", seat: "ops" },
    ]);
  });

  it("a failed deploy voids the passes before it and not a re-gate after it (§3)", async () => {
    const { l } = await setup("regate");
    const before = await l().submit(gate("gater", E1, "pass"), done);
    const failed = await l().submit(deploy("ops", E1, "staging"), refused);
    const after = await l().submit(gate("gater", E1, "pass"), done);
    const facts = l().view.trunkFacts("alpha", { effectId: hex(E1) });
    const voiding = facts.outcomes?.find((o) => o.result === "refused");
    expect(voiding?.at).toBeGreaterThan(failed.intentSeq);
    expect(facts.gates?.map((g) => g.at)).toEqual([before.intentSeq, after.intentSeq]);
    expect(before.intentSeq).toBeLessThan(voiding?.at as number);
    expect(after.intentSeq).toBeGreaterThan(voiding?.at as number);
    expect(readFacts(JSON.parse(JSON.stringify(facts)))).toEqual(facts);
  });

  it("a resolved unknown follows its resolution: done counts, not-done releases, a repeat stays unknown", async () => {
    const { e, l } = await setup("resolved");
    const g = await l().submit(gate("gater", E1, "pass"), lost);
    const m = await l().submit(merge("merger", E1, "77"), lost);
    const p = await l().submit(push("dev", ["c9"], "run-a", "/homes/dev"), lost);
    const d = await l().submit(deploy("ops", E2, "prod"), lost);
    expect(l().view.trunkFacts("alpha", { effectId: hex(E1) }).gates).toEqual([]);
    await l().reconcile(
      await signOwnerAct(outcomeReconcileDraft({ team: "alpha", intentSeq: g.intentSeq, decision: ReconcileDecision.ACCEPT_DONE }), e.ownerSeed),
    );
    await l().resolveUnknown(m.intentSeq, false, "the remote does not have it");
    await l().resolveUnknown(p.intentSeq, true, "the remote has it");
    await l().reconcile(
      await signOwnerAct(
        outcomeReconcileDraft({ team: "alpha", intentSeq: d.intentSeq, decision: ReconcileDecision.REPEAT, newRequestId: "again" }),
        e.ownerSeed,
      ),
    );
    const facts = l().view.trunkFacts("alpha", {});
    expect(facts.gates).toEqual([expect.objectContaining({ id: String(g.intentSeq), result: "pass" })]);
    expect(facts.outcomes?.map((o) => `${o.act}:${o.result}`)).toEqual(["gate:done", "merge:refused", "deploy:unknown"]);
    expect(facts.consumed).toEqual([]);
    expect(l().view.commitAuthor("alpha", "c9")).toEqual({ seat: "dev", run: "run-a", home: "/homes/dev" });
  });

  it("the projection survives close and reopen: the same answers, and the same snapshot", async () => {
    const { e, l } = await setup("reopen");
    await l().submit(push("dev", ["c1", "c2"], "run-a", "/homes/dev"), done);
    const g = await l().submit(gate("gater", E1, "pass"), done);
    await l().submit(review("rev", E1, "approve"), done);
    await l().submit(merge("merger", E1, String(g.intentSeq)), lost);
    await l().submit(deploy("ops", E1, "staging"), refused);
    const query = { effectId: hex(E1), commits: ["c1", "c2"] };
    const before = { facts: l().view.trunkFacts("alpha", query), all: l().view.trunkFacts("alpha", {}), author: l().view.commitAuthor("alpha", "c2") };
    const snapshot = l().view.snapshot();
    expect(before.facts.authors?.[hex(E1)]).toHaveLength(1);
    expect(before.facts.consumed).toEqual([String(g.intentSeq)]);
    await l().close();
    ledger = await e.open();
    expect({ facts: l().view.trunkFacts("alpha", query), all: l().view.trunkFacts("alpha", {}), author: l().view.commitAuthor("alpha", "c2") }).toEqual(before);
    expect(l().view.snapshot()).toEqual(snapshot);
  });

  it("a pending merge recovered as unknown on reopen still holds its pass", async () => {
    const { e, l } = await setup("reopen-pending");
    const g = await l().submit(gate("gater", E1, "pass"), done);
    await pending(l(), merge("merger", E1, String(g.intentSeq)));
    expect(l().view.trunkFacts("alpha", { effectId: hex(E1) }).consumed).toEqual([String(g.intentSeq)]);
    await l().close();
    ledger = await e.open();
    const facts = l().view.trunkFacts("alpha", { effectId: hex(E1) });
    expect(facts.consumed).toEqual([String(g.intentSeq)]);
    expect(facts.outcomes?.filter((o) => o.act === "merge").map((o) => o.result)).toEqual(["unknown"]);
  });

  it("teams are isolated: one team's pushes, gates, reviews and merges are invisible to another", async () => {
    const { l } = await setup("teams");
    await l().submit(push("dev", ["c1"], "run-a", "/homes/dev", "alpha"), done);
    const g = await l().submit(gate("gater", E1, "pass", "alpha"), done);
    await l().submit(review("rev", E1, "approve", "alpha"), done);
    await l().submit(merge("merger", E1, String(g.intentSeq), "beta"), done);
    await l().submit(push("dev", ["c2"], "run-b", "/homes/beta-dev", "beta"), done);
    expect(l().view.commitAuthor("beta", "c1")).toBeUndefined();
    expect(l().view.commitAuthor("alpha", "c2")).toBeUndefined();
    expect(l().view.commitAuthor("beta", "c2")).toEqual({ seat: "dev", run: "run-b", home: "/homes/beta-dev" });
    const beta = l().view.trunkFacts("beta", { effectId: hex(E1), commits: ["c1"] });
    expect(beta).toEqual({
      gates: [],
      reviews: [],
      intents: [{ effectId: hex(E1), act: "merge", seat: "merger" }],
      outcomes: [{ effectId: hex(E1), act: "merge", result: "done" }],
      consumed: [],
    });
    // beta's merge named alpha's gate id; it consumes nothing of alpha's.
    const alpha = l().view.trunkFacts("alpha", { effectId: hex(E1), commits: ["c1"] });
    expect(alpha.consumed).toEqual([]);
    expect(alpha.gates).toHaveLength(1);
    expect(alpha.authors).toEqual({ [hex(E1)]: [{ seat: "dev", run: "run-a", home: "/homes/dev" }] });
    expect(l().view.trunkFacts("gamma", {})).toEqual({ gates: [], reviews: [], intents: [], outcomes: [], consumed: [] });
  });
});
