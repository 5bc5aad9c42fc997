import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { leadsWriterTeamFile } from "../support/team-file.js";
import { appliedTeam } from "../support/applied-team.js";
import type { TeamdHarness } from "../support/teamd-harness.js";

/**
 * `teamd rebind SEAT@TEAM --lab LAB` (issue 30, §8: rebinding a seat's lab is an owner act, never a
 * grant): the leases that rested on the old binding — every one the seat holds or issued — are
 * revoked in the same signed act; one resting on another seat's binding stays; the unattended
 * clock keeps counting across it (a rebind renews nothing); the owner is told. A real daemon, real
 * seats, the real ledger.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

describe.runIf(process.platform === "linux")("teamd rebind", () => {
  let h: TeamdHarness;
  beforeAll(async () => {
    // w (leads) and r, both anthropic, a third seat q the lease to r does not touch; openai declared; a runtime to watch.
    const file = leadsWriterTeamFile("src/", "")
      .replace("labs: [anthropic]", "labs: [anthropic, openai]")
      .replace("leads:\n", "ceiling:\n  runtime: 2h\nleads:\n")
      .concat('  q:\n    lab: anthropic\n    capabilities:\n      read: ~\n    start:\n      command: [sleep, "3600"]\n');
    h = await appliedTeam("teamd-rebind-", file);
    await h.ok(["start", "--team", "proj"]);
  }, 90_000);
  afterAll(async () => {
    await h?.cleanup();
  }, 30_000);

  const leaseTo = async (recipient: string) => {
    const issued = await h.shim("w", "lease", "issue", recipient, "write", "path=src/", "--ttl", "1h", "--json");
    expect(issued.code, issued.stderr).toBe(0);
    return (JSON.parse(issued.stdout) as { leaseId: string }).leaseId;
  };
  const live = async () =>
    (await h.json<{ leases: { leaseId: string; live: boolean }[] }>(["lease", "list", "--team", "proj", "--json"])).leases
      .filter((l) => l.live)
      .map((l) => l.leaseId);
  const runtimeLeft = async () =>
    (await h.json<{ teams: { team: string; runtime: { leftMs: number } | null }[] }>(["status", "--json"])).teams.find((t) => t.team === "proj")?.runtime
      ?.leftMs ?? 0;

  it("revokes the leases on the old binding in the same act, leaves the others, renews no runtime, and tells the owner", async () => {
    const toR = await leaseTo("r");
    const toQ = await leaseTo("q");
    expect((await live()).sort()).toEqual([toR, toQ].sort());
    const before = await runtimeLeft();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const done = await h.json<{ rebound: boolean; from: string; to: string; seq: number }>(["rebind", "r@proj", "--lab", "openai", "--yes", "--json"]);
    expect(done).toMatchObject({ rebound: true, from: "anthropic", to: "openai" });
    // r's lease rested on r's old binding: revoked, in the same batch as the policy record; q's stays.
    expect(await live()).toEqual([toQ]);
    const revocations = await h.records<{ seq: number; type: string; target: string }>("--type", "revocation");
    expect(revocations.some((r) => r.seq === done.seq + 1 && r.target.includes(toR))).toBe(true);
    const status = await h.json<{ teams: { team: string; policy: { seq: number } }[] }>(["status", "--json"]);
    expect(status.teams.find((t) => t.team === "proj")?.policy.seq).toBe(done.seq);
    // The clock kept counting: less left than before the rebind (an apply would have reset it to the whole 2 h).
    expect(await runtimeLeft()).toBeLessThan(before);
    expect(await h.ok(["notices", "--json", "--all"])).toMatch(/seat rebound \(team proj\)/);
    // Rebinding to where it is does nothing; an unknown lab is refused by the loader, nothing signed.
    expect(await h.json<{ rebound: boolean }>(["rebind", "r@proj", "--lab", "openai", "--yes", "--json"])).toMatchObject({ rebound: false });
    const unknown = await h.run(["rebind", "r@proj", "--lab", "nowhere", "--yes"]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/does not load/);
  }, 90_000);
});
