import { open } from "node:fs/promises";

/**
 * fsync what a path names, opened read-only: a file's data, or a folder's entries (those made,
 * renamed or removed in it), on disk. The one way teamd makes a write durable outside SQLite:
 * the hub's objects and refs (durable-git.ts, git-receive.ts) and the ledger's own files
 * (src/ledger/atomic-file.ts).
 */
export async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
