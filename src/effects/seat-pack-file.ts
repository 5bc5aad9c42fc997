import { constants } from "node:fs";
import { open, unlink, type FileHandle } from "node:fs/promises";
import type { Hash } from "node:crypto";
import { join } from "node:path";
import { PackRejected, type FilledPack } from "./git-receive.js";
import { PACK_FILE_NAME } from "./pack-file-name.js";

/**
 * A pushed pack the seat's git wrote to a file in the seat's own tmp folder, read by the daemon
 * from its own path to that folder (issue 26). Streamed over the seat socket, a 1 MiB pack's
 * 64 KiB messages each waited a round trip on HTTP/2's window (~15-28 ms of a push); a wider
 * window would let a seat make the daemon hold more of its unread data. A file costs the
 * daemon one read of what the seat already wrote to its own disk.
 *
 * What the seat controls here is the file's name, its type, its links, its size and its
 * bytes, at any moment. So:
 * - the folder is the daemon's own path to the seat's tmp (seat-layout.ts), never a path the
 *   seat sent; the name is one fixed pattern (pack-file-name.ts), so nothing is resolved but it;
 * - the file is opened without following a link (a link to a file the seat cannot read, which
 *   the daemon as root could, is refused) and without blocking (a FIFO would hang the open);
 * - only a regular file with one name: a second name is a hard link, which could be to a file
 *   the seat may not read (where protected_hardlinks is off);
 * - it must be the size the seat said it wrote, and exactly that many bytes are read: a file
 *   that shrinks while it is read is refused, one that grows is read no further;
 * - it is copied into the daemon's quarantine as the pack's scan reads it (pack-scan.ts), each
 *   byte once and in order, and every check runs on the copy: bytes the seat changes during the
 *   read are bytes it sent, as over the socket. A sparse file costs the seat nothing to make, so
 *   the copy never runs more than the scan's window ahead of what the scan has checked: a file
 *   that is no pack, or a pack with a hole, is refused where the scan finds it, not after the
 *   daemon has copied all of it (found by an attack: 256 MiB of holes copied per push, ~15 GiB a
 *   minute of the daemon's disk within the refusal budget).
 * - the name is removed once the file is open and checked, so each push is of a file the seat
 *   wrote for it: the same file pushed again and again cost the seat nothing while the daemon
 *   copied and scanned it each time (found by an attack, round twenty); and a refused push takes
 *   of the seat's refusal budget by what was copied of it (daemon/seat/git.ts, FILE_BYTES_A_REFUSAL),
 *   since holes under stored deflate blocks make a valid pack ~16 times the disk it costs the seat.
 * Nothing else here writes or removes in the seat's folder.
 */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/** The least one fill copies: small reads of the scan's header and windows come in a few turns. */
const FILL_BYTES = 64 * 1024;

/**
 * The most of what was last copied that is kept to answer the scan's reads from memory, not by
 * reading the copy back: the scan's window (256 KiB) starts inside the last fill and ends in the
 * next. Read back, each window cost a read of the copy in line after its write (issue 26: a
 * 1 MiB pack's copy and scan 8.7 -> 5.0 ms, median of 25, in line on every push).
 */
export const RECENT_BYTES = 512 * 1024;

/**
 * Opens the seat's pack file `name` in `folder` (the seat's tmp, as the daemon knows it), which
 * the seat says is `bytes` long; a PackRejected (push.pack) for anything else. `digest` is
 * given the bytes as they are copied, in order.
 */
export async function openSeatPackFile(folder: string, name: string, bytes: bigint, digest?: Hash, signal?: AbortSignal): Promise<FilledPack> {
  if (!PACK_FILE_NAME.test(name)) throw new PackRejected("the pack file's name is not .teamd-pack-UUID.pack");
  if (bytes > BigInt(Number.MAX_SAFE_INTEGER)) throw new PackRejected(`the pack file is said to be ${bytes} bytes`);
  const size = Number(bytes);
  let handle: FileHandle;
  try {
    handle = await open(join(folder, name), OPEN_FLAGS);
  } catch (error) {
    throw new PackRejected(`the pack file ${name} cannot be read in your tmp folder (${openProblem(error)})`);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new PackRejected(`the pack file ${name} is not a regular file`);
    if (stats.nlink !== 1) throw new PackRejected(`the pack file ${name} has ${stats.nlink} names (a hard link); write it once, by its own name`);
    if (stats.size !== size) throw new PackRejected(`the pack file ${name} is ${stats.size} bytes, not the ${size} it was said to be`);
    // Taken: the name goes as the file is read, so a push cannot be made again of the same
    // file for nothing (found by an attack, round twenty). unlink does not follow a link, and the
    // name is the one fixed name in the seat's own folder: whatever the seat put there since the
    // open is its own, and only that entry goes.
    await unlink(join(folder, name)).catch(() => undefined);
  } catch (error) {
    await handle.close();
    throw error;
  }
  return new SeatPackCopy(handle, name, size, digest, signal);
}

/** The seat's open pack file, copied into the quarantine's file as far as it has been read. */
class SeatPackCopy implements FilledPack {
  private copy: FileHandle | undefined;
  private copied = 0;
  /** The bytes just copied, the last up to `copied` (at most RECENT_BYTES): exactly what the copy holds there. */
  private recent: Buffer = Buffer.alloc(0);
  /** The copy in progress: one at a time, each from where the last ended. */
  private filling: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly seatFile: FileHandle,
    private readonly name: string,
    readonly size: number,
    private readonly digest: Hash | undefined,
    private readonly signal: AbortSignal | undefined,
  ) {}

  get copiedBytes(): number {
    return this.copied;
  }

  fillInto(copy: FileHandle): void {
    this.copy = copy;
  }

  async read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ readonly bytesRead: number }> {
    const end = Math.min(position + length, this.size);
    await this.fill(end);
    if (position >= end) return { bytesRead: 0 };
    const recentStart = this.copied - this.recent.length;
    if (position >= recentStart && end <= this.copied) {
      this.recent.copy(buffer, offset, position - recentStart, end - recentStart);
      return { bytesRead: end - position };
    }
    return this.target().read(buffer, offset, end - position, position);
  }

  finish(): Promise<void> {
    return this.fill(this.size);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.filling.catch(() => undefined);
    await this.seatFile.close().catch(() => undefined);
  }

  private target(): FileHandle {
    if (this.copy === undefined) throw new Error("the pack file's copy has no file to fill");
    return this.copy;
  }

  /** Copies the seat's bytes up to `end` (at least FILL_BYTES more, never past the size). */
  private fill(end: number): Promise<void> {
    const next = this.filling.then(async () => {
      if (this.copied >= end) return;
      // A seat that hung up has its copy and scan stopped, at the next fill: four pushes left
      // running after their calls ended held the daemon's CPU and the seat's git slots for
      // minutes (found by an attack, round twenty). Charged as the push's refusal.
      if (this.signal?.aborted === true) throw new PackRejected("the push's call ended before its pack was checked");
      const upTo = Math.min(this.size, Math.max(end, this.copied + FILL_BYTES));
      const chunk = Buffer.allocUnsafe(upTo - this.copied);
      let filled = 0;
      while (filled < chunk.byteLength) {
        const { bytesRead } = await this.seatFile.read(chunk, filled, chunk.byteLength - filled, this.copied + filled);
        if (bytesRead === 0) {
          throw new PackRejected(`the pack file ${this.name} ended at ${this.copied + filled} of its ${this.size} bytes (it changed while it was read)`);
        }
        filled += bytesRead;
      }
      const target = this.target();
      for (let written = 0; written < chunk.byteLength;) {
        const { bytesWritten } = await target.write(chunk, written, chunk.byteLength - written, this.copied + written);
        written += bytesWritten;
      }
      this.digest?.update(chunk);
      const kept = Math.min(this.recent.length, Math.max(0, RECENT_BYTES - chunk.byteLength));
      this.recent =
        kept > 0 ? Buffer.concat([this.recent.subarray(this.recent.length - kept), chunk]) : chunk.subarray(Math.max(0, chunk.byteLength - RECENT_BYTES));
      this.copied = upTo;
    });
    this.filling = next;
    return next;
  }
}

function openProblem(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case "ENOENT":
      return "there is no such file: TEAMD_TMP must be the seat's tmp folder";
    case "ELOOP":
      return "it is a symbolic link";
    case "ENXIO":
      return "it is a socket or a device";
    default:
      return code ?? "it could not be opened";
  }
}
