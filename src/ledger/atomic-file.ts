import { randomBytes } from "node:crypto";
import { link, open, readdir, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fsyncPath } from "../effects/fsync-path.js";

/**
 * Atomic file replacement for the signed head and the local flags: write a temp file in the
 * same directory, fsync it, rename it over the target, fsync the directory. A reader sees the
 * old file or the new one, never a torn one, and after the directory fsync the rename
 * survives a power cut. An interrupted write leaves at most a temp file, which the next open
 * removes (removeStaleTemps); the target itself is never half-written.
 */

/** Temp names carry this suffix; nothing else in teamd's directories ends with it. */
export const TEMP_SUFFIX = ".tmp";

/** fsync a folder: its entries (a rename into it) on disk. */
export const fsyncDir: (dir: string) => Promise<void> = fsyncPath;

export interface AtomicWriteOptions {
  readonly mode?: number;
  /** Refuse to replace an existing target (the rename is then a link-and-unlink). */
  readonly exclusive?: boolean;
}

/** A fresh temp name beside `path`, of the shape removeStaleTemps recognizes. */
export function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString("hex")}${TEMP_SUFFIX}`);
}

export async function writeFileAtomic(path: string, bytes: Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const dir = dirname(path);
  const temp = tempPathFor(path);
  const handle = await open(temp, "wx", options.mode ?? 0o600);
  try {
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (options.exclusive) {
      // link(2) fails with EEXIST instead of replacing: an existing flag is never overwritten.
      try {
        await link(temp, path);
      } finally {
        await unlink(temp).catch(() => undefined);
      }
    } else {
      await rename(temp, path);
    }
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await fsyncDir(dir);
}

/** Remove temp files an interrupted writeFileAtomic left for `target`'s name in its directory. */
export async function removeStaleTemps(dir: string, targetName?: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    if (!name.startsWith(".") || !name.endsWith(TEMP_SUFFIX)) continue;
    if (targetName !== undefined && !name.startsWith(`.${targetName}.`)) continue;
    if (
      await unlink(join(dir, name)).then(
        () => true,
        () => false,
      )
    )
      removed++;
  }
  return removed;
}
