import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { readFileSync } from "node:fs";

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

export function resolveHome(env: NodeJS.ProcessEnv = process.env): TeamdHome {
  const mode = detectMode();
  const root = resolveHomeDir(env, mode);
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
