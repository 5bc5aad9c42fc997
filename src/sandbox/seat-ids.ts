import { access } from "node:fs/promises";
import { accessSync, constants as fsConstants } from "node:fs";
import { refuseContainment, type ContainmentRefusal } from "./refusal.js";

/**
 * The uid/gid switch for the spawn. Root switches to the seat's user (never stays root);
 * anyone else can only run seats as themselves — unprivileged bwrap maps just the caller.
 */
export function switchIds(user: { uid: number; gid: number } | undefined): { spawn: { uid?: number; gid?: number } } | { refusal: ContainmentRefusal } {
  const uid = process.getuid?.();
  const gid = process.getgid?.();
  if (user === undefined) {
    if (uid === 0)
      return {
        refusal: refuseContainment(
          "containment.host-root",
          "teamd runs as root and no seat user was given; a seat never runs as root",
          "give the seat the dedicated unprivileged user (system mode)",
        ),
      };
    return { spawn: {} };
  }
  if (user.uid === 0 || user.gid === 0) {
    return {
      refusal: refuseContainment(
        "containment.host-root",
        `the plan runs the seat as uid ${user.uid}, gid ${user.gid}; a seat never runs as root`,
        "plan the seat for an unprivileged user",
      ),
    };
  }
  if (uid === 0) return { spawn: { uid: user.uid, gid: user.gid } };
  if (uid !== user.uid || gid !== user.gid) {
    return {
      refusal: refuseContainment(
        "containment.unavailable",
        `teamd runs as uid ${uid}, gid ${gid} and cannot start a seat as uid ${user.uid}, gid ${user.gid}`,
        "plan the seat for teamd's own user (user mode), or run teamd as root (system mode) to run seats as a dedicated user",
      ),
    };
  }
  return { spawn: {} };
}

/**
 * access(2) in line: a launch checks its chain's programs (bash, prlimit, setpriv) on every
 * start, and through libuv's pool each answer waited a turn of a busy daemon (~0.3-0.5 ms each
 * of every `teamd exec`, issue 26), where the call itself takes microseconds.
 */
export function isExecutableNow(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export async function isExecutable(path: string): Promise<boolean> {
  return access(path, fsConstants.X_OK).then(
    () => true,
    () => false,
  );
}
