import { createHash } from "node:crypto";
import { mkdir, open, readFile, realpath, rename, unlink, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { PassThrough } from "node:stream";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { promisify } from "node:util";
import { deflate, deflateSync } from "node:zlib";
import {
  containedGit,
  containedGitStream,
  createGitSandbox,
  GitOutputTooLarge,
  objectStores,
  objectTypes,
  repoReadContext,
  SEAT_DATA_MEMORY_BYTES,
  type ContainedGitLimits,
  type ContainedGitOptions,
  type ContainedGitStream,
} from "./contained-git.js";
import { git, GitError, gitInput } from "./git.js";
import { DURABLE_GIT } from "./durable-git.js";
import { fsyncPath } from "./fsync-path.js";
import { PackRejected } from "./git-receive.js";

/**
 * Filtered mirrors: the repository a seat with a bounded READ scope fetches from. It holds,
 * for each hub commit, a commit whose tree keeps only the readable paths, and shares the
 * hub's objects through `objects/info/alternates` (nothing copied). Serving only packs of its
 * filtered refs means no object of an unreadable path ever reaches the seat. A seat's push,
 * based on filtered commits, is replayed onto the real hub commits (`replay`).
 *
 * Filtered commits are a pure function of the hub commit's bytes and the filter's decisions,
 * so every machine computes the same oids, and a lost memo line costs a recomputation, never
 * a wrong answer.
 */

/** Decides readability of a path (file path, repository-relative); given by the caller from the kernel. Also offered: whether a whole directory prefix is readable (fast path: reuse the subtree as-is) or wholly unreadable (skip it). */
export interface ReadFilter {
  /** An id of the filter (e.g. hash of the seat's read scope): mirrors made under another id are rebuilt. */
  readonly id: string;
  file(path: string): boolean;
  /** "all" when every path under dir/ is readable, "none" when none is, "some" otherwise. `path` has no trailing slash. */
  dir(path: string): "all" | "none" | "some";
}

export interface FilteredMirror {
  readonly dir: string;
  /** The filtered commit of a hub commit (and, recursively, its ancestors), created and memoized. Deterministic: same hub commit + same filter id => same oid, on any machine. */
  filterCommit(hubOid: string): Promise<string>;
  /** Point the mirror's ref (e.g. refs/heads/main) at the filtered image of the hub's ref; returns the filtered oid (or deletes the mirror ref when the hub has none). */
  syncRef(ref: string, hubOid: string | undefined): Promise<string | undefined>;
  /** The hub commit a filtered commit stands for, or undefined when it is not one the mirror made. */
  hubCommitOf(filteredOid: string): Promise<string | undefined>;
  /**
   * Replay commits the seat pushed (oldest first, in a quarantine that `objectsEnv` makes
   * visible together with the mirror's and the hub's objects) onto the hub. Each commit C
   * with first parent P becomes a hub commit whose tree is the hub image of P with exactly
   * the paths that differ between tree(P) and tree(C) set to C's entries or removed; author,
   * committer, encoding and message are kept byte for byte (gpgsig and mergetag dropped: a
   * signature over another tree would be a lie). New objects go to `hubObjectsOut` only.
   *
   * Refused (ReplayRefused, with a reason the agent can act on): a merge; a parent that is
   * neither a filtered commit nor pushed; a name set where the seat may not read all of the
   * path, unless `blindWrite` (the policy) lets it go over whatever is there — decided the same
   * whether the hub holds anything there or not; a blob the push names but neither carries nor
   * was served.
   *
   * A replayed commit becomes a known parent for the seat's next push only once its objects
   * are in the hub and the mirror has filtered it (syncRef / filterCommit).
   *
   * Every read of what the seat sent runs in contained git under `limits` (the pusher's), and
   * its blobs never pass through the daemon: those the hub lacks are copied by contained
   * `pack-objects` straight into `hubObjectsOut`. Past the limits the push is refused
   * (PackRejected).
   */
  replay(
    pushed: readonly string[],
    objectsEnv: Record<string, string>,
    hubObjectsOut: string,
    limits?: ContainedGitLimits,
    blindWrite?: BlindWrite,
  ): Promise<{ readonly map: ReadonlyMap<string, string>; readonly tip: string }>;
}

/**
 * Whether the seat may write over whatever the hub holds at `path` without reading it (§3:
 * write is not read, so a path a seat may change need not be one it may see): as a "folder",
 * the one name (a file of that name, if the hub holds one, goes); as a "file", the name and
 * all under it (a folder of that name, if the hub holds one, goes whole). Undefined when it
 * may; otherwise why not, naming the rule. Asked of the policy alone — never of what the hub
 * holds there, which is what the seat may not learn.
 */
export type BlindWrite = (path: string, as: "file" | "folder") => string | undefined;

/** A replay given no policy to ask: no write over what the seat cannot read (fail closed). */
export const NO_BLIND_WRITE: BlindWrite = () => "this replay was given no write over what you cannot read";

/** A push the mirror will not replay, with a reason the agent that pushed can act on. */
export class ReplayRefused extends Error {
  override readonly name = "ReplayRefused";
  constructor(readonly reason: string) {
    super(reason);
  }
}

const MEMO_FILE = "teamd-filter-memo";
const ID_FILE = "teamd-filter-id";
const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const MEMO_LINE = /^([0-9a-f]{40}|[0-9a-f]{64}) ([0-9a-f]{40}|[0-9a-f]{64})$/;
/** Headers not copied: tree and parent are rewritten; gpgsig and mergetag sign or embed the original objects. */
const DROPPED_HEADERS = new Set(["tree", "parent", "gpgsig", "gpgsig-sha256", "mergetag"]);
/** Below this many objects a write goes loose (as git's transfer.unpackLimit does), above it one pack. */
const UNPACK_LIMIT = 100;
/** The largest commit or tree read into the daemon: a pack may declare no larger object (DEFAULT_PACK_BOUNDS). */
const READ_OBJECT_BYTES = 64 * 1024 * 1024;
/**
 * The most a replay may build (its new trees and commits, held until they are stored): as much
 * as a pushed pack may declare in the daemon's memory at the old cap. A commit that changes a
 * folder the seat reads only part of rebuilds that folder's whole tree, and the seat never sends
 * those bytes: 200 commits under a folder of 20,000 unreadable files build ~150 MB.
 */
const REPLAY_BUILT_BYTES = 128 * 1024 * 1024;
/** The tree entries one replay may compare, over all its commits (ReplayWork): a few seconds of the daemon's thread. */
const REPLAY_ENTRIES = 500_000;
/** Parsed trees one replay keeps for its next commits. */
const PARSED_TREE_BYTES = 8 * 1024 * 1024;
/** A filtering stores what it built whenever it holds this much (a first sync of a long history). */
const FILTER_FLUSH_BYTES = 64 * 1024 * 1024;
/** A replay's or a filtering's reads, all of them: as long as a push's index-pack may take. */
const READ_TIMEOUT_MS = 600_000;

function runGit(args: readonly string[], gitDir: string, input: Buffer | string, env: Record<string, string> = {}): Promise<Buffer> {
  return gitInput(args, gitDir, input, env);
}

interface GitObject {
  readonly type: string;
  readonly content: Buffer;
}

/**
 * A long-lived contained `git cat-file --batch`: one process for all reads of an operation, not
 * one per object. The objects it reads were written by seats (a push's quarantine, the hub
 * their pushes built), so git parses them in a bubblewrap sandbox under the limits the caller
 * gives, and no object larger than READ_OBJECT_BYTES is taken into the daemon: the reader is
 * for commits and trees, never blobs.
 */
class ObjectReader {
  private readonly waiting: { resolve: (o: GitObject | undefined) => void; reject: (e: Error) => void }[] = [];
  private chunks: Buffer[] = [];
  private length = 0;
  private header: { type: string; size: number } | undefined;
  private failure: Error | undefined;
  private readonly exited: Promise<void>;

  static async open(context: ContainedGitOptions): Promise<ObjectReader> {
    const input = new PassThrough();
    const stream = await containedGitStream(["cat-file", "--batch"], { ...context, input, timeoutMs: context.timeoutMs ?? READ_TIMEOUT_MS });
    return new ObjectReader(input, stream);
  }

  private constructor(
    private readonly input: PassThrough,
    private readonly stream: ContainedGitStream,
  ) {
    const pumped = (async () => {
      for await (const chunk of stream.stdout) {
        this.chunks.push(chunk);
        this.length += chunk.length;
        this.drain();
      }
    })();
    this.exited = Promise.all([pumped, stream.done]).then(
      () => this.fail(new Error("cat-file --batch exited")),
      (error: unknown) => this.fail(error instanceof Error ? error : new Error(String(error))),
    );
  }

  read(oid: string): Promise<GitObject | undefined> {
    if (!OID.test(oid)) return Promise.reject(new Error(`not an object id: ${JSON.stringify(oid)}`));
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolvePromise, reject) => {
      this.waiting.push({ resolve: resolvePromise, reject });
      this.input.write(`${oid}\n`);
    });
  }

  async close(): Promise<void> {
    this.input.end();
    if (this.failure) this.stream.kill();
    await this.exited;
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const waiter of this.waiting.splice(0)) waiter.reject(this.failure);
  }

  /** Joins the buffered chunks; called only once enough bytes are in, so a big blob is copied once. */
  private flat(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0] ?? Buffer.alloc(0);
  }

  private consume(bytes: number): void {
    const rest = this.flat().subarray(bytes);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.length = rest.length;
  }

  private drain(): void {
    while (this.waiting.length > 0) {
      if (!this.header) {
        const buffer = this.flat();
        const newline = buffer.indexOf(10);
        if (newline < 0) return;
        const fields = buffer.toString("latin1", 0, newline).split(" ");
        this.consume(newline + 1);
        if (fields[1] === "missing" || fields.length !== 3) {
          this.waiting.shift()?.resolve(undefined);
          continue;
        }
        const size = Number(fields[2]);
        if (!(Number.isSafeInteger(size) && size <= READ_OBJECT_BYTES)) {
          this.fail(new PackRejected(`object ${fields[0] ?? ""} is ${fields[2] ?? "?"} bytes, more than the ${READ_OBJECT_BYTES} a commit or tree may be`));
          this.stream.kill();
          return;
        }
        this.header = { type: fields[1] ?? "", size };
      }
      if (this.length < this.header.size + 1) return;
      const content = Buffer.from(this.flat().subarray(0, this.header.size));
      const type = this.header.type;
      this.consume(this.header.size + 1);
      this.header = undefined;
      this.waiting.shift()?.resolve({ type, content });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Objects, built in memory: oids are computed here, and git only stores them (one pack per write).

type Algo = "sha1" | "sha256";
type ObjectType = "commit" | "tree" | "blob";
/**
 * Objects built in memory before git stores them, their bytes counted. Past `limit` a set
 * throws: a replay building that much is refused (REPLAY_BUILT_BYTES).
 */
class Pending extends Map<string, { readonly type: ObjectType; readonly data: Buffer }> {
  bytes = 0;
  constructor(private readonly limit = Number.POSITIVE_INFINITY) {
    super();
  }

  override set(oid: string, object: { readonly type: ObjectType; readonly data: Buffer }): this {
    return this.charge(oid, object, object.data.length);
  }

  /** Adds `object`, counting `bytes` against the bound (at least its length: see apply). */
  charge(oid: string, object: { readonly type: ObjectType; readonly data: Buffer }, bytes: number): this {
    if (!this.has(oid)) {
      this.bytes += Math.max(bytes, object.data.length);
      if (this.bytes > this.limit) {
        throw new PackRejected(
          `replaying the push onto the real trees builds more than ${this.limit} bytes of new trees and commits (a folder you can read only part of is large, and every commit that changes it makes a new copy of it); push fewer commits at a time, or squash them`,
          "push.object-size",
        );
      }
    }
    return super.set(oid, object);
  }

  override clear(): void {
    this.bytes = 0;
    super.clear();
  }
}

interface TreeEntry {
  readonly mode: string;
  /** Raw bytes: a name that is not UTF-8 must survive unchanged. */
  readonly name: Buffer;
  readonly oid: string;
}

const isTreeMode = (mode: string): boolean => mode === "40000" || mode === "040000";

/** A tree entry's bytes in its tree object. */
const entryBytes = (entry: TreeEntry): number => entry.mode.length + 1 + entry.name.length + 1 + entry.oid.length / 2;

/**
 * What the hub held unseen by the seat at a folder a bounded seat's push changes counts against
 * the replay's bounds as the power of two at or above it, and at least these: names, and their
 * entries' bytes (unseenCharge) — so a bound tells a seat nothing of a folder under them (not
 * even whether it is there), and of a larger one only its size to a power of two.
 */
const UNSEEN_NAMES_FLOOR = 1024;
const UNSEEN_BYTES_FLOOR = 64 * 1024;

/** The charge for `amount` of unseen content: the power of two at or above it, at least `floor`. */
function unseenCharge(amount: number, floor: number): number {
  let charge = floor;
  while (charge < amount) charge *= 2;
  return charge;
}
const isGitlink = (mode: string): boolean => mode === "160000";

const CANONICAL_MODES = new Set(["100644", "100755", "120000", "40000", "160000"]);

/**
 * A tree entry's mode as git reads it (canon_mode): any regular file is 100644 or 100755 (by its
 * owner's execute bit), and anything that is not a file, link or folder is a gitlink. git's diff
 * of a push compares these, so the replay does: comparing the raw strings, a 100600 the seat
 * wrote over an unchanged file the write check never saw was landed (found by an attack, round
 * twelve). The digits are read as git's get_mode reads them, however many (an unsigned 32-bit
 * shift, wrapping): read as at most six, a 1100644 over README.md — a file to git, so no changed
 * path and no write check — was a gitlink to the replay and landed as one (found by an attack,
 * round fourteen).
 */
export function canonicalMode(mode: string): string {
  if (CANONICAL_MODES.has(mode)) return mode;
  let value = 0;
  if (/^[0-7]+$/.test(mode)) for (const digit of mode) value = ((value << 3) + Number(digit)) >>> 0;
  switch (value & 0o170000) {
    case 0o100000:
      return value & 0o100 ? "100755" : "100644";
    case 0o120000:
      return "120000";
    case 0o040000:
      return "40000";
    default:
      return "160000";
  }
}

function hashObject(algo: Algo, type: ObjectType, data: Buffer): string {
  return createHash(algo).update(`${type} ${data.length}\0`, "latin1").update(data).digest("hex");
}

/**
 * Counts tree work and says when to give the daemon's one thread back: a seat's folder of 150,000
 * entries is most of a second of parsing, comparing and writing on a loaded host, and each tree of
 * a replay was one piece of it, every other seat's calls waiting (found by a profile, round
 * thirteen).
 */
class Turns {
  private steps = 0;

  /** True once every ENTRIES_A_TURN steps: the caller then awaits yieldToLoop(). */
  due(): boolean {
    if (++this.steps < ENTRIES_A_TURN) return false;
    this.steps = 0;
    return true;
  }
}
/** Tree entries between two turns of the daemon's thread: ~10-25 ms of tree work here. */
const ENTRIES_A_TURN = 8192;

async function parseTree(data: Buffer, hashLength: number, turns: Turns): Promise<TreeEntry[]> {
  const entries: TreeEntry[] = [];
  let at = 0;
  while (at < data.length) {
    if (turns.due()) await yieldToLoop();
    const space = data.indexOf(32, at);
    const nul = data.indexOf(0, space + 1);
    if (space < 0 || nul < 0 || nul + 1 + hashLength > data.length) throw new Error("malformed tree object");
    entries.push({
      mode: data.toString("latin1", at, space),
      name: data.subarray(space + 1, nul),
      oid: data.toString("hex", nul + 1, nul + 1 + hashLength),
    });
    at = nul + 1 + hashLength;
  }
  return entries;
}

async function serializeTree(entries: readonly TreeEntry[], turns: Turns): Promise<Buffer> {
  // One allocation for the whole tree: a folder of 60,000 entries was 240,000 small buffers.
  let length = 0;
  for (const entry of entries) length += entry.mode.length + 1 + entry.name.length + 1 + entry.oid.length / 2;
  const out = Buffer.allocUnsafe(length);
  let at = 0;
  for (const entry of entries) {
    if (turns.due()) await yieldToLoop();
    at += out.write(entry.mode, at, "latin1");
    out[at++] = 32;
    at += entry.name.copy(out, at);
    out[at++] = 0;
    at += out.write(entry.oid, at, "hex");
  }
  return out;
}

/** Entries in git's tree order: names compare as bytes, a directory as if it ended in "/" (each key made once, not per comparison). */
async function inTreeOrder(entries: readonly TreeEntry[], turns: Turns): Promise<TreeEntry[]> {
  // Keys as latin1 strings: one UTF-16 unit per byte, so `<` on them is git's byte order.
  let runs: Keyed[][] = [];
  let run: Keyed[] = [];
  for (const entry of entries) {
    if (turns.due()) await yieldToLoop();
    const next = { entry, key: isTreeMode(entry.mode) ? `${entry.name.toString("latin1")}/` : entry.name.toString("latin1") };
    const last = run[run.length - 1];
    if (last !== undefined && !(last.key < next.key)) {
      runs.push(run);
      run = [];
    }
    run.push(next);
  }
  runs.push(run);
  // Mostly in order already: the hub's names, then the seat's new ones of each side, each an
  // ordered run. The runs are merged pairwise in turns of the daemon's thread, never sorted in one
  // piece (a seat's two shapes of a 150,000-entry folder held the thread ~0.7 s in a sort).
  while (runs.length > 1) {
    const merged: Keyed[][] = [];
    for (let i = 0; i < runs.length; i += 2)
      merged.push(i + 1 < runs.length ? await mergeRuns(runs[i] as Keyed[], runs[i + 1] as Keyed[], turns) : (runs[i] as Keyed[]));
    runs = merged;
  }
  return (runs[0] ?? []).map((k) => k.entry);
}

/** A tree's entries by their raw name (latin1 keeps the bytes), made in turns. */
async function byName(entries: readonly TreeEntry[], turns: Turns): Promise<Map<string, TreeEntry>> {
  const map = new Map<string, TreeEntry>();
  for (const entry of entries) {
    if (turns.due()) await yieldToLoop();
    map.set(entry.name.toString("latin1"), entry);
  }
  return map;
}

interface Keyed {
  readonly entry: TreeEntry;
  readonly key: string;
}

async function mergeRuns(a: readonly Keyed[], b: readonly Keyed[], turns: Turns): Promise<Keyed[]> {
  const out: Keyed[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (turns.due()) await yieldToLoop();
    out.push((b[j] as Keyed).key < (a[i] as Keyed).key ? (b[j++] as Keyed) : (a[i++] as Keyed));
  }
  while (i < a.length) out.push(a[i++] as Keyed);
  while (j < b.length) out.push(b[j++] as Keyed);
  return out;
}

/**
 * What one replay has parsed, and how much work it has done. Parsed trees are kept by id (a
 * commit's base is the tree the last commit built, its `from` the last commit's `to`), up to
 * PARSED_TREE_BYTES, oldest out first. Past REPLAY_ENTRIES entries compared the push is refused:
 * a commit that changes a large folder compares all of it, on the daemon's thread, and a seat
 * that reads one file of a 60,000-entry folder sends none of those bytes (found by an attack,
 * round twelve: 50 commits of ~100 bytes held the daemon's thread ~30 s).
 */
class ReplayWork {
  constructor(
    private readonly limit: number,
    /** What the policy lets the seat write over unseen (BlindWrite). */
    readonly blindWrite: BlindWrite,
  ) {}

  /**
   * The trees the push starts from: the hub's (`hub`) and the seat's image of it (`served`),
   * the parent of its first commit, set by the replay before its first commit (null: none).
   * What the hub holds there that the seat never saw is theirs alone, whatever the push's
   * commits then set (apply's unseen count).
   */
  original: { readonly hub: string | null; readonly served: string | null } | undefined;
  /** The unseen part of each folder of `original`, by prefix, as it was read. */
  readonly unseen = new Map<string, { readonly names: number; readonly bytes: number }>();

  /** When the replay gives the daemon's thread back (every ENTRIES_A_TURN entries parsed, compared or written). */
  readonly turns = new Turns();

  private readonly parsed = new Map<string, { readonly entries: ReadonlyMap<string, TreeEntry>; readonly bytes: number }>();
  private parsedBytes = 0;
  private entries = 0;

  tree(oid: string): ReadonlyMap<string, TreeEntry> | undefined {
    return this.parsed.get(oid)?.entries;
  }

  keep(oid: string, entries: ReadonlyMap<string, TreeEntry>, bytes: number): void {
    if (this.parsed.has(oid)) return;
    const size = bytes > 0 ? bytes : entries.size * 64;
    this.parsed.set(oid, { entries, bytes: size });
    this.parsedBytes += size;
    for (const [old, kept] of this.parsed) {
      if (this.parsedBytes <= PARSED_TREE_BYTES) break;
      this.parsed.delete(old);
      this.parsedBytes -= kept.bytes;
    }
  }

  private blindEntries = 0;

  /** The blind writes' pre-pass (checkBlindWrites): the seat's own tree entries, held to the same bound. */
  countBlind(entries: number): void {
    this.blindEntries += entries;
    if (this.blindEntries > this.limit) throw this.tooMany();
  }

  count(entries: number): void {
    this.entries += entries;
    if (this.entries > this.limit) throw this.tooMany();
  }

  private tooMany(): PackRejected {
    return new PackRejected(
      `replaying the push compares more than ${this.limit} tree entries (a large folder, changed in many commits); push fewer commits at a time, or squash them`,
      "push.paths",
    );
  }
}

interface ParsedCommit {
  readonly tree: string;
  readonly parents: readonly string[];
  /** The other headers, raw (latin1 keeps bytes), in their order, each with its continuation lines. */
  readonly rest: string;
  /** The message, raw; undefined when the object has no blank line at all. */
  readonly body: string | undefined;
}

/**
 * A commit as git itself reads it (commit.c): the first line names the tree and the parents
 * are the lines right after it. A `tree` or `parent` line anywhere else is an ordinary header
 * to git (fsck accepts it after `committer`), so it is one here too, and dropped: read as a
 * parent, a commit git walks as a root would have been replayed as a child of the trunk, and
 * every path of the trunk it lacks deleted past the write check, which saw git's root commit
 * (found by an attack, round twelve).
 */
function parseCommit(data: Buffer): ParsedCommit {
  const text = data.toString("latin1");
  const end = text.indexOf("\n\n");
  const head = end < 0 ? text : text.slice(0, end + 1);
  const body = end < 0 ? undefined : text.slice(end + 2);
  const lines = head.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const first = lines[0] ?? "";
  const tree = first.startsWith("tree ") ? first.slice("tree ".length) : undefined;
  const parents: string[] = [];
  let at = 1;
  for (; at < lines.length && (lines[at] as string).startsWith("parent "); at++) parents.push((lines[at] as string).slice("parent ".length));
  let rest = "";
  let keep = false;
  for (const line of lines.slice(at)) {
    if (line.startsWith(" ")) {
      if (keep) rest += `${line}\n`;
      continue;
    }
    const space = line.indexOf(" ");
    keep = !DROPPED_HEADERS.has(space < 0 ? line : line.slice(0, space));
    if (keep) rest += `${line}\n`;
  }
  if (tree === undefined || !OID.test(tree) || !parents.every((p) => OID.test(p))) throw new Error("malformed commit object");
  return { tree, parents, rest, body };
}

function buildCommit(tree: string, parents: readonly string[], commit: ParsedCommit): Buffer {
  const head = `tree ${tree}\n${parents.map((p) => `parent ${p}\n`).join("")}${commit.rest}`;
  return Buffer.from(commit.body === undefined ? head : `${head}\n${commit.body}`, "latin1");
}

const TYPE_CODES: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3 };
const deflateAsync = promisify(deflate);
/** Objects this large are deflated on libuv's pool, not the daemon's thread. */
const DEFLATE_OFF_THREAD_BYTES = 64 * 1024;
/** Small objects deflated in one turn of the daemon's thread. */
const OBJECTS_A_TURN = 2048;

/** A version-2 pack of whole (undeltified) objects: what unpack-objects / index-pack read. */
async function buildPack(objects: Pending, algo: Algo): Promise<Buffer> {
  const header = Buffer.alloc(12);
  header.write("PACK", 0, "latin1");
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(objects.size, 8);
  const parts: Buffer[] = [header];
  const hash = createHash(algo).update(header);
  let done = 0;
  for (const { type, data } of objects.values()) {
    let size = data.length;
    const bytes: number[] = [];
    let byte = (TYPE_CODES[type] << 4) | (size % 16);
    size = Math.floor(size / 16);
    while (size > 0) {
      bytes.push(byte | 0x80);
      byte = size % 128;
      size = Math.floor(size / 128);
    }
    bytes.push(byte);
    // A large tree is compressed off the daemon's one thread; many small ones in turns that give it back.
    const deflated = data.length >= DEFLATE_OFF_THREAD_BYTES ? await deflateAsync(data) : deflateSync(data);
    if (++done % OBJECTS_A_TURN === 0) await yieldToLoop();
    const prefix = Buffer.from(bytes);
    hash.update(prefix).update(deflated);
    parts.push(prefix, deflated);
  }
  parts.push(hash.digest());
  return Buffer.concat(parts);
}

// ---------------------------------------------------------------------------------------------

async function writeDurably(path: string, text: string): Promise<void> {
  const handle = await open(path, "w");
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Reads the memo, cutting a torn last line (a crash mid-append) so the next append starts clean. */
async function loadMemo(path: string): Promise<[string, string][]> {
  const handle = await open(path, "a+");
  try {
    const text = (await handle.readFile()).toString("latin1");
    const complete = text.lastIndexOf("\n") + 1;
    if (complete < text.length) {
      await handle.truncate(complete);
      await handle.sync();
    }
    const pairs: [string, string][] = [];
    for (const line of text.slice(0, complete).split("\n")) {
      const match = MEMO_LINE.exec(line);
      if (match?.[1] && match[2]) pairs.push([match[1], match[2]]);
    }
    return pairs;
  } finally {
    await handle.close();
  }
}

class Mirror implements FilteredMirror {
  private readonly toFiltered = new Map<string, string>();
  private readonly toHub = new Map<string, string>();
  /** (tree oid, path prefix) -> filtered tree oid, null when nothing readable is left. */
  private readonly trees = new Map<string, string | null>();
  private queue: Promise<unknown> = Promise.resolve();
  /** The checked bubblewrap, once for every contained read of this mirror. */
  private readonly sandbox = createGitSandbox();
  private readonly hashLength: number;
  private readonly memoPath: string;

  constructor(
    readonly dir: string,
    private readonly hub: string,
    private readonly filter: ReadFilter,
    private readonly algo: Algo,
    memo: readonly [string, string][],
    private readonly bounds: Required<MirrorOptions>,
  ) {
    this.hashLength = algo === "sha1" ? 20 : 32;
    this.memoPath = join(dir, MEMO_FILE);
    for (const [hub, filtered] of memo) this.remember(hub, filtered);
  }

  filterCommit(hubOid: string): Promise<string> {
    return this.exclusive(() => this.filterLocked(hubOid));
  }

  syncRef(ref: string, hubOid: string | undefined): Promise<string | undefined> {
    return this.exclusive(async () => {
      if (!/^refs\/[^\0\n\r ]+$/.test(ref)) throw new Error(`not a ref name: ${JSON.stringify(ref)}`);
      if (hubOid === undefined) {
        await runGit([...DURABLE_GIT, "update-ref", "--stdin"], this.dir, `delete ${ref}\n`);
        return undefined;
      }
      const filtered = await this.filterLocked(hubOid);
      await runGit([...DURABLE_GIT, "update-ref", "--stdin"], this.dir, `update ${ref} ${filtered}\n`);
      return filtered;
    });
  }

  hubCommitOf(filteredOid: string): Promise<string | undefined> {
    return Promise.resolve(this.toHub.get(filteredOid));
  }

  replay(
    pushed: readonly string[],
    objectsEnv: Record<string, string>,
    hubObjectsOut: string,
    limits?: ContainedGitLimits,
    blindWrite: BlindWrite = NO_BLIND_WRITE,
  ): Promise<{ readonly map: ReadonlyMap<string, string>; readonly tip: string }> {
    return this.exclusive(() => this.replayLocked(pushed, objectsEnv, resolve(hubObjectsOut), limits, blindWrite));
  }

  /**
   * Contained git over the mirror, seeing `objectsEnv`'s object folders (a push's quarantine)
   * in front of the mirror's and the hub's, every one bound read-only at its real path.
   */
  private async readContext(objectsEnv: Record<string, string> = {}): Promise<ContainedGitOptions & { env: Record<string, string> }> {
    const real = (path: string) => realpath(path);
    const mirror = await real(this.dir);
    const hubObjects = await real(join(this.hub, "objects"));
    const given = await Promise.all(
      (objectsEnv.GIT_ALTERNATE_OBJECT_DIRECTORIES ?? "")
        .split(":")
        .filter((d) => d !== "")
        .map(real),
    );
    const objects = objectsEnv.GIT_OBJECT_DIRECTORY === undefined ? undefined : await real(objectsEnv.GIT_OBJECT_DIRECTORY);
    const alternates = [...new Set([...given, ...(objects === undefined ? [] : [join(mirror, "objects")]), hubObjects])];
    const readOnly = [...new Set([mirror, ...alternates, ...(await objectStores(this.hub)), ...(objects === undefined ? [] : [objects])])];
    return {
      gitDir: mirror,
      readOnly,
      writable: [],
      env: { ...(objects === undefined ? {} : { GIT_OBJECT_DIRECTORY: objects }), GIT_ALTERNATE_OBJECT_DIRECTORIES: alternates.join(":") },
      sandbox: this.sandbox,
    };
  }

  /** One operation at a time: the memo and the staged objects of a run must not interleave. */
  private exclusive<T>(run: () => Promise<T>): Promise<T> {
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private remember(hub: string, filtered: string): void {
    this.toFiltered.set(hub, filtered);
    // Two hub commits can share an image (they differ only where the seat cannot read); either
    // one is a faithful base to replay on, the first stays.
    if (!this.toHub.has(filtered)) this.toHub.set(filtered, hub);
  }

  private async filterLocked(hubOid: string): Promise<string> {
    if (!OID.test(hubOid)) throw new Error(`not an object id: ${JSON.stringify(hubOid)}`);
    const known = this.toFiltered.get(hubOid);
    if (known) return known;
    if (this.toHub.has(hubOid)) throw new Error(`${hubOid} is a commit of the filtered mirror, not of the hub`);
    // The hub's commits and trees were written by seats: read contained, held as a diff of them is.
    const reader = await ObjectReader.open({ ...(await this.readContext()), limits: { memoryBytes: SEAT_DATA_MEMORY_BYTES } });
    const commits = new Map<string, string>();
    const trees = new Map<string, string | null>();
    const pending = new Pending();
    const turns = new Turns();
    try {
      const filteredOf = (oid: string): string | undefined => this.toFiltered.get(oid) ?? commits.get(oid);
      const parsed = new Map<string, ParsedCommit>();
      // Depth-first without recursion: a long history must not exhaust the stack.
      const stack = [hubOid];
      while (stack.length > 0) {
        const oid = stack[stack.length - 1] as string;
        if (filteredOf(oid)) {
          stack.pop();
          continue;
        }
        let commit = parsed.get(oid);
        if (!commit) {
          const object = await reader.read(oid);
          if (object?.type !== "commit") throw new Error(`${oid} is not a commit the hub holds`);
          commit = parseCommit(object.content);
          parsed.set(oid, commit);
        }
        const todo = commit.parents.filter((p) => !filteredOf(p));
        if (todo.length > 0) {
          stack.push(...todo.reverse());
          continue;
        }
        const tree = (await this.filterTree(reader, commit.tree, "", trees, pending, turns)) ?? (await this.emptyTree(pending));
        const parents = [...new Set(commit.parents.map((p) => filteredOf(p) as string))];
        const data = buildCommit(tree, parents, commit);
        const filtered = hashObject(this.algo, "commit", data);
        pending.set(filtered, { type: "commit", data });
        commits.set(oid, filtered);
        parsed.delete(oid);
        stack.pop();
        // Objects before any memo line names them, in parts: the daemon never holds a whole history's trees.
        if (pending.bytes > this.bounds.flushBytes) {
          await this.store(pending, this.dir, join(this.dir, "objects"), {});
          pending.clear();
        }
      }
    } finally {
      await reader.close();
    }
    // Objects first, then the memo, then (syncRef) the ref: whatever a crash leaves, a memo
    // line never names a missing object and a ref never names an unmemoized commit.
    await this.store(pending, this.dir, join(this.dir, "objects"), {});
    await this.appendMemo(commits);
    for (const [key, value] of trees) this.trees.set(key, value);
    for (const [hub, filtered] of commits) this.remember(hub, filtered);
    return this.toFiltered.get(hubOid) as string;
  }

  private async filterTree(
    reader: ObjectReader,
    oid: string,
    prefix: string,
    staged: Map<string, string | null>,
    pending: Pending,
    turns: Turns,
  ): Promise<string | null> {
    const key = `${oid}\0${prefix}`;
    const memo = this.trees.has(key) ? this.trees.get(key) : staged.get(key);
    if (memo !== undefined) return memo;
    const object = await reader.read(oid);
    if (object?.type !== "tree") throw new Error(`tree ${oid} is missing from the hub`);
    const kept: TreeEntry[] = [];
    let changed = false;
    for (const entry of await parseTree(object.content, this.hashLength, turns)) {
      if (turns.due()) await yieldToLoop();
      const path = prefix + entry.name.toString("utf8");
      if (isTreeMode(entry.mode)) {
        const scope = this.filter.dir(path);
        if (scope === "all") kept.push(entry);
        else if (scope === "none") changed = true;
        else {
          const sub = await this.filterTree(reader, entry.oid, `${path}/`, staged, pending, turns);
          if (sub !== entry.oid) changed = true;
          if (sub !== null) kept.push(sub === entry.oid ? entry : { ...entry, oid: sub });
        }
      } else if (this.filter.file(path)) kept.push(entry);
      else changed = true;
    }
    const result = !changed ? oid : kept.length === 0 ? null : await this.addTree(kept, pending, turns);
    staged.set(key, result);
    return result;
  }

  /** `charged`: what the built-bytes bound counts for it (its length unless told). */
  private async addTree(entries: readonly TreeEntry[], pending: Pending, turns: Turns, charged?: number): Promise<string> {
    const data = await serializeTree(entries, turns);
    const oid = hashObject(this.algo, "tree", data);
    pending.charge(oid, { type: "tree", data }, charged ?? data.length);
    return oid;
  }

  private emptyTree(pending: Pending): Promise<string> {
    return this.addTree([], pending, new Turns());
  }

  /** Stores objects in `objects` (the mirror's, or the objects dir `env` names), durably. */
  private async store(pending: Pending, gitDir: string, objects: string, env: Record<string, string>): Promise<void> {
    if (pending.size === 0) return;
    const command = pending.size < UNPACK_LIMIT ? ["unpack-objects", "-q"] : ["index-pack", "--stdin"];
    await runGit([...DURABLE_GIT, ...command], gitDir, await buildPack(pending, this.algo), env);
    // git fsyncs each object file but not the directory entry its rename made; a memo line
    // or ref must not outlive the object it names.
    const dirs = new Set([join(objects, "pack"), objects]);
    for (const oid of pending.keys()) dirs.add(join(objects, oid.slice(0, 2)));
    for (const dir of dirs) {
      await fsyncPath(dir).catch((error: NodeJS.ErrnoException) => {
        // An object git found already present (here or in an alternate) made no directory.
        if (error.code !== "ENOENT") throw error;
      });
    }
  }

  private async appendMemo(commits: ReadonlyMap<string, string>): Promise<void> {
    if (commits.size === 0) return;
    let text = "";
    for (const [hub, filtered] of commits) text += `${hub} ${filtered}\n`;
    const handle = await open(this.memoPath, "a");
    try {
      await handle.write(text);
      await handle.datasync();
    } finally {
      await handle.close();
    }
  }

  private async replayLocked(
    pushed: readonly string[],
    objectsEnv: Record<string, string>,
    out: string,
    limits: ContainedGitLimits | undefined,
    blindWrite: BlindWrite,
  ): Promise<{ readonly map: ReadonlyMap<string, string>; readonly tip: string }> {
    if (pushed.length === 0) throw new Error("replay: no commits given");
    // objectsEnv should show quarantine + mirror + hub; a caller's quarantine made against the
    // mirror alone (which reaches the hub only through its own alternates file) still works.
    const context = { ...(await this.readContext(objectsEnv)), ...(limits !== undefined ? { limits } : {}) };
    const map = new Map<string, string>();
    const hubTrees = new Map<string, string>();
    const pending = new Pending(this.bounds.replayBuiltBytes);
    /** Blob oid -> a path the pushed trees put it at. */
    const blobs = new Map<string, string>();
    const work = new ReplayWork(this.bounds.replayEntries, blindWrite);
    await mkdir(join(out, "pack"), { recursive: true });
    await mkdir(join(out, "info"), { recursive: true });
    await asPackRejected(async () => {
      const reader = await ObjectReader.open(context);
      try {
        const commitOf = async (oid: string): Promise<ParsedCommit> => {
          const object = await reader.read(oid);
          if (object?.type !== "commit") throw new Error(`commit ${oid} is missing from the quarantine, the mirror and the hub`);
          return parseCommit(object.content);
        };
        for (const oid of pushed) {
          if (map.has(oid)) continue;
          // A commit the mirror made (the seat pushed a branch at something it fetched) is its hub commit.
          const made = this.toHub.get(oid);
          if (made) {
            map.set(oid, made);
            continue;
          }
          const commit = await commitOf(oid);
          if (commit.parents.length > 1) {
            throw new ReplayRefused(
              `commit ${oid} is a merge; a seat that may read only part of the repository pushes linear history: rebase instead of merging`,
            );
          }
          let base: string | null = null;
          let seen: string | null = null;
          const parents: string[] = [];
          const parent = commit.parents[0];
          if (parent !== undefined) {
            const hubParent = map.get(parent) ?? this.toHub.get(parent);
            if (hubParent === undefined) {
              throw new ReplayRefused(
                `commit ${oid} has parent ${parent}, which is neither a commit fetched from teamd nor one being pushed: fetch from teamd and rebase onto what it serves`,
              );
            }
            parents.push(hubParent);
            base = hubTrees.get(hubParent) ?? (await commitOf(hubParent)).tree;
            seen = (await commitOf(parent)).tree;
          }
          work.original ??= { hub: base, served: seen };
          await this.checkBlindWrites(reader, seen, commit.tree, "", pending, work);
          const tree = (await this.apply(reader, base, seen, commit.tree, "", pending, blobs, work)) ?? (await this.emptyTree(pending));
          const data = buildCommit(tree, parents, commit);
          const replayed = hashObject(this.algo, "commit", data);
          pending.set(replayed, { type: "commit", data });
          map.set(oid, replayed);
          hubTrees.set(replayed, tree);
        }
      } finally {
        await reader.close();
      }
      if (blobs.size > 0) {
        const oids = [...blobs.keys()];
        const hub = await realpath(this.hub);
        const quarantine = context.env.GIT_OBJECT_DIRECTORY;
        const [inHub, carried] = await Promise.all([
          objectTypes({ ...(await repoReadContext(hub, limits)), sandbox: this.sandbox }, oids),
          quarantine === undefined
            ? new Map<string, string>()
            : objectTypes({ ...context, env: { GIT_OBJECT_DIRECTORY: quarantine, GIT_ALTERNATE_OBJECT_DIRECTORIES: "" } }, oids),
        ]);
        for (const oid of oids) {
          // The push's walk has refused a file entry naming anything but a blob; this keeps
          // the copy below from ever taking another kind of object, whatever reached here.
          const type = [carried.get(oid), inHub.get(oid)].find((t) => t !== undefined && t !== "missing" && t !== "blob");
          if (type !== undefined) throw new ReplayRefused(`${blobs.get(oid) ?? oid}: names a ${type} (${oid}) where a file goes; push the file's content`);
        }
        await this.refuseUnserved(
          pushed,
          blobs,
          oids.filter((oid) => carried.get(oid) !== "blob"),
          context,
        );
        // Only blobs the hub lacks travel (the seat may well have re-added content the hub has),
        // and git copies them: their bytes never pass through the daemon.
        const lacking = oids.filter((oid) => inHub.get(oid) !== "blob");
        if (lacking.length > 0) {
          // git writes the pack beside its objects first: `out` is the object folder, and what
          // it reads from (the quarantine first) stands behind it.
          const real = await realpath(out);
          const behind = [context.env.GIT_OBJECT_DIRECTORY, context.env.GIT_ALTERNATE_OBJECT_DIRECTORIES].filter((d) => d !== undefined && d !== "");
          await containedGit([...DURABLE_GIT, "pack-objects", "-q", join(real, "pack", "pack")], {
            ...context,
            env: { GIT_OBJECT_DIRECTORY: real, GIT_ALTERNATE_OBJECT_DIRECTORIES: behind.join(":") },
            writable: [real],
            input: Buffer.from(lacking.map((oid) => `${oid}\n`).join("")),
            timeoutMs: READ_TIMEOUT_MS,
          });
        }
      }
    });
    await this.store(pending, this.dir, out, {
      GIT_OBJECT_DIRECTORY: out,
      GIT_ALTERNATE_OBJECT_DIRECTORIES: join(this.hub, "objects"),
    });
    return { map, tip: map.get(pushed[pushed.length - 1] as string) as string };
  }

  /**
   * The hub holds every blob, readable or not, and the quarantine sees them all through its
   * alternates: a seat that knows the id of a blob it may not read could name it at a path it
   * may read without sending it, and the replayed commit would then serve it back. So a blob
   * the push does not carry must be one of the history the seat was served (the mirror's
   * refs) — exactly what git's own pack-objects would have left out of the push.
   */
  private async refuseUnserved(
    pushed: readonly string[],
    blobs: ReadonlyMap<string, string>,
    notCarried: readonly string[],
    context: ContainedGitOptions,
  ): Promise<void> {
    const absent = new Set(notCarried);
    if (absent.size === 0) return;
    const unserved = await containedGit(["rev-list", "--objects", "--no-object-names", "--stdin", "--not", "--all"], {
      ...context,
      input: Buffer.from(`${pushed.join("\n")}\n`),
      timeoutMs: READ_TIMEOUT_MS,
    });
    for (const oid of unserved.stdout.toString("latin1").split("\n")) {
      if (absent.has(oid)) {
        throw new ReplayRefused(
          `${blobs.get(oid) ?? oid}: the push names content (${oid}) it does not carry and that teamd never served you; push the file's content itself`,
        );
      }
    }
  }

  /**
   * Every name a commit sets blind (isBlind), asked of the policy (work.blindWrite) in the order
   * of the seat's own trees, before the replay reads anything of the hub's for the commit. Asked
   * as the replay met them, the hub's names first, which refusal a push with two such names got
   * told whether one of them was a name the hub holds. Counted as the replay counts (its own
   * bound), so a large tree of the seat's is refused here as it would be there.
   */
  private async checkBlindWrites(
    reader: ObjectReader,
    from: string | null,
    to: string | null,
    prefix: string,
    pending: Pending,
    work: ReplayWork,
  ): Promise<void> {
    if (from === to || to === null) return;
    const f = from === null ? new Map<string, TreeEntry>() : await this.treeEntries(reader, from, pending, work);
    const t = await this.treeEntries(reader, to, pending, work);
    for (const [name, seat] of t) {
      work.countBlind(1);
      if (work.turns.due()) await yieldToLoop();
      const old = f.get(name);
      const now = CANONICAL_MODES.has(seat.mode) ? seat : { ...seat, mode: canonicalMode(seat.mode) };
      if (old !== undefined && canonicalMode(old.mode) === now.mode && old.oid === now.oid) continue;
      const path = prefix + Buffer.from(name, "latin1").toString("utf8");
      const nowTree = isTreeMode(now.mode) ? now.oid : null;
      if (isBlind(old, now, this.filter.dir(path))) refuseBlindWrite(work.blindWrite, path, nowTree !== null ? "folder" : "file");
      const oldTree = old !== undefined && isTreeMode(canonicalMode(old.mode)) ? old.oid : null;
      if (nowTree !== null) await this.checkBlindWrites(reader, oldTree, nowTree, `${path}/`, pending, work);
    }
  }

  /**
   * What the hub held unseen by the seat at `prefix` when the push started (work.original): the
   * names and entry bytes of the hub's folder there less the seat's image of it — never what the
   * push's own commits set there, so a guess the seat names does not change it.
   */
  private async unseenAt(
    reader: ObjectReader,
    prefix: string,
    pending: Pending,
    work: ReplayWork,
  ): Promise<{ readonly names: number; readonly bytes: number }> {
    const known = work.unseen.get(prefix);
    if (known !== undefined) return known;
    const [hub, served] = await Promise.all([
      this.folderAt(reader, work.original?.hub ?? null, prefix, pending, work),
      this.folderAt(reader, work.original?.served ?? null, prefix, pending, work),
    ]);
    let names = 0;
    let bytes = 0;
    for (const [name, entry] of hub) {
      if (served.has(name)) continue;
      names += 1;
      bytes += entryBytes(entry);
    }
    const unseen = { names, bytes };
    work.unseen.set(prefix, unseen);
    return unseen;
  }

  /** The entries of the folder at `prefix` under tree `root` (empty where there is none, or it is not a folder). */
  private async folderAt(
    reader: ObjectReader,
    root: string | null,
    prefix: string,
    pending: Pending,
    work: ReplayWork,
  ): Promise<ReadonlyMap<string, TreeEntry>> {
    let oid = root;
    for (const name of prefix === "" ? [] : prefix.slice(0, -1).split("/")) {
      if (oid === null) break;
      const entry = (await this.treeEntries(reader, oid, pending, work)).get(Buffer.from(name, "utf8").toString("latin1"));
      oid = entry !== undefined && isTreeMode(canonicalMode(entry.mode)) ? entry.oid : null;
    }
    return oid === null ? new Map() : this.treeEntries(reader, oid, pending, work);
  }

  /** A tree's entries by name, parsed once a replay (work.keep). */
  private async treeEntries(reader: ObjectReader, oid: string, pending: Pending, work: ReplayWork): Promise<ReadonlyMap<string, TreeEntry>> {
    const known = work.tree(oid);
    if (known !== undefined) return known;
    // A tree made for an earlier commit of this push is not written anywhere yet.
    const object = pending.get(oid) ?? (await reader.read(oid));
    if (object?.type !== "tree") throw new Error(`tree ${oid} is missing`);
    const data = "data" in object ? object.data : object.content;
    const map = await byName(await parseTree(data, this.hashLength, work.turns), work.turns);
    work.keep(oid, map, data.length);
    return map;
  }

  /**
   * The hub tree `base` with the change from tree `from` to tree `to` applied path by path:
   * a path that differs takes `to`'s entry (or goes), every other path of `base` — above all
   * those the seat cannot read — stays as it is. Null when nothing is left.
   */
  private async apply(
    reader: ObjectReader,
    base: string | null,
    from: string | null,
    to: string | null,
    prefix: string,
    pending: Pending,
    blobs: Map<string, string>,
    work: ReplayWork,
  ): Promise<string | null> {
    if (from === to) return base;
    const entries = async (oid: string | null): Promise<ReadonlyMap<string, TreeEntry>> =>
      oid === null ? new Map() : this.treeEntries(reader, oid, pending, work);
    const [b, f, t] = [await entries(base), await entries(from), await entries(to)];
    // The replay's bounds count what the seat could know — its own trees' names and bytes, one
    // by one — and, at a folder it may not read all of, what the hub held there unseen when the
    // push started (never what its own commits set there) as a power of two, at least a floor
    // (unseenCharge). Counted as they were, a push padded to sit on a bound told whether a name
    // it guessed, a folder it named, or a right guess among a folder's names was there (found by
    // two attacks, round fifteen: test/escape/blind-write-attack.test.ts, -2.test.ts).
    const partial = prefix === "" || this.filter.dir(prefix.slice(0, -1)) !== "all";
    const unseen = partial ? await this.unseenAt(reader, prefix, pending, work) : undefined;
    if (unseen !== undefined) work.count(unseenCharge(unseen.names, UNSEEN_NAMES_FLOOR));
    const result: TreeEntry[] = [];
    let changed = false;
    // Every name of the three trees once, in the order a Set of them would hold (base's first),
    // the seat's counted as they are compared, in turns of the daemon's thread.
    const names = function* (): Generator<string> {
      for (const name of b.keys()) yield name;
      for (const name of f.keys()) if (!b.has(name)) yield name;
      for (const name of t.keys()) if (!b.has(name) && !f.has(name)) yield name;
    };
    for (const name of names()) {
      if (f.has(name) || t.has(name)) work.count(1);
      if (work.turns.due()) await yieldToLoop();
      const was = b.get(name);
      const old = f.get(name);
      const seat = t.get(name);
      // The seat's entries as git reads them (canonicalMode); the hub's are kept as they are.
      const now = seat === undefined || CANONICAL_MODES.has(seat.mode) ? seat : { ...seat, mode: canonicalMode(seat.mode) };
      if ((old && canonicalMode(old.mode)) === now?.mode && old?.oid === now?.oid) {
        if (was) result.push(was);
        continue;
      }
      changed = true;
      const path = prefix + Buffer.from(name, "latin1").toString("utf8");
      const wasTree = was && isTreeMode(canonicalMode(was.mode)) ? was.oid : null;
      const oldTree = old && isTreeMode(canonicalMode(old.mode)) ? old.oid : null;
      const nowTree = now && isTreeMode(now.mode) ? now.oid : null;
      // Set blind (isBlind): the policy allowed it over whatever the hub holds here, asked before
      // this commit's replay looked at anything of the hub's (checkBlindWrites).
      const blind = now !== undefined && isBlind(old, now, this.filter.dir(path));
      if (now && !nowTree) {
        if (blind) {
          // Over whatever the hub holds there: a folder of that name goes whole (the policy
          // allowed a file over all of the path).
        } else if (oldTree !== null) {
          // The seat turned a directory into a file: fine only if nothing it cannot see is in it.
          if ((await this.apply(reader, wasTree, oldTree, null, `${path}/`, pending, blobs, work)) !== null) {
            throw new ReplayRefused(`${path}: this directory also holds files outside your read scope, so it cannot become a file; choose another name`);
          }
        } else if (wasTree !== null) {
          throw new ReplayRefused(`${path}: the repository has a directory there that you cannot read; choose another name`);
        }
        if (!isGitlink(now.mode) && !blobs.has(now.oid)) blobs.set(now.oid, path);
        result.push(now);
      } else if (nowTree !== null) {
        // Blind, a file of that name goes (wasTree is null: the folder is built fresh).
        if (!blind && was && wasTree === null && (!old || oldTree !== null)) {
          throw new ReplayRefused(`${path}: the repository has a file there that you cannot read; choose another name`);
        }
        const sub = await this.apply(reader, wasTree, oldTree, nowTree, `${path}/`, pending, blobs, work);
        if (sub !== null) result.push({ mode: "40000", name: Buffer.from(name, "latin1"), oid: sub });
      } else if (oldTree !== null) {
        const sub = await this.apply(reader, wasTree, oldTree, null, `${path}/`, pending, blobs, work);
        if (sub !== null) result.push({ mode: "40000", name: Buffer.from(name, "latin1"), oid: sub });
      } else if (wasTree !== null) {
        // Cannot happen when `from` is the seat's view of `base`; never drop a directory on a guess.
        throw new ReplayRefused(`${path}: the repository has a directory there that you cannot read; fetch from teamd and rebase`);
      }
      // else: a file the seat deleted; the hub's entry goes with it.
    }
    if (!changed) return base;
    if (result.length === 0) return null;
    const sorted = await inTreeOrder(result, work.turns);
    // Its bytes as the bound sees them: the seat's names' entries, and the constant for the unseen.
    let seatBytes = 0;
    for (const entry of sorted) {
      const name = entry.name.toString("latin1");
      if (f.has(name) || t.has(name)) seatBytes += entryBytes(entry);
    }
    const oid = await this.addTree(sorted, pending, work.turns, seatBytes + (unseen !== undefined ? unseenCharge(unseen.bytes, UNSEEN_BYTES_FLOOR) : 0));
    work.keep(oid, await byName(sorted, work.turns), 0);
    return oid;
  }
}

/**
 * Whether the seat sets this name blind: where it saw nothing (or a folder of its view it made a
 * file), at a path it may not read all of (`access`: the read filter's verdict for the folder or
 * file there) — where the hub may hold what the seat was never shown. Whether the write goes over
 * it is asked of the policy alone (BlindWrite), so the outcome is the same whether the hub holds
 * something there or not: refusals that hung on it told a seat that writes blind which names the
 * hub holds (found by an attack, round fourteen: test/escape/walk-attack-6.test.ts).
 */
function isBlind(old: TreeEntry | undefined, now: TreeEntry, access: "all" | "some" | "none"): boolean {
  const madeFile = old !== undefined && isTreeMode(canonicalMode(old.mode)) && !isTreeMode(now.mode);
  return (old === undefined || madeFile) && access !== "all";
}

/** The refusal of a blind write the policy does not allow, in words that say nothing of what the hub holds there. */
function refuseBlindWrite(blindWrite: BlindWrite, path: string, as: "file" | "folder"): void {
  const why = blindWrite(path, as);
  if (why === undefined) return;
  throw new ReplayRefused(
    as === "folder"
      ? `${path}: you may not read this path, so a folder made there goes over a file of that name if the repository holds one, and ${why}; choose another name, or ask for write over ${path} itself`
      : `${path}: you may not read all of this path, so a file written there goes over a folder of that name, and all it holds, if the repository holds one, and ${why}; choose another name, or ask for write over all of ${path}`,
  );
}

/** What contained git refuses for what the seat sent (its limits, its time, its output's bound) is a refused push, never an unknown outcome. */
async function asPackRejected<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof GitOutputTooLarge) throw new PackRejected(`replaying the push's commits lists more than ${error.maxBytes} bytes of objects`);
    if (error instanceof GitError) {
      const why = typeof error.code === "string" ? `(${error.code})` : `(git: ${String(error.code)})`;
      throw new PackRejected(`the push's commits could not be replayed within your limits ${why}`);
    }
    throw error;
  }
}

/** Bounds of a mirror's work, each with its default; tests set them low. */
export interface MirrorOptions {
  /** A filtering stores what it built whenever it holds this much; default FILTER_FLUSH_BYTES. */
  readonly flushBytes?: number;
  /** The most a replay builds; default REPLAY_BUILT_BYTES. */
  readonly replayBuiltBytes?: number;
  /** The most tree entries a replay compares; default REPLAY_ENTRIES. */
  readonly replayEntries?: number;
}

/**
 * Opens (creating or rebuilding as needed) the filtered mirror at `dir` of the bare hub `hub`.
 * The opens of one mirror go one at a time: two at once (a seat's two pushes, or a listing and
 * a fetch) both ran `git init` on it, and one failed on the lock of its config, an internal error
 * the seat could cause at will (found in a clean-clone run of replay-helper-attack.test.ts; the
 * rebuild of a filter that changed raced the same way).
 */
export function openFilteredMirror(dir: string, hub: string, filter: ReadFilter, options: MirrorOptions = {}): Promise<FilteredMirror> {
  const key = resolve(dir);
  // What is queued never rejects (`settled`), so this open runs after the last one, whatever its end.
  const opening = (MIRROR_OPENS.get(key) ?? Promise.resolve()).then(() => openMirrorAlone(dir, hub, filter, options));
  const settled = opening.then(
    () => undefined,
    () => undefined,
  );
  MIRROR_OPENS.set(key, settled);
  void settled.then(() => {
    if (MIRROR_OPENS.get(key) === settled) MIRROR_OPENS.delete(key);
  });
  return opening;
}

/** The open in progress (or last) of each mirror, by its resolved path: the next waits for it. */
// eslint-disable-next-line teamd/module-state -- a queue per mirror folder, which every open in this process must share to take turns; emptied as each settles
const MIRROR_OPENS = new Map<string, Promise<void>>();

async function openMirrorAlone(dir: string, hub: string, filter: ReadFilter, options: MirrorOptions): Promise<FilteredMirror> {
  const mirror = resolve(dir);
  const hubDir = resolve(hub);
  const format = (await git(["rev-parse", "--show-object-format"], { gitDir: hubDir })).stdout.trim();
  if (format !== "sha1" && format !== "sha256") throw new Error(`hub ${hubDir} uses unknown object format ${format}`);
  // Idempotent: repairs a mirror a crash left half made. No template: no sample hooks, no info/exclude.
  await git(["-c", "init.defaultBranch=main", "init", "--bare", "-q", "--template=", `--object-format=${format}`, mirror]);
  await mkdir(join(mirror, "objects", "info"), { recursive: true });
  const alternates = join(mirror, "objects", "info", "alternates");
  const wanted = `${join(hubDir, "objects")}\n`;
  if ((await readText(alternates)) !== wanted) {
    await writeFile(`${alternates}.tmp`, wanted);
    await rename(`${alternates}.tmp`, alternates);
  }
  // A seat's clone checks out what HEAD names; follow the hub's choice of trunk.
  try {
    const head = (await git(["symbolic-ref", "-q", "HEAD"], { gitDir: hubDir })).stdout.trim();
    if (head.startsWith("refs/")) await git(["symbolic-ref", "HEAD", head], { gitDir: mirror });
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
  }

  const idPath = join(mirror, ID_FILE);
  const memoPath = join(mirror, MEMO_FILE);
  if ((await readText(idPath)) !== filter.id) {
    // Id first out, id last in: a crash anywhere in between rebuilds again on the next open.
    await unlink(idPath).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    await fsyncPath(mirror);
    const refs = (await git(["for-each-ref", "--format=%(refname)"], { gitDir: mirror })).stdout;
    const deletes = refs
      .split("\n")
      .filter((r) => r !== "")
      .map((r) => `delete ${r}\n`)
      .join("");
    if (deletes !== "") await runGit([...DURABLE_GIT, "update-ref", "--stdin"], mirror, deletes);
    await writeDurably(memoPath, "");
    await writeDurably(`${idPath}.tmp`, filter.id);
    await rename(`${idPath}.tmp`, idPath);
    await fsyncPath(mirror);
  }
  return new Mirror(mirror, hubDir, filter, format, await loadMemo(memoPath), {
    flushBytes: options.flushBytes ?? FILTER_FLUSH_BYTES,
    replayBuiltBytes: options.replayBuiltBytes ?? REPLAY_BUILT_BYTES,
    replayEntries: options.replayEntries ?? REPLAY_ENTRIES,
  });
}
