import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient, RefusalError } from "../../src/rpc/index.js";
import { appliedTeam } from "../support/applied-team.js";
import type { LogRecord, TeamdHarness } from "../support/teamd-harness.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { whoAmIWithProtocol } from "../rpc/raw-call.js";

/**
 * Every refusal a seat can meet is a ledger record, once (§15; issue 19, wall 8): against a
 * real daemon, real seats and the real SQLite ledger, each seat-facing refusal that once left
 * no record — a malformed push (`rpc.malformed`, where the push is decoded), a broker retry
 * (`broker.replay`), a refusal in a quiet context (a seat no longer in the policy in force
 * asking for its leases, or who it is: `seat.unknown`), a wrong protocol version
 * (`rpc.version`, before any handler; spoken in raw grpc-js from test/rpc/raw-call.ts) — is
 * answered with its rule and found as exactly one REFUSAL record with that rule.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const seat = (capabilities: string) => `    lab: anthropic\n    capabilities:\n${capabilities}    start:\n      command: [sleep, "3600"]\n`;
const HEAD = `version: 1
team: proj
declare:
  branches: [main]
  labs: [anthropic]
  tasks: [notes]
seats:
  plan:
${seat(`      read: ~\n      use-broker: { task: [notes] }\n`)}`;
const GONE = `  gone:\n${seat("      read: ~\n")}`;

describe.runIf(process.platform === "linux")("every seat refusal is a ledger record, once", () => {
  let h: TeamdHarness;

  beforeAll(async () => {
    h = await appliedTeam("teamd-seat-refusals-", HEAD + GONE);
    // The embedded default tracker of `notes`: a folder of Markdown tasks under TEAMD_HOME.
    const notes = join(h.home, "broker", "tasks", "proj", "notes");
    mkdirSync(notes, { recursive: true, mode: 0o700 });
    writeFileSync(join(notes, "login.md"), "---\ntitle: Fix the login redirect\n---\nIt loops.\n");
    await h.ok(["start", "--team", "proj"]);
  }, 180_000);

  afterAll(async () => {
    await h?.run(["stop", "--team", "proj"]).catch(() => undefined);
    await h?.cleanup();
  });

  /** The REFUSAL records of one seat with one rule (`teamd log` shows a refusal's rule as its result). */
  const refusals = async (who: string, rule: string): Promise<LogRecord[]> =>
    (await h.records()).filter((r) => r.type === "refusal" && r.actor === `seat:proj/${who}` && r.result === rule);

  const refusedWith = (rule: string) => (error: unknown) => {
    expect(error, String(error)).toBeInstanceOf(RefusalError);
    expect((error as RefusalError).rule).toBe(rule);
  };

  it("a malformed push (no header first) is refused rpc.malformed and recorded once", async () => {
    const client = createRpcClient(ShimService, h.seatSocket("plan"), { deadlineMs: 30_000 });
    try {
      async function* parts() {
        yield { part: { case: "data" as const, value: new Uint8Array([1, 2, 3]) } };
      }
      await client.push(parts()).then(() => expect.fail("a push without its header was accepted"), refusedWith("rpc.malformed"));
    } finally {
      client.close();
    }
    const found = await refusals("plan", "rpc.malformed");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ action: "git.push" });
  });

  it("a broker retry is refused broker.replay and recorded once", async () => {
    const client = createRpcClient(ShimService, h.seatSocket("plan"), { deadlineMs: 30_000 });
    try {
      const first = await client.broker({ requestId: "r-twice", operation: "pull", task: "notes" });
      expect(first.tasks.map((t) => t.id)).toEqual(["login"]);
      await client
        .broker({ requestId: "r-twice", operation: "pull", task: "notes" })
        .then(() => expect.fail("a retried pull was served"), refusedWith("broker.replay"));
    } finally {
      client.close();
    }
    const found = await refusals("plan", "broker.replay");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ action: "broker.pull" });
  });

  it("a refusal in a quiet context (a seat no longer in the policy in force) is recorded once, and whoami still answers", async () => {
    // The team file applied again without `gone`: its socket still answers, its context refuses.
    writeFileSync(join(h.repo, "teamd.yaml"), HEAD);
    await h.ok(["apply", "--yes"]);
    const client = createRpcClient(ShimService, h.seatSocket("gone"), { deadlineMs: 30_000 });
    try {
      await client.leaseList({}).then(() => expect.fail("a seat outside the policy in force listed leases"), refusedWith("seat.unknown"));
      const me = await client.whoAmI({});
      expect(me).toMatchObject({ seat: "gone", team: "proj" });
      expect(me.capabilities).toEqual([]);
    } finally {
      client.close();
    }
    const found = await refusals("gone", "seat.unknown");
    expect(found.map((r) => r.action).sort()).toEqual(["lease.list", "seat.whoami"]);
  });

  it("a wrong protocol version is refused rpc.version before any handler and recorded once", async () => {
    const before = (await h.records()).filter((r) => r.type === "refusal" && r.actor === "seat:proj/plan").length;
    const reply = await whoAmIWithProtocol(h.seatSocket("plan"), "999");
    expect(reply).toMatchObject({ rule: "rpc.version" });
    expect(reply.details).toContain("the client speaks protocol 999");
    const found = await refusals("plan", "rpc.version");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ action: "rpc.WhoAmI" });
    // Only that one: the handler never ran, so no second record of the same attempt.
    expect((await h.records()).filter((r) => r.type === "refusal" && r.actor === "seat:proj/plan").length).toBe(before + 1);
  });
});
