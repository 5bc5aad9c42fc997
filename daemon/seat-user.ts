import { readFileSync } from "node:fs";
import { RefusalError } from "../src/rpc/index.js";
import type { Mode } from "./home.js";

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

export function resolveSeatUser(mode: Mode): SeatUser {
  if (mode === "user") {
    return { name: "self", uid: process.getuid?.() ?? -1, gid: process.getgid?.() ?? -1 };
  }
  const user = lookupUser(SEAT_SYSTEM_USER);
  if (user === undefined) {
    throw new RefusalError(
      "containment.host-root",
      `teamd runs as root (system mode) and the unprivileged seat user '${SEAT_SYSTEM_USER}' does not exist; a seat never runs as root. ` +
        `Fix: run scripts/setup.sh as root, or: useradd --system --user-group --no-create-home --shell /usr/sbin/nologin ${SEAT_SYSTEM_USER}`,
    );
  }
  if (user.uid === 0 || user.gid === 0) {
    throw new RefusalError("containment.host-root", `the seat user '${SEAT_SYSTEM_USER}' has uid ${user.uid}, gid ${user.gid}; fix: give it an unprivileged uid and gid`);
  }
  return user;
}
