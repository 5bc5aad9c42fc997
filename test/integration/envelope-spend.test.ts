import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "../support/fake-provider.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { createHarness, expectRefused, type TeamdHarness } from "../support/teamd-harness.js";
import { waitFor } from "../support/wait.js";
import { anthropicMeter, writeMetersFile } from "../support/meters-file.js";

/**
 * The spend envelope (§8; issue 28) through a real daemon, real seats and a fake provider's cost
 * report on loopback (Anthropic's Admin API shape), read by the daemon as the owner configured it
 * in TEAMD_HOME/meters.json with the admin key in the daemon's environment (a canary): a launch
 * reserves the per-dispatch maximum; one the remainder cannot cover is refused `envelope.spend`;
 * two launches at once cannot together pass it; a lab no meter reports counts as spent; a running
 * seat whose lab's reported usage crosses the cap is halted into its handoff at the next report;
 * a meter that fails past the staleness limit counts as spent, and halts its lab's seats; the key
 * is in no seat, record, file or reply.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const KEY = "sk-ant-admin01-CANARY-spend-7f3a9c1e5b2d4f6a8c0e";
const WORKSPACE = "wrkspc_team_proj";
const TODAY = new Date().toISOString().slice(0, 10);
const sleeper = (name: string, lab: string) => `  ${name}:\n    lab: ${lab}\n    roles: [observer]\n    start:\n      command: [sleep, "3600"]\n`;
// $10 a day; each launch reserves $4; a report older than 25 s counts as spent.
const SPEND = "ceiling:\n  spend:\n    currency: USD\n    period: 1d\n    total: 10\n    per-dispatch: 4\n    stale-after: 25s\nseats:\n";
const teamWith = (seats: string) => teamFile(seats, ["anthropic", "openai"]).replace("seats:\n", SPEND);
// $10 a day; each launch reserves $4; a report older than 25 s counts as spent.
const TEAM_FILE = teamWith(
  sleeper("w", "anthropic").replace("roles: [observer]\n", "roles: [observer]\n    capabilities: { use-broker: { task: [notes] } }\n") +
    sleeper("x", "anthropic") +
    sleeper("z", "anthropic"),
).replace("declare:\n", "declare:\n  tasks: [notes]\n");

interface Spend {
  limit: number;
  reported: number;
  reserved: number;
  remainder: number;
  soft: boolean;
  labs: {
    lab: string;
    reported: number;
    reserved: number;
    remainder: number;
    meter: string;
    meters: { name: string; at: string | null; error: string | null }[];
  }[];
}

describe.runIf(process.platform === "linux")("the spend envelope (§8)", () => {
  let h: TeamdHarness;
  let provider: FakeProvider;
  const outputs: string[] = [];
  let applied = "";
  const spend = async () => (JSON.parse(await h.ok(["status", "--json"])) as { teams: { spend: Spend | null }[] }).teams[0]?.spend ?? null;
  const running = async () =>
    (JSON.parse(await h.ok(["status", "--json"])) as { seats: { seat: string; state: string }[] }).seats
      .filter((s) => s.state === "running")
      .map((s) => s.seat);
  const setUsage = (cents: number) => {
    provider.anthropic.length = 0;
    provider.anthropic.push({ day: TODAY, workspace: WORKSPACE, amount: String(cents) });
    // The owner's other usage, in another workspace: never counted.
    provider.anthropic.push({ day: TODAY, workspace: "wrkspc_someone_else", amount: "99999" });
  };
  /** The next report the daemon records after now (meters are read every 10 s). */
  const nextReport = async () => {
    const count = async () => (await h.records("--type", "meter")).length;
    const before = await count();
    expect(await waitFor(async () => (await count()) > before, 30_000, 500)).toBe(true);
  };

  beforeAll(async () => {
    provider = await startFakeProvider({ key: KEY });
    setUsage(100);
    h = await createHarness("teamd-spend-", {
      files: { "README.md": "hello\n" },
      daemonEnv: { TEAMD_TEST_ANTHROPIC_KEY: KEY },
      onResult: (r) => outputs.push(r.stdout, r.stderr),
    });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    // A task the broker's embedded file tracker serves: a claim is a dispatch too.
    const notes = join(h.home, "broker", "tasks", "proj", "notes");
    mkdirSync(notes, { recursive: true, mode: 0o700 });
    writeFileSync(join(notes, "login.md"), "---\ntitle: Fix the login redirect\n---\nIt loops.\n");
    await h.startDaemon();
    await h.ok(["init", "--yes", "--json"]);
    writeMetersFile(h.home, {
      claude: anthropicMeter(provider.url, WORKSPACE, "TEAMD_TEST_ANTHROPIC_KEY", "10s"),
    });
    applied = await h.ok(["apply", "--yes"]);
    // The daemon reads its meters at start: again now that the file exists.
    await h.daemon?.stop();
    await h.startDaemon();
    expect(await waitFor(async () => (await spend())?.labs.find((l) => l.lab === "anthropic")?.meter === "fresh", 20_000, 250)).toBe(true);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
    await provider?.close();
  });

  it("counts the reported usage of the team's own workspace and reserves per launch; a launch the remainder cannot cover is refused", async () => {
    expect(await spend()).toMatchObject({ limit: 1000, reported: 100, reserved: 0, remainder: 900, soft: true });
    // Apply and status say what it is: a soft bound, counted from the meters' reports.
    expect(applied).toMatch(/envelope: spend USD 10\.00 per 1d; each launch reserves USD 4\.00\. A soft bound/);
    // An apply with the daemon up says where the period stands, too.
    expect(await h.ok(["apply", "--yes"])).toMatch(/spend now: reported USD 1\.00, reserved USD 0\.00, USD 9\.00 left of USD 10\.00 this period/);
    expect(await h.ok(["status"])).toMatch(/spend \(a soft bound: counted from meter reports\): USD 9\.00 left of USD 10\.00/);
    await h.ok(["start", "w"]);
    await h.ok(["start", "x"]);
    expect(await spend()).toMatchObject({ reported: 100, reserved: 800, remainder: 100 });
    const refused = await expectRefused(h.run(["start", "z"]), "envelope.spend");
    expect(refused.stderr).toMatch(/reserves USD 4\.00 .* has USD 1\.00 left this period/);
    // One reservation per launch (a report in between holds the running seats again, as "report").
    const reserves = await h.records<{ type: string; detail?: { why?: string; amount?: number } }>("--type", "reserve");
    expect(reserves.filter((r) => r.detail?.why === "dispatch")).toHaveLength(2);
    const starts = (await h.records<{ type: string; fields?: Record<string, string> }>("--type", "seat_start")).filter((r) => r.fields?.reserve_seq);
    expect(starts).toHaveLength(2);
    // A broker claim dispatches work too: refused while the remainder cannot cover it, the task left unclaimed.
    const claim = await h.shim("w", "broker", "claim", "notes", "login");
    expect(claim.code).toBe(3);
    expect(claim.stderr).toContain("refused by envelope.spend");
    expect(readFileSync(join(h.home, "broker/tasks/proj/notes/login.md"), "utf8")).not.toContain("claimed-by");
  }, 60_000);

  it("two launches at once cannot together pass the remainder", async () => {
    await h.ok(["stop", "--team", "proj"]);
    // A team's stop holds (§9, §15) until the owner resumes it.
    await h.ok(["resume", "--team", "proj"]);
    // A report covers the stopped runs' reservations: $10 less $5 reported leaves room for one launch of $4.
    setUsage(500);
    await nextReport();
    expect(await spend()).toMatchObject({ reported: 500, reserved: 0, remainder: 500 });
    const [a, b] = await Promise.all([h.run(["start", "w"]), h.run(["start", "x"])]);
    expect([a.code, b.code].sort()).toEqual([0, 3]);
    expect((a.code === 3 ? a : b).stderr).toContain("refused by envelope.spend");
    expect(await running()).toHaveLength(1);
  }, 60_000);

  it("a running seat whose lab's usage crosses the cap is halted into its handoff at the next report", async () => {
    const [seat] = await running();
    expect(seat).toBeDefined();
    setUsage(800);
    await nextReport();
    expect(await waitFor(async () => (await running()).length === 0, 15_000, 250), `${JSON.stringify(await spend())}\n${h.daemon?.stderr().slice(-3000)}`).toBe(
      true,
    );
    const handoff = JSON.parse(await h.ok(["checkpoint", "show", seat ?? "", "--json"])) as { run: { state: string; haltedBy: string; reason: string } };
    expect(handoff.run).toMatchObject({ state: "suspended", haltedBy: "bound" });
    expect(handoff.run.reason).toMatch(/^halted: spend \(team proj, lab anthropic/);
  }, 60_000);

  it("a meter that fails past its staleness limit counts as spent: launches are refused, and running seats halt", async () => {
    setUsage(0);
    await nextReport();
    await h.ok(["start", "w"]);
    provider.knobs.failStatus = 500;
    // Stale 25 s after the last good report; the failing reads every 10 s then halt the lab's seats.
    expect(await waitFor(async () => (await running()).length === 0, 60_000, 1_000)).toBe(true);
    const lab = (await spend())?.labs.find((l) => l.lab === "anthropic");
    expect(lab?.meter).toBe("stale");
    expect(lab?.meters[0]?.error).toMatch(/500/);
    await expectRefused(h.run(["start", "w"]), "envelope.spend");
    provider.knobs.failStatus = undefined;
  }, 90_000);

  it("the meter's admin key is in no seat, record, file under TEAMD_HOME or reply", async () => {
    await nextReport();
    await h.ok(["start", "w"]);
    // A claim the tracker refuses dispatched nothing: its reservation is released, on record
    // (refused claims cannot drain the budget); one it takes holds the per-dispatch maximum.
    const claims = async (id: string) =>
      (await h.records<{ detail?: { runId?: string; amount?: number; why?: string } }>("--type", "reserve"))
        .filter((r) => r.detail?.runId?.startsWith(`claim:notes#${id}@`))
        .map((r) => [r.detail?.amount, r.detail?.why]);
    const missing = await h.shim("w", "broker", "claim", "notes", "no-such-task");
    expect(missing.code).toBe(3);
    expect(missing.stderr).not.toContain("envelope.spend");
    expect(await claims("no-such-task")).toEqual([
      [400, "dispatch"],
      [0, "released"],
    ]);
    expect((await h.shim("w", "broker", "claim", "notes", "login")).code).toBe(0);
    expect(await claims("login")).toEqual([[400, "dispatch"]]);
    const env = await h.sh("w", "env; cat /proc/self/environ 2>/dev/null; ls -a ~ /run/teamd 2>/dev/null");
    expect(env.stdout + env.stderr).not.toContain(KEY);
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        const st = statSync(path, { throwIfNoEntry: false });
        return st === undefined ? [] : st.isDirectory() ? files(path) : st.isFile() ? [path] : [];
      });
    for (const file of files(h.home)) expect(readFileSync(file).toString("latin1"), file).not.toContain(KEY);
    expect(outputs.join("\n")).not.toContain(KEY);
    expect(h.daemon?.stderr() ?? "").not.toContain(KEY);
    // The provider saw the key, in its header: the meter did read with it.
    expect(provider.seen.some((r) => r.authorized)).toBe(true);
    await h.ok(["stop", "--team", "proj"]);
    // A team's stop holds (§9, §15) until the owner resumes it.
    await h.ok(["resume", "--team", "proj"]);
  }, 60_000);
  it("a lab no meter reports counts as spent: with no cap of its own, the whole aggregate — every launch is refused, naming it", async () => {
    writeFileSync(join(h.repo, "teamd.yaml"), teamWith(sleeper("w", "anthropic") + sleeper("o", "openai")));
    await h.ok(["apply", "--yes"]);
    const refused = await expectRefused(h.run(["start", "w"]), "envelope.spend");
    expect(refused.stderr).toMatch(/the usage of proj\/openai cannot be established and counts as spent/);
    const o = await expectRefused(h.run(["start", "o"]), "envelope.spend");
    expect(o.stderr).toMatch(/lab openai cannot be established .*missing/);
    expect((await spend())?.labs.find((l) => l.lab === "openai")).toMatchObject({ meter: "unknown", meters: [] });
  }, 60_000);

  it("a seat that launched before the team had a spend ceiling is bounded from the next report on: held, and halted when it does not fit", async () => {
    // The team without a spend ceiling: w launches holding nothing.
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE.replace(SPEND, "seats:\n"));
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "w"]);
    // The owner sets the ceiling while w runs, and the provider reports $9 spent of $10.
    setUsage(900);
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    await nextReport();
    expect(await waitFor(async () => (await running()).length === 0, 15_000, 250)).toBe(true);
    const handoff = JSON.parse(await h.ok(["checkpoint", "show", "w", "--json"])) as { run: { reason: string } };
    expect(handoff.run.reason).toMatch(/^halted: spend/);
  }, 60_000);
});
