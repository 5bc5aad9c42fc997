import { constants } from "node:fs";
import { lstat, open, realpath, rm, stat } from "node:fs/promises";
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
    // On the open file, never its path: a link renamed over it in between would hand its target to the root's owner.
    if (asRootOwner) await handle.chown(info.uid, info.gid);
  } finally {
    await handle.close();
  }
  return { path };
}

/** Undo what a refused create made: its file, and its hub when it made one. */
export async function removeMade(paths: readonly string[]): Promise<void> {
  for (const path of paths) await rm(path, { recursive: true, force: true }).catch(() => undefined);
}

function inside(path: string, folder: string): boolean {
  const rel = relative(folder, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * Why `root` cannot be a created team's repository, or undefined when it can: it must be a
 * directory named by its own real path (no link anywhere in it, so none can be swapped in later),
 * outside TEAMD_HOME (where every seat's writable folders are: a root a seat can write is one it
 * could turn into a link to another repository), with a `.git` that is a directory of its own
 * (a gitfile would point the daemon's clone at another repository).
 */
export async function unfitRoot(root: string, teamdHome: string): Promise<string | undefined> {
  const real = await realpath(root).catch(() => undefined);
  if (real === undefined) return `${root} does not exist on this machine`;
  if (real !== root) return `${root} is not its own real path (${real}): name the root without a link in it`;
  const home = await realpath(teamdHome).catch(() => resolve(teamdHome));
  if (inside(real, home) || inside(home, real))
    return `${root} is inside TEAMD_HOME (or holds it), where seats write: a child's root is a repository of yours outside it`;
  const info = await lstat(real).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) return `${root} is not a directory`;
  const git = await lstat(join(real, ".git")).catch(() => undefined);
  if (git === undefined || !git.isDirectory())
    return `${root} has no .git directory of its own (a repository with a commit, not a linked worktree or a gitfile)`;
  return undefined;
}
