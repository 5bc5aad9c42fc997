import { describeAgentInSeat } from "../support/agent-in-seat.js";
import { startMockResponsesApi } from "../support/mock-responses-api.js";

/**
 * Codex CLI in a real seat (issue 23; the driver: test/support/agent-in-seat.ts), run as
 * `codex exec` against a stand-in Responses API configured as a custom model provider (its
 * base_url, no WebSockets), with the key where `codex login --with-api-key` puts it
 * (~/.codex/auth.json). Its own sandbox is off (`--sandbox danger-full-access`): it cannot work
 * inside a seat, which refuses the namespaces it would make, and the seat is the sandbox. Its
 * own exec_command tool does the work (the stand-in's model is not one Codex knows, so it gets
 * its plain tool set). Update checks and analytics off, as docs/agents.md says.
 */
describeAgentInSeat({
  pinned: "codex",
  title: "Codex CLI",
  lab: "openai",
  host: "codex-mock.test",
  key: `sk-proj-canary${"0A1b2C3d".repeat(5)}`,
  // A second per answer, as a lab's would take: instant answers let `codex exec` finish the whole
  // task within teamd start's settle window (2 s), which reports a command ended that soon as a
  // start that failed.
  startApi: (script) => startMockResponsesApi(script, { delayMs: 1_000 }),
  script: ({ push, done }) => [
    { tool: "exec_command", input: { cmd: "cat src/notes.txt" } },
    { tool: "exec_command", input: { cmd: `sed -i 's/a draft/final/' src/notes.txt && ${push}` } },
    { text: done },
  ],
  start: () => ({ command: "[codex, exec, --sandbox, danger-full-access, TASK]" }),
  seed: (home, { cli, base, key }) => {
    home.folder(".codex");
    home.file(
      ".codex/config.toml",
      [
        'model = "stand-in"',
        'model_provider = "stand-in"',
        "check_for_update_on_startup = false",
        "[analytics]",
        "enabled = false",
        '[model_providers."stand-in"]',
        'name = "stand-in Responses API"',
        `base_url = "${base}/v1"`,
        'wire_api = "responses"',
        "requires_openai_auth = true",
        "supports_websockets = false",
        "",
      ].join("\n"),
    );
    home.file(".codex/auth.json", JSON.stringify({ auth_mode: "apikey", OPENAI_API_KEY: key }));
    home.copy(cli.bin as string, ".local/bin/codex");
  },
  connections: 2,
  banner: /OpenAI Codex v0\.171\.0/,
});
