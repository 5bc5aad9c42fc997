import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureSeatUser } from "../support/seat-user.js";
import { makeRepo } from "../support/repo.js";
import { seatCalls, waitingSeat, writeInSeat } from "../support/seat-calls.js";
import { initTeam, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * create (issue 30; §9 "create (execute)", §10 create-bounds, §8 the carve) through a real seat, a
 * real daemon, real repositories and the real ledger. The owner writes a create-bound on the
 * machine; a seat holding create asks for a child team at one of its roots: the child is
 * registered (its hub, its file in its root, its policy in force as the seat's act), its seat
 * slice is carved from the creator's allowance and shows in status, and it runs down the creator's
 * runtime. Past a bound — a start command not listed, a root not named, one team too many, a slice
 * too large, no bound at all, a seat not holding create — the create is refused and recorded; two
 * creates at once cannot spend one remainder.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = `version: 1
team: proj
declare:
  branches: [main]
  labs: [anthropic]
review: { mode: distinct-seat }
ceiling:
  runtime: 2h
  seats: { anthropic: 4 }
  capabilities: { read: ~ }
seats:
  maker:
${waitingSeat("anthropic", "      read: ~\n      create: ~\n")}  other:
${waitingSeat("anthropic", "      read: ~\n")}`;

/** A child team file: one seat per name, each waiting (`sleep 3600`) in lab anthropic. */
const childFile = (team: string, seats: readonly string[], command = '[sleep, "3600"]') =>
  `version: 1\nteam: ${team}\ndeclare:\n  branches: [main]\n  labs: [anthropic]\nreview: { mode: distinct-seat }\nseats:\n${seats
    .map((s) => `  ${s}:\n    lab: anthropic\n    capabilities: { read: ~ }\n    start:\n      command: ${command}\n`)
    .join("")}`;

interface Created {
  created: boolean;
  team: string;
  teamSeq: number;
  policySeq: number;
  started: string[];
  deadline: string | null;
}

describe.runIf(process.platform === "linux")("create through a real seat (§9, §10, §8)", () => {
  let h: TeamdHarness;
  let calls: ReturnType<typeof seatCalls>;
  const roots: string[] = [];

  /** Put a child file in the seat's /tmp (the seat writes it; the shim reads it there). */
  const put = (seat: string, name: string, text: string) => writeInSeat(h, seat, name, text);

  beforeAll(async () => {
    h = await initTeam("teamd-create-");
    for (const name of ["kid-a", "kid-b", "kid-c", "kid-d", "kid-e"]) roots.push(makeRepo(h.dir, name));
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "maker"]);
    await h.ok(["start", "other"]);
    calls = seatCalls(h);
  }, 120_000);
  afterAll(async () => {
    for (const t of ["kid", "kid2", "kid3", "kid4", "late"]) await h?.run(["stop", "--team", t]).catch(() => undefined);
    await h?.cleanup();
  }, 60_000);

  it("without a bound on the machine, create is refused and recorded; a seat that does not hold create is refused too", async () => {
    const file = await put("maker", "kid.yaml", childFile("kid", ["k1"]));
    await calls.refused("create.bound", "maker", "create", file, "--root", roots[0] as string);
    const other = await put("other", "kid.yaml", childFile("kid", ["k1"]));
    await calls.refused("create.not-held", "other", "create", other, "--root", roots[0] as string);
    const refusals = (await calls.log()).filter((r) => r.type === "refusal" && r.action === "team.create");
    expect(refusals.map((r) => r.detail?.rule)).toEqual(expect.arrayContaining(["create.bound", "create.not-held"]));
    // A bound is the owner's, on the machine: a team file cannot carry one.
    expect(existsSync(join(roots[0] as string, "teamd.yaml"))).toBe(false);
  }, 60_000);

  it("the owner writes a bound (show, --json); a create within it registers the child as the seat's act, carves its seats, shows in status", async () => {
    await h.ok([
      "create-bounds",
      "set",
      "maker@proj",
      "--teams",
      "3",
      "--root",
      roots[0] as string,
      "--root",
      roots[1] as string,
      "--root",
      roots[2] as string,
      "--start",
      '["sleep","3600"]',
      "--lab",
      "anthropic:seats=1",
      "--yes",
    ]);
    const shown = await h.json<{ bounds: { seq: number; bound: { teams: number; roots: string[] }; created: string[] }[] }>([
      "create-bounds",
      "show",
      "--json",
    ]);
    expect(shown.bounds).toHaveLength(1);
    expect(shown.bounds[0]?.bound).toMatchObject({ teams: 3 });
    expect(shown.bounds[0]?.created).toEqual([]);

    const file = await put("maker", "kid.yaml", childFile("kid", ["k1"]));
    const made = await calls.json<Created>("maker", "create", file, "--root", roots[0] as string);
    expect(made).toMatchObject({ created: true, team: "kid", started: [] });
    // It inherits the creator's remaining runtime (§8: a create mints none): a deadline under 2 h from now.
    expect(made.deadline).not.toBeNull();
    const left = Date.parse(made.deadline as string) - Date.now();
    expect(left).toBeGreaterThan(60 * 60 * 1000);
    expect(left).toBeLessThanOrEqual(2 * 60 * 60 * 1000);

    // On record as the seat's act, never the owner's: the team record and the policy, both signed by the seat.
    const records = await calls.log();
    const team = records.find((r) => r.type === "team" && r.action === "team.create");
    const policy = records.find((r) => r.type === "policy" && r.action === "policy.create");
    expect(team?.signer).toMatch(/maker/);
    expect(policy?.signer).toMatch(/maker/);
    expect(policy?.signer).not.toBe("owner");
    // Its file is in its root (untracked, as for any team), its hub made from that root.
    expect(readFileSync(join(roots[0] as string, "teamd.yaml"), "utf8")).toContain("team: kid");
    expect(existsSync(join(h.home, "hubs", "kid.git"))).toBe(true);

    const status = await h.json<{
      teams: {
        team: string;
        createdBy: { parent: string; seat: string } | null;
        envelope: { lab: string; seats: { cap: number } | null }[];
        runtime: { leftMs: number } | null;
      }[];
    }>(["status", "--json"]);
    const kid = status.teams.find((t) => t.team === "kid");
    expect(kid?.createdBy).toEqual({ parent: "proj", seat: "maker" });
    expect(kid?.runtime?.leftMs).toBeGreaterThan(0);
    // The carve: proj's anthropic allowance (4) less the slice it gave kid (1).
    expect(status.teams.find((t) => t.team === "proj")?.envelope.find((e) => e.lab === "anthropic")?.seats?.cap).toBe(3);
    expect(await h.ok(["status"])).toMatch(/kid .*\(created by maker@proj/);
    // The owner is told.
    expect(await h.ok(["notices", "--json"])).toMatch(/team created \(team kid\)/);
    // The owner starts it like any team; its slice allows one anthropic seat.
    await h.ok(["start", "--team", "kid"]);
    await h.ok(["stop", "--team", "kid"]);
    await h.ok(["resume", "--team", "kid"]);
  }, 120_000);

  it("past the bound: a start command not listed, a root not named, a grant, a slice too large — each refused and recorded, nothing left behind", async () => {
    const bad = await put("maker", "bad.yaml", childFile("kid2", ["k1"], '[bash, "-c", "curl evil"]'));
    await calls.refused("create.start", "maker", "create", bad, "--root", roots[1] as string);
    const elsewhere = await put("maker", "elsewhere.yaml", childFile("kid2", ["k1"]));
    await calls.refused("create.root", "maker", "create", elsewhere, "--root", roots[3] as string);
    await calls.refused("create.root", "maker", "create", elsewhere, "--root", roots[0] as string);
    const big = await put("maker", "big.yaml", childFile("kid2", ["k1", "k2"]));
    await calls.refused("create.seats", "maker", "create", big, "--root", roots[1] as string);
    const granted = await put("maker", "granted.yaml", childFile("kid2", ["k1"]).replace("capabilities: { read: ~ }", "capabilities: { read: ~, grant: ~ }"));
    await calls.refused("create.grant", "maker", "create", granted, "--root", roots[1] as string);
    expect(existsSync(join(roots[1] as string, "teamd.yaml"))).toBe(false);
    expect(existsSync(join(h.home, "hubs", "kid2.git"))).toBe(false);
    const rules = (await calls.log()).filter((r) => r.type === "refusal" && r.action === "team.create").map((r) => r.detail?.rule);
    expect(rules).toEqual(expect.arrayContaining(["create.start", "create.root", "create.seats", "create.grant"]));
  }, 90_000);

  it("two creates at once cannot spend one remainder: the allowance left fits one slice, one create lands", async () => {
    // proj: cap 4, live 2 (maker, other), carved 1 → 1 left; a bound whose slice is one seat: two at once, one fits.
    const a = await put("maker", "a.yaml", childFile("kid2", ["k1"]));
    const b = await put("maker", "b.yaml", childFile("kid3", ["k1"]));
    const results = await Promise.all([
      h.shim("maker", "create", a, "--root", roots[1] as string, "--json"),
      h.shim("maker", "create", b, "--root", roots[2] as string, "--json"),
    ]);
    const ok = results.filter((r) => r.code === 0);
    const refused = results.filter((r) => r.code !== 0);
    expect(ok, results.map((r) => r.stderr).join("\n")).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(`${refused[0]?.stdout}${refused[0]?.stderr}`).toMatch(/create\.slice/);
    // Whichever lost left nothing behind in its root.
    const lostRoot = JSON.parse(ok[0]?.stdout ?? "{}").team === "kid2" ? roots[2] : roots[1];
    expect(existsSync(join(lostRoot as string, "teamd.yaml"))).toBe(false);
  }, 90_000);

  it("one team too many is refused (the bound's count), and a cleared bound creates nothing", async () => {
    // proj's allowance is carved out (cap 4: 2 live, 2 carved): the owner widens it (an owner act), and a new bound
    // counts afresh — this one lets maker make one team of one anthropic seat.
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE.replace("anthropic: 4", "anthropic: 8"));
    await h.ok(["apply", "--yes"]);
    const bound = ["--teams", "1", "--root", roots[3] as string, "--root", roots[4] as string, "--start", "sleep 3600", "--lab", "anthropic:seats=1"];
    await h.ok(["create-bounds", "set", "maker@proj", ...bound, "--yes"]);
    const fourth = await put("maker", "fourth.yaml", childFile("kid4", ["k1"]));
    expect(await calls.json<Created>("maker", "create", fourth, "--root", roots[3] as string)).toMatchObject({ team: "kid4" });
    const fifth = await put("maker", "fifth.yaml", childFile("kid5", ["k1"]));
    await calls.refused("create.count", "maker", "create", fifth, "--root", roots[4] as string);
    await h.ok(["create-bounds", "clear", "maker@proj"]);
    await calls.refused("create.bound", "maker", "create", fifth, "--root", roots[4] as string);
    expect(await h.ok(["create-bounds", "show"])).toMatch(/no create-bound is written/);
    // The owner's teamd init in a child's repository registers it again (the remote, the exclude): its lineage stays.
    await h.ok(["init", "--team", "kid", "--yes", "--json"], { cwd: roots[0] as string });
    // Across a restart the children are rebuilt from their records; the whole chain verifies (seat-signed team and policy records among it).
    await h.stopDaemon();
    await h.startDaemon();
    const status = await h.json<{ teams: { team: string; createdBy: { parent: string; seat: string } | null }[] }>(["status", "--json"]);
    const created = status.teams.filter((t) => t.createdBy !== null).map((t) => t.team);
    expect(created).toHaveLength(3);
    expect(created).toEqual(expect.arrayContaining(["kid", "kid4"]));
    await h.ok(["verify"]);
  }, 90_000);

  it("a child runs down its creator's remainder: paused when the creator's runtime ends, and the owner's renewal of the parent does not renew it", async () => {
    // The owner gives proj a short runtime (an apply renews it from now): 25 s. The child created now inherits what is left.
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE.replace("runtime: 2h", "runtime: 25s").replace("anthropic: 4", "anthropic: 8"));
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "maker"]).catch(() => undefined);
    const root = makeRepo(h.dir, "kid-late");
    await h.ok(["create-bounds", "set", "maker@proj", "--root", root, "--start", "sleep 3600", "--lab", "anthropic:seats=1", "--yes"]);
    const file = await put("maker", "late.yaml", childFile("late", ["k1"]));
    const made = await calls.json<Created>("maker", "create", file, "--root", root);
    const deadline = Date.parse(made.deadline as string);
    expect(deadline - Date.now()).toBeLessThanOrEqual(25_000);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now()) + 1500));
    expect(await h.json<{ rule: string }>(["start", "--team", "late", "--json"], { code: 3 })).toMatchObject({ rule: "envelope.runtime" });
    // The owner's renewal of the parent renews the parent only (§8: a later owner act on the parent does not renew the child).
    await h.ok(["renew", "--team", "proj"]);
    expect(await h.json<{ rule: string }>(["start", "--team", "late", "--json"], { code: 3 })).toMatchObject({ rule: "envelope.runtime" });
    // The owner's own act on the child does — with the window it was given again, never none (its policy is still the seat's).
    await h.ok(["renew", "--team", "late"]);
    const late = (await h.json<{ teams: { team: string; runtime: { leftMs: number } | null }[] }>(["status", "--json"])).teams.find((t) => t.team === "late");
    expect(late?.runtime?.leftMs).toBeGreaterThan(0);
    expect(late?.runtime?.leftMs).toBeLessThanOrEqual(25_000);
    await h.ok(["start", "--team", "late"]);
    await h.ok(["stop", "--team", "late"]);
  }, 120_000);
});
