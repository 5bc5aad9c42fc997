import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { expectRefused, initTeam, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * The envelope's per-lab visibility (§8; issue 27), through a real daemon, real seats and the
 * real hub: leads (lab anthropic) leases o (lab openai) a read of src/, and o reads it; the owner
 * then caps what openai may see to docs/ — the lease still stands, and o's read of src/ is
 * refused `envelope.visibility` (held at use time, whatever covers it), while docs/ still
 * reads; a new read lease past the cap is refused at issue; a team file granting o a read
 * past the cap is refused at apply.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const seats = (oRead: string) => `  lead:
    lab: anthropic
    capabilities:
      read: ~
    start:
      command: [sleep, "3600"]
  o:
    lab: openai
    capabilities:
      read: { path: ${oRead} }
    start:
      command: [sleep, "3600"]
`;
const file = (cap: string, oRead = "[docs/]") =>
  teamFile(seats(oRead), ["anthropic", "openai"]).replace("seats:\n", `leads:\n  seat: lead\n${cap === "" ? "" : `ceiling:\n  visibility: ${cap}\n`}seats:\n`);

describe.runIf(process.platform === "linux")("the envelope's visibility per lab (§8)", () => {
  let h: TeamdHarness;
  const apply = (text: string) => {
    writeFileSync(join(h.repo, "teamd.yaml"), text);
    return h.run(["apply", "--yes", "--json"]);
  };

  beforeAll(async () => {
    h = await initTeam("teamd-envvis-", { files: { "README.md": "hello\n", "src/a.txt": "a\n", "docs/d.md": "d\n" } });
    expect((await apply(file(""))).code).toBe(0);
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a lease that reached src/ is held back when the owner caps openai to docs/; a lease or a grant past the cap is refused", async () => {
    const lease = await h.shim("lead", "lease", "issue", "o", "read", "path=src/", "--ttl", "1h", "--json");
    expect(lease.code, lease.stdout + lease.stderr).toBe(0);
    const control = await h.shim("o", "file", "read", "src/a.txt");
    expect(control.code, control.stderr).toBe(0); // control: the lease lets o read src/
    expect(control.stdout).toBe("a\n");
    const capped = await apply(file("{ openai: [docs/] }"));
    expect(capped.code, capped.stdout + capped.stderr).toBe(0);
    await expectRefused(h.shim("o", "file", "read", "src/a.txt"), "envelope.visibility");
    const status = JSON.parse(await h.ok(["status", "--json"])) as { teams: { envelope: unknown[] }[] };
    expect(status.teams[0]?.envelope).toEqual([
      { lab: "anthropic", seats: null, visibility: null },
      { lab: "openai", seats: null, visibility: ["docs"] },
    ]);
    expect((await h.shim("o", "file", "read", "docs/d.md")).stdout).toBe("d\n");
    // The lease itself stands (the cap shadows, it revokes nothing); a new one past the cap is refused.
    expect((JSON.parse((await h.shim("o", "whoami", "--json")).stdout) as { leases: unknown[] }).leases).toHaveLength(1);
    await expectRefused(h.shim("lead", "lease", "issue", "o", "read", "path=src/", "--ttl", "1h"), "envelope.visibility");
    expect((await h.shim("lead", "lease", "issue", "o", "read", "path=docs/", "--ttl", "1h")).code).toBe(0);
    // A team file granting o a read past the cap is refused at apply.
    const widened = await apply(file("{ openai: [docs/] }", "[docs/, src/]"));
    expect(widened.code).not.toBe(0);
    expect(widened.stdout + widened.stderr).toMatch(/envelope\.visibility/);
  }, 120_000);
});
