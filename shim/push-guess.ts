import { closeSync, constants, fstatSync, openSync, readSync, renameSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { plainRefName, readFileRef, readFileRefs } from "../src/effects/ref-files.js";

/**
 * What a `git push teamd` will most likely send, guessed from this repository's files while
 * the daemon answers the listing that comes first (issue 26): HEAD's commit, less the commits
 * the daemon was last seen to hold — what the last push through this helper left out and
 * landed (GUESS_FILE, written by recordPushed), and the remote's tracking refs
 * (`refs/remotes/<remote>/`), what git last fetched.
 * The remote helper starts `pack-objects` on the guess at once, and sends that pack only if the
 * push git then asks for is exactly it: one tip, HEAD's, and the same commits left out as the
 * daemon's listing would have it (git-remote.ts). Anything else, and the guess is thrown away
 * and the pack made as before, so a wrong or odd guess costs time, never a different pack.
 *
 * It reads only this repository's own files (the seat's, in the seat), bounded, and gives up on
 * anything it does not plainly understand: a linked worktree, a HEAD it cannot read, a remote
 * name that is not a plain name. It never guesses without a tracking ref: a pack of HEAD's
 * whole history is no guess worth its work.
 */
export interface PushGuess {
  readonly tip: string;
  /** The commits the guess leaves out: the tracking refs' tips, each once. */
  readonly excludes: readonly string[];
}

/** An object id as git writes one (SHA-1 or SHA-256, lower case hex): the helper's one test of it. */
export const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** HEAD is a symbolic ref line or an object id; more is not a HEAD this reads. */
const HEAD_BYTES = 256;
/**
 * The helper's note of what the daemon held at this repository's last push, in its git folder
 * (as git keeps FETCH_HEAD there): a first line naming it, then an object id a line.
 */
export const GUESS_FILE = "teamd-push-guess";
const GUESS_HEADER = "# teamd push guess 1";
/** The most commits a note keeps (as many as a fetch sends as haves). */
export const GUESS_COMMITS = 4096;

export function guessPush(gitDir: string | undefined, remote: string | undefined): PushGuess | undefined {
  if (gitDir === undefined || gitDir === "" || remote === undefined || !plainRefName(`refs/remotes/${remote}`)) return undefined;
  try {
    // A linked worktree keeps its refs in the common folder: not read here.
    if (readSmall(join(gitDir, "commondir"), HEAD_BYTES) !== undefined) return undefined;
    const tip = headCommit(gitDir);
    if (tip === undefined) return undefined;
    // The tracking refs as git's files format has them (ref-files.ts); where it cannot say (a
    // symbolic ref among them, another format), the note alone.
    const tracking = readFileRefs(gitDir, `refs/remotes/${remote}/`) ?? [];
    const noted = readSmall(join(gitDir, GUESS_FILE), (GUESS_COMMITS + 1) * 66);
    if (noted === null) return undefined;
    const lines = noted?.split("\n") ?? [];
    const held = lines[0] === GUESS_HEADER ? lines.slice(1).filter((line) => OBJECT_ID.test(line)) : [];
    const excludes = [...new Set([...held, ...tracking.map((ref) => ref.oid)])];
    return excludes.length === 0 ? undefined : { tip, excludes };
  } catch {
    return undefined;
  }
}

/**
 * What a push's source names in this repository's files (HEAD, or a plain ref), as git would
 * resolve it there; undefined where the files do not plainly say (git's cat-file then answers).
 */
export function localCommit(gitDir: string | undefined, source: string): string | undefined {
  if (gitDir === undefined || gitDir === "") return undefined;
  try {
    if (source === "HEAD") return readSmall(join(gitDir, "commondir"), HEAD_BYTES) === undefined ? headCommit(gitDir) : undefined;
    return plainRefName(source) ? (readFileRef(gitDir, source) ?? undefined) : undefined;
  } catch {
    return undefined;
  }
}

/** HEAD's commit: a detached HEAD's id, or its branch's as ref-files.ts reads it. */
function headCommit(gitDir: string): string | undefined {
  const head = readSmall(join(gitDir, "HEAD"), HEAD_BYTES);
  if (head === undefined || head === null) return undefined;
  const detached = /^([0-9a-f]{40}|[0-9a-f]{64})\n$/.exec(head)?.[1];
  if (detached !== undefined) return detached;
  const branch = /^ref: (refs\/heads\/\S+)\n$/.exec(head)?.[1];
  return branch === undefined ? undefined : (readFileRef(gitDir, branch) ?? undefined);
}

/**
 * A regular file's text, read without following a link, if it is under `limit` bytes: undefined
 * when there is no such file, null when it is something else, too large or cannot be read.
 */
function readSmall(path: string, limit: number): string | undefined | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? undefined : null;
  }
  try {
    const size = fstatSync(fd);
    if (!size.isFile() || size.size >= limit) return null;
    const buffer = Buffer.alloc(size.size);
    let read = 0;
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, read);
      if (n === 0) break;
      read += n;
    }
    return buffer.toString("utf8", 0, read);
  } finally {
    closeSync(fd);
  }
}

/**
 * The commits the daemon will list after a push, of those this repository has: its listing with
 * the refs that landed moved to their new commits (or gone, deleted). The note had been the
 * listing plus what landed: a branch pushed again kept its old commit in the note, which the
 * next listing no longer held, so no guess matched again — every push after the first to the
 * same branch made its pack after the listing.
 */
export function heldAfter(
  listed: readonly { readonly name: string; readonly oid: string }[],
  present: ReadonlySet<string>,
  landed: readonly { readonly hubRef: string; readonly oid: string }[],
): string[] {
  const tips = new Map(listed.filter((r) => present.has(r.oid)).map((r) => [r.name, r.oid]));
  for (const { hubRef, oid } of landed) {
    if (oid === "") tips.delete(hubRef);
    else tips.set(hubRef, oid);
  }
  return [...new Set(tips.values())];
}

/**
 * Note what the daemon holds after a push (the commits it left out, and the tips that landed),
 * for the next push's guess: written beside, then renamed over the last note. A note that
 * cannot be written is no note (the next push makes its pack as before).
 */
export function recordPushed(gitDir: string | undefined, held: readonly string[]): void {
  if (gitDir === undefined || gitDir === "") return;
  const oids = [...new Set(held)].filter((oid) => OBJECT_ID.test(oid)).slice(0, GUESS_COMMITS);
  const path = join(gitDir, GUESS_FILE);
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
    try {
      writeSync(fd, [GUESS_HEADER, ...oids, ""].join("\n"));
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, path);
  } catch {
    rmSync(temporary, { force: true });
  }
}
