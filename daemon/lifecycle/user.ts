import { RefusalError } from "../../src/rpc/errors.js";
import type { Mode } from "../host/home.js";
import { lookupUser, SEAT_SYSTEM_USER, type SeatUser } from "../host/users.js";

export { SEAT_SYSTEM_USER, type SeatUser };

/** The user a seat of this mode runs as; in system mode, fails closed without an unprivileged seat user. */

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
    throw new RefusalError(
      "containment.host-root",
      `the seat user '${SEAT_SYSTEM_USER}' has uid ${user.uid}, gid ${user.gid}; fix: give it an unprivileged uid and gid`,
    );
  }
  return user;
}
