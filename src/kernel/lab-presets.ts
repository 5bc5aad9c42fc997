import { compareStrings } from "./paths.js";

/**
 * The hosts each known lab's agent CLI needs (§12: a seat reaches only what its execution
 * context declares; a seat of a lab gets its lab's `needed` hosts unless `network.lab: false`).
 * Kept as data, in this one file, each host with what it is for, where it was found and the
 * CLI version it was checked against — so a release that changes a row says why, and
 * docs/agents.md prints the same table. `optional` hosts (telemetry, error reports, update
 * checks, plugin catalogues) are listed apart and never included: the owner adds one to
 * `start.network.allow` if the agent should reach it, and `teamd egress refused` names them
 * when a seat asks for one. Pure data; the effective list is part of the start-context hash.
 *
 * What a browser opens (an OAuth authorize page) is not here: the owner's browser, on the
 * host, opens it — the seat only exchanges the code it is given for a token.
 */
export type LabHostUse = "model API" | "login" | "token exchange" | "account" | "telemetry" | "error reports" | "updates" | "plugins";

export interface LabHost {
  /** host:port, canonical. */
  readonly endpoint: string;
  readonly use: LabHostUse;
  /** Listed apart, never included by the lab: the owner opts in per seat. */
  readonly optional: boolean;
  /** Where it was found (the CLI's own text, its docs, a run in a seat). */
  readonly source: string;
}

export interface LabPreset {
  readonly cli: string;
  readonly package: string;
  /** The CLI version the hosts were checked against. */
  readonly checked: string;
  readonly hosts: readonly LabHost[];
}

const host = (endpoint: string, use: LabHostUse, source: string, optional = false): LabHost => Object.freeze({ endpoint, use, optional, source });

export const LAB_PRESETS: Readonly<Record<string, LabPreset>> = Object.freeze({
  anthropic: Object.freeze({
    cli: "Claude Code",
    package: "@anthropic-ai/claude-code",
    checked: "2.1.332",
    hosts: Object.freeze([
      host(
        "api.anthropic.com:443",
        "model API",
        'the binary\'s BASE_API_URL "https://api.anthropic.com"; also its account calls (/api/oauth/claude_cli/create_api_key, roles), feature flags and policy',
      ),
      host(
        "platform.claude.com:443",
        "token exchange",
        'the binary\'s TOKEN_URL "https://platform.claude.com/v1/oauth/token" (the login by pasted code, claude setup-token)',
      ),
      host("http-intake.logs.us5.datadoghq.com:443", "telemetry", 'the binary\'s "https://http-intake.logs.us5.datadoghq.com/api/v2/logs"', true),
      host(
        "downloads.claude.ai:443",
        "updates",
        '"https://downloads.claude.ai/claude-code-releases", the model catalog and plugins; asked for at start even with DISABLE_AUTOUPDATER=1 (test/agents)',
        true,
      ),
      host("github.com:443", "plugins", '"github.com/anthropics/claude-plugins-official", the plugin marketplace; asked for at start (test/agents)', true),
      host("raw.githubusercontent.com:443", "updates", "the changelog, raw.githubusercontent.com/anthropics/claude-code/…/CHANGELOG.md", true),
      host("storage.googleapis.com:443", "plugins", "plugin statistics, storage.googleapis.com/claude-code-dist-…/plugin-stats", true),
    ]),
  }),
  openai: Object.freeze({
    cli: "Codex CLI",
    package: "@openai/codex",
    checked: "0.171.0",
    hosts: Object.freeze([
      host("api.openai.com:443", "model API", 'the binary\'s "https://api.openai.com/v1" (with an API key)'),
      host("chatgpt.com:443", "model API", 'chatgpt_base_url "https://chatgpt.com/backend-api/" (signed in with ChatGPT; also its model list)'),
      host(
        "auth.openai.com:443",
        "token exchange",
        '"https://auth.openai.com/oauth/token" and the device-code login (/deviceauth/usercode, /deviceauth/token)',
      ),
      host("ab.chatgpt.com:443", "telemetry", '"https://ab.chatgpt.com/otlp/v1/metrics"', true),
      host("o33249.ingest.us.sentry.io:443", "error reports", "the Sentry DSN for /feedback uploads", true),
      host("api.github.com:443", "updates", '"https://api.github.com/repos/openai/codex/releases/latest"; also plugins', true),
      host("registry.npmjs.org:443", "updates", '"https://registry.npmjs.org/@openai%2fcodex"', true),
      host("raw.githubusercontent.com:443", "updates", "announcements, raw.githubusercontent.com/openai/codex/main/announcement_tip.toml", true),
    ]),
  }),
  google: Object.freeze({
    cli: "Gemini CLI",
    package: "@google/gemini-cli",
    checked: "0.61.0",
    hosts: Object.freeze([
      host("generativelanguage.googleapis.com:443", "model API", 'the bundle\'s baseUrl "https://generativelanguage.googleapis.com/" (with an API key)'),
      host(
        "cloudcode-pa.googleapis.com:443",
        "model API",
        'CODE_ASSIST_ENDPOINT "https://cloudcode-pa.googleapis.com" (signed in with Google; also its experiments)',
      ),
      host("oauth2.googleapis.com:443", "token exchange", '"https://oauth2.googleapis.com/token"'),
      host("www.googleapis.com:443", "account", '"https://www.googleapis.com/oauth2/v2/userinfo", read after the login'),
      host("play.googleapis.com:443", "telemetry", 'CLEARCUT_URL "https://play.googleapis.com/log" (privacy.usageStatisticsEnabled, on by default)', true),
      host("registry.npmjs.org:443", "updates", "its own latest version, from the npm registry", true),
      host("geminicli.com:443", "plugins", 'the extension registry, "https://geminicli.com/extensions.json"', true),
      host("api.github.com:443", "updates", "extension updates (/repos/…/releases/latest)", true),
    ]),
  }),
});

/** The hosts a seat of each lab gets (the needed ones), sorted: what the egress context adds. */
export const LAB_ENDPOINTS: Readonly<Record<string, readonly string[]>> = Object.freeze(
  Object.fromEntries(
    Object.entries(LAB_PRESETS).map(([lab, preset]) => [
      lab,
      Object.freeze(
        preset.hosts
          .filter((h) => !h.optional)
          .map((h) => h.endpoint)
          .sort(compareStrings),
      ),
    ]),
  ),
);

/** Every preset row naming this endpoint (several CLIs may ask for the same host). */
export function labHostsFor(
  endpoint: string,
): ReadonlyArray<{ readonly lab: string; readonly cli: string; readonly use: LabHostUse; readonly optional: boolean }> {
  return Object.entries(LAB_PRESETS).flatMap(([lab, preset]) =>
    preset.hosts.filter((h) => h.endpoint === endpoint).map((h) => ({ lab, cli: preset.cli, use: h.use, optional: h.optional })),
  );
}
