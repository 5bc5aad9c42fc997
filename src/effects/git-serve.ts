import { realpath } from "node:fs/promises";
import { containedGitStream, createGitSandbox, objectStores, objectTypes, type ContainedGitOptions } from "./contained-git.js";
import { git } from "./git.js";

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
     * The tips of the repository's refs, as the caller listed them: the pack starts with the haves
     * among them as its bases (the commits a seat's haves most often are), beside the check.
     */
    readonly tips?: ReadonlySet<string>;
    /** Stops git at once, whichever pack runs (a fetch whose record was refused). */
    readonly signal?: AbortSignal;
  } = {},
): AsyncIterable<Uint8Array> {
  for (const want of wants) if (!OID.test(want)) throw new WantRefused(want);
  const dir = await realpath(repo);
  const context: ContainedGitOptions = {
    gitDir: dir,
    readOnly: [dir, ...(await objectStores(dir))],
    writable: [],
    sandbox: createGitSandbox(),
    ...(options.limits !== undefined ? { limits: options.limits } : {}),
  };
  const wellFormedHaves = [...new Set(haves.filter((oid) => OID.test(oid)))];
  // Only full ids reach git's stdin, so no line can be an option (--revs reads `--not` there).
  const pack = (bases: readonly string[]) =>
    containedGitStream(["pack-objects", "--revs", "--stdout", "-q", "--delta-base-offset"], {
      ...context,
      input: Buffer.from([...new Set(wants)].map((oid) => `${oid}\n`).join("") + bases.map((oid) => `^${oid}\n`).join("")),
      timeoutMs: options.timeoutMs ?? 600_000,
    });
  // The types and the pack at once (issue 26: two contained starts in line were ~15 ms of a
  // fetch): the pack made on the haves it is likely to keep — those among the ref tips the caller
  // names, else all — not one byte of it read (the pipe holds git back) until the types say every
  // want is a commit. Where the commits among the haves are another set (a have that is not one
  // here, a seat's own commit, an unknown id; or a commit that is no tip), it is stopped and made
  // again on exactly them.
  const types = objectTypes(context, [...wants, ...wellFormedHaves]);
  // Awaited below, after the pack's start: a rejection before then is not unhandled.
  types.catch(() => undefined);
  const tips = options.tips;
  const likely = tips === undefined ? wellFormedHaves : wellFormedHaves.filter((oid) => tips.has(oid));
  const speculative = await pack(likely).catch(async (error: unknown) => {
    await types.catch(() => undefined);
    throw error;
  });
  let stream = speculative;
  const stop = () => stream.kill();
  options.signal?.addEventListener("abort", stop, { once: true });
  if (options.signal?.aborted === true) stop();
  try {
    const known = await types;
    options.signal?.throwIfAborted();
    for (const want of wants) if (known.get(want) !== "commit") throw new WantRefused(want);
    const bases = wellFormedHaves.filter((oid) => known.get(oid) === "commit");
    if (bases.length !== likely.length || bases.some((oid, i) => oid !== likely[i])) {
      speculative.kill();
      stream = await pack(bases);
      options.signal?.throwIfAborted();
    }
  } catch (error) {
    options.signal?.removeEventListener("abort", stop);
    speculative.kill();
    stream.kill();
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
  }
}

/** The repository's refs (all, or those matching for-each-ref patterns), by name. */
export async function listRefs(repo: string, patterns: readonly string[] = []): Promise<{ name: string; oid: string }[]> {
  for (const pattern of patterns) if (pattern.startsWith("-") || pattern.length === 0) throw new Error(`${JSON.stringify(pattern)} is not a ref pattern`);
  const { stdout } = await git(["for-each-ref", "--format=%(objectname) %(refname)", "--", ...patterns], { gitDir: repo });
  return stdout
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => {
      const at = line.indexOf(" ");
      return { oid: line.slice(0, at), name: line.slice(at + 1) };
    });
}
