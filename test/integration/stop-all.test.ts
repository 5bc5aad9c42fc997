import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { DaemonProcess } from "../support/programs.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { expectNoneLeft, startedNamespaces } from "../support/seat-namespaces.js";
import { sleeperTeamFile } from "../support/team-file.js";
import { appliedTeam } from "../support/applied-team.js";
import type { TeamdHarness } from "../support/teamd-harness.js";

/**
 * The machine-wide stop (issue 10, §11 and §15) end to end: a real daemon, real bubblewrap
 * seats running `sleep 3600`, and the three cases — the daemon up; the daemon up with its
 * ledger store gone; the daemon hung (SIGSTOP). After each stop no process is left in any
 * seat's pid namespace, a start is refused `stop.active`, and only `teamd resume` clears it.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = sleeperTeamFile(["alpha", "beta"]);

interface Json {
  [key: string]: unknown;
}

describe.runIf(process.platform === "linux")("teamd stop --all and teamd resume", () => {
  let h: TeamdHarness;

  /** Start every seat; return each seat's pid namespace (the proof of what must die). */
  const startTeam = () => startedNamespaces(h.json(["start", "--team", "proj", "--json"]), 2);
  const stopRecords = () => h.records<Json>("--type", "stop");

  beforeAll(async () => {
    h = await appliedTeam("teamd-stopall-", TEAM_FILE);
  }, 60_000);

  afterAll(async () => {
    await h?.cleanup();
  }, 30_000);

  it("(a) daemon up: stops every seat, refuses starts and owner acts with stop.active, until resume", async () => {
    const namespaces = await startTeam();
    const stopped = await h.json<Json>(["stop", "--all", "--json"]);
    expect(stopped).toMatchObject({ stopped: true, path: "daemon", daemon: { answered: true, recorded: true }, killedByCli: [], alive: [] });
    expect((stopped.daemon as { stopped: unknown[] }).stopped).toHaveLength(2);
    await expectNoneLeft(namespaces);
    expect(await h.json<Json>(["start", "alpha@proj", "--json"], { code: 3 })).toMatchObject({ rule: "stop.active" });
    expect(await h.json<Json>(["apply", "--yes", "--json"], { code: 3 })).toMatchObject({ rule: "stop.active" });
    expect((await h.json<Json>(["status", "--json"])).seats).toEqual([]);
    const records = await stopRecords();
    expect(records).toHaveLength(1);
    expect(records[0]?.late).toBeFalsy();

    expect(await h.json<Json>(["resume", "--json"])).toMatchObject({ resumed: true });
    expect(await h.json<Json>(["resume", "--json"])).toMatchObject({ resumed: false });
    expect(existsSync(join(h.home, "flags"))).toBe(true);
  }, 90_000);

  it("(b) daemon up, ledger unavailable: the stop holds by its flag, seats die, the stop is appended late", async () => {
    const namespaces = await startTeam();
    h.ledgerAway();
    const stopped = await h.json<Json>(["stop", "--all", "--json"]);
    expect(stopped).toMatchObject({ stopped: true, daemon: { answered: true, recorded: false }, alive: [] });
    await expectNoneLeft(namespaces);
    expect(await h.json<Json>(["start", "alpha@proj", "--json"], { code: 3 })).toMatchObject({ rule: "stop.active" });

    h.ledgerBack();
    // Resume needs the store back; it records the stop (late) first, then clears it.
    expect(await h.json<Json>(["resume", "--json"])).toMatchObject({ resumed: true });
    const records = await stopRecords();
    expect(records).toHaveLength(2);
    expect(records[1]?.late).toBe(true);
    const verified = await h.run(["verify"]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 90_000);

  it("(c) daemon hung (SIGSTOP): the CLI kills every seat itself from the registry within seconds", async () => {
    const namespaces = await startTeam();
    const pid = h.daemon?.child.pid as number;
    process.kill(pid, "SIGSTOP");
    let stopped: Json;
    const began = Date.now();
    try {
      stopped = await h.json<Json>(["stop", "--all", "--json"], { timeoutMs: 20_000 });
    } finally {
      process.kill(pid, "SIGCONT");
    }
    expect(Date.now() - began).toBeLessThan(10_000);
    expect(stopped).toMatchObject({ stopped: true, path: "cli", daemon: { answered: false }, alive: [] });
    expect((stopped.killedByCli as unknown[]).length).toBe(2);
    await expectNoneLeft(namespaces);

    // The daemon, running again, sees its seats gone and still honours the stop.
    for (let i = 0; i < 100 && ((await h.json<Json>(["status", "--json"])).seats as unknown[]).length > 0; i++) await sleep(100);
    expect((await h.json<Json>(["status", "--json"])).seats).toEqual([]);
    expect(await h.json<Json>(["start", "alpha@proj", "--json"], { code: 3 })).toMatchObject({ rule: "stop.active" });
    expect(await h.json<Json>(["resume", "--json"])).toMatchObject({ resumed: true });
    // Cleared: a start works again, and is stopped in the ordinary way.
    await startTeam();
    expect((await h.json<Json>(["stop", "--team", "proj", "--json"])).stopped).toHaveLength(2);
    // A team's stop holds (§9, §15) until the owner resumes it.
    await h.ok(["resume", "--team", "proj"]);
  }, 90_000);

  it("(d) daemon killed (SIGKILL): the stop is written by the CLI, no seat is left, and a new daemon honours it until resume", async () => {
    const namespaces = await startTeam();
    const old = h.daemon as DaemonProcess;
    process.kill(old.child.pid as number, "SIGKILL");
    await new Promise<void>((resolve) => (old.child.exitCode !== null || old.child.signalCode !== null ? resolve() : old.child.once("exit", () => resolve())));
    const stopped = await h.json<Json>(["stop", "--all", "--json"], { timeoutMs: 20_000 });
    expect(stopped).toMatchObject({ stopped: true, path: "cli", daemon: { answered: false }, alive: [] });
    await expectNoneLeft(namespaces);

    // A daemon started after the stop reads the flag before it serves anything.
    await h.startDaemon();
    expect(await h.json<Json>(["start", "alpha@proj", "--json"], { code: 3 })).toMatchObject({ rule: "stop.active" });
    expect(await h.json<Json>(["resume", "--json"])).toMatchObject({ resumed: true });
    await startTeam();
    expect((await h.json<Json>(["stop", "--team", "proj", "--json"])).stopped).toHaveLength(2);
    // A team's stop holds (§9, §15) until the owner resumes it.
    await h.ok(["resume", "--team", "proj"]);
    // The stop the dead daemon never saw is in the ledger, appended once the store was back.
    expect((await stopRecords()).length).toBeGreaterThan(0);
  }, 120_000);
});
