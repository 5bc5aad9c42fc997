import { lstat, open, readdir } from "node:fs/promises";
import { join } from "node:path";
import { objectStores } from "./contained-git.js";
import { INDEX_HEADER_BYTES, indexHeaderCount } from "./pack-index.js";

/**
 * At most how many objects, and how many bytes on disk, a repository's object store holds:
 * every pack's object count (its index's fan-out total) and file size, and every loose
 * object's size, read in line. An object held twice is counted twice, so this is an upper
 * bound of anything a walk over the store counts (`rev-list --count --objects`,
 * `--disk-usage`: an object's bytes in the one copy git reads). The storage quota uses it to
 * skip its contained walks when even the whole store is under the quota (issue 26: two
 * contained runs, ~50 ms of CPU, on every push).
 *
 * Undefined — the caller walks — wherever the bound is not certain or not cheap: a store with
 * alternates, an entry that is neither a plain file nor a folder, a pack without a readable
 * index, more than MAX_PACKS packs or MAX_LOOSE loose objects.
 */
export interface StoreUsage {
  readonly objects: number;
  readonly bytes: number;
}

const MAX_PACKS = 512;
const MAX_LOOSE = 4096;

export async function storeUsage(gitDir: string): Promise<StoreUsage | undefined> {
  if ((await objectStores(gitDir)).length > 0) return undefined;
  const objects = join(gitDir, "objects");
  const top = await readdir(objects, { withFileTypes: true }).catch(() => undefined);
  if (top === undefined) return undefined;
  let count = 0;
  let bytes = 0;
  let loose = 0;
  for (const entry of top) {
    if (entry.name === "pack" || entry.name === "info") {
      if (!entry.isDirectory()) return undefined;
      continue;
    }
    if (!/^[0-9a-f]{2}$/.test(entry.name)) continue;
    if (!entry.isDirectory()) return undefined;
    const names = await readdir(join(objects, entry.name)).catch(() => undefined);
    if (names === undefined) return undefined;
    for (const name of names) {
      if ((loose += 1) > MAX_LOOSE) return undefined;
      const file = await lstat(join(objects, entry.name, name)).catch(() => undefined);
      if (file === undefined || !file.isFile()) return undefined;
      count += 1;
      bytes += file.size;
    }
  }
  const packDir = join(objects, "pack");
  const packFiles = (await readdir(packDir).catch(() => [] as string[])).filter((name) => name.endsWith(".pack"));
  if (packFiles.length > MAX_PACKS) return undefined;
  // A few packs at a time: one after another, a hub of a few dozen packs took ~15 ms of a push's
  // admission while the pool was busy with the pack's copy and scan (issue 26); all at once, a
  // hub of hundreds (each landed push adds one) queued thousands of reads on node's four I/O
  // threads ahead of every other seat's (found by an attack on the change: another seat's pushes
  // 4-8 times slower while one seat pushed nothing in a loop).
  const packs: (StoreUsage | undefined)[] = [];
  let next = 0;
  const reader = async (): Promise<void> => {
    while (next < packFiles.length) {
      const at = next++;
      packs[at] = await packUsage(packDir, packFiles[at] as string);
      if (packs[at] === undefined) return;
    }
  };
  await Promise.all(Array.from({ length: Math.min(PACKS_AT_ONCE, packFiles.length) }, reader));
  for (let at = 0; at < packFiles.length; at++) {
    const pack = packs[at];
    if (pack === undefined) return undefined;
    count += pack.objects;
    bytes += pack.bytes;
  }
  return { objects: count, bytes };
}

/** How many packs' reads are in flight at once (each a pack's lstat beside its index's open, read and close). */
export const PACKS_AT_ONCE = 4;

/** One pack's object count (its index's) and size on disk, or undefined where either is not certain. */
async function packUsage(packDir: string, name: string): Promise<StoreUsage | undefined> {
  const [pack, objects] = await Promise.all([
    lstat(join(packDir, name)).catch(() => undefined),
    indexCount(join(packDir, `${name.slice(0, -".pack".length)}.idx`)),
  ]);
  if (pack === undefined || !pack.isFile() || objects === undefined) return undefined;
  return { objects, bytes: pack.size };
}

/** A version 2 index file's object count (indexHeaderCount), or undefined. */
async function indexCount(path: string): Promise<number | undefined> {
  const file = await lstat(path).catch(() => undefined);
  if (file === undefined || !file.isFile() || file.size < INDEX_HEADER_BYTES) return undefined;
  const handle = await open(path, "r").catch(() => undefined);
  if (handle === undefined) return undefined;
  try {
    const header = Buffer.alloc(INDEX_HEADER_BYTES);
    const { bytesRead } = await handle.read(header, 0, INDEX_HEADER_BYTES, 0);
    return indexHeaderCount(header.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}
