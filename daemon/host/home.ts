import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { readFileSync, statSync } from "node:fs";

/** DESIGN.md "Modes": a daemon running as root is always in system mode. */
export type Mode = "user" | "system";

export interface TeamdHome {
  readonly mode: Mode;
  /** TEAMD_HOME: every piece of the daemon's state lives under it. */
  readonly root: string;
  /** Sockets and the seat registry; 0700 (user mode) or 0750 with group teamd (system mode). */
  readonly runDir: string;
  readonly controlSocket: string;
  readonly seatSocketDir: string;
  /** Group `teamd` in system mode, if the machine has it. */
  readonly ownerGid: number | undefined;
}

export function detectMode(uid: number | undefined = process.getuid?.()): Mode {
  return uid === 0 ? "system" : "user";
}

/** TEAMD_HOME, else the system path in system mode, else $XDG_STATE_HOME/teamd, else ~/.local/state/teamd. */
export function resolveHomeDir(env: NodeJS.ProcessEnv, mode: Mode): string {
  if (env.TEAMD_HOME) return resolve(env.TEAMD_HOME);
  if (mode === "system") return "/var/lib/teamd";
  if (env.XDG_STATE_HOME) return join(resolve(env.XDG_STATE_HOME), "teamd");
  return join(homedir(), ".local", "state", "teamd");
}

/** The gid of a group by name, from /etc/group (Node has no getgrnam). */
export function lookupGroupId(name: string, groupFile = "/etc/group"): number | undefined {
  let text: string;
  try {
    text = readFileSync(groupFile, "utf8");
  } catch {
    return undefined;
  }
  for (const line of text.split("\n")) {
    const [group, , gid] = line.split(":");
    if (group === name && gid !== undefined && /^\d+$/.test(gid)) return Number(gid);
  }
  return undefined;
}

/** The system daemon's home: where a root daemon keeps its state when TEAMD_HOME is not set. */
export const SYSTEM_HOME = "/var/lib/teamd";

function ownerUid(path: string): number | undefined {
  try {
    return statSync(path).uid;
  } catch {
    return undefined;
  }
}

/**
 * The home a command works on, and its mode. A process running as root is in system mode.
 * An ordinary user's command speaks to a system daemon when the home it names belongs to
 * root (an owner in group `teamd`: DESIGN.md "Modes"): TEAMD_HOME set to a root-owned
 * directory, or — with TEAMD_HOME unset and no user daemon of its own
 * (~/.local/state/teamd) — the system home, when it exists. `teamd serve` checks that its
 * own uid fits the mode (a user cannot run a system home's daemon).
 */
export function resolveHome(env: NodeJS.ProcessEnv = process.env, uid: number | undefined = process.getuid?.()): TeamdHome {
  const processMode = detectMode(uid);
  let root = resolveHomeDir(env, processMode);
  if (processMode === "user" && !env.TEAMD_HOME && ownerUid(root) === undefined && ownerUid(SYSTEM_HOME) === 0) root = SYSTEM_HOME;
  const mode: Mode = processMode === "system" || ownerUid(root) === 0 ? "system" : "user";
  const runDir = join(root, "run");
  return {
    mode,
    root,
    runDir,
    controlSocket: join(runDir, "control.sock"),
    seatSocketDir: join(runDir, "seats"),
    ownerGid: mode === "system" ? lookupGroupId("teamd") : undefined,
  };
}

/** A seat's socket on the host. The containment issue binds it into the seat at /run/teamd/shim.sock. */
export function seatSocketPath(home: TeamdHome, team: string, seat: string): string {
  return join(home.seatSocketDir, `${team}.${seat}.sock`);
}
