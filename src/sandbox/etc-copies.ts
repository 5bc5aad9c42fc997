import { accessSync, closeSync, constants, fstatSync, openSync } from "node:fs";
import type { SandboxPlan } from "./plan-types.js";
import { identity, signature, type SeatAccess } from "./etc-readable.js";

/**
 * The seat's /etc files as copies, not binds (issue 26). bubblewrap re-reads the whole mount
 * table after every bind, so a launch grows with the square of its binds, and a seat's ~140
 * binds of /etc entries were most of a `teamd exec` (on a 9 ms-a-process machine, 46 ms of
 * bwrap against 18.5 ms with /etc as one bind). A file's content given on an fd with
 * `--file FD DEST` makes no mount: bwrap writes it into the seat's root, which the plan then
 * makes read-only, so the seat holds a read-only copy of what it could have read through a
 * read-only bind — and no more:
 *
 * - only what anyone may read (the "other" read bit, checked on the open file), and only what
 *   the kernel lets the seat's own uid read: a copy is read by the daemon, which as root could
 *   read anything, where a bind leaves the check to the kernel at the seat's uid. In system mode
 *   the seat's uid is asked (etc-readable.ts: ACLs, its group, every folder on the way; a world-
 *   readable file an ACL denied the seat was readable through the copy, found by an attack);
 *   in user mode the daemon is that uid, and its own open is the answer. What the seat may
 *   not read stays a bind, checked by the kernel as before;
 * - only regular files, opened without following a link and without blocking (a FIFO would
 *   hang the read); each at most COPY_FILE_BYTES, all at most COPY_TOTAL_BYTES, at most
 *   COPY_COUNT: the copies live in the seat's root, in the host's memory;
 * - a seat with an open-files limit gets no more copies than fit under it with room to spare
 *   (COPY_FD_ROOM): the fds are open in the launch chain, under its rlimits, until bwrap has
 *   read each (found by the suite: a seat limited to 64 files had bwrap fail to load its libraries);
 * - the copy is read-only to everyone and executable where the seat's uid may execute the file
 *   (access(2)'s answer: the copy is the seat's own inside, so the file's own bits would not do);
 *   never a write, setuid or setgid bit;
 * - only where the plan marked the bind copyable (etc-filter.ts: /etc's files, never a seat's
 *   own tree). What is not copied is bound as the plan says, so a failure here costs time only.
 *
 * The copy is taken at the launch, like the bind's view of a file the host replaces by rename
 * (which a bind, holding the old inode, never sees either). Inside, a copy is owned by the
 * seat's uid where a bind shows the file's owner (root, unmapped: nobody); no tool we know
 * reads that of /etc.
 */
export const COPY_FILE_BYTES = 256 * 1024;
export const COPY_TOTAL_BYTES = 2 * 1024 * 1024;
export const COPY_COUNT = 256;
/** The fds left to bwrap and the seat's start under an open-files limit, beyond the copies. */
export const COPY_FD_ROOM = 64;

/** One copy: the fd the launch passes at `fd` in the child, and the bits its file gets inside. */
export interface EtcCopy {
  readonly fd: number;
  readonly perms: number;
}

export interface EtcCopies {
  /** By the bind's dest: how bwrap-args.ts writes `--perms P --file FD DEST` for it. */
  readonly byDest: ReadonlyMap<string, EtcCopy>;
  /** The daemon's fds of the opened files, in order: the child gets them at firstFd, firstFd + 1, ... */
  readonly fds: readonly number[];
  /** Closes the daemon's own fds (after the spawn has its copies, or when it failed). */
  close(): void;
}

/** The host files a plan marks copyable, in its order. */
export function copyableSources(plan: SandboxPlan): string[] {
  return plan.mounts.flatMap((op) => (op.op === "ro-bind" && op.copyable === true ? [op.src] : []));
}

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * Opens the plan's copyable sources; the child gets them at firstFd onwards. Never fails:
 * what cannot be copied is bound. Synchronous on purpose: an open and an fstat of a local
 * file are a few microseconds each, and through libuv's pool of four threads the ~130 of a
 * seat's /etc cost more than the mounts they save (measured: ~8 ms against ~1 ms).
 */
export function openEtcCopies(plan: SandboxPlan, firstFd: number, seatAccess?: ReadonlyMap<string, SeatAccess>): EtcCopies {
  const byDest = new Map<string, EtcCopy>();
  const fds: number[] = [];
  let total = 0;
  const openFiles = plan.limits === "none" ? undefined : plan.limits.openFiles;
  const count = Math.min(COPY_COUNT, openFiles === undefined ? COPY_COUNT : openFiles - firstFd - COPY_FD_ROOM);
  // One pass over the folders for every file: read after the opens began, shared between them.
  const seen = new Map<string, string | undefined>();
  for (const op of plan.mounts) {
    if (op.op !== "ro-bind" || op.copyable !== true || byDest.has(op.dest)) continue;
    if (fds.length >= count) break;
    const access = seatAccess?.get(op.src);
    if (seatAccess !== undefined && access?.read !== true) continue;
    let fd: number | undefined;
    try {
      fd = openSync(op.src, OPEN_FLAGS);
      const stats = fstatSync(fd, { bigint: true });
      const size = Number(stats.size);
      // As another uid: the file opened is the one the seat's uid was asked about, under the
      // same folders still (a file or folder swapped between the check and this open is bound).
      const same = access === undefined || (access.sig.split("\0")[1] === identity(stats) && signature(op.src, seen) === access.sig);
      if (same && stats.isFile() && (stats.mode & 0o004n) !== 0n && size <= COPY_FILE_BYTES && total + size <= COPY_TOTAL_BYTES) {
        total += size;
        const exec = access !== undefined ? access.exec : mayExecute(op.src);
        byDest.set(op.dest, { fd: firstFd + fds.length, perms: exec ? 0o555 : 0o444 });
        fds.push(fd);
        fd = undefined;
      }
    } catch {
      // Not copied: bound, as the plan says.
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
  return {
    byDest,
    fds,
    close: () => {
      for (const fd of fds.splice(0)) {
        try {
          closeSync(fd);
        } catch {
          // Already closed: nothing to release.
        }
      }
    },
  };
}

/** access(2) as the daemon: in user mode the seat's own answer. */
function mayExecute(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
