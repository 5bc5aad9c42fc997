import { constants } from "node:fs";
import { chown, lstat, open, rm, stat } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";

/**
 * A created team's repository root (§10): a folder the owner named in a create-bound, which the
 * daemon reads start files from and writes the child's team file into on a seat's behalf. Nothing
 * here follows a link: the seat chose the relative paths and the file's bytes, the owner the root.
 */

/** A pinned start file is read from a root at most this long. */
const MAX_START_FILE_BYTES = 1024 * 1024;

/** Read a file under `root` by its repo-relative path, no link followed anywhere on the way; undefined when it cannot be. */
export async function readUnderRoot(root: string, relativePath: string): Promise<Uint8Array | undefined> {
  const target = resolve(root, relativePath);
  const rel = relative(root, target);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) return undefined;
  let at = root;
  for (const part of rel.split(sep)) {
    at = join(at, part);
    const info = await lstat(at).catch(() => undefined);
    if (info === undefined || info.isSymbolicLink()) return undefined;
  }
  const handle = await open(target, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
  if (handle === undefined) return undefined;
  try {
    const info = await handle.stat();
    if (!info.isFile() || info.size > MAX_START_FILE_BYTES) return undefined;
    return new Uint8Array(await handle.readFile());
  } finally {
    await handle.close();
  }
}

/**
 * Write `name` in `root` only if nothing is there (no link followed, never over a file: a root
 * with a team file is someone's), owned like the root itself when `asRootOwner`. The error's code
 * when it cannot be made.
 */
export async function writeNewInRoot(root: string, name: string, text: string, asRootOwner: boolean): Promise<{ path: string } | { error: string }> {
  const info = await stat(root).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) return { error: "ENOTDIR" };
  const path = join(root, name);
  const handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600).catch(
    (error: NodeJS.ErrnoException) => error,
  );
  if (handle instanceof Error) return { error: handle.code ?? "error" };
  try {
    await handle.writeFile(text);
    if (asRootOwner) await chown(path, info.uid, info.gid);
  } finally {
    await handle.close();
  }
  return { path };
}

/** Undo what a refused create made: its file, and its hub when it made one. */
export async function removeMade(paths: readonly string[]): Promise<void> {
  for (const path of paths) await rm(path, { recursive: true, force: true }).catch(() => undefined);
}
