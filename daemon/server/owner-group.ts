import { chmod, chown, lstat, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import type { TeamdHome } from "../host/home.js";
import { ledgerLayout } from "../host/ledger-host.js";
import { seatRegistryDir } from "../host/seat-layout.js";

/**
 * System mode (DESIGN.md "Modes"): the daemon runs as root, the seats as `teamd-seat`, and
 * the owner is an ordinary user in group `teamd`. What the owner must reach without root —
 * so that the machine-wide stop works when the daemon is hung or dead (§11, §15) and the
 * owner can read their own record — is opened to that group, and nothing more:
 *
 * - `flags/` is group-writable (setgid, so each flag is the group's; sticky, so an owner
 *   removes only their own files): `teamd stop --all` and `teamd revoke` write the
 *   owner-signed flag there themselves. A flag is verified by its signature, never by who
 *   wrote the file, so write access lets a member add a stop, never forge one.
 * - `keys/` is group-readable for the public halves (the pinned owner key the CLI checks a
 *   flag against; the daemon's public key for verify); the daemon's private key stays 0600.
 * - `ledger/` is group-readable (the owner's `teamd log`, `notices`, `verify`, and status's
 *   unseen count read it read-only); only the daemon writes it.
 * - `run/seats.d/` (the seat registry) is group-readable: the CLI kills seats from it.
 *
 * The seat user is not in the group, so none of it is reachable from a seat (and none of it
 * is bound into one). Membership of `teamd` is the owner's, and it is root-equivalent on
 * this machine by design: an owner's deploy commands and notice hook run as the daemon's
 * user (docs/service.md).
 *
 * Without the group (the machine has none) or outside system mode this does nothing: the
 * home stays the daemon user's alone.
 */
export async function openToOwnerGroup(home: TeamdHome): Promise<void> {
  const gid = home.ownerGid;
  if (home.mode !== "system" || gid === undefined) return;
  const layout = ledgerLayout(home);
  const share = async (path: string, mode: number) => {
    await chown(path, 0, gid);
    await chmod(path, mode);
  };
  await mkdir(layout.flagsDir, { recursive: true, mode: 0o700 });
  await share(layout.flagsDir, 0o3770);
  await mkdir(layout.keysDir, { recursive: true, mode: 0o700 });
  await share(layout.keysDir, 0o750);
  for (const pub of [layout.ownerPublicKey, layout.daemonPublicKey]) {
    if (await exists(pub)) await share(pub, 0o640);
  }
  // setgid: every registration and ledger file made later is the group's too.
  await mkdir(seatRegistryDir(home), { recursive: true, mode: 0o700 });
  await share(seatRegistryDir(home), 0o2750);
  if (await exists(layout.dir)) {
    await share(layout.dir, 0o2750);
    for (const name of await readdir(layout.dir)) {
      // The store and its journal files; nothing else of the ledger's is the owner's to read.
      if (name === "ledger.db" || name.startsWith("ledger.db-") || name === "head") await share(join(layout.dir, name), 0o640);
    }
  }
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}
