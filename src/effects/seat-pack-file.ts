import { constants } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { PackRejected } from "./git-receive.js";
import { PACK_FILE_NAME } from "./pack-file-name.js";

/**
 * A pushed pack the seat's git wrote to a file in the seat's own tmp folder, read by the daemon
 * from its own path to that folder (issue 26). Streamed over the seat socket, a 1 MiB pack's
 * 64 KiB messages each waited a round trip on HTTP/2's window (~15-20 ms of a push); a wider
 * window would let a seat make the daemon hold more of its unread data. A file costs the
 * daemon one read of what the seat already wrote to its own disk.
 *
 * What the seat controls here is the file's name, its type, its links, its size and its
 * bytes, at any moment. So:
 * - the folder is the daemon's own path to the seat's tmp (seat-layout.ts), never a path the
 *   seat sent; the name is one fixed pattern (pack-file-name.ts), so nothing is resolved but it;
 * - the file is opened without following a link (a link to a file the seat cannot read, which
 *   the daemon as root could, is refused) and without blocking (a FIFO would hang the read);
 * - only a regular file with one name: a second name is a hard link, which could be to a file
 *   the seat may not read (where protected_hardlinks is off);
 * - it must be the size the seat said it wrote, and exactly that many bytes are read: a file
 *   that shrinks while it is read is refused, one that grows is read no further;
 * - what is read is copied into the daemon's quarantine (git-receive.ts), and every check runs
 *   on that copy: bytes the seat changes during the read are bytes it sent, as over the socket.
 * Nothing here writes or removes in the seat's folder: the seat's helper removes its file.
 */
/** What one read takes: the quarantine's write of a chunk overlaps the read of the next (git-receive.ts). */
const READ_BYTES = 1024 * 1024;

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * The bytes of the seat's pack file `name` in `folder` (the seat's tmp, as the daemon knows it),
 * which the seat says is `bytes` long; a PackRejected (push.pack) for anything else. Read as
 * the consumer asks: a consumer that stops early (a pack over its bounds) reads no more.
 */
export async function* seatPackFile(folder: string, name: string, bytes: bigint): AsyncIterable<Uint8Array> {
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
    for (let at = 0; at < size;) {
      const chunk = Buffer.allocUnsafe(Math.min(READ_BYTES, size - at));
      let filled = 0;
      while (filled < chunk.byteLength) {
        const { bytesRead } = await handle.read(chunk, filled, chunk.byteLength - filled, at + filled);
        if (bytesRead === 0) throw new PackRejected(`the pack file ${name} ended at ${at + filled} of its ${size} bytes (it changed while it was read)`);
        filled += bytesRead;
      }
      at += filled;
      yield chunk;
    }
  } finally {
    await handle.close();
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
      return "it is a socket";
    default:
      return code ?? "it could not be opened";
  }
}
