import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { isAbsolute, join } from "node:path";
import { MIN_SECRET_BYTES } from "../broker/scrub.js";
import { isDeclaredName } from "../kernel/declared.js";
import { parseDuration } from "../kernel/index.js";
import { closest, isName, NAME_RULE } from "../kernel/names.js";
import { MeterCredential } from "./credential.js";

/**
 * The owner's meter configuration (§8): which sources report spend, and for which team and lab
 * each counts — so the owner's other usage (another workspace, another project) is never counted
 * against a team. It lives in `TEAMD_HOME/meters.json`, or at the absolute path
 * `$TEAMD_METERS`:
 *
 * {
 *   "meters": {
 *     "claude-ws": { "kind": "anthropic-cost", "team": "proj", "lab": "anthropic", "workspace": "wrkspc_01…",
 *                    "keyEnv": "TEAMD_ANTHROPIC_ADMIN_KEY", "every": "60s" },
 *     "oai":       { "kind": "openai-costs", "team": "proj", "lab": "openai", "project": "proj_abc", "key": "sk-admin-…", "every": "5m" },
 *     "local":     { "kind": "command", "team": "proj", "lab": "google", "command": ["/usr/local/bin/usage", "--json"], "every": "60s" }
 *   }
 * }
 *
 * Like the broker's tracker file (src/broker/config.ts): an admin key comes from this file or
 * from the daemon's environment (`keyEnv`), never from the team file, never into a seat or a
 * record, and is never printed — a refusal names the key and the fix, and quotes no value. The
 * file must be a regular file (not a symbolic link) of the daemon's user, writable by no one
 * else — it says where teamd sends its keys and which commands it runs — and, when it holds a
 * key itself, readable by no one else either (chmod 600). `api` (optional) points a provider
 * meter elsewhere than the provider's real API: https, or plain http to a loopback host only.
 */

export type MeterKind = "anthropic-cost" | "openai-costs" | "command";
export const METER_KINDS: readonly MeterKind[] = Object.freeze(["anthropic-cost", "openai-costs", "command"] as const);

interface MeterCommon {
  /** The meter's name in the file (the same rule as team and seat names). */
  readonly name: string;
  /** The team whose spend it reports. */
  readonly team: string;
  /** The lab whose spend it reports (a lab the team file declares). */
  readonly lab: string;
  /** How often the daemon reads it, in milliseconds (at least 10 s). */
  readonly everyMs: number;
}

export interface AnthropicCostMeterConfig extends MeterCommon {
  readonly kind: "anthropic-cost";
  /** The Anthropic workspace id (`wrkspc_…`) whose cost counts, or `default` for the organization's default workspace. */
  readonly workspace: string;
  /** The API's base URL, without `/v1` (default https://api.anthropic.com). */
  readonly api: string;
  /** The organization's Admin API key. */
  readonly key: MeterCredential;
}

export interface OpenaiCostsMeterConfig extends MeterCommon {
  readonly kind: "openai-costs";
  /** The OpenAI project id (`proj_…`) whose cost counts. */
  readonly project: string;
  /** The API's base URL, without `/v1` (default https://api.openai.com). */
  readonly api: string;
  /** The organization's Admin API key. */
  readonly key: MeterCredential;
}

export interface CommandMeterConfig extends MeterCommon {
  readonly kind: "command";
  /** argv, run without a shell. */
  readonly command: readonly string[];
}

export type MeterConfig = AnthropicCostMeterConfig | OpenaiCostsMeterConfig | CommandMeterConfig;

export type MetersLoad = { readonly ok: true; readonly meters: MeterConfig[] } | { readonly ok: false; readonly reason: string };

export const ANTHROPIC_API = "https://api.anthropic.com";
export const OPENAI_API = "https://api.openai.com";
export const MIN_EVERY_MS = 10_000;
export const MAX_EVERY_MS = 86_400_000;

const MAX_CONFIG_BYTES = 256 * 1024;
const MAX_COMMAND_ARGS = 64;
const MAX_ARG_BYTES = 4096;
/** A provider's workspace or project id: what the provider prints, nothing that could break a query. */
const SOURCE_ID = /^[A-Za-z0-9_-]{1,128}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** A key is sent in a header: visible ASCII only (a header with anything else fails, and its error could quote it). */
const KEY_TEXT = /^[\x21-\x7e]+$/;

const COMMON_KEYS = ["kind", "team", "lab", "every"];
const KEYS_OF: Readonly<Record<MeterKind, readonly string[]>> = Object.freeze({
  "anthropic-cost": [...COMMON_KEYS, "workspace", "key", "keyEnv", "api"],
  "openai-costs": [...COMMON_KEYS, "project", "key", "keyEnv", "api"],
  command: [...COMMON_KEYS, "command"],
});

/** Where the owner's meter configuration is: `$TEAMD_METERS` when set, else `TEAMD_HOME/meters.json`. */
export function metersPath(teamdHome: string, env: NodeJS.ProcessEnv): string {
  const given = env.TEAMD_METERS;
  return given !== undefined && given !== "" ? given : join(teamdHome, "meters.json");
}

/**
 * Read and check the owner's meter configuration. A missing file is no meters; a file teamd
 * must not trust, or one with any problem, is refused whole with a reason naming each problem
 * and its fix — the daemon then has no meter for those teams, and their usage counts as spent.
 */
export async function loadMeters(teamdHome: string, env: NodeJS.ProcessEnv = process.env, uid: number | undefined = process.getuid?.()): Promise<MetersLoad> {
  const path = metersPath(teamdHome, env);
  if (!isAbsolute(path)) return { ok: false, reason: `TEAMD_METERS is not an absolute path; give the meter configuration's full path` };
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { ok: true, meters: [] };
    if (code === "ELOOP") return { ok: false, reason: `${path} is a symbolic link; put the meter configuration in a regular file (chmod 600)` };
    return { ok: false, reason: `${path} cannot be read (${code ?? "error"})` };
  }
  let text: string;
  let mode: number;
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return { ok: false, reason: `${path} is not a regular file; put the meter configuration in one (chmod 600)` };
    if (uid !== undefined && stat.uid !== uid)
      return {
        ok: false,
        reason: `${path} belongs to uid ${stat.uid}, not to the daemon's user (${uid}); chown it to the daemon's user and chmod 600 ${path}`,
      };
    mode = stat.mode & 0o777;
    if ((mode & 0o022) !== 0)
      return {
        ok: false,
        reason: `${path} is writable by group or other (mode ${mode.toString(8)}); it says where teamd sends its meter keys and which commands it runs: chmod 600 ${path}`,
      };
    if (stat.size > MAX_CONFIG_BYTES) return { ok: false, reason: `${path} is larger than ${MAX_CONFIG_BYTES} bytes` };
    text = await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
  let data: unknown;
  try {
    data = JSON.parse(text) as unknown;
  } catch {
    // Never quoted: the file may hold keys.
    return { ok: false, reason: `${path} is not valid JSON` };
  }
  if ((mode & 0o044) !== 0 && holdsKey(data))
    return {
      ok: false,
      reason: `${path} holds a meter key and is readable by group or other (mode ${mode.toString(8)}): chmod 600 ${path}, or give the key in the daemon's environment with "keyEnv"`,
    };
  return parseMeters(data, env, path);
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const own = (map: Record<string, unknown>, key: string): boolean => Object.prototype.hasOwnProperty.call(map, key);

/** Whether any meter in the parsed file carries a key itself (not by `keyEnv`). */
function holdsKey(data: unknown): boolean {
  if (!isMap(data) || !isMap(data.meters)) return false;
  return Object.values(data.meters).some((entry) => isMap(entry) && own(entry, "key"));
}

/** One problem with one meter; its message names where, what, and the fix. */
class Problem extends Error {}

/** A key name from the file, shown only when it is short and plain (a refusal quotes no value). */
function shownKey(key: string): string {
  return /^[A-Za-z][A-Za-z0-9_-]{0,23}$/.test(key) ? `'${key}'` : "a key";
}

function text(entry: Record<string, unknown>, key: string, where: string, fix: string): string {
  const value = entry[key];
  if (typeof value !== "string" || value === "") throw new Problem(`${where}: '${key}' must be a non-empty string (${fix})`);
  return value;
}

function parseEvery(entry: Record<string, unknown>, where: string): number {
  const value = entry.every;
  const ms = typeof value === "string" ? parseDuration(value) : undefined;
  if (ms === undefined) throw new Problem(`${where}: 'every' must be a duration such as "60s" or "5m" (how often teamd reads the meter)`);
  if (ms < MIN_EVERY_MS) throw new Problem(`${where}: 'every' must be at least 10s: a provider's report is not fresher than that, and each read is a request`);
  if (ms > MAX_EVERY_MS) throw new Problem(`${where}: 'every' must be at most 1d`);
  return ms;
}

/** The API's base URL: https, or plain http only to a loopback host (the key would travel in clear). */
function parseApi(entry: Record<string, unknown>, where: string, fallback: string): string {
  if (entry.api === undefined) return fallback;
  const raw = text(entry, "api", where, `the provider API's base URL, e.g. ${fallback}`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Problem(`${where}: 'api' is not a URL; give the provider API's base URL, e.g. ${fallback}`);
  }
  const loopback = url.hostname === "127.0.0.1" || url.hostname === "localhost" || url.hostname === "[::1]";
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback))
    throw new Problem(`${where}: 'api' must be https (plain http only to a loopback host): the admin key would travel in clear`);
  if (url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "")
    throw new Problem(`${where}: 'api' must carry no credentials, query or fragment; give the key with 'key' or 'keyEnv'`);
  return url.href.replace(/\/+$/, "");
}

/** The admin key: inline in the file, or named by `keyEnv` in the daemon's environment — one of the two. */
function parseKey(entry: Record<string, unknown>, where: string, env: NodeJS.ProcessEnv): MeterCredential {
  const inline = own(entry, "key");
  const named = own(entry, "keyEnv");
  if (inline && named) throw new Problem(`${where}: give 'key' or 'keyEnv', not both`);
  if (!inline && !named)
    throw new Problem(`${where}: the admin key is missing; add "keyEnv": "VARIABLE" (the daemon's environment holds it) or "key" (this file, chmod 600)`);
  let value: string;
  if (named) {
    const variable = entry.keyEnv;
    if (typeof variable !== "string" || !ENV_NAME.test(variable))
      throw new Problem(`${where}: 'keyEnv' must name an environment variable, e.g. "TEAMD_ADMIN_KEY"`);
    const got = env[variable];
    if (got === undefined || got === "") throw new Problem(`${where}: the daemon's environment has no ${variable}; start teamd with it set to the admin key`);
    value = got;
  } else {
    if (typeof entry.key !== "string" || entry.key === "") throw new Problem(`${where}: 'key' must be the admin key, a non-empty string`);
    value = entry.key;
  }
  const from = named ? `the value of ${String(entry.keyEnv)}` : "'key'";
  if (Buffer.byteLength(value) < MIN_SECRET_BYTES)
    throw new Problem(`${where}: ${from} is shorter than ${MIN_SECRET_BYTES} bytes; that is not a credential teamd can keep out of replies`);
  if (!KEY_TEXT.test(value)) throw new Problem(`${where}: ${from} holds a space, a line break or a non-ASCII character; give the key alone`);
  return new MeterCredential(value);
}

function parseCommand(entry: Record<string, unknown>, where: string): readonly string[] {
  const command = entry.command;
  const fix = `a list of arguments run without a shell, e.g. ["/usr/local/bin/usage", "--json"]`;
  if (!Array.isArray(command) || command.length === 0 || command.length > MAX_COMMAND_ARGS)
    throw new Problem(`${where}: 'command' must be ${fix} (1 to ${MAX_COMMAND_ARGS} arguments)`);
  for (const arg of command) {
    if (typeof arg !== "string" || arg.includes("\0") || Buffer.byteLength(arg) > MAX_ARG_BYTES)
      throw new Problem(`${where}: 'command' must be ${fix}: each argument a string without NUL, at most ${MAX_ARG_BYTES} bytes`);
  }
  if (command[0] === "") throw new Problem(`${where}: 'command' must start with the program to run`);
  return Object.freeze([...(command as string[])]);
}

function parseMeter(name: string, entry: unknown, where: string, env: NodeJS.ProcessEnv): MeterConfig {
  if (!isName(name)) throw new Problem(`${where}: a meter's name must be ${NAME_RULE}`);
  if (!isMap(entry)) throw new Problem(`${where}: must be an object { "kind": …, "team": …, "lab": …, "every": … }`);
  const kind = entry.kind;
  if (typeof kind !== "string" || !(METER_KINDS as readonly string[]).includes(kind)) {
    const guess = typeof kind === "string" ? closest(kind, METER_KINDS) : undefined;
    throw new Problem(`${where}: 'kind' must be ${METER_KINDS.map((k) => `"${k}"`).join(", ")}${guess !== undefined ? ` (did you mean "${guess}"?)` : ""}`);
  }
  const known = KEYS_OF[kind as MeterKind];
  for (const key of Object.keys(entry)) {
    if (known.includes(key)) continue;
    const guess = closest(key, known);
    throw new Problem(`${where}: ${shownKey(key)} is not a setting of a ${kind} meter${guess !== undefined ? ` (did you mean '${guess}'?)` : ""}; remove it`);
  }
  const team = text(entry, "team", where, "the team whose spend it reports");
  if (!isName(team)) throw new Problem(`${where}: 'team' must be a team name: ${NAME_RULE}`);
  const lab = text(entry, "lab", where, "the lab whose spend it reports, as the team file declares it");
  if (!isDeclaredName(lab))
    throw new Problem(`${where}: 'lab' must be a lab name as the team file declares it (letters, digits and . _ : @ / + -, at most 128)`);
  const everyMs = parseEvery(entry, where);
  const common = { name, team, lab, everyMs };
  switch (kind as MeterKind) {
    case "anthropic-cost": {
      const workspace = text(entry, "workspace", where, `the Anthropic workspace id, "wrkspc_…", or "default"`);
      if (!SOURCE_ID.test(workspace)) throw new Problem(`${where}: 'workspace' must be an Anthropic workspace id ("wrkspc_…") or "default"`);
      return { ...common, kind: "anthropic-cost", workspace, api: parseApi(entry, where, ANTHROPIC_API), key: parseKey(entry, where, env) };
    }
    case "openai-costs": {
      const project = text(entry, "project", where, `the OpenAI project id, "proj_…"`);
      if (!SOURCE_ID.test(project)) throw new Problem(`${where}: 'project' must be an OpenAI project id ("proj_…")`);
      return { ...common, kind: "openai-costs", project, api: parseApi(entry, where, OPENAI_API), key: parseKey(entry, where, env) };
    }
    case "command":
      return { ...common, kind: "command", command: parseCommand(entry, where) };
  }
}

/** What a meter reads: two meters reading the same source would count its usage twice. */
function sourceOf(meter: MeterConfig): string {
  switch (meter.kind) {
    case "anthropic-cost":
      return `the Anthropic workspace ${meter.workspace} at ${meter.api}`;
    case "openai-costs":
      return `the OpenAI project ${meter.project} at ${meter.api}`;
    case "command":
      return `the same command`;
  }
}

const sourceKey = (meter: MeterConfig): string =>
  meter.kind === "command"
    ? `command\0${meter.command.join("\0")}`
    : `${meter.kind}\0${meter.api}\0${meter.kind === "anthropic-cost" ? meter.workspace : meter.project}`;

/**
 * Check the parsed file's meters. Every meter's first problem is reported, each naming the key
 * and its fix, joined by `; `; any problem refuses the whole file.
 */
export function parseMeters(data: unknown, env: NodeJS.ProcessEnv, path: string): MetersLoad {
  if (!isMap(data) || !isMap(data.meters))
    return { ok: false, reason: `${path} must hold { "meters": { NAME: { "kind": …, "team": …, "lab": …, "every": … } } }` };
  const extra = Object.keys(data).filter((k) => k !== "meters");
  if (extra.length > 0) return { ok: false, reason: `${path}: ${shownKey(extra[0] as string)} is not a top-level setting; the file holds "meters" only` };
  const meters: MeterConfig[] = [];
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const [name, entry] of Object.entries(data.meters)) {
    const where = isName(name) ? `${path}: meter '${name}'` : `${path}: a meter`;
    try {
      const meter = parseMeter(name, entry, where, env);
      const key = sourceKey(meter);
      const other = seen.get(key);
      if (other !== undefined)
        throw new Problem(`${where}: meters '${other}' and '${name}' both read ${sourceOf(meter)}, so its usage would count twice; keep one`);
      seen.set(key, name);
      meters.push(meter);
    } catch (error) {
      if (!(error instanceof Problem)) throw error;
      problems.push(error.message);
    }
  }
  if (problems.length > 0) return { ok: false, reason: problems.join("; ") };
  return { ok: true, meters };
}

/** Every key the meters hold: what the daemon scrubs from what it prints and checks no record carries. */
export function meterSecrets(meters: readonly MeterConfig[]): string[] {
  return meters.flatMap((m) => (m.kind === "command" ? [] : [m.key.reveal()]));
}
