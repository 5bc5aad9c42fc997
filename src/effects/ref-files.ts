import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync } from "node:fs";
import { join } from "node:path";

/**
 * A repository's refs read in-process, where git's "files" format makes the answer certain:
 * the loose ref files under refs/ (each a plain object id), then packed-refs for what no loose
 * file names, as git reads them (loose first, so a ref packed or deleted while this reads is
 * seen before or after, never lost). Every spawn of `git for-each-ref` was ~11 ms on a machine
 * where a process start costs ~9 ms, and a fetch asked twice, a push four times (issue 26).
 *
 * Anything this cannot answer exactly as git would — a symbolic or broken ref, a link, a name
 * outside a conservative alphabet, another ref format (reftable), more loose refs than are
 * cheap to read in line, a packed-refs file it does not recognise, a file that changes under
 * it — returns `undefined`, and the caller asks git. The reads are in line (no libuv pool: a
 * round trip through it cost more than the read) and bounded by those counts and sizes.
 */
export interface FileRef {
  readonly name: string;
  readonly oid: string;
}

/** Loose refs read in line at most; a repository with more is answered by git. */
export const MAX_LOOSE_REFS = 256;
/** packed-refs read in line at most (about 12,000 refs); larger is answered by git. */
export const MAX_PACKED_REFS_BYTES = 1024 * 1024;

const OID_LINE = /^([0-9a-f]{40}|[0-9a-f]{64})\n$/;
/** A name component git certainly accepts (check-ref-format), and certainly sorts as JavaScript does. */
const COMPONENT = /^[A-Za-z0-9_+-][A-Za-z0-9._+-]*$/;

function plainComponent(part: string): boolean {
  return COMPONENT.test(part) && !part.includes("..") && !part.endsWith(".") && !part.endsWith(".lock");
}

/** Whether `name` is a ref name this reader answers for (refs/, then plain components). */
export function plainRefName(name: string): boolean {
  const parts = name.split("/");
  return parts.length >= 2 && parts[0] === "refs" && parts.slice(1).every(plainComponent);
}

class Unsure extends Error {}

/**
 * The refs under `prefix` (a ref folder: "refs/", "refs/heads/", "refs/heads/seat/a/"), sorted
 * by name as for-each-ref sorts them; `undefined` where git must answer.
 */
export function readFileRefs(repo: string, prefix: string): FileRef[] | undefined {
  if (prefix !== "refs/" && !(prefix.endsWith("/") && plainRefName(prefix.slice(0, -1)))) return undefined;
  try {
    if (!filesFormat(repo)) return undefined;
    const loose = new Map<string, string>();
    walkLoose(repo, prefix.slice(0, -1), loose, { count: 0 });
    const packed = readPacked(repo);
    for (const [name, oid] of packed) if (name.startsWith(prefix) && !loose.has(name)) loose.set(name, oid);
    return [...loose].map(([name, oid]) => ({ name, oid })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } catch (error) {
    if (error instanceof Unsure) return undefined;
    throw error;
  }
}

/** One ref's object id (`null`: no such ref), or `undefined` where git must answer. */
export function readFileRef(repo: string, ref: string): string | null | undefined {
  if (!plainRefName(ref)) return undefined;
  try {
    if (!filesFormat(repo)) return undefined;
    const loose = readLooseFile(join(repo, ref), false);
    if (loose !== undefined) return loose;
    return readPacked(repo).get(ref) ?? null;
  } catch (error) {
    if (error instanceof Unsure) return undefined;
    throw error;
  }
}

/**
 * One ref's value (null: no such ref) and every packed ref, as git's files format has them, for
 * a writer that holds the ref's lock (ref-write.ts); undefined where git must answer — which
 * includes a folder of refs by the ref's name.
 */
export function refState(repo: string, ref: string): { readonly value: string | null; readonly packed: ReadonlyMap<string, string> } | undefined {
  if (!plainRefName(ref)) return undefined;
  try {
    if (!filesFormat(repo)) return undefined;
    if (lstatOrUndefined(join(repo, ref))?.isDirectory() === true) return undefined;
    const loose = readLooseFile(join(repo, ref), false);
    const packed = readPacked(repo);
    return { value: loose ?? packed.get(ref) ?? null, packed };
  } catch (error) {
    if (error instanceof Unsure) return undefined;
    throw error;
  }
}

/** The files format: refs/ and refs/heads/ are folders (reftable leaves refs/heads a file), no reftable/. */
function filesFormat(repo: string): boolean {
  const refs = lstatOrUndefined(join(repo, "refs"));
  const heads = lstatOrUndefined(join(repo, "refs", "heads"));
  return refs?.isDirectory() === true && heads?.isDirectory() === true && lstatOrUndefined(join(repo, "reftable")) === undefined;
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new Unsure();
  }
}

function walkLoose(repo: string, folder: string, into: Map<string, string>, seen: { count: number }): void {
  let entries;
  try {
    entries = readdirSync(join(repo, folder), { withFileTypes: true });
  } catch (error) {
    // No such folder: no loose refs under it (git's answer too). A file where a folder was: git's to say.
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw new Unsure();
  }
  for (const entry of entries) {
    // A lock file is a ref being written; git's own listing passes over it too.
    if (entry.name.endsWith(".lock")) continue;
    if (!plainComponent(entry.name)) throw new Unsure();
    const name = `${folder}/${entry.name}`;
    if (entry.isDirectory()) walkLoose(repo, name, into, seen);
    else if (entry.isFile()) {
      if (++seen.count > MAX_LOOSE_REFS) throw new Unsure();
      const oid = readLooseFile(join(repo, name), true);
      if (oid === undefined) throw new Unsure();
      into.set(name, oid);
    } else throw new Unsure();
  }
}

/**
 * A loose ref file's object id; `undefined` where there is none (when `mustExist` is false: no
 * file, or a folder of refs by that name). Anything but one object id and a newline is git's.
 */
function readLooseFile(path: string, mustExist: boolean): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (!mustExist && (code === "ENOENT" || code === "ENOTDIR")) return undefined;
    throw new Unsure();
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory() && !mustExist) return undefined;
    if (!stat.isFile() || stat.size > 128) throw new Unsure();
    const buffer = Buffer.alloc(129);
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    const match = OID_LINE.exec(buffer.toString("latin1", 0, length));
    if (match?.[1] === undefined) throw new Unsure();
    return match[1];
  } finally {
    closeSync(fd);
  }
}

const PACKED_HEADER = /^# pack-refs with:[ a-z-]*$/;
const PACKED_LINE = /^([0-9a-f]{40}|[0-9a-f]{64}) (refs\/\S+)$/;
const PEELED_LINE = /^\^([0-9a-f]{40}|[0-9a-f]{64})$/;

/** packed-refs by name (none where there is no file). */
function readPacked(repo: string): Map<string, string> {
  const out = new Map<string, string>();
  let fd: number;
  try {
    fd = openSync(join(repo, "packed-refs"), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return out;
    throw new Unsure();
  }
  let text: string;
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > MAX_PACKED_REFS_BYTES) throw new Unsure();
    const buffer = Buffer.alloc(stat.size + 1);
    let length = 0;
    for (let n = 1; n > 0 && length < buffer.length; length += n) n = readSync(fd, buffer, length, buffer.length - length, length);
    // Grown while read (a rewrite is a rename, so this is not git's file): git's to answer.
    if (length !== stat.size) throw new Unsure();
    text = buffer.toString("latin1", 0, length);
  } finally {
    closeSync(fd);
  }
  if (text === "") return out;
  if (!text.endsWith("\n")) throw new Unsure();
  const lines = text.slice(0, -1).split("\n");
  lines.forEach((line, i) => {
    if (i === 0 && line.startsWith("#")) {
      if (!PACKED_HEADER.test(line)) throw new Unsure();
      return;
    }
    if (PEELED_LINE.test(line) && i > 0) return;
    const match = PACKED_LINE.exec(line);
    if (match?.[1] === undefined || match[2] === undefined || !plainRefName(match[2])) throw new Unsure();
    out.set(match[2], match[1]);
  });
  return out;
}
