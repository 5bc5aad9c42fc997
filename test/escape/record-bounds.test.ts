import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { statSync } from "node:fs";
import { join } from "node:path";
import { describeStored, openStore } from "../../src/ledger/index.js";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";
import { waitFor } from "../support/wait.js";

/**
 * Records are bounded (issue 20, finding 4), attacked from inside real seats started by
 * `teamd start` through a real daemon and a real ledger. Row proved (docs/enforcement.md):
 * "Ledger: hash-chained, signed records; intent before effect; unknown outcomes (§15)" — its
 * bounds: a seat's refusals grow the ledger by a bounded amount whatever the seat sends (every
 * seat-supplied string is cut, keeping its length and sha-256), and a seat that floods refusals
 * past its budget is stopped (`halted: refusal budget`) and the owner told once (§11).
 *
 * Controls beside each attack: the refused read is on record with the original path's length
 * and hash (so the multi-MiB path did reach the daemon), and a seat under the budget keeps
 * running. Checks are on the ledger file, the records and `teamd status`, never on what the
 * seat was told.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const seatOf = (name: string) => `  ${name}:
    lab: anthropic
    capabilities:
      read: { path: src/ }
    start:
      command: [sleep, "3600"]
`;
const TEAM_FILE = teamFile(`${seatOf("big")}${seatOf("flood")}${seatOf("calm")}${seatOf("hoard")}`);

/** The test's budget (TEAMD_REFUSAL_BUDGET): 20 at once, then 6 a minute — small, so the flood is quick; the default is 300/60. */
const BURST = 20;
const BUDGET = `${BURST}/6`;

/** The test's act budget (TEAMD_ACT_BUDGET, MiB of records): 1 MiB at once and no refill, so a flood of acts meets it within a few hundred calls; the default is 16/2. */
const ACT_BUDGET_BYTES = 2 ** 20;
/** The hoarding seat's checkpoints: notes of nearly the largest size (4096 bytes), more of them than the act budget holds. */
const NOTE = 4000;
const CHECKPOINTS = 400;

/**
 * Paths of this many bytes, sent by the seat through the shim's own code (argv cannot carry
 * one: execve caps an argument at 128 KiB), READS of them: 1.6 MiB of path in all. One path is
 * held under the seat socket's receive cap (256 KiB, src/rpc/channel-options.ts), past which
 * grpc refuses the message before any handler; the bound on records does not rest on that cap.
 */
const BIG = 200 * 1024;
const READS = ["1", "2", "3", "4", "5", "6", "7", "8"];

/**
 * Run the seat's shim bundle in-process with an argv no exec could hold: what an attacker
 * inside the seat does with the node the shim needs.
 */
const BIG_READ = `
const path = "docs/" + "a".repeat(${BIG} - 6) + process.env.N;
process.argv = [process.execPath, process.env.SHIM, "file", "read", path];
await import(process.env.SHIM);
`;

interface Rec {
  seq: number;
  type: string;
  actor: string;
  action: string;
  target: string;
  result: string;
  [key: string]: unknown;
}

describe.runIf(process.platform === "linux")("records are bounded: a hostile seat's refusals", () => {
  let h: TeamdHarness;
  const ledgerBytes = () =>
    ["ledger.db", "ledger.db-wal"].reduce((sum, f) => sum + (statSync(join(h.home, "ledger", f), { throwIfNoEntry: false })?.size ?? 0), 0);
  const status = async () => JSON.parse(await h.ok(["status", "--json"])) as { seats: { seat: string; state: string }[] };
  const stateOf = async (seat: string) => (await status()).seats.find((s) => s.seat === seat)?.state;
  /** The stored records after `afterSeq`, read from the ledger's file (payloads included, which `teamd log --json` leaves out): each with its stored bytes and its text. */
  const stored = (afterSeq: number): { seq: number; type: string; bytes: number; text: string }[] => {
    const store = openStore(join(h.home, "ledger", "ledger.db"), { readonly: true });
    try {
      return store.records(afterSeq + 1, 100_000).map((row) => {
        const entry = describeStored(row);
        const text = JSON.stringify(entry, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v instanceof Uint8Array ? `<${v.length} bytes>` : v));
        return { seq: row.seq, type: entry.type, bytes: row.header.length + (row.payload?.length ?? 0), text };
      });
    } finally {
      store.close();
    }
  };

  beforeAll(async () => {
    h = await appliedTeam(
      "teamd-record-bounds-",
      TEAM_FILE,
      { "README.md": "hello\n", "src/a.txt": "a\n", "docs/x.md": "x\n" },
      { daemonEnv: { TEAMD_REFUSAL_BUDGET: BUDGET, TEAMD_ACT_BUDGET: "1/0" } },
    );
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  }, 60_000);

  it("refused reads with MiBs of paths grow the ledger by a bounded amount, each on record with the path's length and hash", async () => {
    const before = ledgerBytes();
    const beforeSeq = Math.max(...(await h.records()).map((r) => r.seq));
    for (const n of READS) {
      const r = await h.exec(
        "big",
        ["sh", "-c", 'SHIM=$(readlink -f "$(command -v teamd-shim)") N=$2 exec node --input-type=module -e "$1"', "sh", BIG_READ, `${n}`],
        { timeoutMs: 60_000 },
      );
      // Refused (the seat may not read docs/): whatever it was told, the check is on the ledger.
      expect(r.code, r.stderr).not.toBe(0);
    }
    // The files on disk: the database and its WAL, which takes a few 4 KiB pages per commit
    // (the record, its indexes, the seal) whatever the record's size — well under the 1.6 MiB
    // of path sent, which unbounded records hold at least once each (measured: 3.4 MiB).
    const grown = ledgerBytes() - before;
    expect(grown).toBeLessThan(1024 * 1024);
    // The records themselves: every record since (the refusals, and the owner's exec records), a few KiB each.
    const since = stored(beforeSeq);
    const recordBytes = since.reduce((sum, r) => sum + r.bytes, 0);
    expect(recordBytes).toBeLessThan(READS.length * 2 * 4096);

    // Control: each refusal is on record, naming the original path's byte length and sha-256 —
    // so the multi-KiB path did reach the daemon, and what was cut is not hidden.
    const refused = since.filter((r) => r.type === "refusal" && r.text.includes('"file.read"') && r.text.includes("big"));
    expect(refused).toHaveLength(READS.length);
    for (const [i, n] of READS.entries()) {
      const path = `docs/${"a".repeat(BIG - 6)}${n}`;
      const digest = createHash("sha256").update(path).digest("hex");
      const record = refused[i] as { bytes: number; text: string };
      expect(record.bytes).toBeLessThan(8 * 1024);
      expect(record.text).toContain(`${BIG} bytes, sha256 ${digest}`);
    }
  }, 240_000);

  it("a seat's acts past its act budget are refused seat.act-budget, their records bounded in bytes; the seat runs on", async () => {
    // The attack's reach (the control of the bound): what the seat tries to store is well past the budget.
    expect(CHECKPOINTS * NOTE).toBeGreaterThan(ACT_BUDGET_BYTES);
    const beforeSeq = Math.max(...(await h.records()).map((r) => r.seq));
    // Checkpoints need no capability and no git work: the cheapest act a seat makes, with the
    // longest note it may. One after another, stopping at the first refusal.
    const r = await h.exec(
      "hoard",
      [
        "sh",
        "-c",
        `note=$(head -c ${NOTE} /dev/zero | tr '\\0' x); n=0; while [ $n -lt ${CHECKPOINTS} ]; do teamd-shim checkpoint "$note" >/dev/null 2>/tmp/err || { cat /tmp/err; break; }; n=$((n+1)); done; echo landed=$n`,
      ],
      { timeoutMs: 240_000 },
    );
    const landed = Number(/landed=(\d+)/.exec(r.stdout)?.[1] ?? "-1");
    // Control: acts under the budget land (a hundred or more checkpoints of 4 KB fit in 1 MiB).
    expect(landed, r.stdout + r.stderr).toBeGreaterThan(100);
    expect(landed, r.stdout + r.stderr).toBeLessThan(CHECKPOINTS);
    expect(r.stdout).toContain("seat.act-budget");

    const since = stored(beforeSeq);
    const checkpoints = since.filter((x) => (x.type === "intent" || x.type === "outcome") && x.text.includes('"seat.checkpoint"'));
    expect(checkpoints).toHaveLength(2 * landed);
    // The bound, on the ledger's file: the seat's act records stay within its budget.
    expect(checkpoints.reduce((sum, x) => sum + x.bytes, 0)).toBeLessThanOrEqual(ACT_BUDGET_BYTES);
    const refused = since.filter((x) => x.type === "refusal" && x.text.includes("seat.act-budget"));
    expect(refused).toHaveLength(1);
    // Slowed, not stopped: the seat still runs (a seat that kept calling would meet its refusal budget).
    expect(await stateOf("hoard")).toBe("running");
    expect(since.filter((x) => x.type === "seat_stop")).toEqual([]);
  }, 300_000);

  const refusals = (seat: string, count: number) =>
    h.exec(seat, ["sh", "-c", `seq 1 ${count} | xargs -P 6 -I{} teamd-shim file read docs/nope{} >/dev/null 2>&1; echo done`], { timeoutMs: 120_000 });

  it("control: a seat refused under its budget keeps running", async () => {
    const r = await refusals("calm", BURST - 8);
    expect(r.stdout).toContain("done");
    expect(await stateOf("calm")).toBe("running");
    const records = await h.records<Rec>();
    expect(records.filter((x) => x.type === "refusal" && x.actor.includes("calm")).length).toBe(BURST - 8);
    expect(records.filter((x) => x.type === "seat_stop" && x.target.includes("calm"))).toEqual([]);
  }, 180_000);

  it("a refusal flood past the budget stops the seat (halted: refusal budget) and tells the owner once", async () => {
    await refusals("flood", BURST * 3);
    // The seat is stopped by the daemon: status shows the run state of its own.
    expect(await waitFor(async () => (await stateOf("flood")) === "halted: refusal budget", 20_000)).toBe(true);
    expect((await h.run(["exec", "flood@proj", "--", "true"])).code).not.toBe(0);

    const records = await h.records<Rec>();
    const stops = records.filter((x) => x.type === "seat_stop" && x.target.includes("flood"));
    expect(stops).toHaveLength(1);
    const stop = stops[0] as Rec;
    expect(stored(stop.seq - 1).find((r) => r.seq === stop.seq)?.text).toContain("halted: refusal budget");
    // The refusal that found the budget empty is on record before the stop: more than the burst.
    const floodRefusals = records.filter((x) => x.type === "refusal" && x.actor.includes("flood") && x.seq < stop.seq);
    expect(floodRefusals.length).toBeGreaterThan(BURST);
    // Told once: one notice, about that stop.
    const notices = () => stored(stop.seq).filter((x) => x.type === "notice" && x.text.includes("teamd stopped seat flood"));
    expect(await waitFor(() => notices().length > 0, 15_000)).toBe(true);
    const told = notices();
    expect(told).toHaveLength(1);
    // The other seats run on.
    expect(await stateOf("calm")).toBe("running");
  }, 180_000);
});
