import { execFile } from "node:child_process";
import { rm } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/** GNU rm: it walks by file descriptor (fts, physical: no link is followed), so any depth is removed. */
const RM = "/bin/rm";
const CHMOD = "/bin/chmod";
const RM_TIMEOUT_MS = 120_000;

/**
 * Remove a tree a seat wrote (its per-run tmp) without following any link in it, at any depth.
 * Node's recursive rm walks by full path name, so a tree deeper than PATH_MAX — which a seat
 * makes with relative mkdir and chdir — fails it with ENAMETOOLONG (found by an attack from a
 * seat, test/escape/seat-output.test.ts); then GNU rm, which walks by descriptor, on the same
 * filesystem only (after GNU chmod gives back folders a seat of the daemon's own uid locked). The seat's processes are gone when this runs (the stop kills them first).
 */
export async function removeSeatTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true });
    return;
  } catch {
    // ENAMETOOLONG (a tree deeper than PATH_MAX), or EACCES: in user mode the seat is the
    // daemon's uid and can chmod 000 a folder of its own, which that uid then cannot empty.
  }
  // GNU chmod ignores every link met in a recursive walk (it never changes a link's target), so
  // this gives the daemon's own uid back the folders it owns, and nothing outside the tree.
  await run(CHMOD, ["-R", "u+rwX", "--", path], { timeout: RM_TIMEOUT_MS }).catch(() => undefined);
  await run(RM, ["-rf", "--one-file-system", "--", path], { timeout: RM_TIMEOUT_MS });
}
