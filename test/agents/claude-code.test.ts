import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pinnedAgentCli } from "../support/agent-cli.js";
import { filesUnder } from "../support/files-under.js";
import { startMockMessagesApi, type MockMessagesApi } from "../support/mock-messages-api.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { createHarness, type TeamdHarness } from "../support/teamd-harness.js";
import { waitFor } from "../support/wait.js";

/**
 * A real agent CLI in a real seat (issue 23, item 4): Claude Code, at the version pinned in
 * scripts/agents/pinned.json and installed by scripts/agents/install.sh (`.ci/run` does), run
 * by `teamd start` in a bwrap seat of a real daemon, against a stand-in Messages API on the
 * host's loopback that the seat reaches only through its egress proxy (declared in its
 * allowlist: host `claude-mock.test`, which the daemon resolves to 127.0.0.1 through
 * TEAMD_TEST_EGRESS_HOSTS, with 127.0.0.1/32 declared private). The stand-in plays a script;
 * the agent's own tools do the work: it reads a file, edits it, commits and pushes through
 * teamd's remote. Asserted: the push landed on the seat's branch in the hub; the egress
 * connections are on record with their bytes; the seat's output is in `teamd logs`; the key,
 * given as docs/agents.md says (`teamd exec -i`, into the seat's home), reached the API and is
 * in no record, run log or command's output.
 *
 * With CI set, a missing CLI fails the run; elsewhere the test is skipped, saying why.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const cli = pinnedAgentCli("claude-code");
// Key-shaped, so teamd's own credential shapes would redact it if it ever reached a record.
const KEY = `sk-ant-api03-canary${"0A1b2C3d".repeat(4)}`;
const MOCK_HOST = "claude-mock.test";
const TASK = "Make src/notes.txt final, commit it on a branch named notes and push it to teamd.";

const missing = process.platform !== "linux" ? "seats are Linux-only here" : cli.missing;
if (missing !== undefined && process.env.CI === undefined) {
  console.warn(`test/agents/claude-code.test.ts skipped: ${missing}`);
}

describe.runIf(missing === undefined)(`Claude Code ${cli.version} in a seat`, () => {
  let h: TeamdHarness;
  let api: MockMessagesApi;
  let seatRepo: string;
  let seatHome: string;
  const cliOutput: string[] = [];

  beforeAll(async () => {
    h = await createHarness("teamd-claude-", {
      files: { "src/notes.txt": "a draft\n" },
      timeoutMs: 90_000,
      onResult: (r) => cliOutput.push(r.stdout, r.stderr),
    });
    seatRepo = join(h.home, "seats/proj/coder/repo");
    seatHome = join(h.home, "seats/proj/coder/home");
    const push = "git checkout -q -b notes && git commit -qam 'notes: final' && git push -q teamd notes 2>&1 && git log --oneline -1";
    api = await startMockMessagesApi([
      { tool: "Read", input: { file_path: `${seatRepo}/src/notes.txt` } },
      { tool: "Edit", input: { file_path: `${seatRepo}/src/notes.txt`, old_string: "a draft", new_string: "final" } },
      { tool: "Bash", input: { command: push, description: "Commit and push the notes" } },
      { text: "Done: the notes are final and pushed." },
    ]);
    await h.startDaemon({ env: { TEAMD_TEST_EGRESS_HOSTS: JSON.stringify({ [MOCK_HOST]: "127.0.0.1" }) } });
    await h.ok(["init", "--yes", "--json"]);
    writeFileSync(
      join(h.repo, "teamd.yaml"),
      teamFile(`  coder:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: [claude, --permission-mode, acceptEdits, --allowedTools, "Read,Edit,Bash", --, ${JSON.stringify(TASK)}]
      env:
        ANTHROPIC_BASE_URL: "http://${MOCK_HOST}:${api.port}"
        DISABLE_AUTOUPDATER: "1"
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1"
      network:
        allow: ["${MOCK_HOST}:${api.port}"]
        private: ["127.0.0.1/32"]
`),
    );
    await h.ok(["apply", "--yes"]);
    // The seat's home, seeded from the host before its first start, as the owner can in user
    // mode (the folder is the owner's; in system mode root's): `teamd exec` needs a running seat,
    // and this agent's first start without them exits at its connectivity check (no route to
    // api.anthropic.com here). The key goes into a file only the seat reads (mode 0600), never
    // the team file, an argv or the ledger; Claude Code reads it through its apiKeyHelper. The
    // first-run screens are answered ahead: onboarding done, the seat's clone trusted. The CLI
    // goes into the seat's ~/.local/bin (on the seat's PATH), as an install inside the seat would
    // put it; copied from the cache, as the suite reaches no registry from a seat.
    mkdirSync(seatHome, { recursive: true, mode: 0o700 });
    // (In system mode the start hands the home, entry by entry, to the seat's own uid.)
    const own = (path: string, mode: number) => chmodSync(join(seatHome, path), mode);
    const folder = (path: string, mode: number) => {
      mkdirSync(join(seatHome, path), { mode });
      own(path, mode);
    };
    const file = (path: string, content: string) => {
      writeFileSync(join(seatHome, path), content, { mode: 0o600 });
      own(path, 0o600);
    };
    own("", 0o700);
    folder(".claude", 0o700);
    file(".claude/api-key", KEY);
    file(".claude/settings.json", JSON.stringify({ apiKeyHelper: "cat ~/.claude/api-key" }));
    file(".claude.json", JSON.stringify({ hasCompletedOnboarding: true, projects: { [seatRepo]: { hasTrustDialogAccepted: true } } }));
    folder(".local", 0o755);
    folder(".local/bin", 0o755);
    copyFileSync(cli.bin as string, join(seatHome, ".local/bin/claude"));
    own(".local/bin/claude", 0o755);
  }, 120_000);
  afterAll(async () => {
    await h?.cleanup();
    await api?.close();
  });

  it("reads, edits, commits and pushes through teamd; the push lands on the seat's branch", async () => {
    await h.ok(["start", "coder"]);
    const landed = await waitFor(
      () => {
        try {
          return h.hubGit("rev-parse", "--verify", "-q", "refs/heads/seat/coder/notes") !== "";
        } catch {
          return false;
        }
      },
      90_000,
      250,
    );
    const steps = api.seen.filter((r) => r.main).map((r) => r.step);
    expect(landed, `the agent's steps: ${JSON.stringify(steps)}; its results: ${JSON.stringify(api.seen.map((r) => r.toolResults))}`).toBe(true);
    expect(h.hubGit("show", "refs/heads/seat/coder/notes:src/notes.txt")).toBe("final");
    expect(h.hubGit("log", "-1", "--format=%s", "refs/heads/seat/coder/notes")).toBe("notes: final");
    // The agent saw its own tools' results: the file as read, then the push's commit line.
    expect(await waitFor(() => api.seen.some((r) => r.main && r.step === 3), 30_000)).toBe(true);
    const results = api.seen.flatMap((r) => r.toolResults).join("\n");
    expect(results).toMatch(/a draft/);
    expect(results).toMatch(/notes: final/);
    // The key reached the API, through the seat's home.
    expect(api.seen.filter((r) => r.main).every((r) => r.key === KEY)).toBe(true);
  }, 150_000);

  it("the egress connections are on record with their bytes and duration", async () => {
    const records = await h.records<{ type: string; action: string; result: string; fields?: Record<string, string>; detail?: Record<string, unknown> }>(
      "--seat",
      "coder",
    );
    const intents = records.filter((r) => r.type === "intent" && r.action === "egress.connect");
    expect(intents.length).toBeGreaterThanOrEqual(4);
    expect(intents.every((r) => r.fields?.host === MOCK_HOST && r.fields.address === "127.0.0.1" && r.fields.allowed_by === `${MOCK_HOST}:${api.port}`)).toBe(
      true,
    );
    const outcomes = records.filter((r) => r.type === "outcome" && r.action === "egress.connect" && r.result === "done");
    expect(outcomes.length).toBeGreaterThanOrEqual(1);
    for (const o of outcomes) {
      expect(o.detail?.upBytes).toBeGreaterThan(0);
      expect(o.detail?.downBytes).toBeGreaterThan(0);
      expect(typeof o.detail?.ms).toBe("number");
    }
    // The table a person reads says the same.
    const table = await h.ok(["log", "--seat", "coder", "--type", "outcome"]);
    expect(table).toMatch(new RegExp(`egress\\.connect .*${MOCK_HOST.replace(".", "\\.")}:${api.port}/\\S+  done  up \\d+ bytes, down \\d+ bytes, \\d+ ms`));
  });

  it("the seat's output is in teamd logs, as its screen showed it", async () => {
    const out = await h.ok(["logs", "coder"]);
    expect(out).toMatch(/Claude Code/);
    expect(out).toMatch(/Done: the notes are final and pushed\./);
    expect(out).not.toMatch(/\u001b/);
  });

  it("the key is in no record, run log, or command's output", async () => {
    for (const file of [...filesUnder(join(h.home, "ledger")), ...filesUnder(join(h.home, "logs"))])
      expect(readFileSync(file).toString("latin1"), file).not.toContain(KEY);
    expect(cliOutput.join("\n")).not.toContain(KEY);
    expect(await h.ok(["logs", "coder", "--raw"], { env: {} })).not.toContain(KEY);
  });
});

describe.runIf(missing !== undefined && process.env.CI !== undefined)("Claude Code in a seat (CI)", () => {
  it("is installed, as .ci/run installs it", () => {
    throw new Error(`the real-agent test cannot run: ${missing}`);
  });
});
