import { join } from "node:path";
import { fsyncPath } from "./fsync-path.js";
import { git } from "./git.js";

/**
 * What the daemon writes into a repository through git is on disk before the act's outcome
 * says it happened (§15: an outcome `done` whose ref a power cut took back would be a record
 * of something the hub does not hold). git 2.39 fsyncs packs by default, but neither a loose
 * object nor a ref: a new ref's file could come back empty after a crash. These options make
 * git fsync both before it renames them into place.
 */
export const DURABLE_GIT: readonly string[] = Object.freeze(["-c", "core.fsync=objects,reference", "-c", "core.fsyncMethod=fsync"]);

/**
 * git fsyncs a ref's file, not the folders its rename changed: each folder of the ref's path
 * (a new branch may have made some) and the repository's own (packed-refs, which a delete
 * rewrites) is synced here, after git moved the ref and before the outcome is recorded. A
 * folder that is gone (git removes a deleted ref's emptied folders) has nothing to sync.
 */
export async function syncRefFolders(gitDir: string, ref: string, sync: (folder: string) => Promise<void> = fsyncPath): Promise<void> {
  const parts = ref.split("/").slice(0, -1);
  const folders = [gitDir];
  for (let i = 1; i <= parts.length; i++) folders.push(join(gitDir, ...parts.slice(0, i)));
  await Promise.all(
    folders.map((folder) =>
      sync(folder).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "ENOENT") throw error;
      }),
    ),
  );
}

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * git fsyncs a new loose object's file (DURABLE_GIT), not the folder it renamed it into: on a
 * filesystem whose later fsync of the ref does not carry that entry (ext4's journal does; btrfs's
 * log of one file need not), a power cut could keep the ref and lose an object it names. Here the
 * objects `tip` has that `known` do not — a file write's blob, trees and commit, a merge's merged
 * trees and blobs and its commit, whenever git wrote them — have their loose-object folders
 * synced, and the object store's own (a new folder is an entry in it), before the ref moves. A
 * folder that does not exist (the object is packed) has nothing to sync.
 */
export async function syncNewObjects(
  gitDir: string,
  tip: string,
  known: readonly string[],
  sync: (folder: string) => Promise<void> = fsyncPath,
): Promise<void> {
  const { stdout } = await git(["rev-list", "--objects", "--no-object-names", tip, "--not", ...known], { gitDir });
  const objects = join(gitDir, "objects");
  const folders = new Set([objects]);
  for (const line of stdout.split("\n")) if (OBJECT_ID.test(line)) folders.add(join(objects, line.slice(0, 2)));
  await Promise.all(
    [...folders].map((folder) =>
      sync(folder).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "ENOENT") throw error;
      }),
    ),
  );
}
