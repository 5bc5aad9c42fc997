import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureSeatUser } from "../support/seat-user.js";
import { seatCalls, waitingSeat } from "../support/seat-calls.js";
import { expectRefused, initTeam, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Delegated administration (issue 29, §9, §10) through real seats, a real hub and the real
 * ledger. A grant holder grants within the owner's ceiling and the grantee's push goes through;
 * grants past the ceiling, past a declared set, of an administrative capability, and one that
 * breaks a maximum counting a lease are refused and recorded; an agree holder adds a same copy
 * and is refused a not-quite-same one; a two-granter grant waits for a second granter, is
 * refused one of the same lab and leads, is granted by one of another lab, and is voided by a
 * change in between; a two-granter capability's lease is co-signed; the owner's apply refuses to
 * drop delegated grants silently, keeps them, exports them, and takes them back with their leases.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const seat = waitingSeat;
const TEAM_FILE = `version: 1
team: proj
declare:
  branches: [main]
  labs: [anthropic, openai, google]
review:
  mode: distinct-seat
constraints:
  - { maximum: 1, of: gate }
ceiling:
  capabilities:
    read: ~
    write: { path: [src/, docs/] }
    review: ~
    gate: ~
    merge: ~
two-granter: { capabilities: [merge], labs: distinct }
leads:
  seat: lead
  envelope:
    gate: ~
roles:
  helper:
    capabilities: { read: ~ }
seats:
  admin:
${seat("anthropic", "      read: ~\n      grant: ~\n")}  admin2:
${seat("openai", "      read: ~\n      grant: ~\n")}  admin3:
${seat("anthropic", "      read: ~\n      grant: ~\n")}  admin4:
${seat("google", "      read: { path: docs/ }\n      grant: ~\n")}  clerk:
${seat("google", "      read: ~\n      agree: ~\n")}  lead:
${seat("google", "      read: ~\n")}  worker:
${seat("openai", "      read: ~\n      write: { path: docs/ }\n")}  gater:
${seat("anthropic", "      read: ~\n")}`;

type Done = { seq?: number; kind?: string; pending?: boolean; proposal?: string; revoked?: string[]; lease?: { leaseId: string; live: boolean } };

describe.runIf(process.platform === "linux")("delegated administration through real seats (§9, §10)", () => {
  let h: TeamdHarness;

  const shimJson = <T>(who: string, ...args: string[]): Promise<T> => seatCalls(h).json<T>(who, ...args);
  const shimRefused = (rule: string, who: string, ...args: string[]) => seatCalls(h).refused(rule, who, ...args);
  const log = () => seatCalls(h).log();
  const pushSrc = (name: string) =>
    h.inSeat(
      "worker",
      `git fetch -q teamd && git reset -q --hard teamd/main && mkdir -p src && echo ${name} > src/${name}.txt && git add -A && git commit -qm ${name} && git push -q -f teamd HEAD:${name}`,
    );
  const seatsInForce = async (): Promise<string[]> => {
    const status = JSON.parse(await h.ok(["status", "--json"])) as { teams: { team: string; seats: string[] }[] };
    return status.teams.find((t) => t.team === "proj")?.seats ?? [];
  };

  beforeAll(async () => {
    h = await initTeam("teamd-delegated-", { files: { "README.md": "hello\n", "docs/a.md": "a\n" } });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 180_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a grant within the ceiling lets the grantee's push through; recorded as the granting seat's, the owner told, status says the file lags", async () => {
    // The seat knows what it holds: whoami lists grant as administrative.
    expect((await shimJson<{ administrative: string[] }>("admin", "whoami")).administrative).toEqual(["grant"]);
    expect((await shimJson<{ administrative: string[] }>("worker", "whoami")).administrative).toEqual([]);
    const before = await pushSrc("one");
    expect(before.code, before.stdout + before.stderr).not.toBe(0);
    const done = await shimJson<Done>("admin", "grant", "worker", "write", "path=src/", "--name", "src");
    expect(done).toMatchObject({ kind: "grant" });
    const after = await pushSrc("two");
    expect(after.code, after.stdout + after.stderr).toBe(0);
    const grant = (await log()).find((r) => r.seq === done.seq);
    expect(grant).toMatchObject({ type: "grant", actor: "seat:proj/admin", signer: "seat:proj/admin", coAuthorizer: "" });
    expect(grant?.detail?.change).toContain('"capability":"write"');
    const notices = (await h.ok(["notices", "--json", "--all"]))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { subject: string; text: string });
    expect(notices.some((n) => n.subject === "delegated grant (team proj)" && n.text.includes("seat:proj/admin"))).toBe(true);
    const status = JSON.parse(await h.ok(["status", "--json"])) as { teams: { team: string; teamFile: { state: string }; delegatedChanges: number }[] };
    expect(status.teams.find((t) => t.team === "proj")).toMatchObject({ teamFile: { state: "delegated" }, delegatedChanges: 1 });
  });

  it("grants past the ceiling, past a declared set and of an administrative capability are refused and recorded", async () => {
    await shimRefused("ceiling.outside", "admin", "grant", "worker", "write", "path=secret/", "--name", "secret");
    await shimRefused("scope.branch", "admin", "grant", "worker", "review", "branch=prod");
    await shimRefused("grant.administrative", "admin", "grant", "worker", "grant", "*");
    // A seat without grant is not a granter at all (§9).
    await shimRefused("table.principal", "worker", "grant", "gater", "read", "*");
    const refusals = (await log()).filter((r) => r.type === "refusal").map((r) => r.detail?.rule);
    expect(refusals).toEqual(expect.arrayContaining(["ceiling.outside", "scope.branch", "grant.administrative", "table.principal"]));
  });

  it("a grant that breaks a maximum counting a live lease is refused (§5 over standing plus leased authority)", async () => {
    // No seat holds gate standing; leads leases it to gater: one holder of gate, the maximum.
    await shimJson("lead", "lease", "issue", "gater", "gate", "*", "--ttl", "1h");
    await shimRefused("constraint.maximum", "admin", "grant", "worker", "gate", "*");
  });

  it("an agree holder adds a same copy; a copy with one more role is a grant, refused to it", async () => {
    const done = await shimJson<Done>("clerk", "seat", "add", "worker2", "--like", "worker");
    expect(done).toMatchObject({ kind: "agreement" });
    expect(await seatsInForce()).toContain("worker2");
    // The copy starts with the start it copied (pinned, hashed: the same execution context).
    await h.ok(["start", "worker2@proj"]);
    await shimRefused("agree.not-same-copy", "clerk", "seat", "add", "worker3", "--like", "worker", "--role", "helper");
    expect(await seatsInForce()).not.toContain("worker3");
    const agreement = (await log()).find((r) => r.seq === done.seq);
    expect(agreement).toMatchObject({ type: "agreement", signer: "seat:proj/clerk" });
  });

  it("two-granter: one confirmation is not enough; same lab and leads are refused as the second; another lab's grant holder commits it, recorded with both", async () => {
    const proposed = await shimJson<Done>("admin", "grant", "worker", "merge", "*");
    expect(proposed).toMatchObject({ pending: true });
    const id = proposed.proposal as string;
    const who = await shimJson<{ capabilities: { capability: string }[] }>("worker", "whoami");
    expect(who.capabilities.map((c) => c.capability)).not.toContain("merge");
    // The proposal view: a granter of the team sees the one change; a non-granter sees nothing.
    const seen = await shimJson<{ proposals: { proposal: string; change: string }[] }>("admin2", "proposals");
    expect(seen.proposals).toEqual([expect.objectContaining({ proposal: id, change: "grant worker merge unconstrained" })]);
    expect((await shimJson<{ proposals: unknown[] }>("worker", "proposals")).proposals).toEqual([]);
    await shimRefused("twogranter.labs", "admin3", "confirm", id);
    await shimRefused("twogranter.standing", "lead", "confirm", id);
    await shimRefused("twogranter.void", "admin", "confirm", id);
    const done = await shimJson<Done>("admin2", "confirm", id);
    expect(done).toMatchObject({ kind: "grant" });
    const record = (await log()).find((r) => r.seq === done.seq);
    expect(record).toMatchObject({ type: "grant", signer: "seat:proj/admin", actor: "seat:proj/admin2", coAuthorizer: "seat:proj/admin2" });
    const now = await shimJson<{ capabilities: { capability: string }[] }>("worker", "whoami");
    expect(now.capabilities.map((c) => c.capability)).toContain("merge");
  });

  it("two-granter: a change to the input state between the two confirmations voids the proposal", async () => {
    const proposed = await shimJson<Done>("admin", "grant", "worker2", "merge", "*");
    expect(proposed.pending).toBe(true);
    // Another grant lands first: the policy in force changed under the proposal.
    await shimJson<Done>("admin", "grant", "gater", "review", "*");
    await shimRefused("twogranter.void", "admin2", "confirm", proposed.proposal as string);
    const who = await shimJson<{ capabilities: { capability: string }[] }>("worker2", "whoami");
    expect(who.capabilities.map((c) => c.capability)).not.toContain("merge");
  });

  it("the proposal view is the one change within the confirmer's own read scope (§3)", async () => {
    const proposed = await shimJson<Done>("admin", "grant", "gater", "merge", "path=src/hidden-plan/");
    const byWide = await shimJson<{ proposals: { proposal: string; change: string }[] }>("admin2", "proposals");
    expect(byWide.proposals.find((p) => p.proposal === proposed.proposal)?.change).toContain("src/hidden-plan/");
    const byNarrow = await shimJson<{ proposals: { proposal: string; change: string }[] }>("admin4", "proposals");
    const seen = byNarrow.proposals.find((p) => p.proposal === proposed.proposal)?.change ?? "";
    expect(seen).toContain("(a path outside your read scope)");
    expect(seen).not.toContain("hidden-plan");
  });

  it("a lease of a two-granter capability issues only co-signed: the issuer's request waits, another lab's granter confirms", async () => {
    const proposed = await shimJson<{ pending: boolean; proposal: string }>("worker", "lease", "issue", "worker2", "merge", "*", "--ttl", "1h");
    expect(proposed.pending).toBe(true);
    await shimRefused("twogranter.labs", "admin2", "confirm", proposed.proposal);
    const done = await shimJson<Done>("admin", "confirm", proposed.proposal);
    expect(done).toMatchObject({ kind: "lease", lease: { live: true } });
    const record = (await log()).find((r) => r.seq === done.seq);
    expect(record).toMatchObject({ type: "lease", signer: "seat:proj/worker", coAuthorizer: "seat:proj/admin" });
  });

  it("leads removes a seat, with the lease it holds; it may not remove a grant holder, and a grant holder removes none (§9)", async () => {
    const leased = (await h.json<{ leases: { leaseId: string; holder: string; live: boolean }[] }>(["lease", "list", "--team", "proj", "--json"])).leases.find(
      (l) => l.holder === "gater" && l.live,
    );
    expect(leased).toBeDefined();
    await shimRefused("table.principal", "lead", "seat", "remove", "admin2");
    await shimRefused("table.principal", "admin", "seat", "remove", "gater");
    const done = await shimJson<Done>("lead", "seat", "remove", "gater");
    expect(done.revoked).toContain(leased?.leaseId);
    expect(await seatsInForce()).not.toContain("gater");
    const record = (await log()).find((r) => r.seq === done.seq);
    expect(record).toMatchObject({ type: "grant", action: "seat.remove", signer: "seat:proj/lead" });
  });

  it("the owner's apply refuses to drop delegated grants silently; --keep-delegated keeps them; export writes them; --drop-delegated takes one back with its lease", async () => {
    const refused = await expectRefused(h.run(["apply", "--yes"]), "policy.delegated");
    expect(refused.stderr).toContain("grant worker write");
    await h.ok(["apply", "--yes", "--keep-delegated"]);
    expect(await seatsInForce()).toContain("worker2");
    expect((await pushSrc("three")).code).toBe(0);
    // A fresh delegated grant, and a lease rooted in it.
    await shimJson<Done>("admin", "grant", "worker", "review", "*");
    const lease = await shimJson<{ leaseId: string }>("worker", "lease", "issue", "worker2", "review", "*", "--ttl", "1h");
    // Export: the file now says what is in force; applying it changes nothing and drops nothing.
    const exported = JSON.parse(await h.ok(["policy", "export", "--json"])) as { delegated: number; backup: string };
    expect(exported.delegated).toBe(1);
    expect(readFileSync(join(h.repo, "teamd.yaml"), "utf8")).toContain("review");
    writeFileSync(join(h.repo, "teamd.yaml"), readFileSync(exported.backup));
    // Back to the owner's own file: taking the review grant back revokes the lease rooted in it.
    await expectRefused(h.run(["apply", "--yes"]), "policy.delegated");
    const dropped = JSON.parse(await h.ok(["apply", "--yes", "--drop-delegated", "--json"])) as { revokedLeases: { lease: string }[] };
    expect(dropped.revokedLeases.map((r) => r.lease)).toContain(lease.leaseId);
    const leases = JSON.parse(await h.ok(["lease", "list", "--team", "proj", "--json"])) as { leases: { leaseId: string; live: boolean }[] };
    expect(leases.leases.find((l) => l.leaseId === lease.leaseId)?.live).toBe(false);
    const who = await shimJson<{ capabilities: { capability: string }[] }>("worker", "whoami");
    expect(who.capabilities.map((c) => c.capability)).not.toContain("review");
  });
});
