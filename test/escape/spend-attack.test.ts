import { randomUUID } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { connect } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { startFakeProvider, type FakeProvider } from "../support/fake-provider.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { createHarness, expectRefused, type LogRecord, type TeamdHarness } from "../support/teamd-harness.js";
import { waitFor } from "../support/wait.js";
import { anthropicMeter, writeMetersFile } from "../support/meters-file.js";
import { pidsRunning } from "../support/seat-procs.js";

/**
 * Attacks on the spend envelope (§8; issue 28: daemon/server/spend-book.ts, meter-watch.ts,
 * daemon/seat/broker.ts's claim reservation, daemon/lifecycle/manager.ts's launch reservation)
 * from inside real seats started by `teamd start` through a real daemon, real bwrap, a real
 * ledger, and the owner's two meters: a fake Anthropic cost report on loopback (admin key a
 * canary, read at the daemon's start and then hourly, so the anthropic lab's book holds still
 * between the tests' own acts) and a `command` meter for lab openai (an owner script reading a
 * file in the test's folder, every 10 s). The seats are hostile: `teamd-shim` in the seat and a
 * raw gRPC client on the seat's own socket (what a program in the seat has, with any request id).
 *
 * What must hold, each with its control:
 * - a claim that dispatched nothing (the tracker refused it — a task already claimed, by this
 *   seat or another — or the act failed before the tracker was asked: a reused request id, a
 *   byte-identical replay) leaves the team's reservations as they were: it neither holds budget
 *   (drain) nor releases a reservation another claim holds (found: both did; fixed in broker.ts);
 * - a reservation is in the lab the policy gives the seat, whatever the seat sends;
 * - a claim made while a meter read is in flight is not released by that read's report;
 * - a seat still starting when a report lands keeps its launch's reservation (found: the report
 *   released it — the seat was not yet "running", so not held again — and the seat ran on with
 *   none, never halted at a report; fixed in meter-watch.ts). The integration test's two launches
 *   met the same race (seen once: reserved 400 for two running seats);
 * - concurrent claims cannot together pass the remainder;
 * - a crash-looping seat reserves at each restart, each on record, never past the remainder;
 * - a seat halted by spend leaves nothing running and does not come back (restart: always);
 * - the seat cannot reach the provider's loopback port nor the command meter's files;
 * - the admin key is in nothing the seat can read; every meter and reserve record is the daemon's.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const KEY = "sk-ant-admin01-CANARY-spendattack-4e1b8d2a9c7f";
const WORKSPACE = "wrkspc_spend_attack";
const TODAY = new Date().toISOString().slice(0, 10);
const TASKS = 40;

// $40 a day in total, $10 of it at most in lab openai; each dispatch reserves $2.
const SPEND =
  "ceiling:\n  spend:\n    currency: USD\n    period: 1d\n    total: 40\n    labs: { openai: 10 }\n    per-dispatch: 2\n    stale-after: 2h\nseats:\n";
const broker = "    capabilities: { use-broker: { task: [notes] } }\n";
const seat = (name: string, lab: string, extra = "", command = `[sleep, "3600"]`) =>
  `  ${name}:\n    lab: ${lab}\n    roles: [observer]\n${broker}    start:\n      command: ${command}\n${extra}`;
const TEAM_FILE = teamFile(
  seat("w", "anthropic") +
    seat("v", "anthropic") +
    seat("o", "openai", "      restart: { when: always, retries: 5 }\n", `[sh, -c, "setsid sleep 7777 </dev/null >/dev/null 2>&1 & exec sleep 3600"]`) +
    seat("c", "anthropic", "      restart: { when: always, retries: 2 }\n", `[sh, -c, "sleep 3; exit 3"]`),
  ["anthropic", "openai"],
)
  .replace("seats:\n", SPEND)
  .replace("declare:\n", "declare:\n  tasks: [notes]\n");

type Rec = LogRecord & {
  actor?: string;
  signer?: string;
  fields?: Record<string, string>;
  detail?: { seat?: string; runId?: string; lab?: string; amount?: number; why?: string };
};
interface LabSpend {
  lab: string;
  reported: number;
  reserved: number;
  remainder: number;
  meter: string;
}
interface Spend {
  limit: number;
  reported: number;
  reserved: number;
  remainder: number;
  labs: LabSpend[];
}

describe.runIf(process.platform === "linux" && asRoot)("the spend envelope under attack from its seats (§8)", () => {
  let h: TeamdHarness;
  let provider: FakeProvider;
  const outputs: string[] = [];
  const meterDir = () => join(h.dir, "owner-meter");

  const status = async () => JSON.parse(await h.ok(["status", "--json"])) as { teams: { spend: Spend | null }[]; seats: { seat: string; state: string }[] };
  const spend = async () => {
    const s = (await status()).teams[0]?.spend;
    if (s === null || s === undefined) throw new Error("no spend in status");
    return s;
  };
  const lab = async (name: string) => (await spend()).labs.find((l) => l.lab === name) as LabSpend;
  const stateOf = async (name: string) => (await status()).seats.find((s) => s.seat === name)?.state;
  const reserves = async () => h.records<Rec>("--type", "reserve");
  const meterCount = async () => (await h.records("--type", "meter")).length;
  const claimedBy = (id: string) => readFileSync(join(h.home, "broker/tasks/proj/notes", `${id}.md`), "utf8").match(/claimed-by: *(\S+)/)?.[1];

  /** A claim from the seat's own socket, with the request id the seat chooses: "done", or the refusal's text. */
  const claim = async (from: string, id: string, requestId: string = randomUUID()): Promise<string> => {
    const c = createRpcClient(ShimService, h.seatSocket(from), { deadlineMs: 30_000 });
    try {
      await c.broker({ requestId, operation: "claim", task: "notes", id });
      return "done";
    } catch (error) {
      return (error as Error).message;
    } finally {
      c.close();
    }
  };
  const usage = (cents: number, delaySeconds = 0) => {
    writeFileSync(join(meterDir(), "usage"), String(cents));
    writeFileSync(join(meterDir(), "delay"), String(delaySeconds));
  };
  const nextReport = async () => {
    const before = await meterCount();
    expect(await waitFor(async () => (await meterCount()) > before, 30_000, 250)).toBe(true);
  };

  // The daemon's start-hold seam (daemon/server/start-hold.ts): the owner's folder, not the seat's.
  const holdDir = mkdtempSync(join(tmpdir(), "teamd-spend-hold-"));

  beforeAll(async () => {
    provider = await startFakeProvider({ key: KEY });
    provider.anthropic.push({ day: TODAY, workspace: WORKSPACE, amount: "0" });
    h = await createHarness("teamd-spend-attack-", {
      files: { "README.md": "hello\n" },
      daemonEnv: { TEAMD_TEST_ANTHROPIC_KEY: KEY, TEAMD_TEST_HOLD_START: holdDir },
      onResult: (r) => outputs.push(r.stdout, r.stderr),
    });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    const notes = join(h.home, "broker", "tasks", "proj", "notes");
    mkdirSync(notes, { recursive: true, mode: 0o700 });
    for (let i = 1; i <= TASKS; i++) writeFileSync(join(notes, `t${i}.md`), `---\ntitle: Task ${i}\n---\nDo ${i}.\n`);
    // The owner's command meter: its script and its input live in the owner's folder, not in any seat.
    mkdirSync(meterDir(), { recursive: true, mode: 0o700 });
    const script = join(meterDir(), "usage.sh");
    writeFileSync(
      script,
      `#!/bin/sh\nd=${meterDir()}\ndate +%s%N > "$d/started"\nsleep "$(cat "$d/delay")"\nprintf '{"amountMinor": %s, "currency": "USD"}' "$(cat "$d/usage")"\n`,
    );
    chmodSync(script, 0o700);
    usage(0);
    await h.startDaemon();
    await h.ok(["init", "--yes", "--json"]);
    writeMetersFile(h.home, {
      claude: anthropicMeter(provider.url, WORKSPACE, "TEAMD_TEST_ANTHROPIC_KEY", "1h"),
      local: { kind: "command", team: "proj", lab: "openai", command: [script], every: "10s" },
    });
    await h.ok(["apply", "--yes"]);
    await h.stopDaemon();
    await h.startDaemon();
    expect(await waitFor(async () => (await spend()).labs.every((l) => l.meter === "fresh"), 20_000, 250), JSON.stringify(await spend())).toBe(true);
    for (const s of ["w", "v", "o"]) await h.ok(["start", s]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
    await provider?.close();
    rmSync(holdDir, { recursive: true, force: true });
  });

  it("a claim of a task already claimed — by the same seat or another — releases only its own reservation: the taken claim's stays", async () => {
    const before = (await lab("anthropic")).reserved;
    expect(await claim("w", "t1")).toBe("done");
    expect((await lab("anthropic")).reserved).toBe(before + 200);
    // The attack: another seat claims it too; the tracker refuses (broker.claimed), so that claim's reservation goes — and only it.
    expect((await h.shim("v", "broker", "claim", "notes", "t1")).stderr).toContain("broker.claimed");
    expect(await claim("v", "t1")).toMatch(/broker\.claimed/);
    expect((await lab("anthropic")).reserved, "the taken claim of t1 is still reserved").toBe(before + 200);
    // Control: a claim of a task that does not exist holds nothing once refused.
    expect(await claim("w", "no-such-task")).toMatch(/broker\.task/);
    expect((await lab("anthropic")).reserved).toBe(before + 200);
    // On record: t1's first reservation is never followed by a release of it.
    const t1 = (await reserves()).filter((r) => r.detail?.runId?.startsWith("claim:notes#t1"));
    const taken = t1.find((r) => r.detail?.why === "dispatch");
    expect(taken).toBeDefined();
    expect(t1.filter((r) => r.detail?.runId === taken?.detail?.runId && r.detail?.why === "released")).toEqual([]);
    expect(claimedBy("t1")).toBeDefined();
  }, 60_000);

  it("claims whose act fails before the tracker is asked (a reused request id, a replay) hold nothing: no drain by request ids", async () => {
    const before = (await lab("anthropic")).reserved;
    const id = `spend-attack-${randomUUID()}`;
    expect(await claim("w", "t2", id)).toBe("done");
    expect((await lab("anthropic")).reserved).toBe(before + 200);
    // The same request id for other tasks: refused request.replay-mismatch, each after its reservation.
    for (const task of ["t3", "t4", "t5"]) expect(await claim("w", task, id)).toMatch(/request\.replay-mismatch/);
    // The byte-identical replay: answered from the record, no tracker call.
    expect(await claim("w", "t2", id)).toMatch(/broker\.replay/);
    expect((await lab("anthropic")).reserved, "reused request ids drained the budget").toBe(before + 200);
    for (const task of ["t3", "t4", "t5"]) expect(claimedBy(task)).toBeUndefined();
    // Control: a fresh request id claims t3 and holds.
    expect(await claim("w", "t3")).toBe("done");
    expect((await lab("anthropic")).reserved).toBe(before + 400);
  }, 60_000);

  it("a claim's reservation is in the lab the policy gives the seat, whatever it sends", async () => {
    const [a, o] = [(await lab("anthropic")).reserved, (await lab("openai")).reserved];
    // o is in lab openai; a claim request has no field for a lab: the policy says where it counts.
    expect(await claim("o", "t6")).toBe("done");
    const mine = (await reserves()).filter((r) => r.detail?.runId?.startsWith("claim:notes#t6"));
    expect(mine.map((r) => [r.detail?.seat, r.detail?.lab, r.detail?.amount])).toEqual([["o", "openai", 200]]);
    expect((await lab("anthropic")).reserved).toBe(a);
    // A report may have come in between (it covers claims): openai never holds less than o's launch.
    expect((await lab("openai")).reserved).toBeLessThanOrEqual(o + 200);
  }, 60_000);

  it("a claim made while a meter read is in flight is not released by that read's report; one made before it is", async () => {
    // Settle: a report covers every claim so far; openai then holds o's running launch alone.
    await nextReport();
    expect((await lab("openai")).reserved).toBe(200);
    expect(await claim("o", "t7")).toBe("done");
    expect((await lab("openai")).reserved).toBe(400);
    usage(0, 4);
    const started = () => (existsSync(join(meterDir(), "started")) ? readFileSync(join(meterDir(), "started"), "utf8") : "");
    const was = started();
    expect(await waitFor(() => started() !== was, 20_000, 50)).toBe(true);
    const count = await meterCount();
    // The read is in flight (its command sleeps 4 s): the seat claims now.
    expect(await claim("o", "t8")).toBe("done");
    expect(await meterCount(), "the claim was not made during the read").toBe(count);
    expect(await waitFor(async () => (await meterCount()) > count, 15_000, 100)).toBe(true);
    usage(0, 0);
    // t7 (before the read) is covered and released; t8 (during it) still holds; o's launch is held again.
    expect((await lab("openai")).reserved).toBe(400);
    const held = (await reserves()).filter((r) => r.detail?.runId?.startsWith("claim:notes#t8"));
    expect(held.map((r) => r.detail?.amount)).toEqual([200]);
  }, 60_000);

  it("a seat still starting when a report lands keeps its launch's reservation: held again at the report, never released", async () => {
    usage(0, 0);
    await h.ok(["stop", "o"]);
    type Timed = Rec & { timeUnixMs: number; detail?: Rec["detail"] & { to?: string } };
    const launches = async () => (await h.records<Timed>("--type", "reserve")).filter((r) => r.detail?.seat === "o" && r.detail.why === "dispatch");
    const before = (await launches()).length;
    // The race is the daemon's timing, not the seat's to choose: the daemon's test seam holds o's
    // start once its launch is reserved (nothing launched yet), until a meter report has landed
    // that covers that reservation; then the start goes on. Met every time, not by luck.
    const hold = join(holdDir, "proj.o");
    writeFileSync(hold, "");
    let reserve: Timed | undefined;
    let report: Timed | undefined;
    const starting = h.ok(["start", "o"]);
    starting.catch(() => undefined);
    try {
      expect(await waitFor(async () => (reserve = (await launches())[before]) !== undefined, 20_000, 100)).toBe(true);
      const at = (reserve as Timed).timeUnixMs;
      expect(await stateOf("o")).toBe("starting");
      const covering = async () =>
        (report = (await h.records<Timed>("--type", "meter")).find((r) => r.detail?.lab === "openai" && Date.parse(r.detail?.to ?? "") >= at));
      expect(await waitFor(async () => (await covering()) !== undefined, 30_000, 200)).toBe(true);
      // The report landed while o was still starting (the hold is still on).
      expect(await stateOf("o")).toBe("starting");
    } finally {
      rmSync(hold, { force: true });
    }
    await starting;
    const ran = (await h.records<Timed>())
      .filter((r) => r.type === "outcome" && r.action === "seat.start" && (r.target === "seat:o" || r.target === "o"))
      .at(-1);
    expect(ran).toBeDefined();
    expect((report as Timed).timeUnixMs).toBeLessThan((ran as Timed).timeUnixMs);
    expect(await stateOf("o")).toBe("running");
    // o runs: its launch is held (again, at the report), not released with the report's cover.
    expect((await lab("openai")).reserved).toBe(200);
    const held = (await reserves()).filter((r) => r.detail?.runId === reserve?.detail?.runId);
    expect(held.map((r) => r.detail?.why)).toEqual(["dispatch", "report"]);
  }, 90_000);

  it("a crash-looping seat reserves at each launch, on record, bounded by its retries", async () => {
    const before = (await lab("anthropic")).reserved;
    await h.ok(["start", "c"]);
    // 1 + 2 restarts (back-off 1 s, 2 s), each living 3 s.
    expect(
      await waitFor(
        async () => (await h.records<Rec>("--type", "seat_start")).filter((r) => r.target === "seat:c" || r.target === "c").length >= 3,
        30_000,
        500,
      ),
    ).toBe(true);
    expect(
      await waitFor(async () => (await stateOf("c")) === undefined || (await stateOf("c")) === "stopped" || (await stateOf("c")) === "exited", 15_000, 500),
    ).toBe(true);
    const starts = (await h.records<Rec>("--type", "seat_start")).filter(
      (r) => r.fields?.reserve_seq !== undefined && (r.target === "seat:c" || r.target === "c"),
    );
    const mine = (await reserves()).filter((r) => r.detail?.seat === "c");
    expect(starts).toHaveLength(3);
    expect(mine.map((r) => [r.detail?.why, r.detail?.amount])).toEqual([
      ["dispatch", 200],
      ["dispatch", 200],
      ["dispatch", 200],
    ]);
    expect(starts.map((s) => Number(s.fields?.reserve_seq)).sort()).toEqual(mine.map((r) => r.seq).sort());
    // Dead runs' reservations stay spent until a report covers them (no anthropic report comes hourly).
    expect((await lab("anthropic")).reserved).toBe(before + 600);
    const s = await spend();
    expect(s.reported + s.reserved).toBeLessThanOrEqual(s.limit);
  }, 60_000);

  it("the seat cannot reach the meter: not the provider's loopback port, not the command meter's script or input, not meters.json", async () => {
    const port = new URL(provider.url).port;
    const probe = `node -e "const s=require('net').connect(${port},'127.0.0.1');s.on('connect',()=>{console.log('CONNECTED');process.exit(0)});s.on('error',e=>{console.log('ERR',e.code);process.exit(0)});setTimeout(()=>{console.log('TIMEOUT');process.exit(0)},3000)"`;
    const inSeat = await h.sh("w", probe);
    expect(inSeat.stdout + inSeat.stderr).not.toContain("CONNECTED");
    expect(inSeat.stdout).toMatch(/ERR|TIMEOUT/);
    // Control: the host reaches it.
    const host = await new Promise<boolean>((resolve) => {
      const s = connect(Number(port), "127.0.0.1", () => {
        s.destroy();
        resolve(true);
      });
      s.on("error", () => resolve(false));
    });
    expect(host).toBe(true);
    const files = [join(meterDir(), "usage"), join(meterDir(), "usage.sh"), join(meterDir(), "delay"), join(h.home, "meters.json")];
    const read = await h.sh("w", files.map((f) => `cat ${f} 2>/dev/null && echo READ:${f}`).join("; ") + "; true");
    expect(read.stdout).not.toContain("READ:");
    const write = await h.sh(
      "w",
      `echo 0 > ${join(meterDir(), "usage")} 2>/dev/null && echo WROTE; mkdir -p ${meterDir()} 2>/dev/null; echo 0 > ${join(meterDir(), "usage")} 2>/dev/null; true`,
    );
    expect(write.stdout).not.toContain("WROTE");
    // Control: the owner's files are there, unchanged.
    for (const f of files) expect(existsSync(f), f).toBe(true);
    expect(readFileSync(join(meterDir(), "usage"), "utf8")).toBe("0");
  }, 60_000);

  it("the meter's admin key is in nothing the seat can read, nor in any record or reply; every meter and reserve record is the daemon's", async () => {
    const look = await h.sh(
      "w",
      "env; cat /proc/self/environ /proc/1/environ /proc/1/cmdline 2>/dev/null; for p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null; done; " +
        'k="CANARY-spend""attack"; grep -rals "$k" /tmp ~ . /run /etc 2>/dev/null | sed "s/^/FOUND""HIT /"; teamd-shim whoami 2>&1; teamd-shim broker pull notes 2>&1 | head -c 4000',
    );
    expect(look.stdout + look.stderr).not.toContain(KEY);
    expect(look.stdout).not.toContain("FOUNDHIT");
    const who = await h.shim("o", "whoami", "--json");
    expect(who.stdout + who.stderr).not.toContain(KEY);
    // A seat's notes can say anything; no RPC makes a meter or a reserve record of it.
    await h.shim("w", "checkpoint", `spend.meter claude amount=0 ${KEY.slice(0, 10)}`);
    const all = await h.records<Rec>();
    const spendRecords = all.filter((r) => r.type === "meter" || r.type === "reserve");
    expect(spendRecords.length).toBeGreaterThan(0);
    for (const r of spendRecords) {
      expect(r.actor ?? "", JSON.stringify(r)).not.toMatch(/^seat:/);
      expect(r.signer ?? "", JSON.stringify(r)).not.toMatch(/^seat:/);
    }
    expect(JSON.stringify(all)).not.toContain(KEY);
    expect(outputs.join("\n")).not.toContain(KEY);
    // Control: the daemon did read with the key.
    expect(provider.seen.some((r) => r.authorized)).toBe(true);
  }, 60_000);

  it("a seat halted by spend leaves nothing running and does not come back (restart: always); the other lab dispatches on", async () => {
    const mark = "7777";
    const marked = () => pidsRunning(["sleep", mark]).length > 0;
    expect(await waitFor(marked, 5_000, 100), "control: the seat's detached process (its start's setsid) runs").toBe(true);
    const startsOf = async () => (await h.records<Rec>("--type", "seat_start")).filter((r) => r.target === "seat:o" || r.target === "o").length;
    const starts = await startsOf();
    // The owner's meter now reports openai at its cap: o's next reservation cannot be covered.
    usage(1000);
    expect(await waitFor(async () => (await stateOf("o")) !== "running", 30_000, 250)).toBe(true);
    expect(await waitFor(() => !marked(), 10_000, 100), "the halted seat's detached process still runs").toBe(true);
    // Past the restart back-off: still down, no new start.
    await sleep(4_000);
    expect(["running", "starting", "restarting"]).not.toContain(await stateOf("o"));
    expect(await startsOf()).toBe(starts);
    const handoff = JSON.parse(await h.ok(["checkpoint", "show", "o", "--json"])) as { run: { state: string; reason: string } };
    expect(handoff.run.state).toBe("suspended");
    expect(handoff.run.reason).toMatch(/^halted: spend \(team proj, lab openai/);
    // Its lab has no room: the owner's start is refused too; the other lab still dispatches.
    await expectRefused(h.run(["start", "o"]), "envelope.spend");
    expect(await claim("w", "t9")).toBe("done");
  }, 60_000);

  it("concurrent claims cannot together pass the remainder; once spent, a claim of anything is refused before the tracker", async () => {
    const room = Math.floor((await lab("anthropic")).remainder / 200);
    expect(room).toBeGreaterThan(0);
    const ids = Array.from({ length: room + 4 }, (_, i) => `t${10 + i}`);
    expect(ids.length).toBeLessThanOrEqual(TASKS - 9);
    const answers = await Promise.all(ids.map((id, i) => claim(i % 2 === 0 ? "w" : "v", id)));
    expect(answers.filter((a) => a === "done")).toHaveLength(room);
    expect(answers.filter((a) => /envelope\.spend/.test(a))).toHaveLength(4);
    expect(ids.filter((id) => claimedBy(id) !== undefined)).toHaveLength(room);
    const s = await spend();
    expect(s.reported + s.reserved).toBeLessThanOrEqual(s.limit);
    expect((await lab("anthropic")).remainder).toBeLessThan(200);
    expect(await claim("w", "no-such-task-2")).toMatch(/envelope\.spend/);
    await expectRefused(h.run(["start", "c"]), "envelope.spend");
  }, 60_000);
});
