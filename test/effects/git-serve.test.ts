import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listRefs, servePack, startReadyPack, WantRefused } from "../../src/effects/git-serve.js";
import { seatGitLimits } from "../../src/effects/contained-git.js";
import { GIT_TEST_ENV, sh } from "../support/git-cli.js";

/** Real repositories and real bubblewrap: the hub serves, a fresh repository plays the seat. */
let root: string;
let hub: string;
let work: string;
let first: string;
let second: string;
let other: string;
let bigBlob: string;

function has(repo: string, oid: string): boolean {
  try {
    execFileSync("git", ["--git-dir", repo, "cat-file", "-e", oid], { env: GIT_TEST_ENV, stdio: "pipe" });
    return true;
  } catch {
    return false;
  }
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<{ pack: Buffer; count: number }> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return { pack: Buffer.concat(parts), count: parts.length };
}

let fresh = 0;
/** A new empty repository that takes the pack in alone: with nothing else, it must be complete (not thin). */
function indexInFresh(pack: Buffer): string {
  const repo = join(root, `fresh-${fresh++}.git`);
  sh(root, ["init", "-q", "--bare", repo]);
  sh(repo, ["index-pack", "--stdin"], pack);
  return repo;
}

/** Every object a repository holds, sorted. */
function objectsIn(repo: string): string[] {
  return sh(repo, ["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"])
    .split("\n")
    .filter((line) => line !== "")
    .sort();
}

function commit(message: string, files: Record<string, string | Buffer>): string {
  for (const [path, content] of Object.entries(files)) {
    writeFileSync(join(work, path), content);
    sh(work, ["add", path]);
  }
  sh(work, ["commit", "-q", "-m", message]);
  return sh(work, ["rev-parse", "HEAD"]);
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "teamd-serve-"));
  hub = join(root, "hub.git");
  work = join(root, "work");
  sh(root, ["init", "-q", "-b", "main", work]);
  const text = Array.from({ length: 2000 }, (_, i) => `line ${i} of a file that deltas well\n`).join("");
  first = commit("first", { "big.txt": text, "random.bin": randomBytes(2 * 1024 * 1024) });
  bigBlob = sh(work, ["rev-parse", "HEAD:random.bin"]);
  second = commit("second", { "big.txt": `${text}one more line\n` });
  sh(work, ["checkout", "-q", "-b", "other", first]);
  other = commit("other", { "other.txt": "other\n" });
  sh(root, ["clone", "-q", "--bare", "--no-local", work, hub]);
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("servePack", () => {
  it("serves everything a want reaches, as a pack a fresh repository indexes", async () => {
    const { pack, count } = await collect(servePack(hub, [second], []));
    expect(count).toBeGreaterThan(1); // streamed, not one buffer
    const repo = indexInFresh(pack);
    for (const oid of [second, first, bigBlob, sh(hub, ["rev-parse", `${second}:big.txt`])]) expect(has(repo, oid)).toBe(true);
    expect(has(repo, other)).toBe(false);
    expect(() => sh(repo, ["rev-list", "--objects", second])).not.toThrow();
  });

  it("leaves out what the haves reach, and is not thin", async () => {
    const { pack } = await collect(servePack(hub, [second], [first]));
    expect(pack.length).toBeLessThan(64 * 1024); // the 2 MiB blob of `first` stayed home
    // Indexing alone succeeds only if no delta points at an object the seat already has.
    const repo = indexInFresh(pack);
    expect(has(repo, second)).toBe(true);
    expect(has(repo, sh(hub, ["rev-parse", `${second}:big.txt`]))).toBe(true);
    expect(has(repo, first)).toBe(false);
    expect(has(repo, bigBlob)).toBe(false);
  });

  it("ignores haves it does not know", async () => {
    const known = await collect(servePack(hub, [second], [first]));
    const withUnknown = await collect(servePack(hub, [second], ["f".repeat(40), "not an id", "--all", first, sh(hub, ["rev-parse", `${first}^{tree}`])]));
    // The same objects (the bytes may differ: git's delta search runs in threads).
    expect(objectsIn(indexInFresh(withUnknown.pack))).toEqual(objectsIn(indexInFresh(known.pack)));
    expect(withUnknown.pack.length).toBeLessThan(64 * 1024);
  });

  it("a have that is not a commit leaves nothing out: the pack is made again without it", async () => {
    // Taken as a base, second's own tree would leave out that tree and every blob in it.
    const { pack } = await collect(servePack(hub, [second], [sh(hub, ["rev-parse", `${second}^{tree}`]), bigBlob]));
    const repo = indexInFresh(pack);
    for (const oid of [second, first, bigBlob, sh(hub, ["rev-parse", `${second}^{tree}`]), sh(hub, ["rev-parse", `${second}:big.txt`])]) {
      expect(has(repo, oid)).toBe(true);
    }
    expect(() => sh(repo, ["rev-list", "--objects", second])).not.toThrow();
  });

  it("with the ref tips named: a seat's own commit among the haves leaves the pack as it is; a tip that is no commit, or a commit that is no tip, is checked and counted right", async () => {
    const known = objectsIn(indexInFresh((await collect(servePack(hub, [second], [first]))).pack));
    const secondTree = sh(hub, ["rev-parse", `${second}^{tree}`]);
    // first a tip, the rest unknown here or not commits.
    const mixed = await collect(servePack(hub, [second], ["f".repeat(40), first, secondTree], { tips: new Set([first, second]) }));
    expect(objectsIn(indexInFresh(mixed.pack))).toEqual(known);
    // A "tip" that is a tree (an owner's ref at one): not a base, so nothing of second's tree is left out.
    const treeTip = indexInFresh((await collect(servePack(hub, [second], [secondTree], { tips: new Set([secondTree]) }))).pack);
    expect(() => sh(treeTip, ["rev-list", "--objects", second])).not.toThrow();
    // A commit that is no tip is still a base: the 2 MiB blob of `first` stays home.
    const older = await collect(servePack(hub, [second], [first], { tips: new Set([second]) }));
    expect(older.pack.length).toBeLessThan(64 * 1024);
    expect(objectsIn(indexInFresh(older.pack))).toEqual(known);
  });

  it("every want and have a tip: the same pack, with no types to ask (issue 26)", async () => {
    const known = objectsIn(indexInFresh((await collect(servePack(hub, [second], [first]))).pack));
    const tips = await collect(servePack(hub, [second], [first], { tips: new Set([first, second, other]) }));
    expect(tips.pack.length).toBeLessThan(64 * 1024);
    expect(objectsIn(indexInFresh(tips.pack))).toEqual(known);
    const everything = await collect(servePack(hub, [second, other], [], { tips: new Set([second, other]) }));
    const repo = indexInFresh(everything.pack);
    for (const oid of [second, other, first, bigBlob]) expect(has(repo, oid)).toBe(true);
  });

  it("refuses a want that is not a commit of the repository", async () => {
    const tree = sh(hub, ["rev-parse", `${second}^{tree}`]);
    for (const want of ["e".repeat(40), tree, bigBlob, "--all", "main"]) {
      await expect(collect(servePack(hub, [second, want], []))).rejects.toBeInstanceOf(WantRefused);
    }
  });

  it("stops git when its signal aborts, before a byte: nothing is yielded", async () => {
    const stop = new AbortController();
    const pack = servePack(hub, [second], [], { signal: stop.signal })[Symbol.asyncIterator]();
    const head = pack.next();
    stop.abort();
    await expect(head).rejects.toThrow(/abort/i);
    expect(await pack.next()).toEqual({ done: true, value: undefined });
  });

  it("stops git when the reader stops", async () => {
    const started = Date.now();
    for await (const chunk of servePack(hub, [second], [])) {
      expect(chunk.length).toBeGreaterThan(0);
      break;
    }
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe("a ready pack (started before its wants are known)", () => {
  it("is fed by the fetch that follows: the same pack, from the process started before", async () => {
    const ready = await startReadyPack(hub, { idleMs: 30_000 });
    expect(ready.state).toBe("ready");
    const known = objectsIn(indexInFresh((await collect(servePack(hub, [second], [first]))).pack));
    const { pack } = await collect(servePack(hub, [second], [first], { ready }));
    expect(ready.state).toBe("fed");
    expect(objectsIn(indexInFresh(pack))).toEqual(known);
    await ready.ended;
  });

  it("is not used where the pack would run otherwise (other limits): killed, and the pack made fresh", async () => {
    const ready = await startReadyPack(hub, { idleMs: 30_000 });
    const { pack } = await collect(servePack(hub, [second], [], { ready, limits: seatGitLimits([], 512 * 1024 * 1024) }));
    expect(ready.state).toBe("gone");
    await ready.ended;
    const repo = indexInFresh(pack);
    for (const oid of [second, first, bigBlob]) expect(has(repo, oid)).toBe(true);
  });

  it("is killed when the fetch is refused before its pack, and after its idle time unfed", async () => {
    // Refused before any pack (not an id): never fed.
    const refused = await startReadyPack(hub, { idleMs: 30_000 });
    await expect(collect(servePack(hub, ["--all"], [], { ready: refused }))).rejects.toBeInstanceOf(WantRefused);
    expect(refused.state).toBe("gone");
    await refused.ended;
    // Refused by the types once the pack was fed (no commit here): the pack is stopped all the same.
    const typed = await startReadyPack(hub, { idleMs: 30_000 });
    await expect(collect(servePack(hub, ["e".repeat(40)], [], { ready: typed }))).rejects.toBeInstanceOf(WantRefused);
    expect(typed.state).toBe("fed");
    await typed.ended;
    const idle = await startReadyPack(hub, { idleMs: 200 });
    await idle.ended;
    expect(idle.state).toBe("gone");
    // Gone is gone: a fetch after it makes its own pack.
    const { pack } = await collect(servePack(hub, [other], [first], { ready: idle }));
    expect(has(indexInFresh(pack), other)).toBe(true);
  });
});

describe("listRefs", () => {
  it("lists refs by name, all or by pattern", async () => {
    expect(await listRefs(hub)).toEqual([
      { name: "refs/heads/main", oid: second },
      { name: "refs/heads/other", oid: other },
    ]);
    expect(await listRefs(hub, ["refs/heads/other"])).toEqual([{ name: "refs/heads/other", oid: other }]);
    await expect(listRefs(hub, ["--format=x"])).rejects.toThrow(/not a ref pattern/);
  });
});
