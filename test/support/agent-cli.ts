import { accessSync, constants, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * Where scripts/agents/install.sh put a pinned agent CLI (scripts/agents/pinned.json), or why
 * it is not there. The suite runs the real CLI only from that cache: never one found on PATH,
 * whose version nobody chose.
 */
export interface AgentCli {
  readonly name: string;
  readonly version: string;
  /** The file to run: a native binary, or (when `script`) a program for node. */
  readonly bin?: string;
  readonly script?: boolean;
  /** Set when `bin` is absent: what is missing and the command that installs it. */
  readonly missing?: string;
}

interface Pinned {
  readonly package: string;
  readonly version: string;
  readonly native?: Readonly<Record<string, string>>;
  /** A node program, for every platform (instead of `native`). */
  readonly script?: string;
}

export function agentCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.TEAMD_AGENT_CACHE ?? join(env.XDG_CACHE_HOME ?? join(env.HOME ?? homedir(), ".cache"), "teamd", "agents");
}

export function pinnedAgentCli(name: string): AgentCli {
  const pinned = (JSON.parse(readFileSync(new URL("../../scripts/agents/pinned.json", import.meta.url), "utf8")) as Record<string, Pinned>)[name];
  if (pinned === undefined) throw new Error(`scripts/agents/pinned.json pins no agent named ${name}`);
  const platform = `${process.platform}-${process.arch}`;
  const entry = pinned.native?.[platform] ?? pinned.script;
  if (entry === undefined) return { name, version: pinned.version, missing: `${pinned.package} has no native build pinned for ${platform}` };
  const bin = join(agentCacheDir(), `${name}@${pinned.version}`, "node_modules", entry);
  try {
    accessSync(bin, pinned.script !== undefined ? constants.R_OK : constants.X_OK);
    return { name, version: pinned.version, bin, ...(pinned.script !== undefined ? { script: true } : {}) };
  } catch {
    return { name, version: pinned.version, missing: `${pinned.package}@${pinned.version} is not installed at ${bin}; run scripts/agents/install.sh` };
  }
}
