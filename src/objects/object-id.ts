/**
 * An object's identity (§6 "objects, not names"): the (device, inode) pair of the file it
 * is, whatever name reached it. Two names with one identity are one object — a hard link,
 * or a folder seen again through a bind mount — so a check made on one name holds for every
 * other. bigint, because a 64-bit inode does not fit a double and a rounded inode could
 * make two objects look like one. Pure: the plan compiler uses this file; identity.ts
 * reads identities from the filesystem.
 */
export interface ObjectId {
  readonly dev: bigint;
  readonly ino: bigint;
}

/**
 * An identity plus the object's birth time where the filesystem records one (ext4, xfs,
 * btrfs, tmpfs, APFS). (dev, ino) names an object only while it exists: once it is deleted
 * its inode number can be handed to the next file created (measured here: a file unlinked
 * and a FIFO made in its place got the same inode). Comparing the birth time too tells the
 * checked object from a newcomer in its place.
 */
export interface ObjectStamp extends ObjectId {
  /** Birth time in ns; undefined where the filesystem has none. */
  readonly born?: bigint;
}

/** A stable string form of an identity, usable as a map key: `dev:ino` in decimal. */
export function objectKey(id: ObjectId): string {
  return `${id.dev}:${id.ino}`;
}

export function sameObject(a: ObjectId, b: ObjectId): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** Same object, and — where both stamps carry one — the same birth: not a newcomer reusing the inode. */
export function sameStamp(a: ObjectStamp, b: ObjectStamp): boolean {
  return sameObject(a, b) && (a.born === undefined || b.born === undefined || a.born === b.born);
}
