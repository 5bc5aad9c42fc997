import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";

/**
 * A throwaway git index file (GIT_INDEX_FILE) for building one commit in a bare repository
 * without a work tree — `teamd-shim file write` commits a single file onto a seat's branch in
 * the hub this way. It lives in the daemon's scratch folder under TEAMD_HOME, named by the
 * caller's id so concurrent writes never share one, and is removed when the work settles,
 * whatever it returned or threw: the hub's own index is never touched, and no index is left.
 * The scratch folder is made (0700) when missing: a seat's first file write may come before
 * any push made it.
 */
export async function withScratchIndex<T>(scratch: string, id: string, work: (index: string) => Promise<T>): Promise<T> {
  const index = join(scratch, `index-${id}`);
  await mkdir(scratch, { recursive: true, mode: 0o700 });
  try {
    return await work(index);
  } finally {
    await rm(index, { force: true });
  }
}
