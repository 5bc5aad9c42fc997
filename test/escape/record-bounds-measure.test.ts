import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { statSync } from "node:fs";
import { join } from "node:path";
import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { openStore } from "../../src/ledger/index.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { srcWriterTeamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * The measurement behind docs/enforcement.md's ledger row, "the most ledger bytes one seat can
 * cause per minute" (issue 20, finding 4). Not part of `npm test` (it floods for a while):
 * TEAMD_MEASURE_RECORDS=1 npx vitest run test/escape/record-bounds-measure.test.ts
 *
 * A client on a real seat's socket (the seat's identity is its socket: this is what a client
 * inside the seat gets, without the shim's process start per call) floods, at 16 in flight,
 * each kind of record a seat can cause at the daemon's own pace, for a fixed time, and prints
 * records per second, stored bytes per record (header + payload, as the store holds them) and
 * the growth of the database and its WAL:
 *
 * - checkpoints with the largest note (4096 bytes): the largest act records a seat makes with
 *   no capability and no git work (intent + outcome), until the act budget (16 MiB, then 2 MiB
 *   a minute) refuses them — and those refusals, at this pace, meet the refusal budget, which
 *   halts the seat;
 * - refusals: one with a 200 KiB request id (cut in the record), then the fastest refusal (a
 *   checkpoint note over its bound: no git work) until the default refusal budget (300/60)
 *   halts the seat — how many records land before its seat_stop and after it.
 *
 * Only checkpoints are used: their message shape is the one least likely to change.
 */
const MEASURE = process.env.TEAMD_MEASURE_RECORDS === "1";
const SECONDS = Number(process.env.TEAMD_MEASURE_SECONDS ?? "20");
const asRoot = process.getuid?.() === 0;
if (MEASURE && asRoot) ensureSeatUser();

const TEAM_FILE = srcWriterTeamFile("w");

describe.runIf(MEASURE && process.platform === "linux")("records one seat can cause per minute (measurement)", () => {
  let h: TeamdHarness;
  const ledgerBytes = () =>
    ["ledger.db", "ledger.db-wal"].reduce((sum, f) => sum + (statSync(join(h.home, "ledger", f), { throwIfNoEntry: false })?.size ?? 0), 0);
  const tip = () => {
    const store = openStore(join(h.home, "ledger", "ledger.db"), { readonly: true });
    try {
      return store.tip()?.seq ?? 0;
    } finally {
      store.close();
    }
  };
  const storedSince = (after: number) => {
    const store = openStore(join(h.home, "ledger", "ledger.db"), { readonly: true });
    try {
      const rows = store.records(after + 1, 10_000_000);
      return {
        count: rows.length,
        bytes: rows.reduce((s, r) => s + r.header.length + (r.payload?.length ?? 0), 0),
        max: Math.max(0, ...rows.map((r) => r.header.length + (r.payload?.length ?? 0))),
      };
    } finally {
      store.close();
    }
  };

  async function flood(call: () => Promise<unknown>, seconds: number, inFlight = 16): Promise<void> {
    const until = Date.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (Date.now() < until) await call().catch(() => undefined);
      }),
    );
  }

  function report(what: string, seconds: number, after: number, before: number): void {
    const s = storedSince(after);
    const grown = ledgerBytes() - before;
    const line = `${what}: ${s.count} records in ${seconds} s (${(s.count / seconds).toFixed(0)}/s), ${s.bytes} stored bytes (${(s.bytes / Math.max(1, s.count)).toFixed(0)} per record, largest ${s.max}), files grew ${grown} bytes; per minute: ${(((s.bytes / seconds) * 60) / 2 ** 20).toFixed(1)} MiB stored, ${(((grown / seconds) * 60) / 2 ** 20).toFixed(1)} MiB on disk`;
    process.stdout.write(`MEASURE ${line}\n`);
  }

  beforeAll(async () => {
    h = await appliedTeam("teamd-record-measure-", TEAM_FILE, { "README.md": "hello\n", "src/a.txt": "a\n" });
    await h.ok(["start", "w@proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  }, 60_000);

  it("checkpoints with the largest note", async () => {
    const client = createRpcClient(ShimService, h.seatSocket("w"));
    try {
      const note = "n".repeat(4096);
      const [after, before] = [tip(), ledgerBytes()];
      await flood(() => client.checkpoint({ requestId: randomUUID(), note }), SECONDS);
      report("checkpoint (4096-byte note)", SECONDS, after, before);
    } finally {
      client.close();
    }
    expect(await h.ok(["status"])).toContain("w@proj");
  }, 300_000);

  it("the largest refusal records, then a flood until the budget halts the seat", async () => {
    // A new run, with its budgets full: the checkpoint flood spent this one's act budget and
    // then, refused, its refusal budget.
    await h.ok(["stop", "w@proj"]);
    await h.ok(["start", "w@proj"]);
    const client = createRpcClient(ShimService, h.seatSocket("w"));
    const big = "x".repeat(200 * 1024);
    try {
      let [after, before] = [tip(), ledgerBytes()];
      await flood(() => client.checkpoint({ requestId: `r${randomUUID()}${big}`, note: "n" }), 1, 4);
      report("refusal (a 200 KiB request id)", 1, after, before);
      [after, before] = [tip(), ledgerBytes()];
      const started = Date.now();
      await flood(() => client.checkpoint({ requestId: randomUUID(), note: "n".repeat(4097) }), 5);
      report("refusal flood (a checkpoint note over its bound: no git work), default budget", (Date.now() - started) / 1000, after, before);
      const store = openStore(join(h.home, "ledger", "ledger.db"), { readonly: true });
      try {
        const rows = store.records(after + 1, 1_000_000);
        const stop = rows.find((r) => r.type === Number(RecordType.SEAT_STOP));
        process.stdout.write(
          `MEASURE records before the seat_stop: ${rows.filter((r) => stop === undefined || r.seq < stop.seq).length}, after it: ${stop === undefined ? "no stop" : rows.filter((r) => r.seq > stop.seq).length}\n`,
        );
      } finally {
        store.close();
      }
    } finally {
      client.close();
    }
    process.stdout.write(
      `MEASURE status after the flood: ${(await h.ok(["status"]))
        .split("\n")
        .filter((l) => l.includes("w@proj"))
        .join(" | ")}\n`,
    );
  }, 300_000);
});
