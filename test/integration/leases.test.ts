import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { expectRefused, initTeam, type LogRecord, type TeamdHarness } from "../support/teamd-harness.js";
import { filesUnder } from "../support/files-under.js";
import { gatedChange } from "../support/gated-change.js";

/**
 * Leases end to end (issue 6), through a real hub, real contained seats and the real ledger:
 * leads (a seat) leases merge to a seat that holds no merge of its own; the seat merges under
 * the lease; the owner narrows the leads envelope with `teamd apply`, which shows and records
 * the cascade; the same kind of merge is then refused with the lease's rule. Then seat-issued
 * leases (list, whoami, a re-lease wider than its parent refused, revoke) and the owner's
 * `teamd revoke` with the ledger's store down: in force by its flag, appended late.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const seat = (lab: string, capabilities: string) => `    lab: ${lab}\n    capabilities:\n${capabilities}    start:\n      command: [sleep, "3600"]\n`;
const TEAM_FILE = (envelopeBranches: string) => `version: 1
team: proj
declare:
  branches: [main, release]
  labs: [anthropic, openai]
review:
  mode: cross-lab
  floor: 1
leads:
  seat: lead
  envelope:
    merge: { branch: [${envelopeBranches}] }
seats:
  exec:
${seat("anthropic", "      read: ~\n      write: { path: src/ }\n      gate: ~\n")}  rev:
    lab: openai
    roles: [verifier]
    start:
      command: [sleep, "3600"]
  lead:
${seat("openai", "      read: ~\n")}  mrg:
${seat("openai", "      read: ~\n")}`;

describe.runIf(process.platform === "linux")("leases through real seats", () => {
  let h: TeamdHarness;

  const shimJson = async <T>(who: string, ...args: string[]): Promise<T> => {
    const r = await h.shim(who, ...args, "--json");
    expect(r.code, r.stdout + r.stderr).toBe(0);
    return JSON.parse(r.stdout) as T;
  };

  let leaseId = "";

  /** A seat's call on its own socket runs the guards, which reopen a store that came back; wait for that. */
  const storeBack = async () => {
    const socket = h.seatSocket("mrg");
    for (let i = 0; i < 40; i++) {
      const client = createRpcClient(ShimService, socket, { deadlineMs: 5_000 });
      const who = await client.whoAmI({}).finally(() => client.close());
      if (who.policySeq > 0n) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error("the ledger's store did not come back within 10 s");
  };

  beforeAll(async () => {
    h = await initTeam("teamd-leases-", { files: { "README.md": "hello\n", "src/a.txt": "a\n" } });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE("main"));
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a seat without merge is refused; leads leases it merge(main); whoami and its lease list show it, no other seat's; it merges", async () => {
    await gatedChange(h, "one");
    await expectRefused(h.shim("mrg", "merge", "seat/exec/one"), "authority.none");
    const issued = await shimJson<{ leaseId: string; live: boolean; rootGrant: string; issuer: string; holder: string }>(
      "lead",
      "lease",
      "issue",
      "mrg",
      "merge",
      "branch=main",
      "--ttl",
      "1h",
    );
    expect(issued).toMatchObject({ live: true, issuer: "lead", holder: "mrg", rootGrant: "leads:envelope/merge/0" });
    leaseId = issued.leaseId;
    // §11: a lease to a seat is a change to what the team may do — the owner is told, unasked.
    let told: { subject: string; text: string }[] = [];
    for (let i = 0; i < 50 && !told.some((n) => n.text.includes(leaseId)); i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 200));
      told = (await h.ok(["notices", "--json", "--all"]))
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { subject: string; text: string });
    }
    expect(
      told.find((n) => n.text.includes(leaseId)),
      JSON.stringify(told),
    ).toMatchObject({
      subject: "lease issued (team proj)",
      text: expect.stringMatching(/^seat lead leased merge .*main.* to seat mrg until /),
    });
    const who = await shimJson<{ leases: { leaseId: string; capability: string }[] }>("mrg", "whoami");
    expect(who.leases).toEqual([expect.objectContaining({ leaseId, capability: "merge" })]);
    // §3's controlled record view: a seat's own live leases and nothing else — the holder sees
    // it; another seat of the team, and the issuer (it had the id in its reply), do not.
    const listed = async (seat: string) => (await shimJson<{ leases: { leaseId: string; live: boolean }[] }>(seat, "lease", "list")).leases;
    expect(await listed("mrg")).toEqual([expect.objectContaining({ leaseId, live: true })]);
    expect(await listed("exec")).toEqual([]);
    expect(await listed("lead")).toEqual([]);
    const trunk = h.hubGit("rev-parse", "refs/heads/main");
    const merged = await shimJson<{ commit: string }>("mrg", "merge", "seat/exec/one");
    expect(h.hubGit("rev-parse", "refs/heads/main")).toBe(merged.commit);
    expect(merged.commit).not.toBe(trunk);
  }, 120_000);

  it("a re-lease wider than its parent, or back up to leads, is refused with its rule, and recorded", async () => {
    await expectRefused(h.shim("mrg", "lease", "issue", "rev", "merge", "*", "--ttl", "30m", "--parent", leaseId), "lease.wider");
    await expectRefused(h.shim("mrg", "lease", "issue", "lead", "merge", "branch=main", "--ttl", "30m", "--parent", leaseId), "lease.ancestor");
    await expectRefused(h.shim("mrg", "lease", "issue", "rev", "merge", "branch=main", "--ttl", "30m"), "lease.parent");
    const log = await h.records();
    expect(log.some((r) => r.type === "refusal" && r.action === "lease.issue" && JSON.stringify(r).includes("lease.wider"))).toBe(true);
  }, 120_000);

  it("the owner narrows the envelope with teamd apply: the cascade is shown and recorded with the policy; the same merge is refused with the lease rule", async () => {
    await gatedChange(h, "two");
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE("release"));
    const applied = await h.run(["apply", "--yes"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr).toContain("leases: 1 would be revoked");
    expect(applied.stderr).toContain(leaseId);
    const log = await h.records();
    const policy = log.filter((r) => r.type === "policy").at(-1) as LogRecord;
    const revocation = log.find((r) => r.type === "revocation" && JSON.stringify(r).includes(leaseId)) as LogRecord;
    expect(revocation).toBeDefined();
    // One batch: the revocation is the record right after the policy it belongs to.
    expect(revocation.seq).toBe((policy.seq as number) + 1);

    // Review and gate again under the policy now in force (the policy hash is in the effect id).
    expect((await h.shim("rev", "review", "seat/exec/two", "--approve")).code).toBe(0);
    expect((await h.shim("rev", "gate", "seat/exec/two", "--pass")).code).toBe(0);
    const trunk = h.hubGit("rev-parse", "refs/heads/main");
    await expectRefused(h.shim("mrg", "merge", "seat/exec/two"), "lease.revoked");
    expect(h.hubGit("rev-parse", "refs/heads/main")).toBe(trunk);
    expect((await shimJson<{ leases: unknown[] }>("mrg", "whoami")).leases).toEqual([]);

    // Restoring the envelope revives nothing: a restored grant is a fresh grant (§7).
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE("main"));
    expect((await h.run(["apply", "--yes"])).code).toBe(0);
    expect((await h.shim("rev", "review", "seat/exec/two", "--approve")).code).toBe(0);
    expect((await h.shim("rev", "gate", "seat/exec/two", "--pass")).code).toBe(0);
    await expectRefused(h.shim("mrg", "merge", "seat/exec/two"), "lease.revoked");
  }, 120_000);

  it("a seat revokes a lease it issued, with every lease below it; a stranger may not", async () => {
    const root = await shimJson<{ leaseId: string }>("lead", "lease", "issue", "mrg", "merge", "branch=main", "--ttl", "1h");
    const child = await shimJson<{ leaseId: string; parent: string }>(
      "mrg",
      "lease",
      "issue",
      "rev",
      "merge",
      "branch=main",
      "--ttl",
      "30m",
      "--parent",
      root.leaseId,
    );
    expect(child.parent).toBe(root.leaseId);
    await expectRefused(h.shim("exec", "lease", "revoke", root.leaseId), "lease.revoker");
    const revoked = await shimJson<{ revoked: string[] }>("lead", "lease", "revoke", root.leaseId);
    expect(revoked.revoked.sort()).toEqual([root.leaseId, child.leaseId].sort());
    // The holder's view has its live leases only; the owner's shows the revoked with their rule.
    expect((await shimJson<{ leases: { leaseId: string }[] }>("mrg", "lease", "list")).leases.map((l) => l.leaseId)).not.toContain(root.leaseId);
    const owner = JSON.parse(await h.ok(["lease", "list", "--team", "proj", "--json"])) as {
      leases: { leaseId: string; live: boolean; dead: { rule: string } | null }[];
    };
    for (const id of [root.leaseId, child.leaseId])
      expect(owner.leases.find((l) => l.leaseId === id)).toMatchObject({ live: false, dead: { rule: "lease.revoked" } });
  }, 120_000);

  it("teamd revoke holds with the ledger's store down (by its flag) and is appended late when the store returns", async () => {
    const issued = await h.run(["lease", "issue", "mrg@proj", "merge", "branch=main", "--ttl", "1h", "--json"]);
    expect(issued.code, issued.stdout + issued.stderr).toBe(0);
    const id = (JSON.parse(issued.stdout) as { leaseId: string }).leaseId;
    expect((await shimJson<{ leases: { leaseId: string }[] }>("mrg", "whoami")).leases.map((l) => l.leaseId)).toEqual([id]);

    h.ledgerAway();
    const revoked = await h.run(["revoke", id, "--team", "proj", "--json"]);
    expect(revoked.code, revoked.stdout + revoked.stderr).toBe(0);
    expect(JSON.parse(revoked.stdout)).toMatchObject({ leaseId: id, recorded: false });
    expect(existsSync(join(h.home, "flags"))).toBe(true);
    h.ledgerBack();
    await storeBack();

    // In force by the flag before any record of it: the lease is dead at use time.
    await gatedChange(h, "three");
    await expectRefused(h.shim("mrg", "merge", "seat/exec/three"), "lease.revoked");
    // And appended, marked late, once the store is back (a guard saw the unrecorded flag).
    const log = await h.records();
    const late = log.find((r) => r.type === "revocation" && JSON.stringify(r).includes(id));
    expect(late, JSON.stringify(log.filter((r) => r.type === "revocation"))).toBeDefined();
    expect(late?.late).toBe(true);
    expect((await h.run(["verify", "--json"])).code).toBe(0);
  }, 120_000);

  it("records an owner's --reason with a credential in it only as the credential's shape, length and hash (issue 22)", async () => {
    const issued = await h.run(["lease", "issue", "mrg@proj", "merge", "branch=main", "--ttl", "1h", "--json"]);
    expect(issued.code, issued.stdout + issued.stderr).toBe(0);
    const id = (JSON.parse(issued.stdout) as { leaseId: string }).leaseId;
    const key = `sk-ant-api03-${"R7".repeat(20)}canary`;
    const revoked = await h.run(["revoke", id, "--team", "proj", "--reason", `rotated ${key} after a leak`, "--json"]);
    expect(revoked.code, revoked.stdout + revoked.stderr).toBe(0);
    const revocation = (await h.records()).find((r) => r.type === "revocation" && JSON.stringify(r).includes(id));
    expect(revocation).toBeDefined();
    // Nowhere under TEAMD_HOME: the ledger, its WAL, the flag the revocation raised.
    expect(filesUnder(h.home).filter((path) => readFileSync(path).includes("R7R7R7R7R7R7canary"))).toEqual([]);
  }, 60_000);
});
