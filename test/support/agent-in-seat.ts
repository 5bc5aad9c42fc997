import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pinnedAgentCli, type AgentCli } from "./agent-cli.js";
import { expectEgressOnRecord, expectKeyNowhere, landedInHub, seedSeatHome, type SeatHomeSeed } from "./agent-seat.js";
import type { MockLabApi, ScriptStep } from "./mock-api-server.js";
import { ensureSeatUser } from "./seat-user.js";
import { teamFile } from "./team-file.js";
import { createHarness, type TeamdHarness } from "./teamd-harness.js";
import { waitFor } from "./wait.js";
import { FAILED_START_WINDOW } from "./programs.js";

/**
 * One real agent CLI in one real seat (issue 23): the CLI at the version pinned in
 * scripts/agents/pinned.json, installed by scripts/agents/install.sh (`.ci/run` does), run by
 * `teamd start` in a bwrap seat of a real daemon, against a stand-in of its lab's API on the
 * host's loopback that the seat reaches only through its egress proxy (declared in its
 * allowlist: a `.test` host the daemon resolves to 127.0.0.1 through TEAMD_TEST_EGRESS_HOSTS,
 * with 127.0.0.1/32 declared private). The stand-in plays a script; the agent's own tools do the
 * work: it reads a file, edits it, commits and pushes through teamd's remote. Asserted: the push
 * landed on the seat's branch in the hub; the agent saw its tools' results; the key, in the
 * seat's home, reached the API and is in no record, run log or command's output; the egress
 * connections are on record with their bytes; the seat's output is in `teamd logs`.
 *
 * With CI set, a missing CLI fails the run; elsewhere the file is skipped, saying why.
 */
export interface AgentSpec {
  /** The name in scripts/agents/pinned.json. */
  readonly pinned: string;
  readonly title: string;
  readonly lab: string;
  /** The stand-in's host name, as the seat's allowlist names it. */
  readonly host: string;
  /** A key of the lab's shape (so teamd's own credential shapes would redact it if it ever reached a record). */
  readonly key: string;
  readonly startApi: (script: readonly ScriptStep[]) => Promise<MockLabApi>;
  /** The script: read the notes, make them final, then run `push` (commit and push), then a last text. */
  readonly script: (ctx: { repo: string; push: string; done: string }) => readonly ScriptStep[];
  /** The seat's start: its command and environment (YAML flow values), given the stand-in's base URL. */
  readonly start: (ctx: { base: string }) => { command: string; env?: Record<string, string> };
  /** The seat's home before its first start: the CLI, its settings and the key. */
  readonly seed: (home: SeatHomeSeed, ctx: { cli: AgentCli; repo: string; base: string; key: string }) => void;
  /** How many egress connections a run makes at least (each request its own, or one kept alive). */
  readonly connections: number;
  /** What the CLI's screen shows of itself, in `teamd logs`. */
  readonly banner: RegExp;
}

const TASK = "Make src/notes.txt final, commit it on a branch named notes and push it to teamd.";
const DONE = "Done: the notes are final and pushed.";
const PUSH = "git checkout -q -b notes && git commit -qam 'notes: final' && git push -q teamd notes 2>&1 && git log --oneline -1";

export function describeAgentInSeat(spec: AgentSpec): void {
  const cli = pinnedAgentCli(spec.pinned);
  const missing = process.platform !== "linux" ? "seats are Linux-only here" : cli.missing;
  if (missing !== undefined && process.env.CI === undefined) console.warn(`${spec.title} in a seat skipped: ${missing}`);
  if (missing === undefined && process.getuid?.() === 0) ensureSeatUser();

  describe.runIf(missing === undefined)(`${spec.title} ${cli.version} in a seat`, () => {
    let h: TeamdHarness;
    let api: MockLabApi;
    const cliOutput: string[] = [];

    beforeAll(async () => {
      h = await createHarness(`teamd-${spec.pinned}-`, {
        files: { "src/notes.txt": "a draft\n" },
        timeoutMs: 90_000,
        onResult: (r) => cliOutput.push(r.stdout, r.stderr),
      });
      const repo = join(h.home, "seats/proj/coder/repo");
      api = await spec.startApi(spec.script({ repo, push: PUSH, done: DONE }));
      const base = `http://${spec.host}:${api.port}`;
      await h.startDaemon({ env: { ...FAILED_START_WINDOW, TEAMD_TEST_EGRESS_HOSTS: JSON.stringify({ [spec.host]: "127.0.0.1" }) } });
      await h.ok(["init", "--yes", "--json"]);
      const start = spec.start({ base });
      const env = Object.entries(start.env ?? {}).map(([name, value]) => `\n        ${name}: ${JSON.stringify(value)}`);
      writeFileSync(
        join(h.repo, "teamd.yaml"),
        teamFile(
          `  coder:
    lab: ${spec.lab}
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: ${start.command.replace("TASK", JSON.stringify(TASK))}${env.length > 0 ? `\n      env:${env.join("")}` : ""}
      network:
        allow: ["${spec.host}:${api.port}"]
        private: ["127.0.0.1/32"]
`,
          [spec.lab],
        ),
      );
      await h.ok(["apply", "--yes"]);
      spec.seed(seedSeatHome(join(h.home, "seats/proj/coder/home")), { cli, repo, base, key: spec.key });
    }, 120_000);
    afterAll(async () => {
      await h?.cleanup();
      await api?.close();
    });

    it("reads, edits, commits and pushes through teamd; the push lands on the seat's branch", async () => {
      await h.ok(["start", "coder"]);
      const landed = await landedInHub(h, "refs/heads/seat/coder/notes");
      const trace = () =>
        `the agent's steps: ${JSON.stringify(api.seen.filter((r) => r.main).map((r) => r.step))}; its results: ${JSON.stringify(api.seen.map((r) => r.toolResults))}`;
      expect(landed, trace()).toBe(true);
      expect(h.hubGit("show", "refs/heads/seat/coder/notes:src/notes.txt")).toBe("final");
      expect(h.hubGit("log", "-1", "--format=%s", "refs/heads/seat/coder/notes")).toBe("notes: final");
      // The agent saw its own tools' results: the file as read, then the push's commit line.
      const last = spec.script({ repo: "", push: PUSH, done: DONE }).length - 1;
      expect(await waitFor(() => api.seen.some((r) => r.main && r.step === last), 30_000), trace()).toBe(true);
      const results = api.seen.flatMap((r) => r.toolResults).join("\n");
      expect(results).toMatch(/a draft/);
      expect(results).toMatch(/notes: final/);
      // The key reached the API, through the seat's home.
      expect(api.seen.filter((r) => r.main).every((r) => r.key === spec.key)).toBe(true);
    }, 150_000);

    it("the egress connections are on record with their bytes and duration", async () => {
      await expectEgressOnRecord(h, "coder", spec.host, api.port, spec.connections);
    }, 60_000);

    it("the seat's output is in teamd logs, as its screen showed it", async () => {
      const out = await h.ok(["logs", "coder"]);
      expect(out).toMatch(spec.banner);
      expect(out).toContain(DONE);
      expect(out).not.toMatch(/\u001b/);
    });

    it("the key is in no record, run log, or command's output", async () => {
      await expectKeyNowhere(h, "coder", spec.key, cliOutput);
    });
  });

  describe.runIf(missing !== undefined && process.env.CI !== undefined)(`${spec.title} in a seat (CI)`, () => {
    it("is installed, as .ci/run installs it", () => {
      throw new Error(`the real-agent test cannot run: ${missing}`);
    });
  });
}
