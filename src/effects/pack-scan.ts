import { open } from "node:fs/promises";
import { createInflate, inflateSync } from "node:zlib";

/**
 * A pushed pack's headers, read before git sees it. `index-pack --max-input-size` bounds
 * only the bytes sent, and a delta is a recipe: a few kilobytes of "copy the base again"
 * instructions declare a result of a gigabyte, which index-pack then builds in memory and
 * hashes. So every object's header (its type and declared size) is read here, and for a
 * delta the two sizes at the start of its inflated data (the base's and the result's), and
 * the pack is refused when it declares more objects, or any object or the whole pack more
 * bytes, than the bounds allow.
 *
 * The format (git's Documentation/gitformat-pack.txt): "PACK", a 4-byte version (2 or 3), a
 * 4-byte object count, the objects, a trailing checksum. Each object: a size-and-type
 * varint (type in bits 6–4 of the first byte, the size's low 4 bits below, 7 more bits per
 * continuation byte); an OFS_DELTA's negative offset to its base, or a REF_DELTA's base id;
 * then a zlib stream of the object's data (a delta's: two size varints, then instructions).
 *
 * The scan inflates every object to find where the next one starts (zlib streams carry no
 * length), discarding what it inflates: its memory is a window of the file and one small
 * object, never a large one (a large object streams through). It does not check the
 * checksum, the objects' contents or the deltas' instructions: that is index-pack's work,
 * which runs after and refuses what is corrupt. A declared size is what git allocates for;
 * a delta whose instructions produce more or less than it declares is refused by git.
 */
export interface PackBounds {
  /** Objects in one pack. */
  readonly maxObjects: number;
  /** Any one object's declared size, a delta's declared result, or its data. */
  readonly maxObjectBytes: number;
  /** The sum of every object's declared (result) size: what the pack expands to at most. */
  readonly maxTotalBytes: number;
  /** The object id's length in bytes (20 for SHA-1, 32 for SHA-256). Default 20. */
  readonly hashBytes?: number;
}

export type PackScanRule = "push.pack" | "push.pack-objects" | "push.object-size";

export type PackScan =
  | { readonly ok: true; readonly objects: number; readonly deltas: number; readonly totalBytes: number }
  | { readonly ok: false; readonly rule: PackScanRule; readonly reason: string };

const OBJ_OFS_DELTA = 6;
const OBJ_REF_DELTA = 7;
const TYPES: Readonly<Record<number, string>> = Object.freeze({ 1: "commit", 2: "tree", 3: "blob", 4: "tag", 6: "ofs-delta", 7: "ref-delta" });
const WINDOW = 256 * 1024;
/** Objects declared up to this size are inflated at once from the window; larger ones stream. */
const SMALL_OBJECT = 64 * 1024;
/** A delta's two size varints fit here (at most 10 bytes each for a 64-bit size). */
const DELTA_HEAD = 20;
/**
 * What a streamed object inflates into at a time: a large one in a few turns of libuv's pool, not
 * one a 16 KiB chunk (zlib's default; issue 26: a 1 MiB blob scanned in ~2 against ~5 ms, 100
 * interleaved scans). At most one such chunk past an object's declared size is inflated before it is refused.
 */
const STREAM_CHUNK = 256 * 1024;

class Refused extends Error {
  constructor(
    readonly rule: PackScanRule,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/**
 * Where a scan reads a pack: a file, or a copy filled as the scan reads it (seat-pack-file.ts),
 * so that a pack refused early is copied little further than where it was refused.
 */
export interface PackSource {
  readonly size: number;
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ readonly bytesRead: number }>;
}

/** Scan the pack at `path` (never throws for what the pack holds: a refusal is a value; I/O errors throw). */
export async function scanPack(path: string, bounds: PackBounds): Promise<PackScan> {
  const handle = await open(path, "r");
  try {
    return await scanPackSource(
      { size: (await handle.stat()).size, read: (buffer, offset, length, position) => handle.read(buffer, offset, length, position) },
      bounds,
    );
  } finally {
    await handle.close();
  }
}

/** Scan the pack `source` holds, as scanPack. It reads from the start on, never more than a few windows (256 KiB each) past what it has checked. */
export async function scanPackSource(source: PackSource, bounds: PackBounds): Promise<PackScan> {
  try {
    return await scan(source, bounds);
  } catch (error) {
    if (error instanceof Refused) return { ok: false, rule: error.rule, reason: error.reason };
    throw error;
  }
}

/** A window over the pack: bytes at an absolute position, read in blocks. */
class Reader {
  private buffer = Buffer.alloc(0);
  private start = 0;
  constructor(
    private readonly source: PackSource,
    readonly size: number,
  ) {}

  /** Up to `want` bytes at `position` (fewer only at the end of the file). */
  async at(position: number, want: number): Promise<Buffer> {
    const end = Math.min(position + want, this.size);
    if (position >= this.start && end <= this.start + this.buffer.length) return this.buffer.subarray(position - this.start, end - this.start);
    const length = Math.min(Math.max(want, WINDOW), this.size - position);
    const buffer = Buffer.alloc(Math.max(length, 0));
    let read = 0;
    while (read < buffer.length) {
      const { bytesRead } = await this.source.read(buffer, read, buffer.length - read, position + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    this.buffer = buffer.subarray(0, read);
    this.start = position;
    return this.buffer.subarray(0, Math.min(want, read));
  }

  /** What is buffered from `position` on, refilled when less than half a window is left before the end of the file. */
  async window(position: number): Promise<Buffer> {
    const end = this.start + this.buffer.length;
    if (position >= this.start && position < end && (end - position >= WINDOW / 2 || end >= this.size)) return this.buffer.subarray(position - this.start);
    return this.at(position, WINDOW);
  }
}

async function scan(source: PackSource, bounds: PackBounds): Promise<PackScan> {
  const hashBytes = bounds.hashBytes ?? 20;
  const size = source.size;
  const reader = new Reader(source, size);
  const header = await reader.at(0, 12);
  if (header.length < 12 || header.toString("latin1", 0, 4) !== "PACK") throw new Refused("push.pack", "the pack does not start with a pack header");
  const version = header.readUInt32BE(4);
  if (version !== 2 && version !== 3) throw new Refused("push.pack", `the pack is version ${version}; git writes versions 2 and 3`);
  const count = header.readUInt32BE(8);
  if (count > bounds.maxObjects) throw new Refused("push.pack-objects", `the pack declares ${count} objects; a push may carry at most ${bounds.maxObjects}`);
  // The smallest object is a 1-byte header and an 8-byte zlib stream: a count the file cannot hold is a lie.
  if (count * 9 > size - 12 - hashBytes) throw new Refused("push.pack", `the pack declares ${count} objects but is ${size} bytes`);

  const starts = new Set<number>();
  let position = 12;
  let totalBytes = 0;
  let inflating = 0;
  let deltas = 0;
  // The objects end where the checksum begins: no header is read from its bytes. (A count larger
  // than the objects read the checksum as a header, so its refusal's rule followed whatever
  // its random bytes declared — found by a CI run where they declared a huge object.)
  const objectsEnd = size - hashBytes;
  for (let index = 0; index < count; index++) {
    const start = position;
    starts.add(start);
    if (position + 9 > objectsEnd)
      throw new Refused("push.pack", `the pack ends before object ${index + 1} of ${count}: its last ${hashBytes} bytes are its checksum`);
    const head = await reader.at(position, Math.min(16 + hashBytes, objectsEnd - position));
    let at = 0;
    const byteAt = (i: number): number => {
      if (i >= head.length) throw new Refused("push.pack", `the pack ends inside the header of object ${index + 1} of ${count}`);
      return head[i] as number;
    };
    let c = byteAt(at++);
    const type = (c >> 4) & 7;
    let declared = c & 15;
    let shift = 4;
    while (c & 0x80) {
      c = byteAt(at++);
      // git's own limit: a size varint longer than a size is a corrupt header, not a large object.
      if (shift > 53) throw new Refused("push.pack", `object ${index + 1} at offset ${start} has a corrupt header (its size never ends)`);
      declared += (c & 0x7f) * 2 ** shift;
      shift += 7;
    }
    const name = TYPES[type];
    if (name === undefined) throw new Refused("push.pack", `object ${index + 1} at offset ${start} has type ${type}, which no pack holds`);
    if (declared > bounds.maxObjectBytes)
      throw new Refused("push.object-size", `object ${index + 1} (a ${name}) declares ${declared} bytes; one object may be at most ${bounds.maxObjectBytes}`);
    if (type === OBJ_OFS_DELTA) {
      c = byteAt(at++);
      let offset = c & 0x7f;
      while (c & 0x80) {
        c = byteAt(at++);
        offset = (offset + 1) * 128 + (c & 0x7f);
        if (offset > start) break;
      }
      if (offset <= 0 || offset > start || !starts.has(start - offset))
        throw new Refused("push.pack", `object ${index + 1} is a delta against offset -${offset}, where no object of the pack starts`);
    } else if (type === OBJ_REF_DELTA) {
      if (at + hashBytes > head.length) throw new Refused("push.pack", `the pack ends inside the base id of object ${index + 1}`);
      at += hashBytes;
    }
    position += at;
    const isDelta = type === OBJ_OFS_DELTA || type === OBJ_REF_DELTA;
    // What the scan inflates is every object's data as declared, a delta's instructions too: held
    // to the bound on what the pack expands to, before it is inflated. A delta's data was not
    // counted, only its result: 64 deltas each declaring 64 MiB of zeros (a 4 MB pack) had the
    // daemon inflate 4 GiB, ~12 s of its CPU (found by an attack, round twenty).
    inflating += declared;
    if (inflating > bounds.maxTotalBytes)
      throw new Refused(
        "push.object-size",
        `the pack's objects' data declare more than ${bounds.maxTotalBytes} bytes in all (by object ${index + 1} of ${count})`,
      );
    const { consumed, first } = await inflateObject(reader, position, declared, isDelta ? DELTA_HEAD : 0, index, count);
    position += consumed;
    let result = declared;
    if (isDelta) {
      deltas += 1;
      const sizes = deltaSizes(first);
      if (sizes === undefined) throw new Refused("push.pack", `object ${index + 1} is a delta whose data does not start with its two sizes`);
      if (sizes.base > bounds.maxObjectBytes || sizes.result > bounds.maxObjectBytes) {
        throw new Refused(
          "push.object-size",
          `object ${index + 1} is a delta declaring a ${sizes.result}-byte result from a ${sizes.base}-byte base; one object may be at most ${bounds.maxObjectBytes}`,
        );
      }
      result = sizes.result;
    }
    totalBytes += result;
    if (totalBytes > bounds.maxTotalBytes)
      throw new Refused("push.object-size", `the pack's objects declare more than ${bounds.maxTotalBytes} bytes in all (by object ${index + 1} of ${count})`);
  }
  if (size - position !== hashBytes)
    throw new Refused("push.pack", `the pack has ${size - position} bytes after its ${count} objects, not its ${hashBytes}-byte checksum`);
  return { ok: true, objects: count, deltas, totalBytes };
}

/** Inflate one object's data at `position`: the compressed length, and its first `keep` bytes. */
async function inflateObject(
  reader: Reader,
  position: number,
  declared: number,
  keep: number,
  index: number,
  count: number,
): Promise<{ consumed: number; first: Buffer }> {
  const wrong = (what: string) => new Refused("push.pack", `object ${index + 1} of ${count}: ${what}`);
  if (declared <= SMALL_OBJECT) {
    // Most objects are small: inflated from the buffered window, without a read of their own.
    const window = await reader.window(position);
    try {
      const { buffer, engine } = inflateSync(window, { info: true, maxOutputLength: Math.max(declared, 1) }) as unknown as {
        buffer: Buffer;
        engine: { bytesWritten: number };
      };
      if (buffer.length !== declared) throw wrong(`its data inflates to ${buffer.length} bytes, not the ${declared} it declares`);
      return { consumed: engine.bytesWritten, first: buffer.subarray(0, keep) };
    } catch (error) {
      if (error instanceof Refused) throw error;
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ERR_BUFFER_TOO_LARGE") throw wrong(`its data inflates to more than the ${declared} bytes it declares`);
      // The window ended inside the stream, before the end of the file (a stream longer than what is buffered): stream it instead.
      if (!(code === "Z_BUF_ERROR" && position + window.length < reader.size)) throw wrong(`its data is not a zlib stream (${(error as Error).message})`);
    }
  }
  return streamObject(reader, position, declared, keep, wrong);
}

function streamObject(
  reader: Reader,
  position: number,
  declared: number,
  keep: number,
  wrong: (what: string) => Refused,
): Promise<{ consumed: number; first: Buffer }> {
  return new Promise((resolve, reject) => {
    const inflate = createInflate({ chunkSize: STREAM_CHUNK });
    let out = 0;
    const first: Buffer[] = [];
    let kept = 0;
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      inflate.destroy();
      reject(error);
    };
    inflate.on("data", (chunk: Buffer) => {
      out += chunk.length;
      if (kept < keep) {
        first.push(chunk.subarray(0, keep - kept));
        kept += Math.min(chunk.length, keep - kept);
      }
      if (out > declared) fail(wrong(`its data inflates to more than the ${declared} bytes it declares`));
    });
    inflate.on("error", (error: Error) => fail(wrong(`its data is not a zlib stream (${error.message})`)));
    inflate.on("end", () => {
      if (settled) return;
      settled = true;
      if (out !== declared) reject(wrong(`its data inflates to ${out} bytes, not the ${declared} it declares`));
      else resolve({ consumed: inflate.bytesWritten, first: Buffer.concat(first) });
    });
    void (async () => {
      let at = position;
      while (!settled) {
        const chunk = await reader.at(at, WINDOW);
        if (chunk.length === 0) {
          inflate.end();
          return;
        }
        at += chunk.length;
        // Copied: the reader's window is replaced by the next read while zlib may still hold this one.
        const copy = Buffer.from(chunk);
        if (!inflate.write(copy)) await new Promise<void>((go) => inflate.once("drain", go));
      }
    })().catch((error: unknown) => fail(error as Error));
  });
}

/** A delta's base and result sizes: two little-endian base-128 varints at its start. */
function deltaSizes(data: Buffer): { base: number; result: number } | undefined {
  let at = 0;
  const varint = (): number | undefined => {
    let value = 0;
    let shift = 0;
    for (;;) {
      if (at >= data.length || shift > 63) return undefined;
      const c = data[at++] as number;
      value += (c & 0x7f) * 2 ** shift;
      shift += 7;
      if (!(c & 0x80)) return value;
    }
  };
  const base = varint();
  const result = varint();
  return base === undefined || result === undefined ? undefined : { base, result };
}
