import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import type { TeamdHarness } from "../support/teamd-harness.js";
import { appliedTeam } from "../support/applied-team.js";
import { FAILED_START_WINDOW } from "../support/programs.js";

/**
 * start.restart (issue 22, item 5) through a real daemon and real seats: on-failure brings a
 * crashing seat back within its limit and then stops retrying; it never restarts a clean exit,
 * nor a seat the owner stopped; a daemon restart brings a restart-policy seat back, and only it.
 * Each command outlives the start's 2 s settle window before it ends, as an agent that crashes
 * later would.
 */
if (process.getuid?.() === 0) ensureSeatUser();

const TEAM_FILE = teamFile(`  flaky:
    lab: anthropic
    roles: [observer]
    start:
      command: [sh, -c, "sleep 2.5; echo crashing; exit 3"]
      restart: { when: on-failure, retries: 2 }
  clean:
    lab: anthropic
    roles: [observer]
    start:
      command: [sh, -c, "sleep 2.5; exit 0"]
      restart: on-failure
  keeper:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
      restart: always
  plain:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
`);

interface Runs {
  runs: Array<{ runId: string; state: string; exitCode?: number; stoppedBy?: string }>;
}

describe.runIf(process.platform === "linux")("start.restart through a real daemon", () => {
  let h: TeamdHarness;
  const runs = async (seat: string) => (await h.json<Runs>(["logs", seat, "--runs", "--json"])).runs;
  const running = async () => (await h.json<{ seats: Array<{ seat: string; state: string }> }>(["status", "--json"])).seats;
  const until = async (what: string, check: () => Promise<boolean>, ms = 30_000) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (await check()) return;
      await sleep(250);
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  beforeAll(async () => {
    h = await appliedTeam("teamd-restart-", TEAM_FILE, undefined, { daemonEnv: FAILED_START_WINDOW });
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("on-failure brings a crashing seat back within its limit, then stops retrying; a clean exit is not restarted", async () => {
    await h.ok(["start", "flaky"]);
    await h.ok(["start", "clean"]);
    // The first run, then two restarts (after 1 s and 2 s of back-off), each ending exit 3.
    await until("three ended runs of flaky", async () => (await runs("flaky")).filter((r) => r.state === "ended").length === 3, 40_000);
    const flaky = await runs("flaky");
    expect(flaky.map((r) => [r.state, r.exitCode])).toEqual([
      ["ended", 3],
      ["ended", 3],
      ["ended", 3],
    ]);
    // And no fourth: the limit holds (the next back-off would have been 4 s).
    await sleep(5_000);
    expect(await runs("flaky")).toHaveLength(3);
    expect((await running()).map((s) => s.seat)).not.toContain("flaky");
    expect(await runs("clean")).toMatchObject([{ state: "ended", exitCode: 0 }]);
    const starts = (await h.records<{ type: string; fields?: Record<string, string>; target: string }>()).filter(
      (r) => r.type === "seat_start" && r.target.includes("flaky"),
    );
    expect(starts.map((r) => r.fields?.restart ?? "")).toEqual(["", "attempt 1 of 2 (restart: on-failure)", "attempt 2 of 2 (restart: on-failure)"]);
  }, 60_000);

  it("never brings back a seat the owner stopped, whatever its policy", async () => {
    await h.ok(["start", "keeper"]);
    await h.ok(["stop", "keeper"]);
    await sleep(3_000);
    expect((await running()).map((s) => s.seat)).not.toContain("keeper");
    expect(await runs("keeper")).toMatchObject([{ state: "stopped", stoppedBy: "owner" }]);
  });

  it("a daemon restart brings back a restart-policy seat that was running, and only it", async () => {
    await h.ok(["start", "keeper"]);
    await h.ok(["start", "plain"]);
    await h.stopDaemon();
    expect((await runs("keeper")).at(-1)).toMatchObject({ state: "stopped", stoppedBy: "daemon" });
    await h.startDaemon();
    await until("keeper running again", async () => (await running()).some((s) => s.seat === "keeper" && s.state === "running"));
    expect(await runs("keeper")).toHaveLength(3);
    await sleep(1_000);
    expect((await running()).map((s) => s.seat)).not.toContain("plain");
  }, 60_000);

  it("and after a daemon crash (kill -9): the sweep marks the lost run crashed, and the seat comes back", async () => {
    const daemon = h.daemon;
    if (daemon === undefined) throw new Error("no daemon");
    const exited = new Promise((resolve) => daemon.child.once("exit", resolve));
    daemon.child.kill("SIGKILL");
    await exited;
    await h.startDaemon();
    await until("keeper running after the crash", async () => (await running()).some((s) => s.seat === "keeper" && s.state === "running"));
    const kept = await runs("keeper");
    expect(kept).toHaveLength(4);
    expect(kept[2]).toMatchObject({ state: "crashed" });
    await h.ok(["stop", "keeper"]);
  }, 60_000);
});
