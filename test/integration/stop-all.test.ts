import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readlinkSync, renameSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { run, startDaemon, TEAMD, type DaemonProcess } from "../support/programs.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { processesInNamespace } from "../sandbox/fixture/real-seat.js";
import { sleeperTeamFile } from "../support/team-file.js";
import { appliedTeam } from "../support/applied-team.js";

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
  let tmp: { dir: string; remove(): Promise<void> };
  let daemon: DaemonProcess | undefined;
  let repo: string;
  let home: string;
  let env: NodeJS.ProcessEnv;
  let ledgerMoved = false;

  const teamd = (args: string[], timeoutMs = 60_000) => run(TEAMD, args, env, timeoutMs, { cwd: repo });
  const json = async (args: string[], code = 0, timeoutMs = 60_000) => {
    const result = await teamd([...args, "--json"], timeoutMs);
    expect(result.code, `${args.join(" ")}: ${result.stderr}${result.stdout}`).toBe(code);
    return JSON.parse(result.stdout) as Json;
  };
  /** Start every seat; return each seat's pid namespace (the proof of what must die). */
  const startTeam = async (): Promise<string[]> => {
    const started = (await json(["start", "--team", "proj"])) as { started: Array<{ initPid: number }> };
    expect(started.started).toHaveLength(2);
    const namespaces = started.started.map((s) => readlinkSync(`/proc/${s.initPid}/ns/pid`));
    for (const ns of namespaces) expect((await processesInNamespace(ns)).length).toBeGreaterThan(0); // control
    return namespaces;
  };
  const noneLeft = async (namespaces: string[]) => {
    for (const ns of namespaces) expect(await processesInNamespace(ns), ns).toEqual([]);
  };
  const stopRecords = async () => {
    const log = await teamd(["log", "--json", "--type", "stop"]);
    expect(log.code, log.stderr).toBe(0);
    return log.stdout.trim() === "" ? [] : log.stdout.trim().split("\n").map((l) => JSON.parse(l) as Json);
  };

  beforeAll(async () => {
    ({ tmp, repo, home, env, daemon } = await appliedTeam("teamd-stopall-", TEAM_FILE));
  }, 60_000);

  afterAll(async () => {
    try {
      if (ledgerMoved) renameSync(join(home, "ledger/ledger.db.away"), join(home, "ledger/ledger.db"));
    } finally {
      if (daemon && daemon.child.pid !== undefined && daemon.child.exitCode === null) {
        process.kill(daemon.child.pid, "SIGCONT");
        await daemon.stop();
      }
      await tmp?.remove();
    }
  }, 30_000);

  it("(a) daemon up: stops every seat, refuses starts and owner acts with stop.active, until resume", async () => {
    const namespaces = await startTeam();
    const stopped = await json(["stop", "--all"]);
    expect(stopped).toMatchObject({ stopped: true, path: "daemon", daemon: { answered: true, recorded: true }, killedByCli: [], alive: [] });
    expect((stopped.daemon as { stopped: unknown[] }).stopped).toHaveLength(2);
    await noneLeft(namespaces);
    expect(await json(["start", "alpha@proj"], 3)).toMatchObject({ rule: "stop.active" });
    expect(await json(["apply", "--yes"], 3)).toMatchObject({ rule: "stop.active" });
    expect((await json(["status"])).seats).toEqual([]);
    const records = await stopRecords();
    expect(records).toHaveLength(1);
    expect(records[0]?.late).toBeFalsy();

    expect(await json(["resume"])).toMatchObject({ resumed: true });
    expect(await json(["resume"])).toMatchObject({ resumed: false });
    expect(existsSync(join(home, "flags"))).toBe(true);
  }, 90_000);

  it("(b) daemon up, ledger unavailable: the stop holds by its flag, seats die, the stop is appended late", async () => {
    const namespaces = await startTeam();
    renameSync(join(home, "ledger/ledger.db"), join(home, "ledger/ledger.db.away"));
    ledgerMoved = true;
    const stopped = await json(["stop", "--all"]);
    expect(stopped).toMatchObject({ stopped: true, daemon: { answered: true, recorded: false }, alive: [] });
    await noneLeft(namespaces);
    expect(await json(["start", "alpha@proj"], 3)).toMatchObject({ rule: "stop.active" });

    renameSync(join(home, "ledger/ledger.db.away"), join(home, "ledger/ledger.db"));
    ledgerMoved = false;
    // Resume needs the store back; it records the stop (late) first, then clears it.
    expect(await json(["resume"])).toMatchObject({ resumed: true });
    const records = await stopRecords();
    expect(records).toHaveLength(2);
    expect(records[1]?.late).toBe(true);
    const verified = await teamd(["verify"]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 90_000);

  it("(c) daemon hung (SIGSTOP): the CLI kills every seat itself from the registry within seconds", async () => {
    const namespaces = await startTeam();
    const pid = daemon?.child.pid as number;
    process.kill(pid, "SIGSTOP");
    let stopped: Json;
    const began = Date.now();
    try {
      stopped = await json(["stop", "--all"], 0, 20_000);
    } finally {
      process.kill(pid, "SIGCONT");
    }
    expect(Date.now() - began).toBeLessThan(10_000);
    expect(stopped).toMatchObject({ stopped: true, path: "cli", daemon: { answered: false }, alive: [] });
    expect((stopped.killedByCli as unknown[]).length).toBe(2);
    await noneLeft(namespaces);

    // The daemon, running again, sees its seats gone and still honours the stop.
    for (let i = 0; i < 100 && ((await json(["status"])).seats as unknown[]).length > 0; i++) await sleep(100);
    expect((await json(["status"])).seats).toEqual([]);
    expect(await json(["start", "alpha@proj"], 3)).toMatchObject({ rule: "stop.active" });
    expect(await json(["resume"])).toMatchObject({ resumed: true });
    // Cleared: a start works again, and is stopped in the ordinary way.
    await startTeam();
    expect((await json(["stop", "--team", "proj"])).stopped).toHaveLength(2);
  }, 90_000);

  it("(d) daemon killed (SIGKILL): the stop is written by the CLI, no seat is left, and a new daemon honours it until resume", async () => {
    const namespaces = await startTeam();
    const old = daemon as DaemonProcess;
    process.kill(old.child.pid as number, "SIGKILL");
    await new Promise<void>((resolve) => (old.child.exitCode !== null || old.child.signalCode !== null ? resolve() : old.child.once("exit", () => resolve())));
    const stopped = await json(["stop", "--all"], 0, 20_000);
    expect(stopped).toMatchObject({ stopped: true, path: "cli", daemon: { answered: false }, alive: [] });
    await noneLeft(namespaces);

    // A daemon started after the stop reads the flag before it serves anything.
    daemon = await startDaemon(home, [], 15_000, { HOME: tmp.dir });
    expect(await json(["start", "alpha@proj"], 3)).toMatchObject({ rule: "stop.active" });
    expect(await json(["resume"])).toMatchObject({ resumed: true });
    await startTeam();
    expect((await json(["stop", "--team", "proj"])).stopped).toHaveLength(2);
    // The stop the dead daemon never saw is in the ledger, appended once the store was back.
    expect((await stopRecords()).length).toBeGreaterThan(0);
  }, 120_000);
});
