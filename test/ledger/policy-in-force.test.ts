import { afterEach, describe, expect, it } from "vitest";
import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { daemonPrincipal, type Ledger } from "../../src/ledger/index.js";
import { policyInForce, policySeats, readyLedger, startableSeat } from "../../src/ledger/policy-in-force.js";
import { RefusalError } from "../../src/rpc/index.js";
import { loadTeamFileText } from "../../src/teamfile/index.js";
import { initEnv, type TestEnv } from "./helpers.js";

/**
 * The policy in force (src/ledger/policy-in-force.ts) on a real ledger in a temp dir: rebuilt
 * from the last applied policy record, never the file on disk (§10); refused with the rule
 * and the fix when there is none or it no longer loads; kept by the ledger's own decision
 * cache (one load per applied policy, per ledger instance — never shared through a module).
 */
const TEAM_FILE = `version: 1
team: web
seats:
  dev:
    capabilities: { read: { path: [src/] }, write: { path: [src/] } }
    start:
      command: [claude]
  reader:
    capabilities: { read: ~ }
    start:
      command: [codex]
  idle:
    capabilities: { read: ~ }
`;

function loaded(text = TEAM_FILE) {
  const result = loadTeamFileText(text);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result;
}

let open: Array<{ env: TestEnv; ledger: Ledger }> = [];
afterEach(async () => {
  for (const { env, ledger } of open) {
    await ledger.close();
    env.cleanup();
  }
  open = [];
});

async function fresh(label: string) {
  const made = await initEnv(`policy-in-force-${label}`);
  open.push(made);
  return made;
}

async function register(ledger: Ledger, team = "web") {
  await ledger.append({
    type: RecordType.TEAM,
    team,
    actor: daemonPrincipal(),
    action: "team.register",
    payload: { detail: { case: "team", value: { repository: "/repo/web", hub: "/home/hubs/web.git" } } },
  });
}

async function applyPolicy(ledger: Ledger, canonical: string, hashByte = 1, team = "web") {
  return ledger.append({
    type: RecordType.POLICY,
    team,
    actor: daemonPrincipal(),
    action: "policy.apply",
    payload: { detail: { case: "policy", value: { teamFileHash: new Uint8Array(32).fill(hashByte), canonical, startFileHashes: {} } } },
  });
}

function refusal(run: () => unknown): { rule: string; reason: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof RefusalError) return { rule: error.rule, reason: error.reason };
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("policyInForce", () => {
  it.each([
    ["a team not registered", false, undefined, "team.unknown", /not registered on this machine: run teamd init/],
    ["a team with no applied policy", true, undefined, "policy.unapplied", /has no applied policy: run teamd apply/],
    ["a policy record that is not JSON", true, "{not json", "policy.unapplied", /is not JSON; apply the team file again/],
    [
      "a policy record that no longer loads",
      true,
      JSON.stringify({ version: 1, team: "web", seats: { dev: { capabilities: { wrte: null } } } }),
      "policy.unapplied",
      /no longer loads: .*apply the team file again/,
    ],
  ] as const)("refuses %s", async (label, registered, canonical, rule, reason) => {
    const { ledger } = await fresh(label.replace(/\W+/g, "-"));
    if (registered) await register(ledger);
    if (canonical !== undefined) await applyPolicy(ledger, canonical);
    const refused = refusal(() => policyInForce(ledger, "web"));
    expect(refused.rule).toBe(rule);
    expect(refused.reason).toMatch(reason);
  });

  it("rebuilds the applied policy from its record, deep-frozen, with its seq and hash", async () => {
    const { ledger } = await fresh("loads");
    await register(ledger);
    const record = await applyPolicy(ledger, loaded().canonical, 0xab);
    const inForce = policyInForce(ledger, "web");
    expect(inForce.seq).toBe(record.seq);
    expect(inForce.teamFileHash).toBe("ab".repeat(32));
    expect(inForce.teamFileHashBytes).toEqual(new Uint8Array(32).fill(0xab));
    expect(Object.keys(inForce.policy.seats).sort()).toEqual(["dev", "idle", "reader"]);
    expect(inForce.policy.seats.dev?.start?.command).toEqual(["claude"]);
    expect(Object.isFrozen(inForce.policy)).toBe(true);
    expect(Object.isFrozen(inForce.policy.seats.dev)).toBe(true);
    expect(Object.isFrozen(inForce.policy.constraints)).toBe(true);
    expect(policySeats(ledger, "web")).toBe(inForce.policy.seats);
  });

  it("loads each applied policy once per ledger, and a newer record is in force at once", async () => {
    const { env, ledger } = await fresh("cache");
    await register(ledger);
    await applyPolicy(ledger, loaded().canonical, 1);
    const first = policyInForce(ledger, "web");
    expect(policyInForce(ledger, "web")).toBe(first);

    const changed = loaded(TEAM_FILE.replace("command: [codex]", "command: [gemini]"));
    const record = await applyPolicy(ledger, changed.canonical, 2);
    const second = policyInForce(ledger, "web");
    expect(second).not.toBe(first);
    expect(second.seq).toBe(record.seq);
    expect(second.policy.seats.reader?.start?.command).toEqual(["gemini"]);
    expect(policyInForce(ledger, "web")).toBe(second);

    // Another ledger instance on the same records has a cache of its own.
    await ledger.close();
    open = open.filter((o) => o.ledger !== ledger);
    const reopened = await env.open();
    open.push({ env, ledger: reopened });
    const again = policyInForce(reopened, "web");
    expect(again).not.toBe(second);
    expect(again.seq).toBe(second.seq);
    expect(again.policy.seats.reader?.start?.command).toEqual(["gemini"]);
  });
});

describe("readyLedger and startableSeat", () => {
  it("refuses a machine without a ledger", () => {
    expect(refusal(() => readyLedger(undefined)).rule).toBe("ledger.unavailable");
  });

  it.each([
    ["a seat not in the policy", "ghost", "seat.unknown", /seats: dev, reader, idle|seats: /],
    ["a seat without a start", "idle", "seat.no-start", /has no start in the applied policy/],
  ] as const)("refuses %s", async (_label, name, rule, reason) => {
    const { ledger } = await fresh(`start-${name}`);
    await register(ledger);
    await applyPolicy(ledger, loaded().canonical);
    const refused = refusal(() => startableSeat(ledger, "web", name));
    expect(refused.rule).toBe(rule);
    expect(refused.reason).toMatch(reason);
  });

  it("gives a startable seat its pinned start, the team's repository and hub, and a read filter only when its read is bounded", async () => {
    const { ledger } = await fresh("startable");
    await register(ledger);
    const record = await applyPolicy(ledger, loaded().canonical, 7);
    expect(readyLedger(ledger)).toBe(ledger);
    const dev = startableSeat(ledger, "web", "dev");
    expect(dev).toMatchObject({
      team: "web",
      seat: "dev",
      policySeq: record.seq,
      policyHash: "07".repeat(32),
      repository: "/repo/web",
      hub: "/home/hubs/web.git",
    });
    expect(dev.start.command).toEqual(["claude"]);
    expect(dev.readFilter?.file("src/a.ts")).toBe(true);
    expect(dev.readFilter?.file("lib/a.ts")).toBe(false);
    expect(startableSeat(ledger, "web", "reader").readFilter).toBeUndefined();
  });
});
