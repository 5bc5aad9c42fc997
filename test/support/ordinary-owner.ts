import { chownSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * An ordinary owner for tests that run as root: the daemon and the CLI run as `nobody` (a
 * user-mode daemon, seats without cgroups of their own), over a tree handed to it.
 */
export const NOBODY = 65534;

/** Hand a tree to nobody, entry by entry (the harness's temporary folder: its repository, home and keys). */
export function chownTreeToNobody(path: string): void {
  chownSync(path, NOBODY, NOBODY);
  if (statSync(path).isDirectory()) for (const name of readdirSync(path)) chownTreeToNobody(join(path, name));
}
