import { createReadStream, existsSync } from "node:fs";
import { copyFile, link, mkdir, mkdtemp, open, readdir, realpath, rename, rm, unlink, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import {
  CONTAINED_STDERR_BYTES,
  containedGit,
  containedGitExit,
  createGitSandbox,
  GitOutputTooLarge,
  objectStores,
  objectTypes,
  repoReadContext,
  SEAT_DATA_MEMORY_BYTES,
  type ContainedGitLimits,
  type GitSessionHost,
  type ContainedGitOptions,
} from "./contained-git.js";
import { git, GitError } from "./git.js";
import { openGitSession, type GitSession } from "./git-session.js";
import { commitTextProblem, isDotGitattributes, isDotGitmodules } from "../kernel/git-names.js";
import { scanPack, scanPackSource, type PackBounds, type PackScan, type PackScanRule, type PackSource } from "./pack-scan.js";
import { explainRefFailure } from "./ref-lock.js";
import { DURABLE_GIT, syncRefFolders } from "./durable-git.js";
import { fsyncPath } from "./fsync-path.js";
import { plainRefName, readFileRef } from "./ref-files.js";
import { writeRefInLine } from "./ref-write.js";
import { quarantinedObjects } from "./pack-index.js";

/**
 * The daemon's side of `git push teamd`: a seat's pack is hostile until proven otherwise.
 * It lands in a quarantine (never the hub's object store), every object is checked there by
 * contained git, the push's commits and the paths they change are computed for the caller to
 * decide on, and only an approved push has its objects placed in the hub — objects first,
 * then one ref, compare-and-swap.
 */
export interface Quarantine {
  readonly dir: string;
  /** The quarantine's object folder (its pack lives in objects/pack). */
  readonly objects: string;
  /** Makes git see the quarantined objects and, behind them, the hub's. */
  readonly env: Record<string, string>;
  /** What the header scan read of the pack (absent for a push without a pack). */
  readonly pack?: { readonly bytes: number; readonly objects: number };
  /** The sandbox the push's reads of it run in (git-session.ts), where one was made; dispose stops it. */
  readonly session?: GitSessionHost;
  /** Remove the quarantine; safe to call more than once. */
  dispose(): Promise<void>;
}

/** The push is refused for what the seat sent; `reason` says what, in git's words where git found it. */
export class PackRejected extends Error {
  override readonly name = "PackRejected";
  constructor(
    readonly reason: string,
    /** The bound or check it failed: push.pack, a bound of the header scan (pack-scan.ts), or the paths one push may change. */
    readonly rule: PackScanRule | "push.paths" | "push.commit-text" = "push.pack",
  ) {
    super(`push refused: ${reason}`);
  }
}

/** The ref was not where the push said it was (another push or a merge moved it first). */
export class RefMoved extends Error {
  override readonly name = "RefMoved";
  constructor(
    readonly ref: string,
    readonly expected: string | undefined,
    readonly actual: string | undefined,
  ) {
    super(`${ref} is at ${actual ?? "(none)"}, not at ${expected ?? "(none)"} as the push expected`);
  }
}

export interface ReceiveOptions {
  /** A daemon-private folder; each push gets a fresh folder inside it. */
  readonly quarantineRoot: string;
  readonly maxBytes: number;
  /** What the pack may declare (objects, each object's and delta's size, the sum): checked before git reads it. Default DEFAULT_PACK_BOUNDS. */
  readonly bounds?: PackBounds;
  /** Bounds of the seat's for the contained index-pack (its cgroups, or rlimits of its own). */
  readonly limits?: ContainedGitOptions["limits"];
  /** For index-pack, counted from the receive's start (it is started as the pack begins to come); default 10 minutes. */
  readonly timeoutMs?: number;
  /**
   * Whether the pack may be taken in at all (the seat's storage quota), decided while it
   * arrives: nothing of the pack is read until it resolves, and a rejection stops the write at
   * the next chunk, removes the quarantine and is thrown as is.
   */
  readonly admitted?: Promise<unknown>;
  /**
   * Whether a pack of this many objects (its header's count) may be taken in (the seat's
   * objects quota): asked once the pack is written and admitted, before anything reads past
   * its header. A rejection is thrown as is.
   */
  readonly admitObjects?: (objects: number) => Promise<void>;
  /**
   * A pack whose size was not declared (streamed as the seat's git writes it): `room`, once
   * known, is the most of it the seat may hold (its storage quota's room), and a pack that grows
   * past it is stopped at that chunk and rejects with what `over(size)` rejects with. Until
   * `bytes` is known the write is held to `atMost` (the quota alone), as a declared pack is to
   * the size it declared, which was held to the quota alone.
   */
  readonly room?: { readonly atMost: number; readonly bytes: Promise<number>; over(size: number): Promise<never> };
  /** Whether the quarantine's reads share one sandbox (git-session.ts); default true. */
  readonly session?: boolean;
}

const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** Objects looked up in a pack's index in one turn of the daemon's thread (a few milliseconds). */
const LOOKUPS_A_TURN = 8192;
const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * What one pushed pack may declare. An object of 64 MiB is far above source code; a push
 * expanding to 1 GiB in all is four times the largest pack a push may send (MAX_PACK_BYTES
 * of daemon/seat/git.ts), which is what ordinary compression gives; 200,000 objects is a
 * large import. A 17 KB delta bomb declaring a 1 GiB blob is refused here, before git.
 */
export const DEFAULT_PACK_BOUNDS: PackBounds = Object.freeze({ maxObjects: 200_000, maxObjectBytes: 64 * MiB, maxTotalBytes: 1024 * MiB });

/**
 * Receive a pack into a fresh quarantine and have contained git index it, every object
 * checked on its own (fsck: --fsck-objects, .gitmodules and .gitattributes included). No
 * --fix-thin: a thin pack, with deltas against objects it does not carry, is refused. An
 * empty input is a push that carries no objects (a ref moved to a commit the hub has).
 *
 * What an object names is checked by the walk from each pushed tip (checkedCommits,
 * checkPushSelfContained), not here: with --strict, index-pack refused a push naming an object
 * the hub lacks at once, and the walk one naming an object the hub holds a contained run
 * later, so how long a refusal took told a seat whether the hub holds content it guessed
 * (round twelve's open point). Now both are refused by the same walk. An object of the pack
 * that no pushed tip reaches is checked on its own but not for what it names: it stays
 * unreachable — no fetch serves it, and a later push that reaches it must send it again.
 *
 * index-pack sees the quarantine alone, not the hub behind it: its fsck reads every
 * .gitattributes and .gitmodules blob a pushed tree names, and reading them from the hub, its
 * verdict said whether the hub holds content a seat guessed and named there ("unable to read"
 * when it lacks it, or what git found in it; found by an attack, round fourteen). Alone, it
 * checks those the pack carries; one it does not carry is either as its parent had it (checked
 * when it came) or read by checkSpecialFiles. A .gitattributes it does not carry makes git
 * 2.39's index-pack fail after the pack and its index are written: that failure alone is taken
 * as passed (carriedOnly).
 */
export async function receivePack(
  hub: string,
  pack: Uint8Array | AsyncIterable<Uint8Array> | { readonly file: Promise<FilledPack> },
  options: ReceiveOptions,
  started?: StartedReceive,
): Promise<Quarantine> {
  if (!(Number.isSafeInteger(options.maxBytes) && options.maxBytes > 0)) throw new Error(`maxBytes must be a positive integer, not ${options.maxBytes}`);
  // The room follows the admission: a refused admission rejects it too, whether or not the
  // receive got to ask it (a pack file refused first, or refused for the quota before its room
  // was asked, left the rejection unhandled, and node ended the daemon: found by the suite).
  options.room?.bytes.catch(() => undefined);
  const receive = started ?? (await startReceive(hub, options));
  const { quarantine } = receive;
  try {
    const incoming = join(quarantine.dir, "incoming.pack");
    // A pack file is scanned as it is copied (copyScanned); a stream, once written.
    const copied = "file" in pack ? await copyScanned(await pack.file, incoming, options) : undefined;
    const size =
      copied?.size ?? (await writeBounded(pack as Uint8Array | AsyncIterable<Uint8Array>, incoming, options.maxBytes, options.admitted, options.room));
    if (copied === undefined) {
      await options.admitted;
      if (size > 0 && options.admitObjects !== undefined) {
        const handle = await open(incoming, "r");
        const declared = await packHeaderCount(handle).finally(() => handle.close());
        if (declared !== undefined) await options.admitObjects(declared);
      }
    }
    if (size > 0) {
      // The headers first: what git would build in memory is bounded before git sees a byte.
      const scan = copied?.scan ?? (await scanPack(incoming, options.bounds ?? DEFAULT_PACK_BOUNDS));
      if (!scan.ok) throw new PackRejected(scan.rule === "push.pack" ? `pack is corrupt: ${scan.reason}` : scan.reason, scan.rule);
      receive.scanned({ bytes: size, objects: scan.objects });
      const read = createReadStream(incoming);
      read.on("error", (error) => receive.feed.destroy(error));
      read.pipe(receive.feed);
      try {
        await receive.indexing;
      } catch (error) {
        if (error instanceof GitError && typeof error.code === "string") throw new PackRejected(`pack could not be checked in time (${error.code})`);
        if (error instanceof GitError && (await carriedOnly(quarantine.objects, error.stderr))) return quarantineWithout(incoming, quarantine);
        // Not a check of links any more (the walk's), but git's words for a missing object are
        // the same refusal wherever they come from.
        const unsent = /did not receive expected object ([0-9a-f]{40}|[0-9a-f]{64})/.exec(error instanceof GitError ? error.stderr : "")?.[1];
        if (unsent !== undefined) throw new PackRejected(unsentObject());
        if (error instanceof GitError) throw new PackRejected(`pack is corrupt: ${gitMessage(error.stderr)}`);
        throw error;
      }
    }
    // No pack (an empty push): index-pack has nothing to do.
    if (size === 0) await receive.stopIndexing();
    return await quarantineWithout(incoming, quarantine);
  } catch (error) {
    await receive.stopIndexing();
    await quarantine.dispose();
    throw error;
  }
}

/** What a receive needs before its pack: where, and index-pack's bounds. */
export type ReceiveStart = Pick<ReceiveOptions, "quarantineRoot" | "maxBytes" | "limits" | "timeoutMs" | "session">;

/**
 * A push's quarantine, its contained index-pack and its read sandbox, started and waiting for
 * the pack: receivePack's first half, which it runs itself or is given (ready-receive.ts makes
 * one as a seat lists refs for a push, issue 26).
 */
export interface StartedReceive {
  readonly quarantine: Quarantine;
  /** index-pack's input: given nothing until the pack is in, admitted and scanned. */
  readonly feed: PassThrough;
  /** index-pack, settled once it has exited (rejects with its GitError). */
  readonly indexing: Promise<unknown>;
  /** Stops index-pack, and resolves once it has ended. */
  stopIndexing(): Promise<void>;
  /** What the header scan found, for the quarantine's `pack`. */
  scanned(pack: NonNullable<Quarantine["pack"]>): void;
}

/**
 * index-pack and the push's read sandbox are started before the pack comes, their sandboxes
 * made while the daemon waits for it (issue 26). index-pack is given nothing before the pack is
 * in, admitted and scanned; anything that ends the receive first stops it, and it has ended
 * before the quarantine is removed.
 */
export async function startReceive(hub: string, options: ReceiveStart): Promise<StartedReceive> {
  const [hubDir, root] = await Promise.all([realpath(hub), realpath(options.quarantineRoot)]);
  const dir = await mkdtemp(join(root, "push-"));
  const objects = join(dir, "objects");
  let scanned: Quarantine["pack"];
  let session: GitSession | undefined;
  const env = { GIT_OBJECT_DIRECTORY: objects, GIT_ALTERNATE_OBJECT_DIRECTORIES: alternatePath(join(hubDir, "objects")) };
  const quarantine: Quarantine = {
    get pack() {
      return scanned;
    },
    get session() {
      return session;
    },
    dir,
    objects,
    env,
    dispose: async () => {
      await session?.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
  const stopIndex = new AbortController();
  const feed = new PassThrough();
  let indexing: Promise<unknown> | undefined;
  const stopIndexing = async (): Promise<void> => {
    stopIndex.abort();
    feed.destroy();
    await indexing?.catch(() => undefined);
  };
  try {
    await mkdir(join(objects, "pack"), { recursive: true, mode: 0o700 });
    const limits = options.limits !== undefined ? { limits: options.limits } : {};
    indexing = containedGit(["index-pack", "--fsck-objects", "--stdin", `--max-input-size=${options.maxBytes}`], {
      gitDir: hubDir,
      readOnly: [hubDir],
      writable: [dir],
      // No fsync of the quarantine's pack and index (git's default, ~1.5 ms): they reach the hub
      // only through migrateObjects, which syncs each file before it is placed (issue 26).
      env: {
        GIT_OBJECT_DIRECTORY: objects,
        GIT_ALTERNATE_OBJECT_DIRECTORIES: "",
        GIT_CONFIG_COUNT: "1",
        GIT_CONFIG_KEY_0: "core.fsync",
        GIT_CONFIG_VALUE_0: "none",
      },
      input: feed,
      signal: stopIndex.signal,
      ...limits,
      timeoutMs: options.timeoutMs ?? 600_000,
    });
    indexing.catch(() => undefined);
    // Made as quarantineContext's: one sandbox start for all the push's reads of the quarantine.
    if (options.session !== false) {
      session = openGitSession({ gitDir: hubDir, readOnly: [hubDir, ...(await objectStores(hubDir)), dir], writable: [], env, ...limits });
    }
  } catch (error) {
    await stopIndexing();
    await quarantine.dispose();
    throw error;
  }
  return { quarantine, feed, indexing, stopIndexing, scanned: (pack) => void (scanned = pack) };
}

async function quarantineWithout(incoming: string, quarantine: Quarantine): Promise<Quarantine> {
  await unlink(incoming);
  return quarantine;
}

/**
 * Whether index-pack's failure is only git 2.39's for a .gitattributes blob that a pushed tree
 * names and the pack does not carry (fsck's last step, once the pack and its index are written:
 * gitattributesMissing is an error there, and no option of index-pack's lowers it without
 * --strict's check of links). Then the pack passed every other check: its index is there, and
 * every error git printed is that one. Anything else, or a message cut short, is not.
 */
async function carriedOnly(objects: string, stderr: string): Promise<boolean> {
  if (stderr.length >= CONTAINED_STDERR_BYTES) return false;
  const said = stderr.split("\n").filter((line) => line.trim() !== "");
  const fatal = said.filter((line) => line.startsWith("fatal:"));
  const errors = said.filter((line) => line.startsWith("error:"));
  if (fatal.length !== 1 || fatal[0] !== "fatal: fsck error in pack objects" || errors.length === 0) return false;
  if (!errors.every((line) => /^error: object [0-9a-f]{40,64}: gitattributesMissing: unable to read \.gitattributes blob$/.test(line))) return false;
  return (await quarantinedObjects(objects)) !== undefined;
}

/**
 * The commits of a push: those reachable from `tip` that no ref of the hub reaches, oldest
 * first, after checking that everything the tip reaches is present.
 *
 * `readable`, when given, closes a hole the hub-wide check leaves: a seat that knows the id
 * of an object it may not read (a blob on a path outside its read scope) could name it in a
 * tree without sending it, and the hub, which has it, would find the push connected — then
 * serve it back on a fetch of the seat's branch. With `readable` (the commits the seat may
 * read: what it was served), every object the tip reaches that those do not must travel in
 * the pack itself.
 */
export async function newCommits(hub: string, q: Quarantine, tip: string, options: { readonly readable?: readonly string[] } = {}): Promise<string[]> {
  return (await checkedCommits(hub, q, tip, options, () => Promise.resolve())).commits;
}

/**
 * A push's commits (newCommits) and, checked as checkCommitText and changedPaths check them,
 * their text and the paths they change: every contained read a push's ref needs before the
 * kernel's decision, each started as soon as what it reads is known (issue 26).
 */
export async function pushedCommits(
  hub: string,
  q: Quarantine,
  tip: string,
  options: { readonly readable?: readonly string[]; readonly limits?: ContainedGitLimits } = {},
): Promise<{ readonly commits: string[]; readonly paths: readonly string[] }> {
  const limits = options.limits !== undefined ? { limits: options.limits } : {};
  const { commits, next } = await checkedCommits(hub, q, tip, options, async (listed, signal) => {
    const [text, changed] = await settled([checkCommitText(hub, q, listed, { ...limits, signal }), changedPaths(hub, q, listed, { ...limits, signal })]);
    if (!text.ok) throw text.error;
    if (!changed.ok) throw changed.error;
    return changed.value;
  });
  await checkSpecialFiles(hub, { ...(await quarantineContext(hub, q)), ...limits }, q, next.commits);
  return { commits, paths: next.paths };
}

/**
 * A .gitattributes or .gitmodules a push adds or changes (git's fsck reads those two, and their
 * NTFS and HFS+ aliases) is read by git's fsck as that file. index-pack, which sees the pack
 * alone (receivePack), read those the pack carries. One it does not carry — moved, copied or
 * reverted to content the hub has, which git does not send — is, once the walk passed, content
 * the seat may read, and is read here: a tree naming it as the push does, and it, packed by
 * contained git and indexed by index-pack's fsck alone (checkAsSpecialFile). Left unread, a
 * .gitmodules whose URL is an option would land. One the push leaves as the parent had it was
 * read when it came. Only when a push changes such a path does this run git.
 */
async function checkSpecialFiles(hub: string, context: ContainedGitOptions, q: Quarantine, commits: ChangedPaths["commits"]): Promise<void> {
  const asked = commits.filter((c) => c.paths.some((path) => isSpecialFile(path))).map((c) => c.oid);
  if (asked.length === 0) return;
  // Their modes and ids, from one diff of those commits against each parent, read from stdin
  // and NUL-separated: a path per argument (ls-tree) did not start past ARG_MAX (found by an
  // attack, round fourteen: 12,000 folders of long names each holding a copy of the trunk's
  // .gitattributes, an internal error).
  const { stdout } = await containedGit(["diff-tree", "--stdin", "-r", "-t", "-m", "--raw", "--no-renames", "--no-abbrev", "-z"], {
    ...context,
    input: Buffer.from(asked.map((oid) => `${oid}\n`).join("")),
    maxOutputBytes: PUSH_PATHS_OUTPUT_BYTES,
  });
  const held = await quarantinedObjects(q.objects);
  const unread = new Map<string, { entry: { mode: string; type: string; oid: string; name: string }; path: string }>();
  const tokens = nulCursor(stdout);
  let turn = 0;
  for (let token = tokens.next(); token !== undefined; token = tokens.next()) {
    if (++turn % PATHS_A_TURN === 0) await yieldToLoop();
    // ":oldmode newmode oldid newid status", then the path; a commit's own id heads its entries.
    const head = token.toString("latin1");
    if (!head.startsWith(":")) continue;
    const raw = tokens.next()?.toString("latin1") ?? "";
    const [, newMode = "", , newOid = "", status = ""] = head.slice(1).split(" ");
    const name = raw.slice(raw.lastIndexOf("/") + 1);
    const path = Buffer.from(raw, "latin1").toString("utf8");
    if (status === "D" || !isSpecialFile(path)) continue;
    if (newMode === "160000")
      throw new PackRejected(`${JSON.stringify(path)}: a .gitattributes or .gitmodules cannot be a submodule link (mode 160000); make it a file`);
    if (held?.has(newOid) === true) continue;
    const type = newMode === "040000" ? "tree" : "blob";
    unread.set(`${newMode} ${newOid} ${name}`, { entry: { mode: newMode, type, oid: newOid, name }, path });
  }
  if (unread.size > SPECIAL_FILES_READ) {
    throw new PackRejected(
      `the push names ${unread.size} different .gitattributes or .gitmodules files whose content it does not carry; teamd reads at most ${SPECIAL_FILES_READ} a push: push fewer at a time`,
    );
  }
  for (const { entry, path } of unread.values()) await checkAsSpecialFile(hub, context, q, entry, path);
}

/** The most different .gitattributes and .gitmodules a push may name without carrying their content (each read is three contained runs). */
const SPECIAL_FILES_READ = 16;

/**
 * git's fsck of one .gitattributes or .gitmodules the pack does not carry: a tree holding it
 * under its own name and mode (mktree), packed with it (pack-objects, over the quarantine and
 * the hub), then indexed by index-pack --fsck-objects alone, which reads it as that file. All
 * contained, in a folder of the quarantine; nothing of it passes through the daemon.
 */
async function checkAsSpecialFile(
  hub: string,
  context: ContainedGitOptions,
  q: Quarantine,
  entry: { readonly mode: string; readonly type: string; readonly oid: string; readonly name: string },
  path: string,
): Promise<void> {
  const dir = await mkdtemp(join(q.dir, "special-"));
  try {
    const made = join(dir, "made");
    const checked = join(dir, "checked");
    await mkdir(join(checked, "pack"), { recursive: true, mode: 0o700 });
    await mkdir(made, { mode: 0o700 });
    const tree = lines(
      (
        await containedGit(["mktree", "-z", "--missing"], {
          ...context,
          writable: [dir],
          env: { GIT_OBJECT_DIRECTORY: made, GIT_ALTERNATE_OBJECT_DIRECTORIES: "" },
          input: Buffer.from(`${entry.mode} ${entry.type} ${entry.oid}\t${entry.name}\0`, "latin1"),
        })
      ).stdout,
    )[0];
    if (tree === undefined || !OID.test(tree)) throw new PackRejected(`${JSON.stringify(path)}: cannot be read as a tree entry`);
    await containedGit(["pack-objects", "-q", join(dir, "two")], {
      ...context,
      writable: [dir],
      env: { GIT_OBJECT_DIRECTORY: made, GIT_ALTERNATE_OBJECT_DIRECTORIES: [q.objects, join(await realpath(hub), "objects")].map(alternatePath).join(":") },
      input: Buffer.from(`${tree}\n${entry.oid}\n`),
    });
    const pack = (await readdir(dir)).find((name) => name.startsWith("two-") && name.endsWith(".pack"));
    if (pack === undefined) throw new PackRejected(`${JSON.stringify(path)}: cannot be packed to be read`);
    await containedGit(["index-pack", "--fsck-objects", "--stdin"], {
      ...context,
      writable: [dir],
      env: { GIT_OBJECT_DIRECTORY: checked, GIT_ALTERNATE_OBJECT_DIRECTORIES: "" },
      input: createReadStream(join(dir, pack)),
    });
  } catch (error) {
    // git's verdict on the file (or on a name it cannot make a tree of), or the seat's limits: the push is refused for it.
    if (error instanceof GitError)
      throw new PackRejected(
        `${JSON.stringify(path)}: ${typeof error.code === "number" ? gitMessage(error.stderr) : `could not be read within your limits (git: ${error.code})`}`,
      );
    throw error;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function isSpecialFile(path: string): boolean {
  const name = path.slice(path.lastIndexOf("/") + 1);
  return isDotGitmodules(name) || isDotGitattributes(name);
}

/**
 * newCommits' reads of the quarantine, and `next` on the commits once they are listed. Each
 * read is a contained process whose start (bash, bwrap's namespaces, the seat's cgroups: ~30 ms
 * of a process start here, most of it CPU) is most of its time, so they are as few as the
 * checks allow and all start at once (issue 26):
 * - the commits, listed (`next` on them: their text and paths, pushedCommits). The tip is the
 *   last of them when it is a new commit; otherwise (none listed: the hub has it, or it is no
 *   commit, or nothing) a `cat-file -t` names what it is;
 * - with `readable`, the walk from the tip to what the seat may read, whose every object must
 *   be in the pack (checkSelfContained). It is also the check of links and their types (the
 *   seat's readable tips are refs of the hub, so the walk covers every object `--not --all`
 *   would) and refuses a missing object as one the hub holds unread. Without `readable`, the
 *   links are checked by a walk of their own.
 * They are answered in a fixed order — an object named and not sent, the tip's type, the
 * links, the listing, `next` — so a push failing two checks is refused for the first, and a
 * later check's result is not looked at when an earlier one refused. Every run has settled
 * when this returns, so none is left in the quarantine the caller disposes next.
 */
async function checkedCommits<T>(
  hub: string,
  q: Quarantine,
  tip: string,
  options: { readonly readable?: readonly string[]; readonly limits?: ContainedGitLimits },
  next: (commits: string[], signal: AbortSignal) => Promise<T>,
): Promise<{ readonly commits: string[]; readonly next: T }> {
  if (!OID.test(tip)) throw new PackRejected(`${JSON.stringify(tip)} is not an object id`);
  const context = { ...(await quarantineContext(hub, q)), ...(options.limits !== undefined ? { limits: options.limits } : {}) };
  const readable = options.readable?.filter((oid) => OID.test(oid));
  // The walk refusing an object named and not sent stops the other runs: they read what the
  // seat's trees name, the hub's objects among them, and their time was the refusal's (found by
  // an attack, round fourteen: diff-tree listed a guessed folder the hub holds at each of 160,000
  // names, ~1.8 s, and stopped at once at one it lacks, ~0.16 s).
  const stop = new AbortController();
  const others = { ...context, signal: stop.signal };
  // The new commits are those the seat's readable tips do not reach, not the hub's refs: a
  // commit already on another seat's branch, sent whole, was no new commit, so it changed no
  // path and met no write check, and landed (found by an attack, round fourteen: another
  // seat's lib/ change on w1's branch; and a right guess of that commit landed, a wrong one not).
  const listing = (
    readable === undefined
      ? containedGit(["rev-list", "--topo-order", "--reverse", tip, "--not", "--all"], others)
      : containedGit(["rev-list", "--topo-order", "--reverse", "--ignore-missing", "--stdin", tip], {
          ...others,
          input: Buffer.from([...new Set(readable)].map((oid) => `^${oid}\n`).join("")),
        })
  ).then((listed) => lines(listed.stdout));
  const kind = listing.then(
    async (listed) => (listed.at(-1) === tip ? "commit" : tipType(others, tip)),
    () => tipType(others, tip),
  );
  const walk = (
    readable === undefined
      ? containedGit(["rev-list", "--objects", "--verify-objects", "--quiet", "--missing=error", tip, "--not", "--all"], context).then(checkTypes)
      : checkSelfContained(context, q, [tip], readable)
  ).catch((error: unknown) => {
    if (error instanceof PackRejected) stop.abort();
    throw error;
  });
  const [typed, reached, listed, after] = await settled([kind, walk, listing, listing.then((commits) => next(commits, stop.signal))]);
  // An object named and not sent first, whatever the tip is: the walk refuses it in the same
  // words and in the same run whether the hub holds it or not, and so must the tip's type — a
  // tip naming a blob the hub holds was "a blob, not a commit", one it lacks "in neither the
  // pack nor the hub" (found by an audit, round fourteen: a guess of content as the tip).
  if (!reached.ok && reached.error instanceof PackRejected) throw reached.error;
  if (!typed.ok) throw typed.error;
  if (typed.value === "missing") throw new PackRejected(readable === undefined ? `the pushed tip ${tip} is in neither the pack nor the hub` : unsentObject());
  if (typed.value !== "commit") throw new PackRejected(`the pushed tip ${tip} is a ${typed.value}, not a commit`);
  if (!reached.ok) {
    if (reached.error instanceof GitError) throw new PackRejected(`the push is not connected: ${gitMessage(reached.error.stderr)}`);
    throw reached.error;
  }
  if (!listed.ok) throw listed.error;
  if (!after.ok) throw after.error;
  return { commits: listed.value, next: after.value };
}

/** The tip's type, or "missing" where neither the pack nor the hub has it. */
async function tipType(context: ContainedGitOptions, tip: string): Promise<string> {
  return (await objectTypes(context, [tip])).get(tip) ?? "missing";
}

type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/**
 * Every run settled — none is left running in the quarantine the caller disposes next — each
 * as its value or its error, for the caller to answer in its own order.
 */
export async function settled<T extends readonly unknown[]>(runs: { readonly [K in keyof T]: Promise<T[K]> }): Promise<{ [K in keyof T]: Settled<T[K]> }> {
  const results = await Promise.allSettled(runs);
  return results.map((r) => (r.status === "fulfilled" ? { ok: true, value: r.value } : { ok: false, error: r.reason as unknown })) as {
    [K in keyof T]: Settled<T[K]>;
  };
}

/**
 * Every new commit's raw text through commitTextProblem (src/kernel/git-names.ts), read in one
 * contained `cat-file --batch` within the output bound: a commit whose message or identity would
 * drive the terminal of whoever runs git log is refused (push.commit-text).
 */
export async function checkCommitText(
  hub: string,
  q: Quarantine,
  commits: readonly string[],
  options: { readonly limits?: ContainedGitLimits; readonly signal?: AbortSignal } = {},
): Promise<void> {
  if (commits.length === 0) return;
  for (const oid of commits) if (!OID.test(oid)) throw new PackRejected(`${JSON.stringify(oid)} is not an object id`);
  const context = {
    ...(await quarantineContext(hub, q)),
    ...(options.limits !== undefined ? { limits: options.limits } : {}),
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
  };
  let out: Buffer;
  try {
    out = (await containedGit(["cat-file", "--batch"], { ...context, input: Buffer.from(commits.map((oid) => `${oid}\n`).join("")) })).stdout;
  } catch (error) {
    if (error instanceof GitOutputTooLarge) throw new PackRejected("the pushed commits' text is larger than the daemon reads for one push", "push.pack");
    throw error;
  }
  let at = 0;
  for (const oid of commits) {
    const eol = out.indexOf(0x0a, at);
    const header = out.subarray(at, eol).toString("latin1").split(" ");
    const size = Number(header[2]);
    if (eol < 0 || header[0] !== oid || header[1] !== "commit" || !Number.isSafeInteger(size))
      throw new PackRejected(`cannot read commit ${oid} back from the pack`);
    const problem = commitTextProblem(out.subarray(eol + 1, eol + 1 + size));
    if (problem !== undefined) throw new PackRejected(`commit ${oid}: ${problem}`, "push.commit-text");
    at = eol + 1 + size + 1;
  }
}

/**
 * Every object the tip reaches that what the seat may read (`readable`: its refs' tips) does
 * not must be in the pack: naming an unread blob by id never lands it on a branch. This walk is
 * also what checks an object's links (index-pack checks each object alone, receivePack), so it
 * must refuse an object named and not sent in the same words, and after the same work, whether
 * the hub holds it or not — or the refusal's words or its time tell a seat whether the hub
 * holds content it guessed:
 * - --missing=print: git walks on past an object it cannot find (printing `?` and its id, at the
 *   end) rather than stop there. Stopping, a walk ended at the guess when the hub lacked it and
 *   read everything after it when the hub held it: a push of 128 MiB of blobs after the guess
 *   took ~1.2 s against ~0.8 s (found by an attack, round fourteen). What is left to differ is
 *   the guessed object itself: a blob the hub holds is read, a folder it holds is walked into.
 * - the refusal names no object (unsentObject): which one git meets first would depend on
 *   what the hub holds (a missing one is printed at the end).
 * - --verify-objects reads every object reached, so one the pack carries as another type than
 *   what names it claims is refused as corrupt (what index-pack --strict's check of links did).
 * - a readable tip that is not there is passed over (--ignore-missing names only revisions);
 *   `tipTypes`, where given, names the tips that are nowhere, refused as unsent too.
 * - a commit git cannot read (a parent) still stops the walk, as an object named as two types
 *   does; every object git's errors name is looked up as the ones listed are. A type error
 *   about objects the pack holds alone is a corrupt pack.
 * Which objects the pack holds is read from its index in line where that is certain
 * (pack-index.ts), else asked of a contained `cat-file` over the quarantine alone. A walk that
 * fails otherwise rejects with its GitError.
 */
async function checkSelfContained(
  context: ContainedGitOptions,
  q: Quarantine,
  tips: readonly string[],
  readable: readonly string[],
  tipTypes?: Promise<ReadonlyMap<string, string>>,
): Promise<void> {
  const args = ["rev-list", "--objects", "--verify-objects", "--missing=print", "--no-object-names", "--ignore-missing", "--stdin", ...tips];
  const walk = await containedGitExit(args, { ...context, input: Buffer.from([...new Set(readable)].map((oid) => `^${oid}\n`).join("")) });
  const reached: string[] = [];
  const missing: string[] = [];
  for (const line of lines(walk.stdout)) (line.startsWith("?") ? missing : reached).push(line.replace(/^\?/, ""));
  // Every object git's errors name: a missing parent, or one named as two types (a file's entry
  // and a folder's), where git stops (found by an attack, round fourteen: with the hub lacking
  // the guess, git met it as a file, then stopped at the folder, "object X is a blob, not a
  // tree", and the push was refused as corrupt; with the hub holding it, as unsent).
  const named = walk.stderr
    .split("\n")
    .filter((line) => /^(?:error|fatal):/.test(line))
    .flatMap((line) => line.match(OID_IN_TEXT) ?? []);
  const nowhere = tipTypes === undefined ? [] : await tipTypes.then((types) => tips.filter((tip) => (types.get(tip) ?? "missing") === "missing"));
  if (await anyNotHeld(context, q, [...nowhere, ...missing, ...reached, ...named])) throw new PackRejected(unsentObject());
  if (walk.code !== 0 && !/\bis an? [a-z]+, not an? [a-z]+$/m.test(walk.stderr)) throw new GitError(args, walk.code, walk.stderr);
  checkTypes(walk);
}

/** An object id in git's words (SHA-1 or SHA-256). */
const OID_IN_TEXT = /\b(?:[0-9a-f]{64}|[0-9a-f]{40})\b/g;

/**
 * Whether the pack lacks any of `oids`. In turns, the daemon's one thread given back between
 * them: a push may reach 200,000 objects, for each of up to 32 refs (found by an attack, round
 * eleven: ~0.6 s a ref in one piece).
 */
async function anyNotHeld(context: ContainedGitOptions, q: Quarantine, oids: readonly string[]): Promise<boolean> {
  if (oids.length === 0) return false;
  const held = await quarantinedObjects(q.objects);
  if (held !== undefined) {
    for (let at = 0; at < oids.length; at += LOOKUPS_A_TURN) {
      if (at > 0) await yieldToLoop();
      if (oids.slice(at, at + LOOKUPS_A_TURN).some((oid) => !held.has(oid))) return true;
    }
    return false;
  }
  // The quarantine alone, without the hub behind it.
  const own = await containedGit(["cat-file", "--batch-check=%(objectname)"], {
    ...context,
    env: { GIT_OBJECT_DIRECTORY: q.objects },
    input: Buffer.from(oids.map((oid) => `${oid}\n`).join("")),
  });
  return lines(own.stdout).some((line) => line.endsWith(" missing"));
}

/**
 * A walk with --verify-objects: git says when an object it read is not of the type what names
 * it claims (a blob's entry naming a tree), and exits 0 where it read the object only to verify
 * it, 128 where it had met it before as the other type. Refused as corrupt either way.
 */
function checkTypes(walk: { readonly stderr: string }): void {
  if (/^error:/m.test(walk.stderr)) throw new PackRejected(`pack is corrupt: ${gitMessage(walk.stderr)}`);
}

/**
 * Before any ref of a push of several moves: every object their tips reach that the seat was
 * not served is in the pack. A push naming an object it neither carries nor was served is then
 * refused whole, whether the hub holds the object or not — checked ref by ref, the push's other
 * refs landed only when the hub held it, and a seat could learn so whether a guess of content
 * it may not read is in the hub (found by an attack, round twelve). One contained walk for all
 * the tips, and beside it their types: a tip that is nowhere is refused whole too, as one the
 * hub holds unread is (the walk passes over a tip that is not there).
 */
export async function checkPushSelfContained(
  hub: string,
  q: Quarantine,
  tips: readonly string[],
  readable: readonly string[],
  options: { readonly limits?: ContainedGitLimits } = {},
): Promise<void> {
  const wanted = [...new Set(tips.filter((tip) => OID.test(tip)))];
  if (wanted.length === 0) return;
  const context = { ...(await quarantineContext(hub, q)), ...(options.limits !== undefined ? { limits: options.limits } : {}) };
  const types = objectTypes(context, wanted);
  types.catch(() => undefined);
  try {
    await checkSelfContained(
      context,
      q,
      wanted,
      readable.filter((oid) => OID.test(oid)),
      types,
    );
  } catch (error) {
    // A walk git cannot finish otherwise (the seat's limits) is left to each ref's own checks.
    if (error instanceof GitError) return;
    throw error;
  }
}

/**
 * The refusal of a push that names an object it does not carry: the same words whether the hub
 * holds the object (the seat was never served it) or not (no such object anywhere), or a seat
 * could learn which contents the hub holds by naming the hash of a guess (found by an attack,
 * round twelve). Both come from the same walk (checkSelfContained). It names no object: which
 * one the walk meets first depends on what the hub holds.
 */
export function unsentObject(): string {
  return "the pack lacks an object the push needs, which the pusher was never served; push the objects your commits name, or fetch first; nothing reached the hub";
}

/**
 * Whether `ancestor` is an ancestor of `tip` (is a push a fast-forward?): over the quarantine and
 * the hub behind it, or over the hub alone for a push that sent nothing — its tip is a commit an
 * earlier push landed, as seat-written as any. Either way the walk is as long as the seat made
 * the history, so it runs in contained git under the seat's limits (found by an attack: a push
 * of 32 refs and no pack ran 32 plain walks of a 60,000-commit history on the daemon's own
 * account). A walk that does not finish within them refuses the push (push.pack).
 */
export async function commitAncestry(
  hub: string,
  q: Quarantine | undefined,
  ancestor: string,
  tip: string,
  options: { readonly limits?: ContainedGitLimits } = {},
): Promise<boolean> {
  for (const oid of [ancestor, tip]) if (!OID.test(oid)) throw new PackRejected(`${JSON.stringify(oid)} is not an object id`);
  try {
    await containedGit(["merge-base", "--is-ancestor", ancestor, tip], await pushReadContext(hub, q, options.limits));
    return true;
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    if (error.code === 1) return false;
    throw new PackRejected(`the push's history could not be walked within your limits (git: ${String(error.code)})`);
  }
}

/**
 * Is `oid` a commit reachable from what the seat was served (`readable`, the tips of the refs it
 * may read)? For a push that sent nothing: its tip must be such a commit, never one it merely
 * knows the name of. One walk for every tip at once — the commits of `oid` that no tip reaches
 * number zero exactly when some tip reaches it — where it was one `merge-base` per readable tip
 * (found by an audit); contained, under the seat's limits, as commitAncestry. A walk that fails
 * (a tip git cannot walk, the limits) answers no: fail closed.
 */
export async function servedCommit(
  hub: string,
  oid: string,
  readable: readonly string[],
  options: { readonly limits?: ContainedGitLimits } = {},
): Promise<boolean> {
  if (!OID.test(oid)) return false;
  const context = await pushReadContext(hub, undefined, options.limits);
  const tips = readable.filter((tip) => OID.test(tip));
  // Both at once, whatever the first answers: the answer comes after the same runs whether the
  // hub holds `oid` or not. The walk ran only for a commit the hub holds, so how long a refusal
  // took told a seat whether the hub holds a commit it names (found by an audit, round fourteen).
  const [isCommit, unreached] = await Promise.all([
    // The object itself a commit, not one a tag peels to: a branch never names a tag (git's
    // update-ref refuses it, and a seat's push of one was recorded as an unknown outcome: found
    // by an attack on this round, test/escape/push-tag-attack.test.ts).
    containedGit(["cat-file", "-t", oid], context).then(
      ({ stdout }) => stdout.toString("latin1") === "commit\n",
      () => false,
    ),
    tips.length === 0
      ? Promise.resolve(undefined)
      : containedGit(["rev-list", "--count", "--stdin"], {
          ...context,
          input: Buffer.from(`${oid}\n${tips.map((tip) => `^${tip}`).join("\n")}\n`),
        }).catch(() => undefined),
  ]);
  if (!isCommit) return false;
  if (readable.includes(oid)) return true;
  return unreached?.stdout.toString("utf8").trim() === "0";
}

/** What a push's reads of seat-written history see: the quarantine and the hub behind it, or the hub alone; under `limits`. */
async function pushReadContext(hub: string, q: Quarantine | undefined, limits: ContainedGitLimits | undefined): Promise<ContainedGitOptions> {
  const base = q !== undefined ? await quarantineContext(hub, q) : await repoReadContext(await realpath(hub), undefined);
  return { ...base, ...(limits !== undefined ? { limits } : {}) };
}

/**
 * The most paths one push may change (its commits' diffs, every commit's counted): more files
 * than a large real repository holds (the Linux kernel: about 90,000), so an import fits, while
 * a seat's trees naming one another (a few hundred bytes listing a million paths) are refused
 * before the daemon holds them. The diff's output is held to PUSH_PATHS_OUTPUT_BYTES.
 */
export const PUSH_PATHS = 200_000;
const PUSH_PATHS_OUTPUT_BYTES = 48 * 1024 * 1024;
const PUSH_PATHS_TIMEOUT_MS = 30_000;

export interface ChangedPaths {
  readonly paths: readonly string[];
  readonly commits: readonly { readonly oid: string; readonly paths: readonly string[] }[];
}

/**
 * The paths a push changes, commit by commit against its parents. A commit with one parent
 * (or none: --root) contributes every path its diff names, both sides of a rename or copy.
 * A merge contributes only the paths whose result differs from every parent (the combined
 * diff, with every parent's name for the path): merging trunk in cleanly writes nothing the
 * seat chose, while a merge result no parent had — an evil merge — is the seat's writing.
 */
export async function changedPaths(
  hub: string,
  q: Quarantine,
  commits: readonly string[],
  options: { readonly maxPaths?: number; readonly limits?: ContainedGitLimits; readonly signal?: AbortSignal } = {},
): Promise<ChangedPaths> {
  const maxPaths = options.maxPaths ?? PUSH_PATHS;
  if (commits.length === 0) return { paths: [], commits: [] };
  for (const oid of commits) if (!OID.test(oid)) throw new PackRejected(`${JSON.stringify(oid)} is not an object id`);
  const context = await quarantineContext(hub, q);
  const tooWide = () =>
    new PackRejected(
      `the push changes more than ${maxPaths} paths (trees that name one another can list millions from a few bytes); push in smaller steps`,
      "push.paths",
    );
  const { stdout } = await containedGit(["diff-tree", "--stdin", "-r", "--root", "-M", "-C", "--cc", "--combined-all-paths", "--name-status", "-z"], {
    ...context,
    input: Buffer.from(commits.map((oid) => `${oid}\n`).join("")),
    maxOutputBytes: PUSH_PATHS_OUTPUT_BYTES,
    // git holds a commit's whole diff before it prints any of it (rename detection needs it
    // all): a tree naming a hundred million paths prints nothing while it grows. So the run is
    // held to the seat's own limits (its cgroups, or its memory as RLIMIT_DATA; a seat without
    // limits, SEAT_DATA_MEMORY_BYTES) and to PUSH_PATHS_TIMEOUT_MS; past either, the push is
    // refused with the bound's rule — never an internal error, never the daemon's memory.
    limits: options.limits ?? { memoryBytes: SEAT_DATA_MEMORY_BYTES },
    timeoutMs: PUSH_PATHS_TIMEOUT_MS,
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
  }).catch((error: unknown) => {
    if (error instanceof GitOutputTooLarge) throw tooWide();
    // Killed (a signal: the timeout, the cgroup's OOM killer) or out of memory under RLIMIT_DATA (git dies 128 saying so).
    const outOfBounds =
      error instanceof GitError &&
      (typeof error.code === "string" || error.code === null || error.code > 128 || /out of memory|cannot allocate/i.test(error.stderr));
    if (outOfBounds)
      throw new PackRejected(
        `listing the push's changed paths did not finish within ${PUSH_PATHS_TIMEOUT_MS / 1000} s and your memory (git: ${error.code}); push in smaller steps`,
        "push.paths",
      );
    throw error;
  });
  const perCommit = new Map<string, Set<string>>(commits.map((oid) => [oid, new Set<string>()]));
  // Every distinct path as it comes: refused the moment there are too many, never held past it.
  const everyPath = new Set<string>();
  // Token by token off git's output, in turns of the daemon's one thread: up to 48 MiB of it, and
  // split and parsed in one piece it held every other seat's calls ~1 s (found by a profile,
  // round thirteen: twenty commits alternating a 150,000-entry folder between two shapes).
  const tokens = nulCursor(stdout);
  let current: Set<string> | undefined;
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let turn = 0;
  for (let next = tokens.next(); next !== undefined; next = tokens.next()) {
    if (++turn % PATHS_A_TURN === 0) {
      await yieldToLoop();
      // An earlier check refused the push (checkedCommits): nothing here will be read.
      if (options.signal?.aborted === true) throw new PackRejected("the push was refused by an earlier check");
    }
    const token = next.toString("latin1");
    const header = perCommit.get(token);
    if (header !== undefined) {
      current = header;
      continue;
    }
    if (current === undefined) throw new Error(`git diff-tree printed ${JSON.stringify(token)} before any commit`);
    // One parent: a status letter and a score (R100, C075) naming two paths, else one.
    // A merge: one letter per parent, then each parent's name and the result's.
    let count: number;
    if (/^[A-Z][0-9]*$/.test(token)) count = token[0] === "R" || token[0] === "C" ? 2 : 1;
    else if (/^[A-Z]{2,}$/.test(token)) count = token.length + 1;
    else throw new Error(`git diff-tree printed an unexpected status ${JSON.stringify(token)}`);
    for (let n = 0; n < count; n++) {
      const name = tokens.next();
      if (name === undefined) throw new Error("git diff-tree output ended inside an entry");
      let path: string;
      try {
        path = decoder.decode(name);
      } catch {
        // Scope rules are UTF-8 text; a name that is not cannot be matched faithfully.
        throw new PackRejected(`a path of the push is not valid UTF-8: ${JSON.stringify(name.toString("latin1"))}`);
      }
      current.add(path);
      everyPath.add(path);
      if (everyPath.size > maxPaths) throw tooWide();
    }
  }
  // everyPath is already the union of the commits' paths (counted as they came). Each list is
  // sorted in one piece (V8's sort; ~0.1 s for 200,000 paths here), the thread given back between them.
  const detail: { oid: string; paths: string[] }[] = [];
  let sorted = 0;
  for (const oid of commits) {
    const paths = [...(perCommit.get(oid) as Set<string>)].sort();
    detail.push({ oid, paths });
    sorted += paths.length + 1;
    if (sorted >= PATHS_A_TURN) {
      sorted = 0;
      await yieldToLoop();
    }
  }
  return { paths: [...everyPath].sort(), commits: detail };
}

/** Paths (and status tokens) parsed between two turns of the daemon's thread. */
const PATHS_A_TURN = 8192;

/** git's NUL-separated output, token by token as splitNul (git.ts) splits it, each made only when it is read. */
function nulCursor(buffer: Buffer): { next(): Buffer | undefined } {
  let start = 0;
  return {
    next() {
      if (start >= buffer.length) return undefined;
      const end = buffer.indexOf(0, start);
      const token = buffer.subarray(start, end < 0 ? buffer.length : end);
      start = end < 0 ? buffer.length : end + 1;
      return token;
    },
  };
}

/**
 * Make the push real: the quarantined pack is linked into the hub's objects/pack (made
 * durable first, the index last, since git only sees a pack through its index), then the ref
 * moves compare-and-swap. `oldOid` "" means the ref must not exist; `newOid` "" deletes it. No
 * quarantine: nothing to migrate (a delete, or a move to a commit the hub has). The
 * quarantine stays the caller's to dispose.
 *
 * The quarantine is left whole: one push of several refs shares one quarantine, and the next
 * ref's check (newCommits with `readable`) asks the quarantine alone whether the pack carried
 * each object the seat was never served. Had the first ref's move taken the objects out, a
 * second branch built on the first would be refused for objects its pack did carry; had the
 * check looked in the hub instead, an object the seat never sent and was never served would
 * pass. So the quarantine keeps exactly what the pack carried until it is disposed, and
 * migrating it again (the next ref) finds its files already in the hub.
 */
export async function migrateAndUpdate(
  hub: string,
  q: Quarantine | undefined,
  ref: string,
  newOid: string,
  oldOid: string,
  options: { readonly inLine?: boolean } = {},
): Promise<void> {
  await checkRefName(hub, ref);
  for (const oid of [newOid, oldOid]) if (oid !== "" && !OID.test(oid)) throw new Error(`${JSON.stringify(oid)} is not an object id`);
  const hubDir = await realpath(hub);
  // A cheap early refusal: objects of a push that lost the race never reach the hub.
  const before = await readRef(hubDir, ref);
  if (before !== (oldOid || undefined)) throw new RefMoved(ref, oldOid || undefined, before);
  if (newOid !== "" && q !== undefined) await migrateObjects(hubDir, q);

  if (newOid === "" && oldOid === "") return; // nothing to delete, and the check above found nothing there
  // A push's commit (checked one by its walk, in the hub now) written in line where that is
  // certainly what git would do (ref-write.ts); else git writes it, and words any refusal.
  if (options.inLine === true && newOid !== "" && (await writeRefInLine(hubDir, ref, newOid, oldOid)) === "written") {
    await syncRefFolders(hubDir, ref);
    return;
  }
  // The zero id as old value: the ref must not exist yet.
  const args = newOid === "" ? ["update-ref", "-d", ref, oldOid] : ["update-ref", ref, newOid, oldOid || "0".repeat(newOid.length)];
  try {
    await git([...DURABLE_GIT, ...args], { gitDir: hubDir });
  } catch (error) {
    const now = await readRef(hubDir, ref);
    if (now !== (oldOid || undefined)) throw new RefMoved(ref, oldOid || undefined, now);
    throw await explainRefFailure(hubDir, ref, error);
  }
  // On disk before the outcome says the ref moved (durable-git.ts).
  await syncRefFolders(hubDir, ref);
}

/** The object id a ref points at, or undefined when there is no such ref. */
export async function readRef(repo: string, ref: string): Promise<string | undefined> {
  if (!ref.startsWith("refs/")) throw new Error(`${JSON.stringify(ref)} is not a full ref name`);
  // Read in line where git's files format makes it certain (ref-files.ts); else git answers.
  const read = readFileRef(repo, ref);
  if (read !== undefined) return read ?? undefined;
  const { stdout } = await git(["for-each-ref", "--format=%(objectname) %(refname)", "--", ref], { gitDir: repo });
  for (const line of stdout.split("\n")) {
    const at = line.indexOf(" ");
    if (at > 0 && line.slice(at + 1) === ref) return line.slice(0, at);
  }
  return undefined;
}

async function checkRefName(repo: string, ref: string): Promise<void> {
  if (!ref.startsWith("refs/")) throw new Error(`${JSON.stringify(ref)} is not a full ref name`);
  // A name of plain components is one check-ref-format accepts: no process for it (issue 26).
  if (plainRefName(ref)) return;
  try {
    await git(["check-ref-format", ref], { gitDir: repo });
  } catch (error) {
    if (error instanceof GitError) throw new Error(`${JSON.stringify(ref)} is not a valid ref name`);
    throw error;
  }
}

async function migrateObjects(hubDir: string, q: Quarantine): Promise<void> {
  await migrateLoose(hubDir, q.objects);
  const from = join(q.objects, "pack");
  const to = join(hubDir, "objects", "pack");
  const names = (await readdir(from).catch(() => [] as string[])).filter((name) => /^pack-[0-9a-f]+\.[a-z]+$/.test(name));
  if (names.length === 0) return;
  await mkdir(to, { recursive: true });
  // Everything but the index first; then the index, which is what makes git see the pack.
  const ordered = [...names.filter((name) => !name.endsWith(".idx")), ...names.filter((name) => name.endsWith(".idx"))];
  await Promise.all(ordered.map((name) => fsyncPath(join(from, name))));
  for (const name of ordered) {
    await placeCopy(join(from, name), to, name);
    await fsyncPath(to);
  }
}

/**
 * `source` under `name` in the hub folder `to`, leaving `source` where it is (migrateAndUpdate
 * says why the quarantine must stay whole): a hard link — the same bytes, no copy; a name the
 * hub already has is the same content (a pack is named by its checksum, a loose object by its
 * id; above all, the same quarantine migrated for an earlier ref of the push) and is kept. On
 * another file system: a copy beside the target, made durable, renamed into place.
 */
async function placeCopy(source: string, to: string, name: string): Promise<void> {
  const target = join(to, name);
  try {
    await link(source, target);
    return;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return;
    if (code !== "EXDEV") throw error;
  }
  const temporary = join(to, `.incoming-${name}`);
  await copyFile(source, temporary);
  await fsyncPath(temporary);
  await rename(temporary, target);
}

/**
 * Loose objects (a small write goes loose, as git's transfer.unpackLimit does): each made
 * durable, then linked under the hub's fan-out folder (placeCopy: the quarantine keeps its
 * own). An object the hub already has is the same bytes by its name, so it is left where it is.
 */
async function migrateLoose(hubDir: string, objects: string): Promise<void> {
  const fanouts = (await readdir(objects).catch(() => [] as string[])).filter((name) => /^[0-9a-f]{2}$/.test(name));
  for (const fanout of fanouts) {
    const to = join(hubDir, "objects", fanout);
    await mkdir(to, { recursive: true });
    for (const name of await readdir(join(objects, fanout))) {
      if (!/^[0-9a-f]{38,62}$/.test(name)) continue;
      const source = join(objects, fanout, name);
      await fsyncPath(source);
      if (existsSync(join(to, name))) continue;
      await placeCopy(source, to, name);
    }
    await fsyncPath(to);
  }
}

/** Contained git over the hub, read-only, seeing the quarantined objects in front of the hub's; its runs share one host check. */
async function quarantineContext(hub: string, q: Quarantine): Promise<ContainedGitOptions & { readonly env: Record<string, string> }> {
  const hubDir = await realpath(hub);
  return {
    gitDir: hubDir,
    readOnly: [hubDir, ...(await objectStores(hubDir)), q.dir],
    writable: [],
    env: q.env,
    sandbox: createGitSandbox(),
    ...(q.session !== undefined ? { session: q.session } : {}),
  };
}

/**
 * The pack to `path`, at most `maxBytes` of it. A refusal of `admitted` stops the write at once,
 * not at the next chunk: a seat that stalls its stream must not keep a refused pack on disk
 * (found by an attack, round eleven: 3.5 MB held for the two minutes the seat waited).
 */
async function writeBounded(
  pack: Uint8Array | AsyncIterable<Uint8Array>,
  path: string,
  maxBytes: number,
  admitted?: Promise<unknown>,
  room?: ReceiveOptions["room"],
): Promise<number> {
  const handle = await open(path, "wx", 0o600);
  let size = 0;
  const refused = new Promise<never>((_resolve, reject) => {
    admitted?.catch(reject);
    room?.bytes.catch(reject);
  });
  refused.catch(() => undefined);
  // The room, once known, read at each chunk without a wait: the write goes on while the quota is asked.
  let roomBytes: number | undefined;
  room?.bytes.then(
    (bytes) => (roomBytes = bytes),
    () => undefined,
  );
  try {
    const iterator = (pack instanceof Uint8Array ? [pack] : pack) as AsyncIterable<Uint8Array> | Iterable<Uint8Array>;
    const chunks = Symbol.asyncIterator in iterator ? iterator[Symbol.asyncIterator]() : toAsync(iterator[Symbol.iterator]());
    let writing: Promise<unknown> = Promise.resolve();
    for (;;) {
      const next = await Promise.race([chunks.next(), refused]);
      if (next.done === true) break;
      const chunk = next.value;
      size += chunk.byteLength;
      // Stop reading at once: the rest of an oversized push is never taken in.
      if (size > maxBytes) throw new PackRejected(`pack exceeds ${formatBytes(maxBytes)}`);
      if (room !== undefined && size > Math.min(roomBytes ?? room.atMost, room.atMost)) await room.over(size);
      // The next chunk is taken in while this one is written, one write at a time (issue 26: each
      // chunk waited for its write before the socket's next was read). Awaited before the next
      // write or the end; a throw before then leaves it unawaited, and close waits for it.
      await writing;
      writing = handle.write(chunk);
      writing.catch(() => undefined);
    }
    await writing;
    // A stream that ended before its room was known is held to it now.
    if (room !== undefined && size > (await Promise.race([room.bytes, refused]))) await room.over(size);
  } finally {
    await handle.close();
  }
  return size;
}

/**
 * A pack the daemon copies from a file the seat wrote (seat-pack-file.ts): read as a PackSource,
 * it copies into the file given to fillInto as far as it has been read, each byte once, in order.
 */
export interface FilledPack extends PackSource {
  /** What has been copied so far (what a refusal of it charges the seat: daemon/seat/git.ts). */
  readonly copiedBytes: number;
  fillInto(copy: FileHandle): void;
  /** Copies the rest (what the scan did not read: the checksum). */
  finish(): Promise<void>;
  /** Closes the seat's file (once; a copy in progress ends first). */
  close(): Promise<void>;
}

/**
 * A pack file's copy, made as its scan reads it: its size is known, so it is held to the most a
 * push may carry and, once the quota has admitted the push, to the seat's room before a byte is
 * read; the objects quota is asked of its header's count; then the scan reads it from the start,
 * the copy never more than its window ahead (a file of holes or garbage is refused where the
 * scan meets it, not once all of it is copied); then the rest is copied. Its size.
 */
async function copyScanned(file: FilledPack, path: string, options: ReceiveOptions): Promise<{ readonly size: number; readonly scan?: PackScan }> {
  const handle = await open(path, "wx+", 0o600);
  try {
    if (file.size > options.maxBytes) throw new PackRejected(`pack exceeds ${formatBytes(options.maxBytes)}`);
    await options.admitted;
    if (options.room !== undefined && file.size > Math.min(await options.room.bytes, options.room.atMost)) await options.room.over(file.size);
    if (file.size === 0) return { size: 0 };
    file.fillInto(handle);
    if (options.admitObjects !== undefined) {
      const declared = await packHeaderCount(file);
      if (declared !== undefined) await options.admitObjects(declared);
    }
    const scan = await scanPackSource(file, options.bounds ?? DEFAULT_PACK_BOUNDS);
    if (scan.ok) await file.finish();
    return { size: file.size, scan };
  } finally {
    await file.close();
    await handle.close();
  }
}

function toAsync<T>(iterator: Iterator<T>): AsyncIterator<T> {
  return { next: () => Promise.resolve(iterator.next()) };
}

/** The object count a pack's header declares ("PACK", version, count), or undefined where it has none (the scan refuses it). */
async function packHeaderCount(pack: Pick<PackSource, "read">): Promise<number | undefined> {
  const header = Buffer.alloc(12);
  const { bytesRead } = await pack.read(header, 0, 12, 0);
  if (bytesRead < 12 || header.toString("latin1", 0, 4) !== "PACK") return undefined;
  return header.readUInt32BE(8);
}

/** GIT_ALTERNATE_OBJECT_DIRECTORIES is a colon-separated list; git reads a C-quoted entry whole. */
function alternatePath(path: string): string {
  if (!/[:"\\\n]/.test(path)) return path;
  return `"${path.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
}

export function formatBytes(bytes: number): string {
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB`;
  if (bytes >= KiB && bytes % KiB === 0) return `${bytes / KiB} KiB`;
  return `${bytes} bytes`;
}

/** git's own words for why it failed: its error and fatal lines, without the prefixes. */
function gitMessage(stderr: string): string {
  const said = stderr
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => /^(?:error|fatal):/.test(line))
    .map((line) => line.replace(/^(?:error|fatal):\s*/, ""));
  const text = (said.length > 0 ? said.slice(-3) : [stderr.trim().split("\n").pop() ?? ""]).join("; ");
  return text.length > 500 ? `${text.slice(0, 500)}…` : text || "git failed without a message";
}

function lines(stdout: Buffer): string[] {
  return stdout
    .toString("utf8")
    .split("\n")
    .filter((line) => line.length > 0);
}
