import { readFileSync } from "node:fs";

/**
 * Which host user a seat runs as (DESIGN.md "Modes"). In user mode: the daemon's own user,
 * inside an unprivileged user namespace. In system mode (the daemon is root): the dedicated
 * unprivileged system user `teamd-seat` — as root, `bwrap --uid N` would still map the seat
 * to host uid 0, so the launcher switches to this user before bwrap. Without that user no
 * seat starts (fail closed); setup creates it.
 */
export const SEAT_SYSTEM_USER = "teamd-seat";

export interface SeatUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  /** The ids the seat sees inside its user namespace, when not these (system mode: daemon/host/seat-uids.ts). */
  readonly inside?: { readonly uid: number; readonly gid: number };
}

/** A user by name from /etc/passwd (Node has no getpwnam). */
export function lookupUser(name: string, passwdFile = "/etc/passwd"): SeatUser | undefined {
  let text: string;
  try {
    text = readFileSync(passwdFile, "utf8");
  } catch {
    return undefined;
  }
  for (const line of text.split("\n")) {
    const [user, , uid, gid] = line.split(":");
    if (user === name && uid !== undefined && gid !== undefined && /^\d+$/.test(uid) && /^\d+$/.test(gid)) {
      return { name, uid: Number(uid), gid: Number(gid) };
    }
  }
  return undefined;
}
