import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { expectRefused, initTeam, type LogRecord, type TeamdHarness } from "../support/teamd-harness.js";
import { gatedChange } from "../support/gated-change.js";

/**
 * Floors over standing plus live leased authority, and the owner's narrowing that commits and
 * pauses (issue 24, items 3 and 4; §5), through a real daemon, a real hub, real seats and the
 * real ledger. The team's floor is two merge holders (`minimum: 2, of: merge`), which pauses
 * merges when unmet:
 *
 * - a live lease meets the floor: the owner takes a standing merge away and apply commits
 *   with nothing paused (it was refused: the floor was counted over standing grants only);
 * - the owner narrows the leads envelope: apply commits, the lease's revocation is recorded in
 *   the same batch, the floor is unmet, a merge is refused `constraint.paused`, and the owner
 *   gets one notice; an apply that restores the floor lifts the pause;
 * - a lease's expiry that breaks the floor pauses the merge the same way.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const seat = (lab: string, capabilities: string) => `    lab: ${lab}\n    capabilities:\n${capabilities}    start:\n      command: [sleep, "3600"]\n`;
const TEAM_FILE = (o: { m2Merges: boolean; envelope: string }) => `version: 1
team: proj
declare:
  branches: [main, release]
  labs: [anthropic, openai]
review:
  mode: cross-lab
  floor: 1
constraints:
  - { minimum: 2, of: merge, pauses: [merge] }
leads:
  seat: lead
  envelope:
    merge: { branch: [${o.envelope}] }
seats:
  exec:
${seat("anthropic", "      read: ~\n      write: { path: src/ }\n")}  rev:
    lab: openai
    roles: [verifier]
    start:
      command: [sleep, "3600"]
  lead:
${seat("openai", "      read: ~\n")}  m1:
${seat("openai", "      read: ~\n      merge: ~\n")}  m2:
${seat("openai", `      read: ~\n${o.m2Merges ? "      merge: ~\n" : ""}`)}  m3:
${seat("openai", "      read: ~\n")}`;

describe.runIf(process.platform === "linux")("floors over standing plus leased authority; the owner's narrowing commits and pauses", () => {
  let h: TeamdHarness;

  const apply = async (o: { m2Merges: boolean; envelope: string }) => {
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE(o));
    const applied = await h.run(["apply", "--yes"]);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    return applied;
  };
  const issueLease = async (ttl: string): Promise<{ leaseId: string; expiresUnixMs: number }> => {
    const issued = await h.shim("lead", "lease", "issue", "m3", "merge", "branch=main", "--ttl", ttl, "--json");
    expect(issued.code, issued.stdout + issued.stderr).toBe(0);
    return JSON.parse(issued.stdout) as { leaseId: string; expiresUnixMs: number };
  };
  const allNotices = async (): Promise<{ subject: string; text: string }[]> => {
    const out = await h.run(["notices", "--all", "--json"], { timeoutMs: 15_000 });
    expect(out.code, out.stderr).toBe(0);
    return out.stdout
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { subject: string; text: string });
  };
  const floorNotices = async () => (await allNotices()).filter((n) => n.subject.includes("floor(s) unmet"));

  beforeAll(async () => {
    h = await initTeam("teamd-floors-", { files: { "README.md": "hello\n", "src/a.txt": "a\n" } });
    await apply({ m2Merges: true, envelope: "main" });
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  let leaseId = "";

  it("a live lease meets the floor: taking m2's merge away commits with nothing paused, and m1 merges", async () => {
    leaseId = (await issueLease("1h")).leaseId;
    const applied = await apply({ m2Merges: false, envelope: "main" });
    expect(applied.stderr).not.toContain("floor left unmet");
    await gatedChange(h, "one");
    const merged = await h.shim("m1", "merge", "seat/exec/one", "--json");
    expect(merged.code, merged.stdout + merged.stderr).toBe(0);
  }, 120_000);

  it("narrowing the envelope revokes the lease with the policy, leaves the floor unmet, pauses the merge, and tells the owner once", async () => {
    const applied = await apply({ m2Merges: false, envelope: "release" });
    expect(applied.stderr).toContain("leases: 1 would be revoked");
    expect(applied.stderr).toMatch(/floor left unmet: constraint 1 needs at least 2 seat\(s\) holding merge, and 1 do \(m1\); merge would pause/);
    const log = await h.records();
    const policy = log.filter((r) => r.type === "policy").at(-1) as LogRecord;
    const revocation = log.find((r) => r.type === "revocation" && JSON.stringify(r).includes(leaseId)) as LogRecord;
    expect(revocation?.seq).toBe((policy.seq as number) + 1);
    await gatedChange(h, "two");
    const trunk = h.hubGit("rev-parse", "refs/heads/main");
    const paused = await expectRefused(h.shim("m1", "merge", "seat/exec/two"), "constraint.paused");
    expect(paused.stderr).toContain("needs at least 2 seat(s) holding merge");
    expect(h.hubGit("rev-parse", "refs/heads/main")).toBe(trunk);
    // One notice, however many acts the pause refuses.
    await expectRefused(h.shim("m1", "merge", "seat/exec/two"), "constraint.paused");
    let told: { subject: string; text: string }[] = [];
    for (let i = 0; i < 40 && told.length === 0; i++) {
      told = await floorNotices();
      if (told.length === 0) await new Promise((r) => setTimeout(r, 250));
    }
    expect(told).toHaveLength(1);
    expect(told[0]?.text).toContain("needs at least 2 seat(s) holding merge");
  }, 120_000);

  it("an apply that restores the floor lifts the pause", async () => {
    const applied = await apply({ m2Merges: true, envelope: "release" });
    expect(applied.stderr).not.toContain("floor left unmet");
    await gatedChange(h, "three");
    const merged = await h.shim("m1", "merge", "seat/exec/three", "--json");
    expect(merged.code, merged.stdout + merged.stderr).toBe(0);
    expect(await floorNotices()).toHaveLength(1);
  }, 120_000);

  it("a lease's expiry that breaks the floor pauses the merge the same way", async () => {
    await apply({ m2Merges: true, envelope: "main" });
    // The lease's own expiry, as the daemon set it (a busy machine may take a while to deliver the call).
    const { expiresUnixMs } = await issueLease("15s");
    // While the lease lives it meets the floor: the apply pauses nothing.
    const applied = await apply({ m2Merges: false, envelope: "main" });
    expect(applied.stderr).not.toContain("floor left unmet");
    await gatedChange(h, "four");
    // Past the lease's expiry only m1 holds merge.
    await new Promise((r) => setTimeout(r, Math.max(0, expiresUnixMs + 1_000 - Date.now())));
    await expectRefused(h.shim("m1", "merge", "seat/exec/four"), "constraint.paused");
    // The owner is told once, with no owner act to hang it on (the daemon's floor watch looks every 5 s).
    const expiryNotices = async () => (await allNotices()).filter((n) => n.subject.startsWith("floor unmet (team proj)"));
    let told: { subject: string; text: string }[] = [];
    for (let i = 0; i < 60 && told.length === 0; i++) {
      told = await expiryNotices();
      if (told.length === 0) await new Promise((r) => setTimeout(r, 250));
    }
    expect(told).toHaveLength(1);
    expect(told[0]?.text).toContain("needs at least 2 seat(s) holding merge");
    await new Promise((r) => setTimeout(r, 6_000));
    expect(await expiryNotices()).toHaveLength(1);
    // A restart repeats nothing: the floor was told since the policy record.
    await h.daemon?.stop();
    await h.startDaemon();
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await expiryNotices()).toHaveLength(1);
  }, 150_000);

  it("a floor broken while the daemon was down is told at its next start, once", async () => {
    await h.ok(["start", "--team", "proj"]);
    await apply({ m2Merges: true, envelope: "main" });
    const issuedAt = Date.now();
    await issueLease("10s");
    await apply({ m2Merges: false, envelope: "main" });
    const before = (await allNotices()).filter((n) => n.subject.startsWith("floor unmet (team proj)")).length;
    await h.daemon?.stop();
    // The lease expires while no daemon runs.
    await new Promise((r) => setTimeout(r, Math.max(0, issuedAt + 11_000 - Date.now())));
    await h.startDaemon();
    const count = async () => (await allNotices()).filter((n) => n.subject.startsWith("floor unmet (team proj)")).length;
    let now = before;
    for (let i = 0; i < 60 && now === before; i++) {
      now = await count();
      if (now === before) await new Promise((r) => setTimeout(r, 250));
    }
    expect(now).toBe(before + 1);
    await new Promise((r) => setTimeout(r, 6_000));
    expect(await count()).toBe(before + 1);
  }, 150_000);
});
