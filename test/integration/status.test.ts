import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { initTeam, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * `teamd status` (§10, §11, §15) with a real daemon, ledger and repository, read as a script
 * reads it (`--json`, docs/status.md) and as a person does: the ledger's verified head; a team
 * before and after apply; the file on disk against the policy in force (the same, edited but
 * not applied, broken); leads and the declared seats; the machine-wide stop, recorded, held
 * across a daemon restart and lifted by resume; and the daemon down (exit 4, `running: false`).
 */
const TEAM_FILE = (extraSeat = "") => `version: 1
team: proj
declare:
  branches: [main]
  labs: [anthropic]
leads:
  seat: lead
  envelope:
    read: ~
seats:
  dev:
    lab: anthropic
    capabilities:
      read: ~
  lead:
    lab: anthropic
    capabilities:
      read: ~
${extraSeat}`;

interface StatusJson {
  schema: string;
  daemon: { running: boolean; pid?: number };
  ledger: { state: string; headSeq: number; verified: boolean };
  stopped: boolean;
  stops: { flagId: string; scope: string; team: string; recordedSeq: number }[];
  teams: {
    team: string;
    policy: { seq: number; hash: string } | null;
    teamFile: { state: string; detail: string };
    leads: string | null;
    seats: string[];
    liveLeases: number;
    policyProblem: string;
  }[];
  seats: unknown[];
}

describe("teamd status: the daemon, the ledger, the stops, the teams", () => {
  let h: TeamdHarness;
  const status = () => h.json<StatusJson>(["status", "--json"]);

  beforeAll(async () => {
    h = await initTeam("teamd-status-", { timeoutMs: 30_000 });
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("shows the verified head and a registered team with no policy applied", async () => {
    const s = await status();
    expect(s.schema).toBe("teamd.status/1");
    expect(s.daemon).toMatchObject({ running: true, pid: h.daemon?.child.pid });
    expect(s.ledger.state).toBe("ready");
    expect(s.ledger.verified).toBe(true);
    expect(s.ledger.headSeq).toBeGreaterThan(0);
    expect(s.stopped).toBe(false);
    expect(s.teams).toHaveLength(1);
    // init writes a starter file that is not applied: it is never in force by itself.
    expect(s.teams[0]).toMatchObject({ team: expect.any(String), policy: null, leads: null, seats: [] });
    expect(["unapplied", "invalid"]).toContain(s.teams[0]?.teamFile.state);
  });

  it("after apply: the policy in force, its seats and leads; an edit not applied shows as differs; a broken file as invalid", async () => {
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE());
    await h.ok(["apply", "--yes"]);
    let team = (await status()).teams.find((t) => t.team === "proj");
    expect(team).toMatchObject({ teamFile: { state: "in-force" }, leads: "lead", seats: ["dev", "lead"], liveLeases: 0, policyProblem: "" });
    expect(team?.policy?.seq).toBeGreaterThan(0);
    expect(team?.policy?.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    const applied = team?.policy;

    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE("  extra:\n    lab: anthropic\n    capabilities:\n      read: ~\n"));
    team = (await status()).teams.find((t) => t.team === "proj");
    // The policy in force is unchanged: the edit is shown, never in force until applied.
    expect(team).toMatchObject({ teamFile: { state: "differs" }, seats: ["dev", "lead"], policy: applied });
    expect(team?.teamFile.detail).toMatch(/teamd apply/);

    writeFileSync(join(h.repo, "teamd.yaml"), "version: 1\nteam: proj\nseats: [not, a, map]\n");
    team = (await status()).teams.find((t) => t.team === "proj");
    expect(team).toMatchObject({ teamFile: { state: "invalid" }, policy: applied });
    const text = await h.ok(["status"]);
    expect(text).toMatch(/ledger: ready, head \d+ verified/);
    expect(text).toMatch(/the file on disk does not load/);
    expect(text).toMatch(/seats: dev, lead; leads: lead; live leases: 0/);
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE());
  });

  it("shows the machine-wide stop, recorded, across a daemon restart, until resume", async () => {
    await h.ok(["stop", "--all"]);
    let s = await status();
    expect(s.stopped).toBe(true);
    expect(s.stops).toHaveLength(1);
    expect(s.stops[0]).toMatchObject({ scope: "machine", team: "" });
    expect(s.stops[0]?.recordedSeq).toBeGreaterThan(0);
    expect(await h.ok(["status"])).toMatch(/STOPPED: every team on this machine \(record \d+\); teamd resume lifts it/);

    await h.stopDaemon();
    await h.startDaemon();
    s = await status();
    expect(s.stopped).toBe(true);
    expect(s.stops[0]?.scope).toBe("machine");

    await h.ok(["resume"]);
    s = await status();
    expect(s.stopped).toBe(false);
    expect(s.stops).toEqual([]);
    expect(await h.ok(["status"])).toMatch(/^stop: none$/m);
  }, 60_000);

  it("says the daemon is not running, with exit 4 and running: false", async () => {
    await h.stopDaemon();
    const r = await h.run(["status", "--json"]);
    expect(r.code).toBe(4);
    expect(JSON.parse(r.stdout)).toMatchObject({ schema: "teamd.status/1", daemon: { running: false } });
    const text = await h.run(["status"]);
    expect(text.code).toBe(4);
    expect(text.stdout).toMatch(/the daemon is not running .*teamd serve/);
  });
});
