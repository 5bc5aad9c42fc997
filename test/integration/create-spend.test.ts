import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "../support/fake-provider.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { makeRepo } from "../support/repo.js";
import { seatCalls, waitingSeat, writeInSeat } from "../support/seat-calls.js";
import { createHarness, expectRefused, type TeamdHarness } from "../support/teamd-harness.js";
import { waitFor } from "../support/wait.js";
import { anthropicMeter, writeMetersFile } from "../support/meters-file.js";

/**
 * create's spend slice (issue 30; §8 "a team's create debits the child's slice atomically at
 * create-time — against both a single enforced aggregate ceiling and each named per-lab cap")
 * through a real daemon, a real seat and a fake provider's cost report on loopback: a create
 * within the creator's remainder lands and its slice leaves the creator's remainder in status; a
 * second whose slice the rest cannot cover is refused `create.slice`, aggregate and per lab; and
 * a child whose usage no meter reports cannot dispatch (its whole slice counts as spent).
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const KEY = "sk-ant-admin01-CANARY-create-2b4d6f8a0c1e3a5c7e9b";
const WORKSPACE = "wrkspc_team_proj";
const TODAY = new Date().toISOString().slice(0, 10);
const SPEND = (total: number, labs: string) =>
  `ceiling:\n  spend:\n    currency: USD\n    period: 1d\n    total: ${total}\n    labs: { ${labs} }\n    per-dispatch: 1\n    stale-after: 1h\n`;
const TEAM_FILE = `version: 1\nteam: proj\ndeclare:\n  branches: [main]\n  labs: [anthropic, openai]\nreview: { mode: distinct-seat }\n${SPEND(10, "anthropic: 6")}seats:\n  maker:\n${waitingSeat("anthropic", "      read: ~\n      create: ~\n")}`;
const child = (team: string, total: number, anthropic: number) =>
  `version: 1\nteam: ${team}\ndeclare:\n  branches: [main]\n  labs: [anthropic]\nreview: { mode: distinct-seat }\n${SPEND(total, `anthropic: ${anthropic}`)}seats:\n  k1:\n${waitingSeat("anthropic", "      read: ~\n")}`;

interface Spend {
  limit: number;
  reported: number;
  reserved: number;
  remainder: number;
}

describe.runIf(process.platform === "linux")("create carves a spend slice (§8, §10)", () => {
  let h: TeamdHarness;
  let provider: FakeProvider;
  const roots: string[] = [];
  const spendOf = async (team: string) =>
    (JSON.parse(await h.ok(["status", "--json"])) as { teams: { team: string; spend: Spend | null }[] }).teams.find((t) => t.team === team)?.spend ?? null;
  const put = (name: string, text: string) => writeInSeat(h, "maker", name, text);

  beforeAll(async () => {
    provider = await startFakeProvider({ key: KEY });
    provider.anthropic.push({ day: TODAY, workspace: WORKSPACE, amount: "100" });
    h = await createHarness("teamd-create-spend-", { daemonEnv: { TEAMD_TEST_ANTHROPIC_KEY: KEY } });
    for (const name of ["kid-a", "kid-b", "kid-c"]) roots.push(makeRepo(h.dir, name));
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.startDaemon();
    await h.ok(["init", "--yes", "--json"]);
    writeMetersFile(h.home, { claude: anthropicMeter(provider.url, WORKSPACE, "TEAMD_TEST_ANTHROPIC_KEY", "10s") });
    await h.ok(["apply", "--yes"]);
    await h.daemon?.stop();
    await h.startDaemon();
    expect(await waitFor(async () => (await spendOf("proj"))?.reported === 100, 20_000, 250)).toBe(true);
    await h.ok(["start", "maker"]);
    await h.ok([
      "create-bounds",
      "set",
      "maker@proj",
      "--teams",
      "3",
      ...roots.flatMap((r) => ["--root", r]),
      "--start",
      "sleep 3600",
      "--spend",
      "5",
      "--lab",
      "anthropic:spend=3",
      "--yes",
    ]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
    await provider?.close();
  });

  it("a slice within the remainder lands and leaves it; the next the rest cannot cover is refused create.slice", async () => {
    // proj: $10 in all ($1 reported, $1 reserved by maker's launch): $8 left; anthropic $6 less the same: $4.
    expect(await spendOf("proj")).toMatchObject({ limit: 1000, reported: 100, reserved: 100, remainder: 800 });
    const calls = seatCalls(h);
    const first = await put("a.yaml", child("kid", 5, 3));
    expect(await calls.json<{ team: string }>("maker", "create", first, "--root", roots[0] as string)).toMatchObject({ team: "kid" });
    // The $5 slice is carved: $3 left in all.
    expect(await spendOf("proj")).toMatchObject({ remainder: 300 });
    // The same slice again: $5 > $3 in all.
    const second = await put("b.yaml", child("kid2", 5, 3));
    const refused = await calls.refused("create.slice", "maker", "create", second, "--root", roots[1] as string);
    expect(refused.stderr).toMatch(/in all/);
    // A bound whose aggregate fits ($2) but whose lab does not ($1 left in anthropic: $6 - $1 - $1 - $3 carved).
    await h.ok([
      "create-bounds",
      "set",
      "maker@proj",
      "--root",
      roots[2] as string,
      "--start",
      "sleep 3600",
      "--spend",
      "2",
      "--lab",
      "anthropic:spend=2",
      "--yes",
    ]);
    const third = await put("c.yaml", child("kid3", 2, 2));
    const lab = await calls.refused("create.slice", "maker", "create", third, "--root", roots[2] as string);
    expect(lab.stderr).toMatch(/in lab anthropic/);
    const rules = (await calls.log()).filter((r) => r.type === "refusal" && r.action === "team.create").map((r) => r.detail?.rule);
    expect(rules.filter((r) => r === "create.slice")).toHaveLength(2);
  }, 90_000);

  it("a child whose usage no meter reports cannot dispatch: its whole slice counts as spent (fail closed)", async () => {
    await expectRefused(h.run(["start", "--team", "kid"]), "envelope.spend");
  }, 60_000);
});
