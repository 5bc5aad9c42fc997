import { dirname } from "node:path";
import { describeAgentInSeat } from "../support/agent-in-seat.js";
import { startMockGeminiApi } from "../support/mock-gemini-api.js";

/**
 * Gemini CLI in a real seat (issue 23; the driver: test/support/agent-in-seat.ts), run as
 * `gemini --yolo -p TASK` by the seat's own node against a stand-in Gemini API reached as
 * GOOGLE_GEMINI_BASE_URL. The key is in ~/.gemini/.env (Gemini CLI reads it from there), the
 * seat's clone is a trusted folder (an untrusted one reads no .env and drops --yolo), usage
 * statistics and auto-update off, as docs/agents.md says. Its own read_file, replace and
 * run_shell_command tools do the work. Its package folder (bundled) goes into the seat's
 * ~/.local/lib, linked from ~/.local/bin.
 */
describeAgentInSeat({
  pinned: "gemini-cli",
  title: "Gemini CLI",
  lab: "google",
  host: "gemini-mock.test",
  key: `AIzaSyCanary${"0A1b2C3d".repeat(3)}xyz`,
  startApi: startMockGeminiApi,
  script: ({ repo, push, done }) => [
    { tool: "read_file", input: { file_path: `${repo}/src/notes.txt` } },
    { tool: "replace", input: { file_path: `${repo}/src/notes.txt`, instruction: "Make the notes final.", old_string: "a draft", new_string: "final" } },
    { tool: "run_shell_command", input: { command: push, description: "Commit and push the notes" } },
    { text: done },
  ],
  start: ({ base }) => ({ command: "[gemini, --yolo, -p, TASK]", env: { GOOGLE_GEMINI_BASE_URL: base } }),
  seed: (home, { cli, repo, key }) => {
    home.folder(".gemini");
    home.file(
      ".gemini/settings.json",
      JSON.stringify({
        security: { auth: { selectedType: "gemini-api-key" } },
        privacy: { usageStatisticsEnabled: false },
        general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
      }),
    );
    home.file(".gemini/.env", `GEMINI_API_KEY=${key}\n`);
    home.file(".gemini/trustedFolders.json", JSON.stringify({ [repo]: "TRUST_FOLDER" }));
    // The package folder: bin is its bundle/gemini.js.
    home.tree(dirname(dirname(cli.bin as string)), ".local/lib/gemini-cli");
    home.link(".local/lib/gemini-cli/bundle/gemini.js", ".local/bin/gemini");
  },
  connections: 2,
  banner: /YOLO mode is enabled/,
});
