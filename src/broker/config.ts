import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { isAbsolute, join } from "node:path";
import { MIN_SECRET_BYTES } from "./scrub.js";

/**
 * The owner's tracker configuration (§11). Credentials live here — in a file only the
 * daemon's user can read, outside everything a seat can see — or in the daemon's environment;
 * never in the team file (which names trackers only) and never in a seat. The file is read at
 * each broker call, so an owner's edit takes effect without a restart; a file readable by
 * group or other, not a regular file, or owned by another user is refused, naming the fix.
 *
 * {
 *   "trackers": {
 *     "web":   { "kind": "github", "repo": "acme/web", "tokenEnv": "TEAMD_GITHUB_TOKEN" },
 *     "ops":   { "kind": "github", "repo": "acme/ops", "token": "…", "api": "https://ghe.example/api/v3",
 *                "claimLabel": "teamd-claimed", "assignee": "acme-bot" },
 *     "notes": { "kind": "file", "dir": "/home/me/tasks" }
 *   }
 * }
 */
export interface FileTrackerConfig {
  readonly kind: "file";
  readonly name: string;
  readonly dir: string;
}

export interface GithubTrackerConfig {
  readonly kind: "github";
  readonly name: string;
  readonly owner: string;
  readonly repo: string;
  /** The REST API's base URL (default https://api.github.com); http only to a loopback host. */
  readonly api: string;
  readonly token: string;
  readonly claimLabel: string;
  /** The login a claim assigns (optional): the owner's bot account, never the seat's. */
  readonly assignee: string;
}

export type TrackerConfig = FileTrackerConfig | GithubTrackerConfig;

export class TrackerConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TrackerConfigError";
  }
}

/** Where the owner's configuration is: `$TEAMD_BROKER_TRACKERS`, else `TEAMD_HOME/broker/trackers.json`. */
export function trackersPath(teamdHome: string, env: NodeJS.ProcessEnv): string {
  const given = env.TEAMD_BROKER_TRACKERS;
  if (given !== undefined && given !== "") {
    if (!isAbsolute(given)) throw new TrackerConfigError(`TEAMD_BROKER_TRACKERS='${given}' is not an absolute path; give the file's full path`);
    return given;
  }
  return join(teamdHome, "broker", "trackers.json");
}

/** The embedded default for a task resource no `trackers:` entry maps: a folder of Markdown tasks. */
export function defaultFileTracker(teamdHome: string, team: string, task: string): FileTrackerConfig {
  return { kind: "file", name: "(default)", dir: join(teamdHome, "broker", "tasks", team, encodeURIComponent(task)) };
}

const MAX_CONFIG_BYTES = 256 * 1024;
const TRACKER_NAME = /^[a-z][a-z0-9_-]{0,62}$/;

/** Read and check the configuration file; undefined when it does not exist. */
export async function readTrackersFile(path: string, uid: number | undefined = process.getuid?.()): Promise<unknown> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    if (code === "ELOOP") throw new TrackerConfigError(`${path} is a symbolic link; put the tracker configuration in a regular file (chmod 600)`);
    throw new TrackerConfigError(`${path} cannot be read (${code ?? "error"})`);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new TrackerConfigError(`${path} is not a regular file`);
    if ((stat.mode & 0o077) !== 0) {
      throw new TrackerConfigError(
        `${path} is readable or writable by group or other (mode ${(stat.mode & 0o777).toString(8)}); it holds credentials: chmod 600 ${path}`,
      );
    }
    if (uid !== undefined && stat.uid !== uid)
      throw new TrackerConfigError(`${path} belongs to uid ${stat.uid}, not to the daemon's user (${uid}); chown it to the daemon's user and chmod 600`);
    if (stat.size > MAX_CONFIG_BYTES) throw new TrackerConfigError(`${path} is larger than ${MAX_CONFIG_BYTES} bytes`);
    const text = await handle.readFile("utf8");
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // Never quote the file: it holds credentials.
      throw new TrackerConfigError(`${path} is not valid JSON`);
    }
  } finally {
    await handle.close();
  }
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function text(entry: Record<string, unknown>, key: string, where: string, fallback?: string): string {
  const value = entry[key];
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== "string" || value === "") throw new TrackerConfigError(`${where}: '${key}' must be a non-empty string`);
  return value;
}

function parseApi(raw: string, where: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TrackerConfigError(`${where}: 'api' is not a URL`);
  }
  const loopback = url.hostname === "127.0.0.1" || url.hostname === "localhost" || url.hostname === "[::1]";
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) {
    throw new TrackerConfigError(`${where}: 'api' must be https (plain http only to a loopback host): the token would travel in clear`);
  }
  if (url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "")
    throw new TrackerConfigError(`${where}: 'api' must carry no credentials, query or fragment`);
  return url.href.replace(/\/+$/, "");
}

/** One named tracker from the parsed file; credentials from the file or the daemon's environment. */
export function trackerFromConfig(data: unknown, name: string, env: NodeJS.ProcessEnv, path: string): TrackerConfig {
  if (!TRACKER_NAME.test(name)) throw new TrackerConfigError(`'${name}' is not a tracker name`);
  if (data === undefined)
    throw new TrackerConfigError(
      `the team file maps a task resource to tracker '${name}', and there is no tracker configuration at ${path}; create it (mode 600) with "trackers": { "${name}": { … } }`,
    );
  if (!isMap(data) || !isMap(data.trackers)) throw new TrackerConfigError(`${path} must hold { "trackers": { name: { kind, … } } }`);
  const entry = Object.prototype.hasOwnProperty.call(data.trackers, name) ? data.trackers[name] : undefined;
  if (!isMap(entry)) throw new TrackerConfigError(`tracker '${name}' is not configured in ${path}; add it under "trackers"`);
  const where = `${path}: tracker '${name}'`;
  if (entry.kind === "file") {
    const dir = text(entry, "dir", where);
    if (!isAbsolute(dir)) throw new TrackerConfigError(`${where}: 'dir' must be an absolute path`);
    return { kind: "file", name, dir };
  }
  if (entry.kind !== "github") throw new TrackerConfigError(`${where}: 'kind' must be "file" or "github"`);
  const full = text(entry, "repo", where);
  const m = /^([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)$/.exec(full);
  if (m === null) throw new TrackerConfigError(`${where}: 'repo' must be OWNER/NAME`);
  let token: string;
  if (entry.token !== undefined && entry.tokenEnv !== undefined) throw new TrackerConfigError(`${where}: give 'token' or 'tokenEnv', not both`);
  if (entry.tokenEnv !== undefined) {
    const variable = text(entry, "tokenEnv", where);
    const value = env[variable];
    if (value === undefined || value === "") throw new TrackerConfigError(`${where}: the daemon's environment has no ${variable}; start teamd with it set`);
    token = value;
  } else token = text(entry, "token", where);
  if (Buffer.byteLength(token) < MIN_SECRET_BYTES)
    throw new TrackerConfigError(`${where}: the token is shorter than ${MIN_SECRET_BYTES} bytes; that is not a credential teamd can keep out of replies`);
  if (/[\r\n]/.test(token)) throw new TrackerConfigError(`${where}: the token holds a line break`);
  return {
    kind: "github",
    name,
    owner: m[1] as string,
    repo: m[2] as string,
    api: parseApi(text(entry, "api", where, "https://api.github.com"), where),
    token,
    claimLabel: text(entry, "claimLabel", where, "teamd-claimed"),
    assignee: entry.assignee === undefined ? "" : text(entry, "assignee", where),
  };
}

/** Every credential a configuration holds: what the broker scrubs from every reply it serves. */
export function configSecrets(config: TrackerConfig): string[] {
  return config.kind === "github" ? [config.token] : [];
}

/**
 * Every credential the configuration file names — each tracker's token and the value of each
 * tokenEnv — so a reply through one tracker never carries another's either.
 */
export function allSecrets(data: unknown, env: NodeJS.ProcessEnv): string[] {
  if (!isMap(data) || !isMap(data.trackers)) return [];
  const out: string[] = [];
  for (const entry of Object.values(data.trackers)) {
    if (!isMap(entry)) continue;
    if (typeof entry.token === "string") out.push(entry.token);
    if (typeof entry.tokenEnv === "string") {
      const value = env[entry.tokenEnv];
      if (value !== undefined) out.push(value);
    }
  }
  return out.filter((s) => Buffer.byteLength(s) >= MIN_SECRET_BYTES);
}
