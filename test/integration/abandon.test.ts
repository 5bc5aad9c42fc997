import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { leadsWriterTeamFile } from "../support/team-file.js";
import { appliedTeam } from "../support/applied-team.js";
import type { TeamdHarness } from "../support/teamd-harness.js";

/**
 * `teamd abandon --team T` (issue 30, §9: owner only): the team is left without leads and every
 * live lease in it is revoked in one signed act — not only the leases below leads — and no lease
 * issues after it; the owner is told. A real daemon, real seats, the real ledger.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

describe.runIf(process.platform === "linux")("teamd abandon", () => {
  let h: TeamdHarness;
  beforeAll(async () => {
    h = await appliedTeam("teamd-abandon-", leadsWriterTeamFile("src/"));
    await h.ok(["start", "--team", "proj"]);
  }, 90_000);
  afterAll(async () => {
    await h?.cleanup();
  }, 30_000);

  it("revokes every live lease (a root lease from a standing grant too), leaves no leads, and no lease issues after", async () => {
    // One lease from leads's own standing grant (not below the envelope): the selector is every live lease.
    const issued = await h.shim("w", "lease", "issue", "r", "write", "path=src/", "--ttl", "1h", "--json");
    expect(issued.code, issued.stderr).toBe(0);
    const leaseId = (JSON.parse(issued.stdout) as { leaseId: string }).leaseId;
    const done = await h.json<{ abandoned: boolean; leads: string; revokedLeases: string[] }>(["abandon", "--team", "proj", "--yes", "--json"]);
    expect(done).toMatchObject({ abandoned: true, leads: "w", revokedLeases: [leaseId] });
    const leases = await h.json<{ leases: { leaseId: string; live: boolean }[] }>(["lease", "list", "--team", "proj", "--json"]);
    expect(leases.leases.find((l) => l.leaseId === leaseId)?.live).toBe(false);
    const status = await h.json<{ teams: { team: string; leads: string | null }[] }>(["status", "--json"]);
    expect(status.teams.find((t) => t.team === "proj")?.leads ?? null).toBeNull();
    const again = await h.shim("w", "lease", "issue", "r", "write", "path=src/", "--ttl", "1h");
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("lease.no-leads");
    const told = (await h.ok(["notices", "--json", "--all"]))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { subject: string });
    expect(told.some((n) => n.subject === "team abandoned (team proj)")).toBe(true);
    // A second abandon has nothing to do.
    expect(await h.json(["abandon", "--team", "proj", "--yes", "--json"])).toMatchObject({ abandoned: false });
  }, 60_000);
});
