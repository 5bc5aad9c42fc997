import { describeAgentInSeat } from "../support/agent-in-seat.js";
import { startMockMessagesApi } from "../support/mock-messages-api.js";

/**
 * Claude Code in a real seat (issue 23, item 4; the driver: test/support/agent-in-seat.ts),
 * against a stand-in Messages API reached as ANTHROPIC_BASE_URL. Its own Read, Edit and Bash
 * tools do the work. The seat's home, as docs/agents.md says: the key, read through Claude
 * Code's apiKeyHelper; the first-run screens answered ahead (onboarding done, the seat's clone
 * trusted) — without them its first start exits at its connectivity check (no route to
 * api.anthropic.com here).
 */
describeAgentInSeat({
  pinned: "claude-code",
  title: "Claude Code",
  lab: "anthropic",
  host: "claude-mock.test",
  key: `sk-ant-api03-canary${"0A1b2C3d".repeat(4)}`,
  startApi: startMockMessagesApi,
  script: ({ repo, push, done }) => [
    { tool: "Read", input: { file_path: `${repo}/src/notes.txt` } },
    { tool: "Edit", input: { file_path: `${repo}/src/notes.txt`, old_string: "a draft", new_string: "final" } },
    { tool: "Bash", input: { command: push, description: "Commit and push the notes" } },
    { text: done },
  ],
  start: ({ base }) => ({
    command: `[claude, --permission-mode, acceptEdits, --allowedTools, "Read,Edit,Bash", --, TASK]`,
    env: { ANTHROPIC_BASE_URL: base, DISABLE_AUTOUPDATER: "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1" },
  }),
  seed: (home, { cli, repo, key }) => {
    home.folder(".claude");
    home.file(".claude/api-key", key);
    home.file(".claude/settings.json", JSON.stringify({ apiKeyHelper: "cat ~/.claude/api-key" }));
    home.file(".claude.json", JSON.stringify({ hasCompletedOnboarding: true, projects: { [repo]: { hasTrustDialogAccepted: true } } }));
    home.copy(cli.bin as string, ".local/bin/claude");
  },
  connections: 4,
  banner: /Claude Code/,
});
