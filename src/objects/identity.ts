import { lstat, stat } from "node:fs/promises";
import type { BigIntStats } from "node:fs";
import type { ObjectId, ObjectStamp } from "./object-id.js";

/**
 * Reading an object's identity from the filesystem (object-id.ts says what an identity is):
 * bigint stat, because a 64-bit inode does not fit a double. Where no stable identity can
 * be read, the answer is a failure that names why — and callers refuse (§11 fail closed).
 */

/** What kind of object a name reaches. "other" is a device, FIFO or anything unusual. */
export type ObjectKind = "file" | "dir" | "symlink" | "socket" | "other";

export interface ObjectInfo {
  readonly id: ObjectId;
  /** The identity with its birth time, for checks that must outlive a deletion (open-verified.ts). */
  readonly stamp: ObjectStamp;
  readonly kind: ObjectKind;
  /** st_nlink: for a regular file, how many names reach it (for a directory it is not that). */
  readonly nlink: bigint;
  readonly uid: number;
  readonly mode: number;
}

/** Why an identity could not be established; `missing` separates "no such object" from "cannot tell". */
export interface IdentityFailure {
  readonly ok: false;
  readonly rule: "object.identity";
  readonly reason: string;
  readonly missing: boolean;
}

export type IdentityResult = { readonly ok: true; readonly info: ObjectInfo } | IdentityFailure;

export function kindOf(stats: BigIntStats): ObjectKind {
  if (stats.isFile()) return "file";
  if (stats.isDirectory()) return "dir";
  if (stats.isSymbolicLink()) return "symlink";
  if (stats.isSocket()) return "socket";
  return "other";
}

/**
 * The identity carried by a bigint stat, or why it cannot serve as one. An inode of 0 is
 * what some filesystems report when they have no stable inode (several FUSE and network
 * filesystems): two objects could share it, so it identifies nothing and is refused.
 */
export function infoFromStats(stats: BigIntStats, what: string): IdentityResult {
  if (stats.ino === 0n) {
    return { ok: false, rule: "object.identity", reason: `${what} reports inode 0: this filesystem gives no stable identity`, missing: false };
  }
  const born = stats.birthtimeNs > 0n ? stats.birthtimeNs : undefined;
  return {
    ok: true,
    info: Object.freeze({
      id: Object.freeze({ dev: stats.dev, ino: stats.ino }),
      stamp: Object.freeze(born === undefined ? { dev: stats.dev, ino: stats.ino } : { dev: stats.dev, ino: stats.ino, born }),
      kind: kindOf(stats),
      nlink: stats.nlink,
      uid: Number(stats.uid),
      mode: Number(stats.mode),
    }),
  };
}

/** Turn a failed stat into the identity failure it means. */
export function identityFailure(path: string, error: unknown): IdentityFailure {
  const code = (error as NodeJS.ErrnoException).code;
  const missing = code === "ENOENT" || code === "ENOTDIR";
  const detail = missing ? "no such file or directory" : `${code ?? "error"}: ${(error as Error).message}`;
  return { ok: false, rule: "object.identity", reason: `cannot establish the identity of ${path}: ${detail}`, missing };
}

/**
 * The identity of the object a path names. `follow: false` (the default) names the link
 * itself when the last component is a symlink; callers that want the target canonicalize
 * first (canonical.ts), so a symlink is never silently followed to somewhere unchecked.
 */
export async function identify(path: string, options: { follow?: boolean } = {}): Promise<IdentityResult> {
  try {
    const stats = options.follow ? await stat(path, { bigint: true }) : await lstat(path, { bigint: true });
    return infoFromStats(stats, path);
  } catch (error) {
    return identityFailure(path, error);
  }
}
