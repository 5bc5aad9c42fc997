import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSeatUser } from "../support/seat-user.js";
import { expectRefused, initTeam, type LogRecord, type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Review, gate and merge are scoped on the destination the change lands on (issue 24, item 1;
 * §6: "the real destination ref … the operation resolves to"), through a real hub and real
 * seats: the documented `api-reviewer` (verifier over `src/api/`, branches `main` and
 * `release/*`) fetches the executor's branch, reviews and gates it into main, and a merger
 * scoped to main merges it. A gater scoped to `seat/*` — the source branch, not a destination
 * — is refused at the gate (scope.branch), where before it passed and was voided at merge.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const sleeper = `    start:\n      command: [sleep, "3600"]\n`;
const TEAM_FILE = `version: 1
team: proj
declare:
  branches: [main, "release/*"]
  labs: [anthropic, google]
review:
  mode: cross-lab
  floor: 1
roles:
  api-reviewer:
    template: verifier
    scope:
      path: src/api/
      branch: [main, "release/*"]
seats:
  exec:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
${sleeper}  carol:
    lab: google
    roles: [api-reviewer]
${sleeper}  source:
    lab: google
    capabilities:
      read: ~
      gate: { branch: "seat/*" }
${sleeper}  mrg:
    lab: google
    capabilities:
      read: ~
      merge: { branch: main }
${sleeper}`;

describe.runIf(process.platform === "linux")("review, gate and merge scoped on the destination (§6)", () => {
  let h: TeamdHarness;

  beforeAll(async () => {
    h = await initTeam("teamd-destination-", { files: { "README.md": "hello\n", "src/api/a.ts": "export const a = 1;\n" } });
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
    await h.ok(["apply", "--yes"]);
    await h.ok(["start", "--team", "proj"]);
    const pushed = await h.inSeat("exec", "echo 'export const b = 2;' > src/api/b.ts && git add -A && git commit -qm b && git push -q teamd HEAD:api");
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("the api-reviewer fetches the branch it reviews, though its branch scope names only destinations", async () => {
    const fetched = await h.inSeat("carol", "git fetch -q teamd && git show teamd/seat/exec/api:src/api/b.ts");
    expect(fetched.code, fetched.stderr).toBe(0);
    expect(fetched.stdout).toContain("export const b = 2;");
  });

  it("a gate scoped to the source branches (seat/*) is refused at the gate: main is the destination", async () => {
    const refused = await expectRefused(h.shim("source", "gate", "seat/exec/api", "--pass"), "scope.branch");
    expect(refused.stderr).toContain("main");
  });

  it("the api-reviewer reviews and gates into main, and a merger scoped to main merges under that pass", async () => {
    const review = await h.shim("carol", "review", "seat/exec/api", "--approve", "--json");
    expect(review.code, review.stderr).toBe(0);
    const gate = await h.shim("carol", "gate", "seat/exec/api", "--pass", "--json");
    expect(gate.code, gate.stderr).toBe(0);
    const merged = await h.shim("mrg", "merge", "seat/exec/api", "--json");
    expect(merged.code, merged.stderr).toBe(0);
    const m = JSON.parse(merged.stdout) as { commit: string; effectId: string };
    expect(m.effectId).toBe((JSON.parse(gate.stdout) as { effectId: string }).effectId);
    expect(h.hubGit("rev-parse", "refs/heads/main")).toBe(m.commit);
    expect(h.hubGit("show", `${m.commit}:src/api/b.ts`)).toContain("export const b = 2;");
  });

  it("the review mode is named in whoami, teamd status and every trunk act's intent (§5: an explicit policy, named in every record and view)", async () => {
    const who = await h.shim("carol", "whoami", "--json");
    expect(who.code, who.stderr).toBe(0);
    expect((JSON.parse(who.stdout) as { review: unknown }).review).toEqual({ mode: "cross-lab", floor: 1 });
    expect((await h.shim("carol", "whoami")).stdout).toContain("review mode: cross-lab, floor 1");
    const status = JSON.parse(await h.ok(["status", "--json"])) as { teams: { team: string; review: unknown }[] };
    expect(status.teams.find((t) => t.team === "proj")?.review).toEqual({ mode: "cross-lab", floor: 1 });
    expect(await h.ok(["status"])).toContain("review: cross-lab, floor 1");
    const intents = (await h.records<LogRecord & { fields?: Record<string, string> }>()).filter(
      (r) => (r.type === "intent" && r.action === "merge") || (r.type === r.action && ["review", "gate"].includes(r.action as string)),
    );
    expect(intents.map((r) => r.action).sort()).toEqual(["gate", "merge", "review"]);
    for (const intent of intents) expect(intent.fields?.["review-mode"]).toBe("cross-lab, floor 1");
  });

  it("a team file where a seat reviews, gates or merges and no review mode is named is refused at apply, naming both modes", async () => {
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE.replace("review:\n  mode: cross-lab\n  floor: 1\n", ""));
    const refused = await h.run(["apply", "--yes"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("teamfile.review-mode");
    expect(refused.stderr).toMatch(/distinct-seat[\s\S]*cross-lab/);
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE);
  });

  it("--into names the destination: release/1 is within the api-reviewer's scope, a branch outside it is refused (scope.branch), recorded", async () => {
    const pushed = await h.inSeat(
      "exec",
      "git fetch -q teamd && git checkout -q -B more teamd/main && echo c > src/api/c.ts && git add -A && git commit -qm c && git push -q teamd HEAD:more",
    );
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    h.hubGit("branch", "release/1", "refs/heads/main");
    h.hubGit("branch", "hotfix", "refs/heads/main");
    expect((await h.shim("carol", "review", "seat/exec/more", "--approve", "--into", "release/1")).code).toBe(0);
    const gate = await h.shim("carol", "gate", "seat/exec/more", "--pass", "--into", "release/1");
    expect(gate.code, gate.stderr).toBe(0);
    await expectRefused(h.shim("carol", "gate", "seat/exec/more", "--pass", "--into", "hotfix"), "scope.branch");
    expect((await h.records()).some((r) => r.type === "refusal" && r.action === "gate" && JSON.stringify(r).includes("scope.branch"))).toBe(true);
  });
});
