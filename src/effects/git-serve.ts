import { realpath } from "node:fs/promises";
import { containedGitStream, objectTypes, repoReadContext, type ContainedGitOptions, type ContainedGitStream } from "./contained-git.js";
import { PassThrough } from "node:stream";
import { git } from "./git.js";
import { readFileRefs } from "./ref-files.js";

/**
 * The daemon's side of a seat's fetch: a pack of what the wanted tips reach and the seat's
 * haves do not. Which tips a seat may want is decided before this (the kernel, the read
 * scope); this only makes sure a want is a commit the repository has, so a seat cannot name
 * a loose blob or tree by id and be served it.
 */
export class WantRefused extends Error {
  override readonly name = "WantRefused";
  constructor(readonly oid: string) {
    super(`${JSON.stringify(oid)} is not a commit in the repository`);
  }
}

const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** pack-objects as a fetch runs it: wants and `^bases` on its stdin, the pack on its stdout. */
const PACK_ARGS = ["pack-objects", "--revs", "--stdout", "-q", "--delta-base-offset"] as const;
const PACK_TIMEOUT_MS = 600_000;

/** The bound folders and limits of a pack run, as one string: a ready pack is used only where the pack would run the same. */
function runShape(readOnly: readonly string[], limits: ContainedGitOptions["limits"]): string {
  return JSON.stringify([readOnly, limits ?? null]);
}

/**
 * A fetch's pack-objects started before its wants are known: when a seat lists refs to fetch,
 * the contained process (bash, bubblewrap's namespaces, git: ~25 ms where a process start costs
 * ~9 ms) starts while git decides what to ask for, and the fetch that follows feeds it its wants
 * and bases — the same command under the same containment and limits, which reads nothing of the
 * repository's objects before its input ends (issue 26). Until fed it holds no data; unfed, it is
 * killed after `idleMs`, and one that is not the run the fetch would start (other folders, other
 * limits, already gone) is killed and not used.
 */
export interface ReadyPack {
  /** `ready` until fed (then `fed`) or killed, or its git gone (then `gone`). */
  readonly state: "ready" | "fed" | "gone";
  /** Settles once its process has ended (fed, once the pack is made; killed, once it is gone). */
  readonly ended: Promise<void>;
  /** Whether its process has ended (`ended` has settled). */
  readonly exited: boolean;
  /** Kills it unless it was fed (idempotent). */
  discard(): void;
  /** @internal The run, fed with `input` — or undefined where it is not the run of `shape`. */
  feed(shape: string, input: Buffer): ContainedGitStream | undefined;
}

export async function startReadyPack(repo: string, options: { readonly limits?: ContainedGitOptions["limits"]; readonly idleMs: number }): Promise<ReadyPack> {
  const context = await repoReadContext(await realpath(repo), options.limits);
  const input = new PassThrough();
  const stream = await containedGitStream(PACK_ARGS, { ...context, input, timeoutMs: PACK_TIMEOUT_MS });
  const shape = runShape(context.readOnly, options.limits);
  let state: "ready" | "fed" | "gone" = "ready";
  const discard = () => {
    if (state !== "ready") return;
    state = "gone";
    clearTimeout(idle);
    stream.kill();
    input.destroy();
  };
  stream.done.then(discard, discard);
  let exited = false;
  const ended = stream.done.then(
    () => undefined,
    () => undefined,
  );
  void ended.then(() => (exited = true));
  const idle = setTimeout(discard, options.idleMs);
  idle.unref();
  return {
    get state() {
      return state;
    },
    ended,
    get exited() {
      return exited;
    },
    discard,
    feed(wanted, bytes) {
      if (state !== "ready" || wanted !== shape) {
        discard();
        return undefined;
      }
      state = "fed";
      clearTimeout(idle);
      input.end(bytes);
      return stream;
    },
  };
}

/**
 * The pack, as it is made. Not thin: every delta's base travels in the same pack, so the
 * seat never needs an object it was not sent. Haves the repository does not have, or that
 * are not commits, are dropped (a seat's own unpushed commits are normal haves). Breaking
 * off the iteration stops git.
 */
export async function* servePack(
  repo: string,
  wants: readonly string[],
  haves: readonly string[],
  options: {
    readonly timeoutMs?: number;
    readonly limits?: ContainedGitOptions["limits"];
    /**
     * The tips of the repository's refs the seat may read, as the caller listed them (and
     * checked every want against): the pack starts with the haves among them as its bases
     * (the commits a seat's haves most often are), beside the check.
     */
    readonly tips?: ReadonlySet<string>;
    /** Stops git at once, whichever pack runs (a fetch whose record was refused). */
    readonly signal?: AbortSignal;
    /** A pack-objects started for this fetch (startReadyPack): fed if it is the run this would start, else discarded. */
    readonly ready?: ReadyPack;
  } = {},
): AsyncIterable<Uint8Array> {
  let ready = options.ready;
  try {
    for (const want of wants) if (!OID.test(want)) throw new WantRefused(want);
    const dir = await realpath(repo);
    const context = await repoReadContext(dir, options.limits);
    const shape = runShape(context.readOnly, options.limits);
    const wellFormedHaves = [...new Set(haves.filter((oid) => OID.test(oid)))];
    // Only full ids reach git's stdin, so no line can be an option (--revs reads `--not` there).
    const pack = async (bases: readonly string[]): Promise<ContainedGitStream> => {
      const input = Buffer.from([...new Set(wants)].map((oid) => `${oid}\n`).join("") + bases.map((oid) => `^${oid}\n`).join(""));
      const fed = ready?.feed(shape, input);
      ready = undefined;
      if (fed !== undefined) return fed;
      return containedGitStream(PACK_ARGS, { ...context, input, timeoutMs: options.timeoutMs ?? PACK_TIMEOUT_MS });
    };
    yield* packOf(pack, context, wants, wellFormedHaves, options);
  } finally {
    ready?.discard();
  }
}

async function* packOf(
  pack: (bases: readonly string[]) => Promise<ContainedGitStream>,
  context: ContainedGitOptions,
  wants: readonly string[],
  wellFormedHaves: readonly string[],
  options: { readonly tips?: ReadonlySet<string>; readonly signal?: AbortSignal },
): AsyncIterable<Uint8Array> {
  const tips = options.tips;
  // Every want and have a tip of a ref the seat may read: there is nothing for the types to
  // decide. The wants were checked against the tips by the caller, so the pack holds only what
  // those refs reach, which the seat may read whatever their objects' types; the bases are those
  // same tips, which only leave out of the pack what the seat says it has. A contained
  // `cat-file` fewer in the fetch's way (issue 26). Any other id is typed as before.
  const allTips = tips !== undefined && [...wants, ...wellFormedHaves].every((oid) => tips.has(oid));
  // The types and the pack at once (issue 26: two contained starts in line were ~15 ms of a
  // fetch): the pack made on the haves it is likely to keep — those among the ref tips the caller
  // names, else all — not one byte of it read (the pipe holds git back) until the types say every
  // want is a commit. Where the commits among the haves are another set (a have that is not one
  // here, a seat's own commit, an unknown id; or a commit that is no tip), it is stopped and made
  // again on exactly them.
  const types = allTips ? undefined : objectTypes(context, [...wants, ...wellFormedHaves]);
  // Awaited below, after the pack's start: a rejection before then is not unhandled.
  types?.catch(() => undefined);
  const likely = tips === undefined ? wellFormedHaves : wellFormedHaves.filter((oid) => tips.has(oid));
  const speculative = await pack(likely).catch(async (error: unknown) => {
    await types?.catch(() => undefined);
    throw error;
  });
  let stream = speculative;
  const stop = () => stream.kill();
  options.signal?.addEventListener("abort", stop, { once: true });
  if (options.signal?.aborted === true) stop();
  try {
    if (types !== undefined) {
      const known = await types;
      options.signal?.throwIfAborted();
      for (const want of wants) if (known.get(want) !== "commit") throw new WantRefused(want);
      const bases = wellFormedHaves.filter((oid) => known.get(oid) === "commit");
      if (bases.length !== likely.length || bases.some((oid, i) => oid !== likely[i])) {
        speculative.kill();
        stream = await pack(bases);
        options.signal?.throwIfAborted();
      }
    }
  } catch (error) {
    options.signal?.removeEventListener("abort", stop);
    speculative.kill();
    stream.kill();
    await ended(speculative, stream);
    throw error;
  }
  let finished = false;
  try {
    for await (const chunk of stream.stdout) yield chunk;
    await stream.done;
    finished = true;
  } finally {
    options.signal?.removeEventListener("abort", stop);
    if (!finished) stream.kill();
    // Returned only once every process of the pack is gone: a stop can wait on bubblewrap
    // (contained-git.ts), and the caller's bound on a seat's fetches counts this one till then.
    await ended(speculative, stream);
  }
}

/** Each run ended (a stopped one too), whatever its outcome. */
async function ended(...runs: readonly ContainedGitStream[]): Promise<void> {
  await Promise.all(runs.map((run) => run.done.catch(() => undefined)));
}

/** The repository's refs (all, or those matching for-each-ref patterns), by name. */
export async function listRefs(repo: string, patterns: readonly string[] = []): Promise<{ name: string; oid: string }[]> {
  for (const pattern of patterns) if (pattern.startsWith("-") || pattern.length === 0) throw new Error(`${JSON.stringify(pattern)} is not a ref pattern`);
  // One ref folder (or all): read in line where git's files format makes it certain (ref-files.ts).
  const folder = patterns.length === 0 ? "refs/" : patterns.length === 1 && patterns[0]?.endsWith("/") ? patterns[0] : undefined;
  const read = folder === undefined ? undefined : readFileRefs(repo, folder);
  if (read !== undefined) return read.map((r) => ({ name: r.name, oid: r.oid }));
  const { stdout } = await git(["for-each-ref", "--format=%(objectname) %(refname)", "--", ...patterns], { gitDir: repo });
  return stdout
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => {
      const at = line.indexOf(" ");
      return { oid: line.slice(0, at), name: line.slice(at + 1) };
    });
}
