import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureSeatUser } from "../support/seat-user.js";
import { makeRepo } from "../support/repo.js";
import { sleeperTeamFile } from "../support/team-file.js";
import { appliedTeam } from "../support/applied-team.js";
import type { TeamdHarness } from "../support/teamd-harness.js";

/**
 * A team's stop (issue 30; §9 "a team stop never reaches another team", §15 "a stop holds until
 * an owner act clears it"): `teamd stop --team T` is signed and raised as a flag, so it holds with
 * the ledger's store gone and across a daemon restart; every start and gated act of that team is
 * refused `stop.team`; another team of the same machine runs on; only `teamd resume --team T` lifts it.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

interface Json {
  [key: string]: unknown;
}

describe.runIf(process.platform === "linux")("teamd stop --team: a stop that holds, for one team", () => {
  let h: TeamdHarness;
  let otherRepo = "";

  const running = async (team: string) =>
    ((await h.json<{ seats: { team: string; seat: string }[] }>(["status", "--json"])).seats ?? []).filter((s) => s.team === team).map((s) => s.seat);

  beforeAll(async () => {
    h = await appliedTeam("teamd-teamstop-", sleeperTeamFile(["alpha", "beta"]));
    // A second team on the same machine: its own repository, registered and applied.
    otherRepo = makeRepo(h.dir, "other");
    writeFileSync(join(otherRepo, "teamd.yaml"), sleeperTeamFile(["gamma"]).replace("team: proj", "team: other"));
    await h.ok(["init", "--yes", "--json"], { cwd: otherRepo });
    await h.ok(["apply", "--yes"], { cwd: otherRepo });
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  }, 30_000);

  it("stops that team's seats, refuses its starts (stop.team), and leaves the other team running", async () => {
    await h.ok(["start", "--team", "proj"]);
    await h.ok(["start", "--team", "other"]);
    const stopped = await h.json<Json>(["stop", "--team", "proj", "--reason", "checking a leak", "--json"]);
    expect(stopped).toMatchObject({ scope: "team", team: "proj", holds: true, allDown: true });
    expect((stopped.stopped as { seat: string }[]).map((s) => s.seat).sort()).toEqual(["alpha", "beta"]);
    expect(await running("proj")).toEqual([]);
    expect(await running("other")).toEqual(["gamma"]);
    expect(await h.json<Json>(["start", "alpha@proj", "--json"], { code: 3 })).toMatchObject({ rule: "stop.team" });
    // The other team is untouched: its seat acts (a gated act of its own), and it starts more.
    const other = await h.run(["exec", "gamma@other", "--", "true"]);
    expect(other.code, other.stderr).toBe(0);
    const status = await h.json<{ stops: { scope: string; team: string }[] }>(["status", "--json"]);
    expect(status.stops).toEqual([expect.objectContaining({ scope: "team", team: "proj" })]);
  }, 90_000);

  it("holds with the ledger's store gone and across a daemon restart; resume --team lifts it (and only it)", async () => {
    h.ledgerAway();
    expect(await h.json<Json>(["start", "alpha@proj", "--json"], { code: 3 })).toMatchObject({ rule: "stop.team" });
    h.ledgerBack();
    await h.stopDaemon();
    await h.startDaemon();
    expect(await h.json<Json>(["start", "alpha@proj", "--json"], { code: 3 })).toMatchObject({ rule: "stop.team" });
    // A resume of another team clears nothing of this one.
    expect(await h.json<Json>(["resume", "--team", "other", "--json"])).toMatchObject({ resumed: false });
    expect(await h.json<Json>(["start", "alpha@proj", "--json"], { code: 3 })).toMatchObject({ rule: "stop.team" });
    expect(await h.json<Json>(["resume", "--team", "proj", "--json"])).toMatchObject({ resumed: true });
    await h.ok(["start", "alpha@proj"]);
    expect(await running("proj")).toEqual(["alpha"]);
    const records = await h.records<{ action: string; team: string }>("--type", "stop");
    expect(records.filter((r) => r.action === "stop.team" && r.team === "proj")).toHaveLength(1);
    await h.ok(["stop", "alpha@proj"]);
  }, 120_000);

  it("leads stops its own team (teamd-shim stop-team): held by its record across a restart, another seat may not, only the owner's resume lifts it", async () => {
    writeFileSync(join(h.repo, "teamd.yaml"), sleeperTeamFile(["alpha", "beta"]).replace("seats:\n", "leads: alpha\nseats:\n"));
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
    // The other team's seat ended with the daemon restart above: start it again, to see it run on.
    await h.ok(["start", "--team", "other"]);
    // The team-level address (§9): leads reads its team's notices (subjects, never content); another seat may not.
    let subjects: string[] = [];
    for (let i = 0; i < 40 && !subjects.includes("policy applied (team proj)"); i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 250));
      const read = await h.shim("alpha", "notices", "--json");
      expect(read.code, read.stderr).toBe(0);
      subjects = (JSON.parse(read.stdout) as { notices: { subject: string }[] }).notices.map((n) => n.subject);
    }
    expect(subjects).toContain("policy applied (team proj)");
    expect(subjects.some((s) => s.includes("team other"))).toBe(false);
    const notLeads = await h.shim("beta", "notices");
    expect(notLeads.code).not.toBe(0);
    expect(notLeads.stderr).toContain("table.principal");
    const refused = await h.shim("beta", "stop-team");
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("table.principal");
    const stopped = await h.shim("alpha", "stop-team", "--reason", "tests are red", "--json");
    expect(stopped.code, stopped.stderr).toBe(0);
    expect((JSON.parse(stopped.stdout) as { seats: string[] }).seats.sort()).toEqual(["alpha", "beta"]);
    for (let i = 0; i < 50 && (await running("proj")).length > 0; i++) await new Promise((r) => setTimeout(r, 200));
    expect(await running("proj")).toEqual([]);
    expect(await running("other")).toEqual(["gamma"]);
    expect(await h.json<Json>(["start", "beta@proj", "--json"], { code: 3 })).toMatchObject({ rule: "stop.team" });
    const notices = (await h.ok(["notices", "--json", "--all"]))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { subject: string; text: string });
    expect(notices.some((n) => n.subject === "stop (team proj)" && n.text.startsWith("leads (seat:proj/alpha) stopped"))).toBe(true);
    await h.stopDaemon();
    await h.startDaemon();
    expect(await h.json<Json>(["start", "beta@proj", "--json"], { code: 3 })).toMatchObject({ rule: "stop.team" });
    const resumed = await h.json<{ resumed: boolean; flagIds: string[] }>(["resume", "--team", "proj", "--json"]);
    expect(resumed.resumed).toBe(true);
    expect(resumed.flagIds.some((id) => id.startsWith("seq:"))).toBe(true);
    await h.ok(["start", "beta@proj"]);
    await h.ok(["stop", "beta@proj"]);
  }, 120_000);

  it("leads starts its own team, or a seat of it (teamd-shim start-team); another seat may not", async () => {
    await h.ok(["start", "alpha@proj"]);
    const unknown = await h.shim("alpha", "start-team", "nosuch");
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain("seat.unknown");
    const started = await h.shim("alpha", "start-team", "--json");
    expect(started.code, started.stderr).toBe(0);
    expect((JSON.parse(started.stdout) as { started: string[] }).started).toEqual(["beta"]);
    expect((await running("proj")).sort()).toEqual(["alpha", "beta"]);
    // On record as leads's start (§9: the start names its principal).
    const starts = await h.records<{ target: string; fields?: Record<string, string> }>("--type", "seat_start");
    expect(starts.at(-1)?.fields?.started_by).toBe("leads:alpha");
    const refused = await h.shim("beta", "start-team");
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("table.principal");
    await h.ok(["stop", "--team", "proj"]);
    await h.ok(["resume", "--team", "proj"]);
  }, 90_000);
});
