import { chmodSync, closeSync, constants, lstatSync, mkdirSync, openSync, readSync } from "node:fs";
import { open, rename, unlink } from "node:fs/promises";
import { join } from "node:path";
import { plainRefName, refState } from "./ref-files.js";

/**
 * A ref made, or moved from the value it is expected to hold, in line, as git's "files" format
 * writes it (issue 26: `git update-ref` was ~5 ms of every push, most of it the daemon's fork
 * of itself): the ref's lock taken as git takes it (`<ref>.lock`, created exclusively, so git
 * and this exclude each other), its value read under the lock and held to the expected one, the
 * new value written and fsynced into the lock, and the lock renamed over the ref. The folders
 * the rename changed are the caller's to sync, as after git (durable-git.ts syncRefFolders).
 *
 * A repository shared with a group (`core.sharedRepository=group`: a system-mode hub,
 * daemon/host/hub.ts) gets what git gives it: the lock (so the ref) group-writable, each folder
 * made group-writable and setgid (git's adjust_shared_perm).
 *
 * "git" wherever this cannot be sure to do what git would, with nothing of it left behind: the
 * caller then runs `git update-ref`, which decides and words it — another ref format, a reflog
 * (a `logs` folder), a repository that is not bare or whose config names another setting that
 * changes how git writes a ref (reflogs, other shared permissions, an included file), a name
 * that is not plain, a ref or a folder of refs beside the name (loose or packed), a folder on
 * the way that is not a plain folder, a lock another holds, a value other than the expected
 * one, a rename that fails. Only for a value the caller knows is a commit the repository holds:
 * git would check that, this does not.
 */
export async function writeRefInLine(gitDir: string, ref: string, newOid: string, oldOid: string): Promise<"written" | "git"> {
  if (!plainRefName(ref) || !OBJECT_ID.test(newOid) || (oldOid !== "" && !OBJECT_ID.test(oldOid))) return "git";
  const config = exists(join(gitDir, "logs")) === false ? plainConfig(gitDir) : undefined;
  if (config === undefined) return "git";
  const before = refState(gitDir, ref);
  if (before === undefined || besideAnother(ref, before.packed)) return "git";
  // The folders on the way: each a plain folder, made where it is missing (as git makes them).
  const parts = ref.split("/");
  let folder = gitDir;
  for (const part of parts.slice(0, -1)) {
    folder = join(folder, part);
    const kind = exists(folder);
    if (kind === false) {
      try {
        mkdirSync(folder, 0o777);
        if (config.shared) chmodSync(folder, sharedMode(lstatSync(folder).mode, true));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST" || exists(folder) !== "folder") return "git";
      }
    } else if (kind !== "folder") return "git";
  }
  const path = join(gitDir, ref);
  const lock = `${path}.lock`;
  let handle;
  try {
    handle = await open(lock, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o666);
  } catch {
    // Held by another update (or not makeable): git's to try and to say.
    return "git";
  }
  let renamed = false;
  try {
    const held = refState(gitDir, ref);
    if (held === undefined || besideAnother(ref, held.packed) || (held.value ?? "") !== oldOid) return "git";
    if (config.shared) await handle.chmod(sharedMode((await handle.stat()).mode, false));
    await handle.writeFile(`${newOid}\n`);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(lock, path);
    renamed = true;
    return "written";
  } catch {
    // Nothing moved: the rename is the one step that changes the ref. A folder of refs made by
    // name meanwhile (another update's, which takes no lock of this name: found by an attack on
    // this round, EISDIR) or a failing disk is git's to meet and to word, as it would have been.
    return "git";
  } finally {
    await handle?.close();
    if (!renamed) await unlink(lock).catch(() => undefined);
  }
}

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** The repository's config at most (a hub's is a few hundred bytes); larger is git's to read. */
const CONFIG_BYTES = 64 * 1024;
/** Settings that change how git writes a ref, or may bring in others: any of them, and git writes it. */
const REF_SETTINGS = /logallrefupdates|include|refstorage/i;
/** The sharing setting: absent, or the group's (git's PERM_GROUP); any other value is git's. */
const SHARED = /^\s*sharedrepository\s*=\s*(.*?)\s*$/gim;
/** A bare repository: git keeps no reflog there unless told to (a work tree's it does, by default). */
const BARE = /^\s*bare\s*=\s*true\s*$/im;

function exists(path: string): "folder" | "other" | false {
  try {
    return lstatSync(path).isDirectory() ? "folder" : "other";
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    return "other";
  }
}

/** A ref and a folder of refs of one name cannot both be: a packed ref under this name, or one this name is under. */
function besideAnother(ref: string, packed: ReadonlyMap<string, string>): boolean {
  for (const name of packed.keys()) if (name.startsWith(`${ref}/`) || ref.startsWith(`${name}/`)) return true;
  return false;
}

/** git's adjust_shared_perm for PERM_GROUP: group read and write, a folder's read bits as search bits, and setgid. */
function sharedMode(mode: number, folder: boolean): number {
  let tweak = 0o660;
  if ((mode & 0o200) === 0) tweak &= ~0o222;
  if ((mode & 0o100) !== 0) tweak |= (tweak & 0o444) >> 2;
  let next = (mode & 0o7777) | tweak;
  if (folder) next |= ((next & 0o444) >> 2) | 0o2000;
  return next;
}

/**
 * The repository is bare and its own config names nothing that changes how git writes a ref but
 * a group's sharing (the daemon's git reads no other config: git.ts); undefined: git's to write.
 */
function plainConfig(gitDir: string): { readonly shared: boolean } | undefined {
  let fd: number;
  try {
    fd = openSync(join(gitDir, "config"), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const buffer = Buffer.alloc(CONFIG_BYTES + 1);
    let length = 0;
    for (let n = 1; n > 0 && length < buffer.length; length += n) n = readSync(fd, buffer, length, buffer.length - length, length);
    const text = buffer.toString("latin1", 0, length);
    if (length > CONFIG_BYTES || !BARE.test(text) || REF_SETTINGS.test(text)) return undefined;
    const shared = [...text.matchAll(SHARED)].map((match) => (match[1] ?? "").toLowerCase());
    if (shared.length > 1 || shared.some((value) => value !== "group")) return undefined;
    return { shared: shared.length === 1 };
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}
