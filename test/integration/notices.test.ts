import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { initTeam, type TeamdHarness } from "../support/teamd-harness.js";
import { teamFile } from "../support/team-file.js";

/**
 * Being told (§11), end to end with a real daemon, ledger and repository: a policy applied
 * and a machine-wide stop each become a notice record; the owner's hook (set with
 * `teamd notices hook`, loaded on SIGHUP) runs once per notice with it on stdin;
 * `teamd notices` shows what is new and marks it seen; `teamd status` counts the unseen.
 */
const TEAM_FILE = teamFile(`  dev:
    lab: anthropic
    capabilities:
      read: ~
`);

async function waitFor(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: not in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

type NoticeLine = { seq: number; team: string; about?: number; subject: string; text: string };

describe("notices: recorded, told through the owner's hook, seen", () => {
  let h: TeamdHarness;
  let told: string;
  const notices = async (...extra: string[]) =>
    (await h.ok(["notices", "--json", ...extra]))
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as NoticeLine);

  beforeAll(async () => {
    h = await initTeam("teamd-notices-", { timeoutMs: 30_000 });
    told = join(h.dir, "told.jsonl");
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("a policy applied becomes a notice naming its record; notices shows it once, then nothing new", async () => {
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    // The notice is appended just after the policy it is about: poll for it, bounded.
    let first: NoticeLine[] = [];
    const deadline = Date.now() + 15_000;
    while (first.length === 0 && Date.now() < deadline) {
      first = await notices("--all");
      if (first.length === 0) await new Promise((r) => setTimeout(r, 200));
    }
    const policy = first.find((n) => n.subject === "policy applied (team proj)");
    expect(policy, JSON.stringify(first)).toBeDefined();
    const log = (await h.ok(["log", "--json"]))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { seq: number; type: string });
    expect(log.find((r) => r.seq === policy?.about)?.type).toBe("policy");
    // The first plain `teamd notices` shows it and marks it seen; the next shows nothing new.
    expect((await notices()).map((n) => n.seq)).toContain(policy?.seq);
    expect(await notices()).toEqual([]);
    const status = JSON.parse(await h.ok(["status", "--json"])) as { notices: { unseen: number } };
    expect(status.notices.unseen).toBe(0);
  });

  it("the owner's hook, loaded on SIGHUP, runs for each new notice with it on stdin; status counts the unseen", async () => {
    // argv, no shell of teamd's own: the hook appends what it is given to a file.
    await h.ok(["notices", "hook", "--", "sh", "-c", `cat >> '${told}'`]);
    expect(JSON.parse(await h.ok(["notices", "hook", "--json"])).hook).toEqual(["sh", "-c", `cat >> '${told}'`]);
    h.daemon?.child.kill("SIGHUP");
    await waitFor(() => (h.daemon?.stderr() ?? "").includes("notice hook: ["), "hook reloaded");
    await h.ok(["stop", "--all"]);
    await waitFor(() => existsSync(told) && readFileSync(told, "utf8").includes("stop (this machine)"), "hook told of the stop");
    const lines = readFileSync(told, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as NoticeLine);
    expect(lines.every((l) => typeof l.seq === "number" && typeof l.about === "number")).toBe(true);
    expect(lines.filter((l) => l.subject === "policy applied (team proj)")).toHaveLength(0);
    const status = JSON.parse(await h.ok(["status", "--json"])) as { notices: { unseen: number } };
    expect(status.notices.unseen).toBeGreaterThanOrEqual(1);
    const fresh = await notices();
    expect(fresh.some((n) => n.subject === "stop (this machine)")).toBe(true);
    await h.ok(["resume"]);
  });

  it("refuses a hook file others may write, and says how to fix it", async () => {
    const path = join(h.home, "notify.json");
    chmodSync(path, 0o666);
    const r = await h.run(["notices", "hook"], { timeoutMs: 15_000 });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/writable by group or others: chmod 600/);
    await h.ok(["notices", "hook", "--clear"]);
    expect(existsSync(path)).toBe(false);
  });
});
