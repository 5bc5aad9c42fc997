import { closeSync, constants, fstatSync, openSync, readdirSync, readSync, renameSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";

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
 * anything it does not plainly understand: a linked worktree, a ref it cannot read, a remote
 * name that is not a plain name. It never guesses without a tracking ref: a pack of HEAD's
 * whole history is no guess worth its work.
 */
export interface PushGuess {
  readonly tip: string;
  /** The commits the guess leaves out: the tracking refs' tips, each once. */
  readonly excludes: readonly string[];
}

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** A ref file is an object id and a newline; HEAD a symbolic ref line. More is not a ref this reads. */
const REF_FILE_BYTES = 256;
/** The packed-refs file read whole, at most this much; a larger one is not guessed from. */
const PACKED_REFS_BYTES = 1024 * 1024;
/** The most tracking refs one guess reads (loose files and folders); more, and there is no guess. */
const TRACKING_REFS = 1024;
/**
 * The helper's note of what the daemon held at this repository's last push, in its git folder
 * (as git keeps FETCH_HEAD there): a first line naming it, then an object id a line.
 */
export const GUESS_FILE = "teamd-push-guess";
const GUESS_HEADER = "# teamd push guess 1";
/** The most commits a note keeps (as many as a fetch sends as haves). */
export const GUESS_COMMITS = 4096;

export function guessPush(gitDir: string | undefined, remote: string | undefined): PushGuess | undefined {
  if (gitDir === undefined || gitDir === "" || remote === undefined || !/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(remote)) return undefined;
  try {
    // A linked worktree keeps its refs in the common folder: not read here.
    if (readSmall(join(gitDir, "commondir"), REF_FILE_BYTES) !== undefined) return undefined;
    const packed = packedRefs(gitDir);
    if (packed === undefined) return undefined;
    const tip = headCommit(gitDir, packed);
    if (tip === undefined) return undefined;
    const prefix = `refs/remotes/${remote}/`;
    const tracking = new Map<string, string>();
    for (const [name, oid] of packed) if (name.startsWith(prefix)) tracking.set(name, oid);
    if (!looseRefs(gitDir, prefix, tracking)) return undefined;
    const noted = readSmall(join(gitDir, GUESS_FILE), (GUESS_COMMITS + 1) * 66);
    if (noted === null) return undefined;
    const lines = noted?.split("\n") ?? [];
    const held = lines[0] === GUESS_HEADER ? lines.slice(1).filter((line) => OBJECT_ID.test(line)) : [];
    const excludes = [...new Set([...held, ...tracking.values()])];
    return excludes.length === 0 ? undefined : { tip, excludes };
  } catch {
    return undefined;
  }
}

function headCommit(gitDir: string, packed: ReadonlyMap<string, string>): string | undefined {
  const head = readSmall(join(gitDir, "HEAD"), REF_FILE_BYTES);
  if (head === undefined || head === null) return undefined;
  const detached = /^([0-9a-f]{40}|[0-9a-f]{64})\n$/.exec(head)?.[1];
  if (detached !== undefined) return detached;
  const branch = /^ref: (refs\/heads\/[A-Za-z0-9._/-]+)\n$/.exec(head)?.[1];
  if (branch === undefined || /(^|\/)\.|\.\.|\/\/|\/$|\.lock(\/|$)/.test(branch)) return undefined;
  const loose = readSmall(join(gitDir, branch), REF_FILE_BYTES);
  if (loose === null) return undefined;
  return loose !== undefined ? refValue(loose) : packed.get(branch);
}

/** The packed-refs file's refs (peeled lines and comments skipped); an empty map without one; undefined if it cannot be read whole. */
function packedRefs(gitDir: string): Map<string, string> | undefined {
  const refs = new Map<string, string>();
  const text = readSmall(join(gitDir, "packed-refs"), PACKED_REFS_BYTES);
  if (text === null) return undefined;
  if (text === undefined) return refs;
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#") || line.startsWith("^")) continue;
    const at = line.indexOf(" ");
    const oid = line.slice(0, at);
    if (at > 0 && OBJECT_ID.test(oid)) refs.set(line.slice(at + 1), oid);
  }
  return refs;
}

/** The loose refs under `prefix` into `into` (a loose ref stands over a packed one); false if there are more than this reads, or one it cannot. */
function looseRefs(gitDir: string, prefix: string, into: Map<string, string>): boolean {
  const folders = [prefix.slice(0, -1)];
  let seen = 0;
  for (let folder = folders.pop(); folder !== undefined; folder = folders.pop()) {
    let entries;
    try {
      entries = readdirSync(join(gitDir, folder), { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
      return false;
    }
    for (const entry of entries) {
      if (++seen > TRACKING_REFS) return false;
      const name = `${folder}/${entry.name}`;
      if (entry.isDirectory()) folders.push(name);
      else if (entry.isFile() && !entry.name.endsWith(".lock")) {
        const text = readSmall(join(gitDir, name), REF_FILE_BYTES);
        if (text === undefined || text === null) return false;
        // A symbolic ref (the remote's HEAD) names another tracking ref, read on its own.
        if (text.startsWith("ref: ")) continue;
        const oid = refValue(text);
        if (oid === undefined) return false;
        into.set(name, oid);
      } else return false;
    }
  }
  return true;
}

function refValue(text: string): string | undefined {
  return /^([0-9a-f]{40}|[0-9a-f]{64})\n$/.exec(text)?.[1];
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
