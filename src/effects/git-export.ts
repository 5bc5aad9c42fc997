import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { GIT_OUTPUT_BYTES, gitInput, GitOutputTooLarge, splitNul } from "./git.js";

/**
 * Write exactly a commit's tree into an empty folder — the working copy a deploy command runs
 * in (§3 deploy: the gated artifact, and nothing else). Not `git archive` or a checkout: both
 * apply the tree's own .gitattributes (export-ignore, export-subst, eol and encoding
 * conversions, `ident`), so what they write is not the tree that was gated. Here each blob's
 * bytes are written as stored, with its mode: 100755 executable, 120000 a symbolic link
 * (written last, so no file is ever written through one), 160000 (a submodule) an empty
 * folder, as a checkout leaves it.
 */
export interface ExportLimits {
  /** The most bytes of content the export writes; a larger tree is refused before anything is written. */
  readonly maxBytes: number;
  /**
   * The most entries (files, links, submodule folders) it writes; more is refused before
   * anything is written. A tree is data a seat wrote: a few hundred bytes of trees reusing one
   * another can name a million paths. Default EXPORT_ENTRIES.
   */
  readonly maxEntries?: number;
}

/** More files than a large real repository holds (the Linux kernel: about 90,000). */
export const EXPORT_ENTRIES = 200_000;

/** Blobs are read in batches of about this many bytes (one larger blob is a batch of its own): the daemon never holds the whole artifact. */
const BLOB_BATCH_BYTES = 64 * 1024 * 1024;

/** ls-tree's listing, held whole: EXPORT_ENTRIES entries of paths up to about 270 bytes on average fit; past it the listing is stopped, not held. */
const LISTING_BYTES = GIT_OUTPUT_BYTES;

export class ExportRefused extends Error {
  override readonly name = "ExportRefused";
}

interface Entry {
  readonly mode: string;
  readonly oid: string;
  readonly size: number;
  readonly path: string;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

export async function exportTree(
  gitDir: string,
  commit: string,
  dest: string,
  limits: ExportLimits,
): Promise<{ readonly files: number; readonly bytes: number }> {
  const maxEntries = limits.maxEntries ?? EXPORT_ENTRIES;
  const listed = await gitInput(["ls-tree", "-r", "-z", "-l", "--full-tree", commit], gitDir, "", {}, LISTING_BYTES).catch((error: unknown) => {
    if (error instanceof GitOutputTooLarge)
      throw new ExportRefused(`the artifact's tree lists more than ${LISTING_BYTES} bytes of paths; a deploy exports at most ${maxEntries} entries`);
    throw error;
  });
  const entries: Entry[] = [];
  let bytes = 0;
  const raws = splitNul(listed);
  if (raws.length > maxEntries) throw new ExportRefused(`the artifact's tree holds ${raws.length} entries; a deploy exports at most ${maxEntries} entries`);
  for (const raw of raws) {
    const tab = raw.indexOf(0x09);
    const [mode, , oid, size] = raw.subarray(0, tab).toString("latin1").split(/ +/);
    const path = checkedPath(raw.subarray(tab + 1));
    if (mode === undefined || oid === undefined || tab < 0) throw new ExportRefused(`git ls-tree printed an entry teamd cannot read`);
    const length = size === "-" || size === undefined ? 0 : Number(size);
    bytes += length;
    entries.push({ mode, oid, size: length, path });
  }
  if (bytes > limits.maxBytes) throw new ExportRefused(`the artifact's tree holds ${bytes} bytes, more than the ${limits.maxBytes} a deploy exports`);
  for (const e of entries)
    if (!["160000", "120000", "100644", "100755"].includes(e.mode)) throw new ExportRefused(`'${e.path}' has mode ${e.mode}, which a tree cannot hold`);
  const links: { target: Buffer; path: string }[] = [];
  for (const e of entries) if (e.mode === "160000") await mkdir(join(dest, ...e.path.split("/")), { recursive: true });
  for (const batch of blobBatches(entries.filter((e) => e.mode !== "160000"))) {
    const contents = await readBlobs(gitDir, batch);
    for (const e of batch) {
      const at = join(dest, ...e.path.split("/"));
      const content = contents.get(e.oid) as Buffer;
      if (e.mode === "120000") links.push({ target: content, path: at });
      else {
        await mkdir(join(at, ".."), { recursive: true });
        await writeFile(at, content, { flag: "wx", mode: e.mode === "100755" ? 0o755 : 0o644 });
      }
    }
  }
  for (const link of links) {
    await mkdir(join(link.path, ".."), { recursive: true });
    await symlink(link.target, link.path);
  }
  return { files: entries.length, bytes };
}

/** A tree path as written: UTF-8, no empty, `.`, `..` or `.git` component (a push's fsck of each object already refuses those). */
function checkedPath(bytes: Buffer): string {
  let path: string;
  try {
    path = UTF8.decode(bytes);
  } catch {
    throw new ExportRefused(`a path of the artifact is not valid UTF-8: ${JSON.stringify(bytes.toString("latin1"))}`);
  }
  if (path.split("/").some((part) => part === "" || part === "." || part === ".." || part.toLowerCase() === ".git")) {
    throw new ExportRefused(`the artifact holds a path teamd does not write: ${JSON.stringify(path)}`);
  }
  return path;
}

/** Entries in batches of about BLOB_BATCH_BYTES of content (by ls-tree's sizes), in tree order. */
function* blobBatches(entries: readonly Entry[]): Generator<Entry[]> {
  let batch: Entry[] = [];
  let size = 0;
  for (const e of entries) {
    if (batch.length > 0 && size + e.size > BLOB_BATCH_BYTES) {
      yield batch;
      batch = [];
      size = 0;
    }
    batch.push(e);
    size += e.size;
  }
  if (batch.length > 0) yield batch;
}

/** A batch's blobs' bytes through one `cat-file --batch`, its output bounded by the sizes ls-tree gave (and a header line each). */
async function readBlobs(gitDir: string, batch: readonly Entry[]): Promise<Map<string, Buffer>> {
  const sizes = new Map(batch.map((e) => [e.oid, e.size]));
  const unique = [...sizes.keys()];
  const out = new Map<string, Buffer>();
  if (unique.length === 0) return out;
  const bound = [...sizes.values()].reduce((sum, size) => sum + size + 128, 0);
  const stream = await gitInput(["cat-file", "--batch"], gitDir, unique.join("\n") + "\n", {}, bound);
  let at = 0;
  for (const oid of unique) {
    const eol = stream.indexOf(0x0a, at);
    if (eol < 0) throw new ExportRefused(`git cat-file output ended before blob ${oid}`);
    const header = stream.subarray(at, eol).toString("latin1").split(" ");
    if (header[0] !== oid || header[1] !== "blob") throw new ExportRefused(`git cat-file did not return blob ${oid}: ${header.join(" ")}`);
    const size = Number(header[2]);
    out.set(oid, stream.subarray(eol + 1, eol + 1 + size));
    at = eol + 1 + size + 1;
  }
  return out;
}
