import { constants } from "node:fs";
import { lstat, mkdir, mkdtemp, open, readdir, rm, unlink, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { exportTree, ExportRefused } from "./git-export.js";

/**
 * The folder a deploy command runs in (§3 deploy, §10), and the owner's pinned files that go
 * into it. A deploy runs outside every sandbox as the daemon's user, so what it runs on is
 * made fresh under TEAMD_HOME (never a shared temp folder another user could plant in), owner
 * only, for each deploy, and removed after it — or, where a daemon died mid-deploy, swept at
 * the next start before any deploy.
 *
 * The files are read and written without following a link. A pinned file is the owner's
 * regular file as it sits in the owner's repository, under real folders of it: every component
 * of its path is opened from the repository root without following a link (the owner's working
 * tree holds whatever the trunk merged, and a symbolic link is a blob a seat can push, so a
 * `ci/` there may point anywhere on the host), and the bytes are read from the descriptor that
 * open returned — nothing is swapped between the check and the read. It is written over the
 * artifact's tree only where the artifact put nothing, or a regular file, on its path — never
 * through a symbolic link or over a folder the artifact planted there — as a new file with
 * exactly the pinned mode (an artifact's file in its place is removed first, so neither its
 * mode nor its inode carries over). The bytes read are the bytes the caller checks against the
 * pin and the bytes written: there is no second read to race.
 */

/** One pinned file as read: its bytes and the mode it is written with (executable or not). */
export interface PinnedFile {
  readonly bytes: Buffer;
  readonly mode: number;
}

/** A prepared deploy folder: `tree/` exactly the artifact's tree with the pinned files over it, `home/` an empty HOME. */
export interface DeployFolder {
  readonly dir: string;
  readonly tree: string;
  readonly home: string;
  /** The command's working folder: `tree/` and the owner's workdir under it, a real folder of the tree at every component (or not there at all). */
  readonly cwd: string;
}

/** Deploy folders live here, under TEAMD_HOME; nothing else does. */
function deploysRoot(teamdHome: string): string {
  return join(teamdHome, "deploys");
}

/** Why a pinned file was not read: the words after its path, naming a link where one was in the way. */
export interface PinnedFileAbsent {
  readonly absent: string;
  /** A symbolic link was in the way (at the file or at a folder of its path): it was not followed. */
  readonly link: boolean;
  /** Nothing is at the path (or at a folder of it), and every folder before that is a real one. */
  readonly missing?: true;
}

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = constants;

/**
 * Open `name` inside the folder `dir` is open on, never following a link at `name`. On Linux,
 * through `/proc/self/fd/N/`: the folder is the one already opened (openat), so no component
 * checked before can be swapped for a link. Elsewhere (no deploy runs there: seats do not
 * start) by the path so far, each prefix opened without following its last component — there a
 * folder swapped for a link between two opens would be followed.
 */
function beneath(dir: { readonly handle: FileHandle; readonly path: string }, name: string): string {
  return process.platform === "linux" ? `/proc/self/fd/${dir.handle.fd}/${name}` : join(dir.path, name);
}

/**
 * One pinned file from the owner's repository, or why not: missing, not a regular file, or a
 * symbolic link at it or at any folder of its path (never followed). Each component is opened
 * from the repository root with O_NOFOLLOW (folders with O_DIRECTORY), and the file is read from
 * its own descriptor after fstat says it is a regular file.
 */
export async function readPinnedFile(repository: string, path: string): Promise<PinnedFile | PinnedFileAbsent> {
  return atPinnedPath(repository, path, async (handle, mode) => ({ bytes: await handle.readFile(), mode }));
}

/**
 * Whether `path` is a regular file under real folders of `root` (the same walk as
 * readPinnedFile, never following a link), without reading it: a seat's clone can hold a file
 * of any size there.
 */
export async function pinnedPathIsFile(root: string, path: string): Promise<true | PinnedFileAbsent> {
  return atPinnedPath(root, path, async () => true as const);
}

/**
 * Make what is missing of `path` under `root` — folders, then an empty file — each beneath the
 * folder already opened (never following a link, the file O_EXCL), owned by `owner` when given:
 * the mount point a pin is bound onto, made by teamd before the seat's launch so that bwrap
 * never makes one in the seat's tree. Refused (why, as readPinnedFile says it) when something
 * other than a real folder is in the way.
 */
export async function makeMissingFile(root: string, path: string, owner?: { readonly uid: number; readonly gid: number }): Promise<true | PinnedFileAbsent> {
  const parts = path.split("/");
  if (parts.some((part) => part === "" || part === "." || part === "..")) return { absent: "is not a canonical path of the repository", link: false };
  let dir: { handle: FileHandle; path: string } = { handle: await open(root, O_RDONLY | O_DIRECTORY), path: root };
  try {
    for (let i = 0; i < parts.length; i++) {
      const name = parts[i] as string;
      const at = beneath(dir, name);
      if (i === parts.length - 1) {
        const made = await open(at, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644).catch((error: NodeJS.ErrnoException) => error);
        if (made instanceof Error)
          return pinnedPathIsFile(root, path).then((seen) => (seen === true ? true : ({ ...seen, missing: undefined } as PinnedFileAbsent)));
        if (owner !== undefined) await made.chown(owner.uid, owner.gid);
        await made.close();
        return true;
      }
      const created = await mkdir(at, { mode: 0o755 }).then(
        () => true,
        (error: NodeJS.ErrnoException) => (error.code === "EEXIST" ? false : error),
      );
      if (created instanceof Error) return { absent: `cannot be made (${created.code ?? "error"} at ${parts.slice(0, i + 1).join("/")})`, link: false };
      const next = await open(at, O_RDONLY | O_NOFOLLOW | O_DIRECTORY).catch((error: NodeJS.ErrnoException) => error);
      if (next instanceof Error) return { absent: `is under ${parts.slice(0, i + 1).join("/")}, which is not a real folder (a link, or a file)`, link: true };
      if (created && owner !== undefined) await next.chown(owner.uid, owner.gid);
      await dir.handle.close();
      dir = { handle: next, path: join(dir.path, name) };
    }
    return true;
  } finally {
    await dir.handle.close();
  }
}

async function atPinnedPath<T>(repository: string, path: string, use: (handle: FileHandle, mode: number) => Promise<T>): Promise<T | PinnedFileAbsent> {
  const parts = path.split("/");
  if (parts.some((part) => part === "" || part === "." || part === "..")) return { absent: "is not a canonical path of the repository", link: false };
  // The repository root itself is the owner's configured folder: opened as it is named.
  const root = await open(repository, O_RDONLY | O_DIRECTORY).catch((error: NodeJS.ErrnoException) => error);
  if (root instanceof Error) return { absent: `is missing (the owner's repository ${repository} cannot be opened: ${root.code ?? root.message})`, link: false };
  let dir: { handle: FileHandle; path: string } = { handle: root, path: repository };
  try {
    for (let i = 0; i < parts.length; i++) {
      const name = parts[i] as string;
      const last = i === parts.length - 1;
      const at = beneath(dir, name);
      let next: FileHandle;
      try {
        // O_NONBLOCK: a fifo planted at the path must not hang the deploy at open.
        next = await open(at, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | (last ? 0 : O_DIRECTORY));
      } catch (error) {
        // Why, for the message only (what was opened decides, not this look).
        const seen = await lstat(at).catch(() => undefined);
        const where = parts.slice(0, i + 1).join("/");
        if (seen === undefined) return { absent: last ? "is missing" : `is missing (no folder ${where})`, link: false, missing: true };
        if (seen.isSymbolicLink())
          return last
            ? { absent: "is a symbolic link, which teamd does not follow", link: true }
            : { absent: `is under a symbolic link (${where}), which teamd does not follow`, link: true };
        if (!last && !seen.isDirectory()) return { absent: `is missing (${where} is not a folder)`, link: false };
        return { absent: `cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"})`, link: false };
      }
      await dir.handle.close();
      dir = { handle: next, path: join(dir.path, name) };
    }
    const info = await dir.handle.stat();
    if (!info.isFile()) return { absent: "is not a regular file", link: false };
    return await use(dir.handle, info.mode & 0o111 ? 0o755 : 0o644);
  } finally {
    await dir.handle.close();
  }
}

/** Whether `readPinnedFile` read the file. */
export function isPinnedFile(file: PinnedFile | PinnedFileAbsent): file is PinnedFile {
  return "bytes" in file;
}

/**
 * Write a pinned file at `at` as a new file with exactly `file.mode`: what the artifact left
 * there (a regular file, checked by the caller) is unlinked first, then the file is created with
 * O_CREAT|O_EXCL|O_NOFOLLOW (never through a link, never into an inode that was there) and its
 * mode set on the descriptor, so neither the artifact's mode nor the umask decides it.
 */
async function writePinnedFile(at: string, file: PinnedFile, replacing: boolean): Promise<void> {
  if (replacing) await unlink(at);
  const handle = await open(at, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, file.mode);
  try {
    await handle.writeFile(file.bytes);
    await handle.chmod(file.mode);
  } finally {
    await handle.close();
  }
}

/**
 * A fresh folder under TEAMD_HOME/deploys/ (0700): the artifact's tree exported from the hub
 * into `tree/`, the pinned files written over their paths, and an empty `home/`. On any
 * failure the folder is removed before the error is rethrown; an artifact that holds a link or
 * another kind of entry where a pinned file goes is an `ExportRefused`, as a tree too large is,
 * and so is one with a link or a file at a folder of the command's working folder (`workdir`,
 * repo-relative, "" the root): the command would run outside the artifact's tree.
 */
export async function prepareDeployFolder(
  teamdHome: string,
  artifact: { readonly hub: string; readonly commit: string; readonly maxBytes: number },
  files: ReadonlyMap<string, PinnedFile>,
  workdir = "",
): Promise<DeployFolder> {
  const root = deploysRoot(teamdHome);
  await mkdir(root, { recursive: true, mode: 0o700 });
  const dir = await mkdtemp(join(root, "run-"));
  try {
    const tree = join(dir, "tree");
    const home = join(dir, "home");
    await mkdir(tree, { mode: 0o700 });
    await mkdir(home, { mode: 0o700 });
    await exportTree(artifact.hub, artifact.commit, tree, { maxBytes: artifact.maxBytes });
    for (const [path, file] of files) {
      const parts = path.split("/");
      // No pinned file is written through a link or over a folder the artifact put in its way:
      // every component from tree/ down, the file's own included, is looked at without
      // following it, each below one already seen to be a real folder. The folder is the
      // daemon's own (0700 under TEAMD_HOME, the command not yet run): nothing else changes it
      // between this look and the write.
      let replacing = false;
      for (let i = 1; i <= parts.length; i++) {
        const at = join(tree, ...parts.slice(0, i));
        const info = await lstat(at).catch(() => undefined);
        const last = i === parts.length;
        if (info === undefined) break;
        if (info.isSymbolicLink() || (last ? !info.isFile() : !info.isDirectory()))
          throw new ExportRefused(
            `the artifact has ${info.isSymbolicLink() ? "a symbolic link" : "another kind of entry"} at ${parts.slice(0, i).join("/")}, where the pinned ${path} goes`,
          );
        replacing = last;
      }
      await mkdir(join(tree, ...parts.slice(0, -1)), { recursive: true });
      await writePinnedFile(join(tree, ...parts), file, replacing);
    }
    // The working folder as the artifact has it: a link there would run the command in a host
    // folder (every component looked at; one not there leaves the command unable to start).
    const steps = workdir === "" ? [] : workdir.split("/");
    for (let i = 1; i <= steps.length; i++) {
      const info = await lstat(join(tree, ...steps.slice(0, i))).catch(() => undefined);
      if (info === undefined) break;
      if (info.isSymbolicLink() || !info.isDirectory())
        throw new ExportRefused(
          `the artifact has ${info.isSymbolicLink() ? "a symbolic link" : "another kind of entry"} at ${steps.slice(0, i).join("/")}, where the deploy command's working folder ${workdir} goes`,
        );
    }
    return { dir, tree, home, cwd: join(tree, ...steps) };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Remove a deploy folder once its command's outcome is known. */
export async function removeDeployFolder(folder: DeployFolder): Promise<void> {
  await rm(folder.dir, { recursive: true, force: true });
}

/** At daemon start, before any deploy: remove every folder a daemon that died mid-deploy left; returns their names. */
export async function sweepDeployFolders(teamdHome: string): Promise<string[]> {
  const root = deploysRoot(teamdHome);
  const left = await readdir(root).catch(() => [] as string[]);
  for (const name of left) await rm(join(root, name), { recursive: true, force: true });
  return left;
}
