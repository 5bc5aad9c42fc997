import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient } from "../../src/rpc/index.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { seatCalls, waitingSeat } from "../support/seat-calls.js";
import { initTeam, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Row proved (docs/enforcement.md, proposed): "Delegated administration (§9, §10): a grant or
 * agree holder changes the policy only inside §8 — no administrative capability given or taken,
 * two-granter not bypassed (seat add, lease, re-lease, a seat named owner), bounded in size and in
 * proposals, and what the owner applies back (--keep-delegated, export) is what was agreed".
 *
 * Attacks on delegated administration (issue 29, §5, §7–§10, §15) from inside real seats: the
 * shim, and a raw gRPC client on a seat's own socket. Each attack tries to make a seat hold more
 * than the owner allowed, or to corrupt what the owner (or a confirming granter) sees; each has
 * its control — the same path succeeding where it must — so the test can fail.
 *
 * The team: three grant holders (admin and admin3 in lab anthropic, admin2 in openai), an agree
 * holder (clerk), leads (lead), a merge holder (merger), a worker, a gater with only read, and a
 * reviewer the owner keeps as the team's one reviewer (minimum 1 of review). merge is behind
 * two-granter, the two from different labs.
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
  - { minimum: 1, of: review }
ceiling:
  capabilities:
    read: ~
    write: { path: [src/, docs/] }
    review: ~
    gate: ~
    merge: ~
deny:
  write: { path: [src/secret/] }
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
${seat("anthropic", "      read: ~\n      grant: ~\n")}  clerk:
${seat("google", "      read: ~\n      agree: ~\n")}  lead:
${seat("google", "      read: ~\n")}  merger:
${seat("openai", "      read: ~\n      merge: ~\n")}  worker:
${seat("openai", "      read: ~\n      write: { path: docs/ }\n")}  gater:
${seat("anthropic", "      read: ~\n")}  reviewer:
${seat("google", "      read: ~\n      review: ~\n")}`;

type Done = { seq?: number; kind?: string; pending?: boolean; proposal?: string; change?: string };
type Who = { capabilities: { capability: string; scope: string }[] };

describe.runIf(process.platform === "linux")("grant attack: delegated administration from inside seats (§5, §7–§10, §15)", () => {
  let h: TeamdHarness;

  const shimJson = <T>(who: string, ...args: string[]): Promise<T> => seatCalls(h).json<T>(who, ...args);
  const shimRefused = (rule: string, who: string, ...args: string[]) => seatCalls(h).refused(rule, who, ...args);
  const caps = async (who: string): Promise<string[]> => (await shimJson<Who>(who, "whoami")).capabilities.map((c) => `${c.capability} ${c.scope}`);
  const log = () => seatCalls(h).log();
  const client = (who: string) => createRpcClient(ShimService, h.seatSocket(who));

  beforeAll(async () => {
    h = await initTeam("teamd-grant-attack-", { files: { "README.md": "hello\n", "docs/a.md": "a\n", "src/a.txt": "a\n" } });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
  }, 240_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a delegate gives no administrative capability — to itself or a colluding seat; control: an operational grant commits", async () => {
    for (const admin of ["grant", "agree", "leads", "create"]) {
      await shimRefused("refused by", "admin", "grant", "gater", admin, "*");
      await shimRefused("refused by", "admin", "grant", "admin", admin, "*");
      await shimRefused("refused by", "clerk", "grant", "clerk", admin, "*");
    }
    // Through a role: a role never carries grant or agree (the loader refuses it), so adding one gives none.
    await shimRefused("table.principal", "gater", "grant", "gater", "review", "*");
    const done = await shimJson<Done>("admin", "grant", "gater", "review", "*");
    expect(done.kind).toBe("grant");
    expect(await caps("gater")).toEqual(expect.arrayContaining([expect.stringMatching(/^review/)]));
    expect(await caps("gater")).not.toEqual(expect.arrayContaining([expect.stringMatching(/^(grant|agree|leads|create)/)]));
  });

  it("a delegate may not take back another seat's grant or agree (owner-written, §9/§10) nor a minimum's last holder (§5); control: an ordinary take-back commits", async () => {
    await shimRefused("grant.administrative", "admin", "ungrant", "admin2", "grant");
    await shimRefused("grant.administrative", "admin", "ungrant", "clerk", "agree");
    await shimRefused("grant.administrative", "admin3", "ungrant", "admin", "grant");
    // admin2 is still a granter: it still confirms (its view answers, as a grant holder's).
    expect((await h.shim("admin2", "proposals")).stdout).toContain("no proposal waits");
    // Control: with gater holding review too, the reviewer's review is taken back.
    expect((await shimJson<Done>("admin", "ungrant", "reviewer", "review")).kind).toBe("grant");
    // Now gater is the owner's floor (minimum 1 of review): a delegate's take-back that breaks it is refused, not paused.
    await shimRefused("constraint.minimum", "admin", "ungrant", "gater", "review");
    expect(await caps("gater")).toEqual(expect.arrayContaining([expect.stringMatching(/^review/)]));
    // Each refusal is on record (§15), the asking seat its actor.
    const refused = (await log()).filter((r) => r.type === "refusal" && r.actor === "seat:proj/admin").map((r) => r.detail?.rule);
    expect(refused).toEqual(expect.arrayContaining(["grant.administrative", "constraint.minimum"]));
  });

  it("odd scope strings do not get past the ceiling, the deny or the reserved set; control: a plain path inside the ceiling commits", async () => {
    const odd: [string, string][] = [
      ["*", "refused by"],
      ["path=*", "refused"],
      ["path=src/,path=*", "refused"],
      ["path=src/*", "scope.path"],
      ["path=src/../teamd.yaml", "refused"],
      ["path=teamd.yaml", "refused"],
      ["path=.git", "refused"],
      ["path=src/../.git/hooks", "refused"],
      ["path=src/../../etc", "refused"],
      ["path=/etc", "refused"],
      ["path=src/secret/", "refused"],
      ["path=src/x/../secret/k", "refused"],
      ["path=SRC/", "ceiling.outside"],
      ["path=\uff53\uff52\uff43/", "ceiling.outside"],
      ["path=src\\x", "refused"],
      ["path=src/\u0007bell", "refused"],
      ["branch=main", "refused"],
      ["path=src/,bogus=1", "refused"],
    ];
    for (const [scope, rule] of odd) {
      const r = await h.shim("admin", "grant", "worker", "write", scope, "--name", "odd");
      expect(r.code, `${scope}: ${r.stdout}${r.stderr}`).not.toBe(0);
      expect(r.stderr, scope).toContain(rule);
    }
    expect((await caps("worker")).filter((c) => c.startsWith("write"))).toHaveLength(1);
    const done = await shimJson<Done>("admin", "grant", "worker", "write", "path=src/ok/", "--name", "ok");
    expect(done.kind).toBe("grant");
    expect((await caps("worker")).filter((c) => c.startsWith("write"))).toHaveLength(2);
  });

  it("a huge scope value is refused: no path longer than a file system can name enters the policy (the daemon is not made to sign megabytes per grant)", async () => {
    const huge = `path=src/${"a".repeat(100_000)}`;
    const r = await h.shim("admin", "grant", "worker", "write", huge, "--name", "huge");
    expect(r.code, r.stderr.slice(0, 300)).not.toBe(0);
    expect((await caps("worker")).filter((c) => c.startsWith("write"))).toHaveLength(2);
  });

  it("a grant holder may grant its own seat (§10: a second owner; nothing in §8/§9 bars it) — and a two-granter capability still needs another lab's granter", async () => {
    const done = await shimJson<Done>("admin", "grant", "admin", "write", "path=docs/");
    expect(done.kind).toBe("grant");
    expect(await caps("admin")).toEqual(expect.arrayContaining([expect.stringMatching(/^write/)]));
    const proposed = await shimJson<Done>("admin", "grant", "admin", "merge", "*");
    expect(proposed.pending).toBe(true);
    const id = proposed.proposal as string;
    await shimRefused("twogranter.void", "admin", "confirm", id);
    await shimRefused("twogranter.labs", "admin3", "confirm", id);
    await shimRefused("twogranter.standing", "gater", "confirm", id);
    await shimRefused("twogranter.standing", "lead", "confirm", id);
    expect(await caps("admin")).not.toEqual(expect.arrayContaining([expect.stringMatching(/^merge/)]));
    // Control: another lab's granter commits it.
    const confirmed = await shimJson<Done>("admin2", "confirm", id);
    expect(confirmed.kind).toBe("grant");
    expect(await caps("admin")).toEqual(expect.arrayContaining([expect.stringMatching(/^merge/)]));
    await shimJson<Done>("admin2", "ungrant", "admin", "merge");
  });

  it("a seat added like a merge holder is a grant of merge: it waits for a second granter (§9: add any other seat is a grant, two-granter where set)", async () => {
    const r = await shimJson<Done>("admin", "seat", "add", "merger2", "--like", "merger");
    expect(r.pending, JSON.stringify(r)).toBe(true);
    const status = JSON.parse(await h.ok(["status", "--json"])) as { teams: { team: string; seats: string[] }[] };
    expect(status.teams.find((t) => t.team === "proj")?.seats).not.toContain("merger2");
    // With a role added (not a same copy) it still waits.
    const withRole = await shimJson<Done>("admin", "seat", "add", "merger3", "--like", "merger", "--role", "helper");
    expect(withRole.pending, JSON.stringify(withRole)).toBe(true);
    // Control: a copy of a seat holding nothing behind two-granter commits at once.
    const plain = await shimJson<Done>("admin", "seat", "add", "gater2", "--like", "gater");
    expect(plain.kind).toBe("grant");
    // The first proposal was made over an older policy (gater2 came since): void. Control: a fresh one, confirmed by another lab's granter.
    await shimRefused("twogranter.void", "admin2", "confirm", r.proposal as string);
    const again = await shimJson<Done>("admin", "seat", "add", "merger2", "--like", "merger");
    expect(again.pending).toBe(true);
    await shimRefused("twogranter.labs", "admin3", "confirm", again.proposal as string);
    expect((await shimJson<Done>("admin2", "confirm", again.proposal as string)).kind).toBe("grant");
    const after = JSON.parse(await h.ok(["status", "--json"])) as { teams: { team: string; seats: string[] }[] };
    expect(after.teams.find((t) => t.team === "proj")?.seats).toContain("merger2");
  });

  it("a seat named 'owner' is never the owner: no such seat can be added, so it cannot confirm as the owner", async () => {
    const r = await h.shim("admin", "seat", "add", "owner", "--like", "gater");
    expect(r.code, r.stdout + r.stderr).not.toBe(0);
    const status = JSON.parse(await h.ok(["status", "--json"])) as { teams: { team: string; seats: string[] }[] };
    expect(status.teams.find((t) => t.team === "proj")?.seats).not.toContain("owner");
    // Control: an ordinary name commits.
    expect((await shimJson<Done>("admin", "seat", "add", "ownr", "--like", "gater")).kind).toBe("grant");
  });

  it("seat add: huge names, reserved-looking names, --like leads or an admin holder confer nothing administrative", async () => {
    await shimRefused("refused", "admin", "seat", "add", "a".repeat(40), "--like", "gater");
    await shimRefused("refused", "admin", "seat", "add", "../x", "--like", "gater");
    await shimRefused("refused", "admin", "seat", "add", "x", "--like", "__proto__");
    await shimRefused("refused", "admin", "seat", "add", "__proto__", "--like", "gater");
    await shimRefused("refused", "admin", "seat", "add", "admin2", "--like", "gater");
    await shimRefused("refused", "admin", "seat", "add", "x2", "--like", "gater", "--role", "nosuchrole");
    const copy = await shimJson<Done>("admin", "seat", "add", "lead2", "--like", "lead");
    expect(copy.kind).toBe("grant");
    const copyAdmin = await shimJson<Done>("clerk", "seat", "add", "admin9", "--like", "admin3");
    expect(copyAdmin.kind).toBe("agreement");
    await h.ok(["start", "admin9@proj"]);
    await h.ok(["start", "lead2@proj"]);
    // The copies hold no grant and are not leads: they cannot grant, confirm or issue from the envelope.
    await shimRefused("table.principal", "admin9", "grant", "gater", "read", "*");
    await shimRefused("refused by", "lead2", "lease", "issue", "gater", "gate", "*", "--ttl", "10m", "--source", "leads:envelope/gate");
    // Control: leads itself issues from the envelope.
    await shimJson("lead", "lease", "issue", "gater", "gate", "*", "--ttl", "10m");
  });
  it("a lease of a two-granter capability: a seat with no standing cannot queue one (nor put escapes in the confirmer's view); a re-lease needs two granters again", async () => {
    const gater = client("gater");
    try {
      const evil = "\u001b]0;pwned\u0007\u001b[2J";
      // gater holds no merge: its request is not a lease that could issue, so no proposal waits.
      await expect(
        gater.leaseIssue({ requestId: "evil-1", recipient: `worker${evil}`, capability: "merge", scope: "*", ttlMs: 600_000n, parent: "", source: "" }),
      ).rejects.toMatchObject({ rule: expect.any(String) });
      for (let i = 0; i < 20; i++) {
        const r = await gater
          .leaseIssue({ requestId: `flood-${i}`, recipient: "worker", capability: "merge", scope: "*", ttlMs: 600_000n, parent: "", source: "" })
          .then(
            () => "queued",
            (e: { rule?: string }) => e.rule ?? "error",
          );
        expect(r).not.toBe("queued");
      }
    } finally {
      gater.close();
    }
    const view = await h.shim("admin2", "proposals");
    expect(view.code, view.stderr).toBe(0);
    expect(view.stdout).not.toContain("\u001b");
    expect(view.stdout).not.toContain("from gater");
    // Control: merger (merge standing, openai) leases merge to worker: a proposal, confirmed by another lab's granter.
    const proposed = await shimJson<{ pending: boolean; proposal: string }>("merger", "lease", "issue", "worker", "merge", "*", "--ttl", "1h");
    expect(proposed.pending).toBe(true);
    await shimRefused("twogranter.labs", "admin2", "confirm", proposed.proposal);
    const done = await shimJson<Done & { lease: { leaseId: string; live: boolean } }>("admin", "confirm", proposed.proposal);
    expect(done.lease.live).toBe(true);
    // A re-lease from that lease is a lease of merge too: it waits for two granters, and the asker is never its own second.
    const relayed = await shimJson<{ pending?: boolean; proposal?: string; leaseId?: string }>(
      "worker",
      "lease",
      "issue",
      "gater",
      "merge",
      "*",
      "--ttl",
      "30m",
      "--parent",
      done.lease.leaseId,
    );
    expect(relayed.pending, JSON.stringify(relayed)).toBe(true);
    expect(await caps("gater")).not.toEqual(expect.arrayContaining([expect.stringMatching(/^merge/)]));
    await shimRefused("twogranter.", "worker", "confirm", relayed.proposal as string);
    // A lease back up the chain (to its issuer) is refused before it ever waits.
    await shimRefused("lease.ancestor", "worker", "lease", "issue", "merger", "merge", "*", "--ttl", "30m", "--parent", done.lease.leaseId);
  });

  it("proposal flood: one asker holds at most 4 of the team's 16 places; another granter can still propose", async () => {
    const ids: string[] = [];
    let refused = 0;
    for (let i = 0; i < 6; i++) {
      const r = await h.shim("admin3", "grant", "worker", "merge", `branch=main,path=src/f${i}/`, "--name", `f${i}`, "--json");
      if (r.code === 0) ids.push((JSON.parse(r.stdout) as Done).proposal as string);
      else {
        expect(r.stdout + r.stderr).toContain("twogranter.pending");
        refused++;
      }
    }
    expect(ids).toHaveLength(4);
    expect(refused).toBe(2);
    // Control: another asker is not locked out.
    const other = await shimJson<Done>("admin2", "grant", "worker", "merge", "path=src/other/", "--name", "other");
    expect(other.pending).toBe(true);
  });

  it("a credential-shaped value never reaches a confirmer's view: refused where it would enter, or withheld in the proposal", async () => {
    const key = `ghp_${"A1b2C3d4".repeat(5)}`.slice(0, 40);
    const tries = [
      await h.shim("admin2", "grant", "worker", "merge", `path=src/${key}/`, "--name", "cred", "--json"),
      await h.shim("merger", "lease", "issue", "worker", "merge", `path=src/${key}/`, "--ttl", "10m", "--json"),
      await h.shim("admin2", "grant", "worker", "merge", "path=src/-----BEGIN RSA PRIVATE KEY-----/", "--name", "pem", "--json"),
    ];
    for (const r of tries) if (r.code !== 0) expect(r.stdout + r.stderr).toContain("secret.shape");
    const view = await h.shim("admin", "proposals", "--json");
    expect(view.code, view.stderr).toBe(0);
    expect(view.stdout).not.toContain(key);
    expect(view.stdout).not.toContain("BEGIN RSA PRIVATE KEY");
    // Control: an ordinary proposal is in the view, words and all.
    const plain = await shimJson<Done>("admin2", "grant", "worker", "merge", "path=src/plain/", "--name", "plain");
    expect((await h.shim("admin", "proposals")).stdout).toContain("src/plain");
    expect(plain.pending).toBe(true);
  });

  it("a request id replayed with other bytes is refused; a byte-identical retry returns the same record and grants once", async () => {
    const admin = client("admin");
    try {
      const ask = (seatName: string) =>
        admin.administer({
          requestId: "replay-1",
          change: { case: "grant", value: { seat: seatName, capability: "read", scope: "path=docs/", name: "replay" } },
        });
      const first = await ask("gater");
      const again = await ask("gater");
      expect(again.seq).toBe(first.seq);
      await expect(ask("worker")).rejects.toMatchObject({ rule: "request.replay-mismatch" });
      // The confirm door: a request id reused for another proposal is refused too.
      await expect(admin.confirm({ requestId: "replay-1", proposalId: "nope" })).rejects.toMatchObject({
        rule: expect.stringMatching(/twogranter.void|request.replay-mismatch/),
      });
    } finally {
      admin.close();
    }
    const records = (await log()).filter((r) => r.type === "grant" && (r.detail?.change ?? "").includes('"name":"replay"'));
    expect(records).toHaveLength(1);
    expect(await caps("worker")).not.toEqual(expect.arrayContaining([expect.stringContaining("docs/") && expect.stringMatching(/^read .*replay/)]));
  });

  it("a retried request that made a proposal is answered as that proposal — never as a grant — and a retried confirmation as its record", async () => {
    const admin2 = client("admin2");
    const admin = client("admin");
    try {
      const ask = () =>
        admin2.administer({
          requestId: "retry-p",
          change: { case: "grant", value: { seat: "gater", capability: "merge", scope: "path=src/retry/", name: "rt" } },
        });
      const first = await ask();
      expect(first.proposalId).not.toBe("");
      const again = await ask().then(
        (r) => ({ seq: r.seq, proposalId: r.proposalId }),
        (e: { rule?: string }) => ({ rule: e.rule }),
      );
      // Not "granted": either the same proposal, or a refusal that says it waits.
      if ("proposalId" in again) expect(again.proposalId).not.toBe("");
      else expect(again.rule).toBe("twogranter.pending");
      expect(await caps("gater")).not.toEqual(expect.arrayContaining([expect.stringContaining("retry")]));
      const done = await admin.confirm({ requestId: "retry-c", proposalId: first.proposalId });
      const replay = await admin.confirm({ requestId: "retry-c", proposalId: first.proposalId }).then(
        (r) => ({ seq: r.done?.seq }),
        (e: { rule?: string }) => ({ rule: e.rule }),
      );
      expect(replay).toEqual({ seq: done.done?.seq });
      // A take-back and a seat add retried byte for byte: the same record, once (§15), not another request.
      const ungrant = () => admin.administer({ requestId: "retry-u", change: { case: "ungrant", value: { seat: "gater", capability: "merge", name: "rt" } } });
      const u1 = await ungrant();
      expect((await ungrant()).seq).toBe(u1.seq);
      const add = () => admin.administer({ requestId: "retry-s", change: { case: "seatAdd", value: { seat: "gater5", like: "gater", roles: [] } } });
      const s1 = await add();
      expect((await add()).seq).toBe(s1.seq);
      // Other bytes under a used id: refused.
      await expect(
        admin.administer({ requestId: "retry-s", change: { case: "seatAdd", value: { seat: "gater6", like: "gater", roles: [] } } }),
      ).rejects.toMatchObject({ rule: "request.replay-mismatch" });
    } finally {
      admin.close();
      admin2.close();
    }
    const records = (await log()).filter((r) => r.type === "grant" && (r.detail?.change ?? "").includes('"name":"rt"'));
    expect(records.map((r) => (JSON.parse(r.detail?.change ?? "{}") as { kind: string }).kind)).toEqual(["grant", "ungrant"]);
    expect((await log()).filter((r) => r.type === "grant" && (r.detail?.change ?? "").includes('"seat":"gater5"'))).toHaveLength(1);
  });

  it("races: two grants at once both land whole (or one is told to ask again); a confirmation racing a grant never commits over a changed state", async () => {
    const a = client("admin");
    const b = client("admin2");
    try {
      const reviewBefore = [...(await caps("gater")), ...(await caps("worker"))].filter((c) => c.startsWith("review")).length;
      const results = await Promise.allSettled([
        a.administer({ requestId: "race-a", change: { case: "grant", value: { seat: "gater", capability: "review", scope: "*", name: "ra" } } }),
        b.administer({ requestId: "race-b", change: { case: "grant", value: { seat: "worker", capability: "review", scope: "*", name: "rb" } } }),
      ]);
      for (const r of results) if (r.status === "rejected") expect(r.reason).toMatchObject({ rule: "grant.changed" });
      const landed = results.filter((r) => r.status === "fulfilled").length;
      expect(landed).toBeGreaterThanOrEqual(1);
      const review = [...(await caps("gater")), ...(await caps("worker"))].filter((c) => c.startsWith("review")).length;
      expect(review - reviewBefore).toBe(landed);
      // A proposal, then its confirmation racing a grant from a third granter.
      const proposed = await b.administer({
        requestId: "race-p",
        change: { case: "grant", value: { seat: "gater", capability: "merge", scope: "path=docs/", name: "rp" } },
      });
      expect(proposed.proposalId).not.toBe("");
      const [confirm, grant] = await Promise.allSettled([
        a.confirm({ requestId: "race-c", proposalId: proposed.proposalId }),
        b.administer({ requestId: "race-g", change: { case: "grant", value: { seat: "worker", capability: "read", scope: "path=src/", name: "rg" } } }),
      ]);
      const merged = (await caps("gater")).some((c) => c.startsWith("merge"));
      expect(merged).toBe(confirm.status === "fulfilled");
      if (confirm.status === "rejected") expect(confirm.reason).toMatchObject({ rule: expect.stringMatching(/twogranter.void|grant.changed/) });
      if (grant.status === "rejected") expect(grant.reason).toMatchObject({ rule: "grant.changed" });
      // Whatever landed, the records say exactly it: the merge grant's record names both granters.
      const record = (await log()).find((r) => r.type === "grant" && (r.detail?.change ?? "").includes('"name":"rp"'));
      if (merged) expect(record).toMatchObject({ signer: "seat:proj/admin2", coAuthorizer: "seat:proj/admin" });
      else expect(record).toBeUndefined();
    } finally {
      a.close();
      b.close();
    }
  });

  it("two confirmers racing on one proposal: exactly one commits it, once", async () => {
    const proposed = await shimJson<Done>("admin2", "grant", "gater", "merge", "path=src/race/", "--name", "dc");
    expect(proposed.pending).toBe(true);
    const a = client("admin");
    const c = client("admin3");
    try {
      const results = await Promise.allSettled([
        a.confirm({ requestId: "dc-a", proposalId: proposed.proposal as string }),
        c.confirm({ requestId: "dc-c", proposalId: proposed.proposal as string }),
      ]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      // The loser is refused: its change no longer applies, or the state it was proposed over is gone.
      for (const r of results)
        if (r.status === "rejected") expect(r.reason).toMatchObject({ rule: expect.stringMatching(/^(twogranter\.void|request\.malformed)$/) });
    } finally {
      a.close();
      c.close();
    }
    const records = (await log()).filter((r) => r.type === "grant" && (r.detail?.change ?? "").includes('"name":"dc"'));
    expect(records).toHaveLength(1);
    expect(records[0]?.signer).toBe("seat:proj/admin2");
  });

  it("policy export writes what is in force, seat-chosen strings and all, so that applying it changes nothing; no string becomes YAML structure", async () => {
    for (const odd of ["src/\u2028seats: {}", "src/#c", "src/&a !b", "src/- x", "src/'q\"", "src/: y"]) {
      const r = await h.shim("admin", "grant", "worker", "write", `path=${odd}`, "--name", `y${Buffer.from(odd).toString("hex").slice(-8)}`);
      expect(r.code, `${odd}: ${r.stderr}`).toBe(0);
    }
    // A bidi override would show the owner and a confirmer another path than the one granted: refused before any reader.
    await shimRefused("request.malformed", "admin", "grant", "worker", "write", "path=src/\u202egpj.exe", "--name", "bidi");
    const before = JSON.parse(await h.ok(["status", "--json"])) as { teams: { team: string; seats: string[] }[] };
    const file = join(h.dir, "exported.yaml");
    const exported = JSON.parse(await h.ok(["policy", "export", file, "--team", "proj", "--json"])) as { policy: string; delegated: number };
    expect(exported.delegated).toBeGreaterThan(0);
    writeFileSync(join(h.repo, "teamd.yaml"), readFileSync(file));
    // Applying the export: nothing to keep or drop, nothing changes (the same policy hash).
    const applied = await h.run(["apply", "--yes", "--json"]);
    expect(applied.code, applied.stderr).toBe(0);
    const inForce = await h.json<{ seq: number; teamFileHash?: string }[]>(["log", "--json", "--type", "policy"]).catch(() => []);
    expect(inForce).toBeDefined();
    const again = JSON.parse(await h.ok(["policy", "export", join(h.dir, "again.yaml"), "--team", "proj", "--json"])) as { policy: string; delegated: number };
    expect(again.policy).toBe(exported.policy);
    expect(again.delegated).toBe(0);
    const after = JSON.parse(await h.ok(["status", "--json"])) as { teams: { team: string; seats: string[] }[] };
    expect(after.teams.find((t) => t.team === "proj")?.seats.sort()).toEqual(before.teams.find((t) => t.team === "proj")?.seats.sort());
  });

  it("apply --keep-delegated keeps a delegate's copy as agreed — never a copy of what the owner's file now gives the seat it was copied from", async () => {
    const copy = await shimJson<Done>("clerk", "seat", "add", "worker7", "--like", "worker");
    expect(copy.kind).toBe("agreement");
    const ownerFile = readFileSync(join(h.repo, "teamd.yaml"), "utf8");
    // The owner's file, as it was before the copy, gives worker one more capability (review).
    const doc = parseYaml(ownerFile) as { seats: Record<string, { capabilities: Record<string, unknown> }> };
    const worker = doc.seats.worker;
    if (worker === undefined) throw new Error("no worker in the owner's file");
    worker.capabilities.review = null;
    const widened = stringifyYaml(doc);
    writeFileSync(join(h.repo, "teamd.yaml"), widened);
    const kept = await h.run(["apply", "--yes", "--keep-delegated"]);
    expect(kept.code, kept.stdout + kept.stderr).not.toBe(0);
    expect(kept.stderr).toContain("worker7");
    const who = await h.json<Who>(["exec", "worker7@proj", "--", "teamd-shim", "whoami", "--json"]).catch(() => undefined);
    expect(who?.capabilities.map((c) => c.capability) ?? []).not.toContain("review");
    // Control: over the file it was made on, --keep-delegated keeps the copy.
    writeFileSync(join(h.repo, "teamd.yaml"), ownerFile);
    await h.ok(["apply", "--yes", "--keep-delegated"]);
    const status = JSON.parse(await h.ok(["status", "--json"])) as { teams: { team: string; seats: string[] }[] };
    expect(status.teams.find((t) => t.team === "proj")?.seats).toContain("worker7");
  });

  it("a delegate cannot grow the policy without bound: past 256 KiB a growing change is refused; a take-back still commits", async () => {
    const admin3 = client("admin3");
    const paths = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `path=src/${tag}${String(i).padStart(3, "0")}${"p".repeat(4000)}/`).join(",");
    const grant = (id: string, n: number, tag: string) =>
      admin3.administer({ requestId: id, change: { case: "grant", value: { seat: "worker", capability: "write", scope: paths(n, tag), name: tag } } });
    try {
      // Requests of 25 paths of 4 KB each (a request is at most 256 KiB): each record carries the
      // whole policy, and every decision loads it; past 256 KiB of policy a growing change is refused.
      const first = await grant("grow-1", 25, "ga");
      const second = await grant("grow-2", 25, "gb");
      expect(second.seq).toBeGreaterThan(first.seq);
      await expect(grant("grow-3", 25, "gc")).rejects.toMatchObject({ rule: "grant.bound" });
      expect((await caps("worker")).some((c) => c.includes("gc000"))).toBe(false);
      // Control: a take-back shrinks it, and commits even while the policy is past the bound's reach.
      const back = await admin3.administer({ requestId: "grow-back", change: { case: "ungrant", value: { seat: "worker", capability: "write", name: "gb" } } });
      expect(back.seq).toBeGreaterThan(second.seq);
      await admin3.administer({ requestId: "grow-back-2", change: { case: "ungrant", value: { seat: "worker", capability: "write", name: "ga" } } });
      expect((await caps("worker")).some((c) => c.includes("ga000"))).toBe(false);
    } finally {
      admin3.close();
    }
  });
});
