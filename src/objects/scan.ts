import { lstat, opendir } from "node:fs/promises";
import { objectKey } from "./object-id.js";

/**
 * What a folder about to be bound into a seat holds that the plan must not expose as is
 * (§3, §6, §11): unix sockets (a read-only bind does not stop connect(2): every socket under
 * a bound folder is a way to a host service), other names of reserved objects (a hard link
 * to a reserved file, a reserved folder mounted again inside), and multiply-linked files
 * whose other names may lie outside every folder the seat sees. The plan compiler decides
 * what to do with each (src/sandbox/plan.ts); this only looks.
 */
export interface RootScan {
  /** The canonical folder scanned. */
  readonly root: string;
  /** False when the walk stopped early (entry limit, an unreadable folder): nothing in it can be ruled out. */
  readonly complete: boolean;
  /** Why the walk is incomplete, for the refusal. */
  readonly incomplete?: string;
  readonly sockets: readonly string[];
  /** Names under the root of a reserved object: `of` is the reserved path it belongs to. */
  readonly aliases: readonly { readonly path: string; readonly of: string }[];
  /** Regular files with more than one name (and not reserved): key = objectKey of the file. */
  readonly linked: readonly { readonly path: string; readonly key: string; readonly nlink: number }[];
}

export interface ScanOptions {
  /** Most entries visited; beyond it the scan is incomplete (and the plan refused). */
  readonly limit?: number;
}

const DEFAULT_LIMIT = 500_000;

/**
 * Walk a canonical folder without following symlinks. `reservedKeys` is ReservedSet.keys:
 * the identities of reserved objects and of multiply-linked files inside reserved folders.
 * Folders are stat'ed to catch a reserved folder seen again through a bind mount; regular
 * files to read their link count; sockets are known from the directory entry alone.
 */
export async function scanRoot(root: string, reservedKeys: ReadonlyMap<string, string>, options: ScanOptions = {}): Promise<RootScan> {
  let budget = options.limit ?? DEFAULT_LIMIT;
  const sockets: string[] = [];
  const aliases: { path: string; of: string }[] = [];
  const linked: { path: string; key: string; nlink: number }[] = [];
  const result = (complete: boolean, incomplete?: string): RootScan =>
    Object.freeze({ root, complete, ...(incomplete === undefined ? {} : { incomplete }), sockets, aliases, linked });

  const rootStats = await lstat(root, { bigint: true }).catch(() => undefined);
  if (rootStats === undefined) return result(false, `${root} cannot be read`);
  const rootOwner = reservedKeys.get(objectKey({ dev: rootStats.dev, ino: rootStats.ino }));
  if (rootOwner !== undefined) aliases.push({ path: root, of: rootOwner });
  if (!rootStats.isDirectory()) return result(true);

  const stack = [root];
  while (stack.length > 0) {
    const current = stack.pop() as string;
    let dir;
    try {
      dir = await opendir(current);
    } catch (error) {
      return result(false, `${current} cannot be listed (${(error as NodeJS.ErrnoException).code ?? "error"})`);
    }
    for await (const entry of dir) {
      if (--budget < 0) return result(false, `more than ${options.limit ?? DEFAULT_LIMIT} entries under ${root}`);
      const path = current === "/" ? `/${entry.name}` : `${current}/${entry.name}`;
      if (entry.isSocket()) {
        sockets.push(path);
        continue;
      }
      if (!entry.isDirectory() && !entry.isFile()) continue;
      let stats;
      try {
        stats = await lstat(path, { bigint: true });
      } catch (error) {
        return result(false, `${path} cannot be examined (${(error as NodeJS.ErrnoException).code ?? "error"})`);
      }
      const key = objectKey({ dev: stats.dev, ino: stats.ino });
      const owner = reservedKeys.get(key);
      if (owner !== undefined) {
        aliases.push({ path, of: owner });
        continue; // never descend into a reserved folder's other name
      }
      if (stats.isDirectory()) stack.push(path);
      else if (stats.nlink > 1n) linked.push({ path, key, nlink: Number(stats.nlink) });
    }
  }
  sockets.sort();
  aliases.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  linked.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return result(true);
}
