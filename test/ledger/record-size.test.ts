import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { openStore, type Ledger } from "../../src/ledger/index.js";
import type { SubmitRequest } from "../../src/ledger/dispatch.js";
import { approxActBytes, approxOutcomeDetail } from "../../src/ledger/record-size.js";
import { initEnv, request, type TestEnv } from "./helpers.js";

/**
 * The act budget charges an act's records before they exist (src/ledger/record-size.ts). Its
 * bound holds only if the estimate is never below what the store really keeps: checked here
 * against a real SQLite ledger, for the shapes seat acts take — a bare act, a checkpoint's
 * longest note, a push naming a thousand commits, the longest target and request id, a
 * pipeline payload with its domain and grant, a long outcome note and a reply — and never
 * wildly above it either (an estimate of twice the truth would halve every seat's budget).
 */
let env: TestEnv | undefined;
let ledger: Ledger | undefined;
afterEach(async () => {
  await ledger?.close();
  env?.cleanup();
  env = undefined;
  ledger = undefined;
});

const long = (n: number, c = "x") => c.repeat(n);

const shapes: [string, (r: SubmitRequest) => SubmitRequest, { note: string; reply: Uint8Array }][] = [
  ["a bare act", (r) => r, { note: "", reply: new Uint8Array() }],
  ["a checkpoint with the longest note", (r) => ({ ...r, payload: { fields: [{ key: "note", value: long(4096) }] } }), { note: "", reply: new Uint8Array() }],
  [
    "a push naming a thousand commits",
    (r) => ({ ...r, payload: { fields: Array.from({ length: 1000 }, (_, i) => ({ key: "commit", value: `${i.toString(16).padStart(40, "0")} w@proj` })) } }),
    { note: "", reply: new Uint8Array() },
  ],
  [
    "the longest target and request id, in multi-byte characters",
    (r) => ({ ...r, requestId: long(1365, "é"), target: { kind: TargetKind.REF, name: long(1365, "€") } }),
    { note: "", reply: new Uint8Array() },
  ],
  [
    "a pipeline payload (domain, grant, team file hash, capability)",
    (r) => ({
      ...r,
      capability: { capability: "write" },
      payload: {
        fields: [{ key: "path", value: "src/a.txt" }],
        domain: { team: "alpha", repositoryRoot: "/home/owner/projects/some/deep/repository" },
        rootGrant: "grant-0123456789abcdef",
        inputState: { teamFileHash: new Uint8Array(32).fill(7) },
      },
    }),
    { note: "", reply: new Uint8Array() },
  ],
  ["a long outcome note and a reply", (r) => r, { note: long(2048, "n"), reply: new Uint8Array(1024).fill(1) }],
];

describe("an act's estimated records against what a real ledger stores", () => {
  it.each(shapes)("%s", async (_what, shape, effect) => {
    const made = await initEnv("record-size");
    env = made.env;
    ledger = made.ledger;
    const req = shape(request("dev", "r1"));
    const reply = await ledger.submit(req, async () => ({ result: "done", ...effect }));
    const store = openStore(join(env.dir, "ledger.db"), { readonly: true });
    let stored: { intent: number; outcome: number };
    try {
      const size = (seq: number) => {
        const [row] = store.records(seq, 1);
        return (row?.header.length ?? 0) + (row?.payload?.length ?? 0);
      };
      stored = { intent: size(reply.intentSeq), outcome: size(reply.outcomeSeq ?? 0) };
    } finally {
      store.close();
    }
    const estimate = approxActBytes(req);
    const estimated = { intent: estimate.intent, outcome: estimate.outcome + approxOutcomeDetail(reply.note, reply.reply) };
    expect(stored.intent).toBeGreaterThan(0);
    expect(stored.outcome).toBeGreaterThan(0);
    for (const which of ["intent", "outcome"] as const) {
      expect(estimated[which], `${which}: stored ${stored[which]}`).toBeGreaterThanOrEqual(stored[which]);
      expect(estimated[which], `${which}: stored ${stored[which]}`).toBeLessThanOrEqual(2 * stored[which] + 512);
    }
  });
});
