import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * Which of some objects a push's quarantine holds, read from the one pack index its contained
 * `index-pack` wrote, in line: the question the self-contained check asks of every object a
 * push reaches (git-receive.ts), answered without a contained `cat-file` at the end of a push's
 * checks (a process start is ~30 ms here, issue 26).
 *
 * Answered only where the answer is certain; undefined sends the caller to git:
 * - the object folder holds exactly `pack/` with one pack and its index (and a reverse index),
 *   nothing loose, no second pack, no .keep or .promisor;
 * - the index is version 2 over SHA-1 ids, its fan-out table ascending and ending at the
 *   object count, the file long enough for the count, its names strictly ascending.
 *
 * The index is as trusted as the index-pack that wrote it: that process could equally have
 * written any object it read from the hub into the quarantine, which a contained `cat-file`
 * would then find. Nothing here parses the pack itself.
 *
 * The format (git's Documentation/gitformat-pack.txt, "version 2 pack-*.idx"): the magic
 * \377tOc, version 2, 256 four-byte big-endian fan-out counts (the last is the object count
 * N), N sorted 20-byte names, then CRCs, offsets and checksums (not read).
 */
const MAGIC = 0xff744f63;
const HASH_BYTES = 20;
/** A version 2 index's header: the magic, the version and the fan-out table. */
export const INDEX_HEADER_BYTES = 8 + 256 * 4;
const HEADER_BYTES = INDEX_HEADER_BYTES;
/** A file past this is not read in line (200,000 objects, a push's bound, index in ~5.6 MB). */
const MAX_INDEX_BYTES = 64 * 1024 * 1024;

export async function quarantinedObjects(objects: string): Promise<{ has(oid: string): boolean } | undefined> {
  const top = await readdir(objects).catch(() => undefined);
  if (top === undefined || top.length !== 1 || top[0] !== "pack") return undefined;
  const files = await readdir(join(objects, "pack")).catch(() => undefined);
  if (files === undefined) return undefined;
  const indexes = files.filter((name) => /^pack-[0-9a-f]{40}\.idx$/.test(name));
  const index = indexes[0];
  if (indexes.length !== 1 || index === undefined) return undefined;
  const stem = index.slice(0, -".idx".length);
  if (!files.every((name) => name === index || name === `${stem}.pack` || name === `${stem}.rev`)) return undefined;
  if (!files.includes(`${stem}.pack`)) return undefined;
  const bytes = await readFile(join(objects, "pack", index)).catch(() => undefined);
  if (bytes === undefined || bytes.length > MAX_INDEX_BYTES) return undefined;
  const names = indexNames(bytes);
  if (names === undefined) return undefined;
  // The fan-out (checked against the names by indexNames) narrows each search to the names
  // sharing its first byte: ~10 comparisons in 200,000 names, not ~18.
  const fanout = Array.from({ length: 256 }, (_, b) => bytes.readUInt32BE(8 + b * 4));
  const wanted = Buffer.alloc(HASH_BYTES);
  return {
    has: (oid) => {
      if (!/^[0-9a-f]{40}$/.test(oid)) return false;
      wanted.write(oid, "hex");
      const first = wanted[0] as number;
      return contains(names, wanted, first === 0 ? 0 : (fanout[first - 1] as number), (fanout[first] as number) - 1);
    },
  };
}

/** The object count a version 2 index's header declares (its fan-out's last entry), or undefined for another header. */
export function indexHeaderCount(header: Buffer): number | undefined {
  if (header.length < HEADER_BYTES || header.readUInt32BE(0) !== MAGIC || header.readUInt32BE(4) !== 2) return undefined;
  return header.readUInt32BE(HEADER_BYTES - 4);
}

/** The sorted names table of a version 2 index, or undefined when any check fails. */
export function indexNames(bytes: Buffer): Buffer | undefined {
  if (indexHeaderCount(bytes) === undefined) return undefined;
  let previous = 0;
  for (let i = 0; i < 256; i++) {
    const count = bytes.readUInt32BE(8 + i * 4);
    if (count < previous) return undefined;
    previous = count;
  }
  const count = previous;
  // Names, CRCs and 4-byte offsets for each object, then the pack's and the index's checksums.
  if (bytes.length < HEADER_BYTES + count * (HASH_BYTES + 4 + 4) + 2 * HASH_BYTES) return undefined;
  const names = bytes.subarray(HEADER_BYTES, HEADER_BYTES + count * HASH_BYTES);
  // Compared in place (no view made per name): 200,000 names are read in a few milliseconds.
  for (let i = 1; i < count; i++) {
    if (names.compare(names, i * HASH_BYTES, (i + 1) * HASH_BYTES, (i - 1) * HASH_BYTES, i * HASH_BYTES) >= 0) return undefined;
  }
  // The fan-out must agree with the names: entry b counts the names whose first byte is at most b.
  for (let i = 0, b = 0; b < 256; b++) {
    while (i < count && (names[i * HASH_BYTES] ?? 256) <= b) i++;
    if (bytes.readUInt32BE(8 + b * 4) !== i) return undefined;
  }
  return names;
}

function contains(names: Buffer, oid: Buffer, from: number, to: number): boolean {
  let low = from;
  let high = to;
  while (low <= high) {
    const mid = (low + high) >>> 1;
    const order = names.compare(oid, 0, HASH_BYTES, mid * HASH_BYTES, (mid + 1) * HASH_BYTES);
    if (order === 0) return true;
    if (order < 0) low = mid + 1;
    else high = mid - 1;
  }
  return false;
}
