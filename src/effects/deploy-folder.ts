import { lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { exportTree, ExportRefused } from "./git-export.js";

/**
 * The folder a deploy command runs in (§3 deploy, §10), and the owner's pinned files that go
 * into it. A deploy runs outside every sandbox as the daemon's user, so what it runs on is
 * made fresh under TEAMD_HOME (never a shared temp folder another user could plant in), owner
 * only, for each deploy, and removed after it — or, where a daemon died mid-deploy, swept at
 * the next start before any deploy.
 *
 * The files are read and written without following a link: a pinned file is the owner's
 * regular file as it sits in the owner's repository, and it is written over the artifact's
 * tree only where the artifact put nothing, or a regular file, on its path — never through a
 * symbolic link or over a folder the artifact planted there. The bytes read are the bytes the
 * caller checks against the pin and the bytes written: there is no second read to race.
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
}

/** Deploy folders live here, under TEAMD_HOME; nothing else does. */
function deploysRoot(teamdHome: string): string {
  return join(teamdHome, "deploys");
}

/**
 * One pinned file from the owner's repository, or undefined when it is missing or is not a
 * regular file (a symbolic link is not followed: lstat, then a read of what lstat saw).
 */
export async function readPinnedFile(repository: string, path: string): Promise<PinnedFile | undefined> {
  const at = join(repository, ...path.split("/"));
  const info = await lstat(at).catch(() => undefined);
  const bytes = info?.isFile() ? await readFile(at).catch(() => undefined) : undefined;
  if (info === undefined || bytes === undefined) return undefined;
  return { bytes, mode: info.mode & 0o111 ? 0o755 : 0o644 };
}

/**
 * A fresh folder under TEAMD_HOME/deploys/ (0700): the artifact's tree exported from the hub
 * into `tree/`, the pinned files written over their paths, and an empty `home/`. On any
 * failure the folder is removed before the error is rethrown; an artifact that holds a link or
 * another kind of entry where a pinned file goes is an `ExportRefused`, as a tree too large is.
 */
export async function prepareDeployFolder(
  teamdHome: string,
  artifact: { readonly hub: string; readonly commit: string; readonly maxBytes: number },
  files: ReadonlyMap<string, PinnedFile>,
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
      // No pinned file is written through a link or over a folder the artifact put in its way.
      for (let i = 1; i <= parts.length; i++) {
        const at = join(tree, ...parts.slice(0, i));
        const info = await lstat(at).catch(() => undefined);
        const last = i === parts.length;
        if (info === undefined) break;
        if (info.isSymbolicLink() || (last ? !info.isFile() : !info.isDirectory()))
          throw new ExportRefused(
            `the artifact has ${info.isSymbolicLink() ? "a symbolic link" : "another kind of entry"} at ${parts.slice(0, i).join("/")}, where the pinned ${path} goes`,
          );
      }
      await mkdir(join(tree, ...parts.slice(0, -1)), { recursive: true });
      await writeFile(join(tree, ...parts), file.bytes, { mode: file.mode });
    }
    return { dir, tree, home };
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
