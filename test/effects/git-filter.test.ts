import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { appendFileSync, chmodSync, cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { canonicalMode, openFilteredMirror, ReplayRefused, type FilteredMirror, type ReadFilter } from "../../src/effects/git-filter.js";
import { PackRejected } from "../../src/effects/git-receive.js";

/** Real repositories in a temp dir: a hub with a history that has merges, symlinks, modes and gitlinks. */

let root: string;
let hub: string;
let clock = 1_700_000_000;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "teamd-git-filter-"));
  clock = 1_700_000_000;
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function sh(args: string[], options: { cwd?: string; gitDir?: string; input?: string | Buffer; env?: Record<string, string> } = {}): string {
  clock += 60;
  const date = `${clock} +0200`;
  return execFileSync("git", [...(options.gitDir ? ["--git-dir", options.gitDir] : []), ...args], {
    cwd: options.cwd ?? root,
    input: options.input,
    env: {
      PATH: process.env.PATH,
      HOME: "/nonexistent",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_AUTHOR_NAME: "Ada",
      GIT_AUTHOR_EMAIL: "ada@example.invalid",
      GIT_COMMITTER_NAME: "Bob",
      GIT_COMMITTER_EMAIL: "bob@example.invalid",
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_DATE: date,
      ...options.env,
    },
    maxBuffer: 256 * 1024 * 1024,
    stdio: ["pipe", "pipe", "pipe"],
  }).toString("utf8");
}

function write(work: string, path: string, text: string): void {
  mkdirSync(dirname(join(work, path)), { recursive: true });
  writeFileSync(join(work, path), text);
}

/** A prefix scope like the kernel's: `x/**` reads everything under x/, anything else is one file. */
function scope(id: string, patterns: readonly string[], fastPath = true): ReadFilter {
  const dirs = patterns.filter((p) => p.endsWith("/**")).map((p) => p.slice(0, -2));
  const files = new Set(patterns.filter((p) => !p.endsWith("/**")));
  const file = (path: string): boolean => files.has(path) || dirs.some((d) => path.startsWith(d));
  return {
    id,
    file,
    dir(path) {
      if (!fastPath) return "some";
      if (dirs.some((d) => `${path}/`.startsWith(d))) return "all";
      const under = `${path}/`;
      return [...files].some((f) => f.startsWith(under)) || dirs.some((d) => d.startsWith(under)) ? "some" : "none";
    },
  };
}

const SCOPE = ["src/**", "README.md", "conf/public.json"];
const readable = scope("v1", SCOPE);

interface Entry {
  readonly mode: string;
  readonly type: string;
  readonly oid: string;
  readonly path: string;
}

function lsTree(gitDir: string, commit: string, trees = false): Entry[] {
  const out = sh(["ls-tree", "-r", "-z", ...(trees ? ["-t"] : []), "--full-tree", commit], { gitDir });
  return out
    .split("\0")
    .filter((l) => l !== "")
    .map((line) => {
      const [meta, path] = line.split("\t") as [string, string];
      const [mode, type, oid] = meta.split(" ") as [string, string, string];
      return { mode, type, oid, path };
    });
}

const commitBody = (gitDir: string, oid: string): string => sh(["cat-file", "commit", oid], { gitDir });
const messageOf = (text: string): string => text.slice(text.indexOf("\n\n"));
const parentsOf = (text: string): string[] => [...text.matchAll(/^parent (\S+)$/gm)].map((m) => m[1] as string);
const revList = (gitDir: string, ...args: string[]): string[] =>
  sh(["rev-list", ...args], { gitDir })
    .split("\n")
    .filter((l) => l !== "");

/**
 * The hub: main with a merge of a feature branch, a symlink in and one out of scope, an
 * executable, gitlinks in and out of scope, secrets changed in commits of their own.
 */
function makeHub(): { work: string; hub: string } {
  const work = join(root, "work");
  mkdirSync(work);
  const g = (...args: string[]): string => sh(args, { cwd: work });
  // Paths are staged one by one: `add -A` or `commit -a` would drop the gitlinks, which have no checkout.
  const commit = (message: string, changes: Record<string, string | null>): void => {
    for (const [path, text] of Object.entries(changes)) {
      if (text === null) g("rm", "-q", "--", path);
      else {
        write(work, path, text);
        g("add", "--", path);
      }
    }
    g("commit", "-q", "-m", message);
  };
  g("init", "-q", "-b", "main");
  write(work, "src/run.sh", "#!/bin/sh\necho run\n");
  chmodSync(join(work, "src/run.sh"), 0o755);
  symlinkSync("a.ts", join(work, "src/link"));
  symlinkSync("secret/key.txt", join(work, "leak"));
  g("add", "--", "src/run.sh", "src/link", "leak");
  g("update-index", "--add", "--cacheinfo", `160000,${"1".repeat(40)},src/vendor`);
  g("update-index", "--add", "--cacheinfo", `160000,${"2".repeat(40)},ext`);
  commit("first", {
    "README.md": "readme\n",
    "src/a.ts": "export const a = 1;\n",
    "src/lib/b.ts": "export const b = 2;\n",
    "src/lib/deep/c.ts": "export const c = 3;\n",
    "secret/key.txt": "hunter2\n",
    "docs/guide.md": "guide\n",
    "conf/public.json": '{"public":true}\n',
    "conf/secret.json": '{"token":"s3cr3t"}\n',
  });
  commit("rotate the key", { "secret/key.txt": "hunter3\n" });
  g("checkout", "-q", "-b", "feature");
  commit("feature work", { "src/a.ts": "export const a = 10;\n", "docs/more.md": "more docs\n" });
  commit("deeper", { "src/lib/deep/c.ts": "export const c = 30;\n" });
  g("checkout", "-q", "main");
  commit("main work", { "README.md": "readme, edited\n", "secret/other.txt": "other secret\n" });
  g("merge", "-q", "--no-ff", "-m", "merge feature", "feature");
  commit("more", { "docs/guide.md": null, "conf/secret.json": '{"token":"rotated"}\n', "src/lib/e.ts": "export const e = 5;\n" });
  const bare = join(root, "hub.git");
  sh(["clone", "-q", "--bare", work, bare]);
  return { work, hub: bare };
}

function expectedTree(hubDir: string, commit: string, filter: ReadFilter): Entry[] {
  return lsTree(hubDir, commit).filter((e) => filter.file(e.path));
}

describe("filterCommit", () => {
  beforeEach(() => {
    hub = makeHub().hub;
  });

  it("keeps exactly the readable paths, modes and history shape of every hub commit", async () => {
    const mirror = await openFilteredMirror(join(root, "mirror"), hub, readable);
    const all = revList(hub, "--all");
    expect(all.length).toBe(7);
    let merges = 0;
    for (const oid of all) {
      const filtered = await mirror.filterCommit(oid);
      expect(lsTree(mirror.dir, filtered)).toEqual(expectedTree(hub, oid, readable));
      const hubText = commitBody(hub, oid);
      const text = commitBody(mirror.dir, filtered);
      expect(messageOf(text)).toBe(messageOf(hubText));
      expect(text.split("\n").filter((l) => /^(author|committer) /.test(l))).toEqual(hubText.split("\n").filter((l) => /^(author|committer) /.test(l)));
      const hubParents = parentsOf(hubText);
      if (hubParents.length > 1) merges += 1;
      expect(parentsOf(text)).toEqual(await Promise.all(hubParents.map((p) => mirror.filterCommit(p))));
      expect(await mirror.hubCommitOf(filtered)).toBe(oid);
    }
    expect(merges).toBe(1);
    // Modes survive: executable, symlink, gitlink.
    const tip = lsTree(mirror.dir, await mirror.filterCommit(sh(["rev-parse", "main"], { gitDir: hub }).trim()));
    expect(tip.find((e) => e.path === "src/run.sh")?.mode).toBe("100755");
    expect(tip.find((e) => e.path === "src/link")?.mode).toBe("120000");
    expect(tip.find((e) => e.path === "src/vendor")).toMatchObject({ mode: "160000", type: "commit" });
    expect(tip.map((e) => e.path)).not.toContain("ext");
    expect(tip.map((e) => e.path)).not.toContain("leak");
    expect(tip.map((e) => e.path)).toContain("conf/public.json");
    expect(tip.map((e) => e.path)).not.toContain("conf/secret.json");
    sh(["fsck", "--strict", "--no-dangling"], { gitDir: mirror.dir });
  });

  it("lets nothing outside the read scope reach what the mirror serves", async () => {
    const mirror = await openFilteredMirror(join(root, "mirror"), hub, readable);
    for (const branch of ["main", "feature"]) {
      await mirror.syncRef(`refs/heads/${branch}`, sh(["rev-parse", branch], { gitDir: hub }).trim());
    }
    const fresh = join(root, "fresh.git");
    sh(["clone", "-q", "--no-local", "--bare", mirror.dir, fresh]);
    const objects = sh(["cat-file", "--batch-all-objects", "--batch-check"], { gitDir: fresh })
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => l.split(" ") as [string, string, string]);
    const present = new Set(objects.map(([oid]) => oid));

    const readableBlobs = new Set<string>();
    const secretBlobs = new Set<string>();
    const secretTrees = new Set<string>();
    for (const oid of revList(hub, "--all")) {
      for (const e of lsTree(hub, oid, true)) {
        if (e.type === "tree") {
          if (readable.dir(e.path) === "none") secretTrees.add(e.oid);
        } else if (e.type === "blob") (readable.file(e.path) ? readableBlobs : secretBlobs).add(e.oid);
      }
    }
    for (const oid of readableBlobs) secretBlobs.delete(oid);
    expect(secretBlobs.size).toBeGreaterThan(5);
    for (const oid of secretBlobs) expect(present.has(oid)).toBe(false);
    for (const oid of secretTrees) expect(present.has(oid)).toBe(false);
    const commits = objects.filter(([, type]) => type === "commit").map(([oid]) => oid);
    expect(commits.length).toBe(7);
    for (const commit of commits) {
      for (const e of lsTree(fresh, commit, true)) {
        if (e.type === "tree") expect(readable.dir(e.path)).not.toBe("none");
        else expect(readable.file(e.path)).toBe(true);
      }
    }
    // Every blob the clone holds is one of a readable path.
    for (const [oid, type] of objects) if (type === "blob") expect(readableBlobs.has(oid)).toBe(true);
  });

  it("opens of one mirror at once take turns: every one succeeds, a new mirror and a changed filter alike (two at once ran `git init` on it and one failed on its config's lock: an internal error a seat could cause)", async () => {
    const dir = join(root, "at-once");
    const first = await Promise.allSettled(Array.from({ length: 8 }, () => openFilteredMirror(dir, hub, readable)));
    expect(first.filter((r) => r.status === "rejected")).toEqual([]);
    // A filter that changed is a rebuild (its refs deleted, its id rewritten): the same at once.
    const changed = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => openFilteredMirror(dir, hub, scope(i % 2 === 0 ? "v2" : "v3", SCOPE))));
    expect(changed.filter((r) => r.status === "rejected")).toEqual([]);
    const main = sh(["rev-parse", "main"], { gitDir: hub }).trim();
    const mirror = await openFilteredMirror(dir, hub, readable);
    expect(await mirror.filterCommit(main)).toMatch(/^[0-9a-f]{40}$/);
  });

  it("gives the same oids in another directory and without the directory fast path", async () => {
    const one = await openFilteredMirror(join(root, "one"), hub, readable);
    const two = await openFilteredMirror(join(root, "two"), hub, readable);
    const slow = await openFilteredMirror(join(root, "slow"), hub, scope("v1", SCOPE, false));
    const main = sh(["rev-parse", "main"], { gitDir: hub }).trim();
    const feature = sh(["rev-parse", "feature"], { gitDir: hub }).trim();
    // Different entry points and orders, same images.
    const a = [await one.filterCommit(main), await one.filterCommit(feature)];
    const b = [await two.filterCommit(feature), await two.filterCommit(main)].reverse();
    const c = await Promise.all([slow.filterCommit(main), slow.filterCommit(feature)]);
    // Stored in parts (after every commit) as a long history's first filtering is: the same images, every object there.
    const parts = await openFilteredMirror(join(root, "parts"), hub, readable, { flushBytes: 1 });
    const d = [await parts.filterCommit(main), await parts.filterCommit(feature)];
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    expect(d).toEqual(a);
    // Every object the images reach is in the mirror (rev-list fails on a missing one).
    expect(sh(["rev-list", "--objects", ...d], { gitDir: parts.dir }).split("\n").length).toBeGreaterThan(d.length);
  });

  it("syncRef points and deletes mirror refs, and HEAD follows the hub", async () => {
    const mirror = await openFilteredMirror(join(root, "mirror"), hub, readable);
    const main = sh(["rev-parse", "main"], { gitDir: hub }).trim();
    const filtered = await mirror.syncRef("refs/heads/main", main);
    expect(sh(["rev-parse", "refs/heads/main"], { gitDir: mirror.dir }).trim()).toBe(filtered);
    expect(sh(["symbolic-ref", "HEAD"], { gitDir: mirror.dir }).trim()).toBe("refs/heads/main");
    expect(await mirror.syncRef("refs/heads/main", undefined)).toBeUndefined();
    expect(sh(["for-each-ref"], { gitDir: mirror.dir })).toBe("");
    await expect(mirror.syncRef("HEAD", main)).rejects.toThrow(/not a ref name/);
    await expect(mirror.filterCommit("not-an-oid")).rejects.toThrow(/not an object id/);
    await expect(mirror.filterCommit("3".repeat(40))).rejects.toThrow(/not a commit/);
  });

  it("survives a restart and a torn memo line; a new filter id rebuilds", async () => {
    const dir = join(root, "mirror");
    const main = sh(["rev-parse", "main"], { gitDir: hub }).trim();
    const feature = sh(["rev-parse", "feature"], { gitDir: hub }).trim();
    const first = await openFilteredMirror(dir, hub, readable);
    const filteredMain = await first.syncRef("refs/heads/main", main);
    if (filteredMain === undefined) throw new Error("no image");

    const memo = join(dir, "teamd-filter-memo");
    appendFileSync(memo, "deadbeef 12");
    const second = await openFilteredMirror(dir, hub, readable);
    expect(await second.hubCommitOf(filteredMain)).toBe(main);
    expect(readFileSync(memo, "utf8").endsWith("\n")).toBe(true);
    const filteredFeature = await second.filterCommit(feature);
    const third = await openFilteredMirror(dir, hub, readable);
    expect(await third.hubCommitOf(filteredFeature)).toBe(feature);
    expect(await third.hubCommitOf(filteredMain)).toBe(main);
    for (const line of readFileSync(memo, "utf8")
      .split("\n")
      .filter((l) => l !== ""))
      expect(line).toMatch(/^[0-9a-f]{40} [0-9a-f]{40}$/);

    const wider = scope("v2", [...SCOPE, "docs/**"]);
    const rebuilt = await openFilteredMirror(dir, hub, wider);
    expect(sh(["for-each-ref"], { gitDir: dir })).toBe("");
    expect(await rebuilt.hubCommitOf(filteredMain)).toBeUndefined();
    const widerMain = await rebuilt.filterCommit(main);
    expect(widerMain).not.toBe(filteredMain);
    expect(lsTree(dir, widerMain)).toEqual(expectedTree(hub, main, wider));
    expect(await rebuilt.hubCommitOf(widerMain)).toBe(main);
    // The memo is the new filter's alone.
    const again = await openFilteredMirror(dir, hub, wider);
    expect(await again.hubCommitOf(filteredMain)).toBeUndefined();
    expect(await again.hubCommitOf(widerMain)).toBe(main);
  });
});

describe("replay", () => {
  let mirror: FilteredMirror;
  let seat: string;
  let hubMain: string;

  beforeEach(async () => {
    hub = makeHub().hub;
    hubMain = sh(["rev-parse", "main"], { gitDir: hub }).trim();
    mirror = await openFilteredMirror(join(root, "mirror"), hub, readable);
    await mirror.syncRef("refs/heads/main", hubMain);
    seat = join(root, "seat");
    sh(["clone", "-q", "--no-local", mirror.dir, seat]);
  });

  const g = (...args: string[]): string => sh(args, { cwd: seat });

  let quarantines = 0;
  /** `mirrorOnly`: the quarantine as the daemon makes it against the mirror, the hub behind it. */
  function quarantine(mirrorOnly = false): Record<string, string> {
    const dir = join(root, `quarantine-${(quarantines += 1)}`);
    mkdirSync(dir);
    const mirrorObjects = join(mirror.dir, "objects");
    return {
      GIT_OBJECT_DIRECTORY: dir,
      GIT_ALTERNATE_OBJECT_DIRECTORIES: mirrorOnly ? mirrorObjects : `${mirrorObjects}:${join(hub, "objects")}`,
    };
  }

  /** What a push does up to the daemon's checks: the seat's pack, unpacked into a quarantine. */
  function push(base = "origin/main", mirrorOnly = false): { pushed: string[]; env: Record<string, string> } {
    const pushed = g("rev-list", "--reverse", "--topo-order", "HEAD", `^${base}`)
      .split("\n")
      .filter((l) => l !== "");
    const pack = execFileSync("git", ["pack-objects", "--revs", "--stdout", "-q"], {
      cwd: seat,
      input: `HEAD\n^${base}\n`,
      env: { PATH: process.env.PATH, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
      maxBuffer: 64 * 1024 * 1024,
    });
    const env = quarantine(mirrorOnly);
    sh(["unpack-objects", "-q"], { gitDir: mirror.dir, input: pack, env });
    return { pushed, env };
  }

  /** One commit on the trunk writing `path` (its folders made as needed), pushed (`push`). */
  function pushedWriting(path: string, text: string): { pushed: string[]; env: Record<string, string> } {
    g("reset", "-q", "--hard", "origin/main");
    write(seat, path, text);
    g("add", "-A");
    g("commit", "-q", "-m", `write ${path}`);
    return push();
  }

  /** The caller's part after its checks: move the new objects into the hub. */
  function migrate(out: string): void {
    cpSync(out, join(hub, "objects"), { recursive: true, force: false });
  }

  function treeMap(entries: Entry[]): Map<string, string> {
    return new Map(entries.map((e) => [e.path, `${e.mode} ${e.oid}`]));
  }

  it("replays changes onto the hub tree, keeps unreadable files, and round-trips to the seat's commit", async () => {
    write(seat, "src/a.ts", "export const a = 'seat';\n");
    write(seat, "src/new.ts", "export const fresh = true;\n");
    write(seat, "src/newdir/x.ts", "x\n");
    // Content the seat was served: the push leaves the blob out, the replay must still find it.
    write(seat, "src/copy.ts", readFileSync(join(seat, "src/lib/deep/c.ts"), "utf8"));
    chmodSync(join(seat, "src/lib/b.ts"), 0o755);
    g("add", "-A");
    g("commit", "-q", "-m", "seat change\n\nwith a body");
    const { pushed, env } = push();
    expect(pushed.length).toBe(1);
    const copied = g("rev-parse", "HEAD:src/copy.ts").trim();
    expect(() => sh(["cat-file", "-e", copied], { gitDir: mirror.dir, env: { GIT_OBJECT_DIRECTORY: env.GIT_OBJECT_DIRECTORY as string } })).toThrow();
    const out = join(root, "out");
    const { map, tip } = await mirror.replay(pushed, env, out);
    expect(map.get(pushed[0] as string)).toBe(tip);
    // Nothing lands in the hub until the caller migrates.
    expect(() => sh(["cat-file", "-e", tip], { gitDir: hub })).toThrow();
    migrate(out);

    const before = treeMap(lsTree(hub, hubMain));
    const after = treeMap(lsTree(hub, tip));
    const seatTree = treeMap(lsTree(join(seat, ".git"), "HEAD"));
    const expected = new Map(before);
    for (const path of ["src/a.ts", "src/new.ts", "src/newdir/x.ts", "src/lib/b.ts", "src/copy.ts"]) expected.set(path, seatTree.get(path) as string);
    expect(after).toEqual(expected);
    expect(after.get("secret/key.txt")).toBe(before.get("secret/key.txt"));
    expect(after.get("conf/secret.json")).toBe(before.get("conf/secret.json"));
    expect(parentsOf(commitBody(hub, tip))).toEqual([hubMain]);
    sh(["fsck", "--strict", "--no-dangling"], { gitDir: hub });

    expect(await mirror.filterCommit(tip)).toBe(g("rev-parse", "HEAD").trim());
    expect(await mirror.hubCommitOf(g("rev-parse", "HEAD").trim())).toBe(tip);
  });

  it("replays a chain with a deletion, and the next push builds on the replayed tip", async () => {
    write(seat, "src/a.ts", "one\n");
    g("commit", "-q", "-am", "one");
    g("rm", "-q", "src/lib/b.ts", "conf/public.json");
    g("commit", "-q", "-m", "two: delete");
    const first = push("origin/main", true);
    expect(first.pushed.length).toBe(2);
    const out = join(root, "out1");
    const { map, tip } = await mirror.replay(first.pushed, first.env, out);
    expect(map.size).toBe(2);
    migrate(out);
    const before = treeMap(lsTree(hub, hubMain));
    const after = treeMap(lsTree(hub, tip));
    expect(after.has("src/lib/b.ts")).toBe(false);
    expect(after.has("conf/public.json")).toBe(false);
    expect(after.get("conf/secret.json")).toBe(before.get("conf/secret.json"));
    expect(after.get("src/lib/deep/c.ts")).toBe(before.get("src/lib/deep/c.ts"));
    expect(after.size).toBe(before.size - 2);
    const middle = map.get(first.pushed[0] as string) as string;
    expect(parentsOf(commitBody(hub, tip))).toEqual([middle]);
    expect(parentsOf(commitBody(hub, middle))).toEqual([hubMain]);
    sh(["fsck", "--strict", "--no-dangling"], { gitDir: hub });

    // The daemon publishes the replayed tip; the seat fetches and pushes on top of it.
    await mirror.syncRef("refs/heads/main", tip);
    g("fetch", "-q", "origin");
    expect(g("rev-parse", "origin/main").trim()).toBe(g("rev-parse", "HEAD").trim());
    write(seat, "src/a.ts", "three\n");
    g("commit", "-q", "-am", "three");
    const second = push("origin/main", true);
    const out2 = join(root, "out2");
    const next = await mirror.replay(second.pushed, second.env, out2);
    migrate(out2);
    expect(parentsOf(commitBody(hub, next.tip))).toEqual([tip]);
    expect(await mirror.filterCommit(next.tip)).toBe(g("rev-parse", "HEAD").trim());
  });

  it("keeps encoding, drops a signature, and keeps author and committer dates byte for byte", async () => {
    const tree = g("write-tree").trim();
    const parent = g("rev-parse", "HEAD").trim();
    const text =
      `tree ${tree}\nparent ${parent}\nauthor A <a@x> 1234567890 -0730\ncommitter C <c@x> 1234567999 +0545\nencoding ISO-8859-1\n` +
      "gpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----\n\nnon-ascii \xe9t\xe9\n";
    const signed = execFileSync("git", ["hash-object", "-w", "-t", "commit", "--stdin"], {
      cwd: seat,
      input: Buffer.from(text, "latin1"),
      env: { PATH: process.env.PATH, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
    })
      .toString()
      .trim();
    g("update-ref", "HEAD", signed);
    const { pushed, env } = push();
    const out = join(root, "out");
    const { tip } = await mirror.replay(pushed, env, out);
    migrate(out);
    const raw = execFileSync("git", ["--git-dir", hub, "cat-file", "commit", tip], { env: { PATH: process.env.PATH, GIT_CONFIG_GLOBAL: "/dev/null" } });
    const replayed = raw.toString("latin1");
    expect(replayed).not.toContain("gpgsig");
    expect(replayed).toContain("author A <a@x> 1234567890 -0730\ncommitter C <c@x> 1234567999 +0545\nencoding ISO-8859-1\n\nnon-ascii \xe9t\xe9\n");
    // The image is the seat's commit less its signature (an unsigned commit is its own image: above).
    const image = await mirror.filterCommit(tip);
    expect(commitBody(mirror.dir, image)).toBe(commitBody(hub, tip).replace(/^tree \S+\nparent \S+\n/, `tree ${tree}\nparent ${parent}\n`));
  });

  it("reads and copies the push under the seat's limits: where git cannot run within them the replay is refused, not failed, and no pack is stored", async () => {
    write(seat, "src/limited.ts", "x\n");
    g("add", "-A");
    g("commit", "-q", "-m", "limited");
    const { pushed, env } = push();
    const out = join(root, "out-limited");
    // With 1 MiB of data git cannot run at all; plain git on the daemon's account would have.
    await expect(mirror.replay(pushed, env, out, { memoryBytes: 1024 * 1024 })).rejects.toThrow(PackRejected);
    await expect(mirror.replay(pushed, env, out, { memoryBytes: 1024 * 1024 })).rejects.toThrow(/within your limits/);
    // No pack stored (git's temporary files stay for the caller to remove with the folder: withReplayFolder).
    expect(readdirSync(join(out, "pack")).filter((f) => /\.(pack|idx)$/.test(f))).toEqual([]);
    // Control: under the 2 GiB a seat without limits gets, it replays.
    const { tip } = await mirror.replay(pushed, env, join(root, "out-unlimited"), { memoryBytes: 2 * 1024 * 1024 * 1024 });
    expect(tip).toMatch(/^[0-9a-f]{40}$/);
  });

  it("holds a replay to what it may build and compare (push.object-size, push.paths); under both it replays", async () => {
    write(seat, "src/bounded.ts", "x\n");
    g("add", "-A");
    g("commit", "-q", "-m", "bounded");
    const { pushed, env } = push();
    const bounded = async (name: string, options: { replayBuiltBytes?: number; replayEntries?: number }) => {
      const other = await openFilteredMirror(join(root, name), hub, readable, options);
      await other.syncRef("refs/heads/main", hubMain);
      return other;
    };
    const built = await bounded("m-built", { replayBuiltBytes: 64 });
    await expect(built.replay(pushed, env, join(root, "o-built"))).rejects.toThrow(/builds more than 64 bytes of new trees and commits/);
    await expect(built.replay(pushed, env, join(root, "o-built"))).rejects.toMatchObject({ rule: "push.object-size" });
    const compared = await bounded("m-compared", { replayEntries: 3 });
    await expect(compared.replay(pushed, env, join(root, "o-compared"))).rejects.toMatchObject({ rule: "push.paths" });
    await expect(compared.replay(pushed, env, join(root, "o-compared"))).rejects.toThrow(/compares more than 3 tree entries/);
    // Control: the same push under the defaults.
    const { tip } = await (await bounded("m-default", {})).replay(pushed, env, join(root, "o-default"));
    expect(tip).toMatch(/^[0-9a-f]{40}$/);
  });

  it("counts a folder named blind the same against both bounds whether the hub holds it (secret/, two files it cannot read) or not (zecret/)", async () => {
    // Found by an attack (round fifteen, test/escape/blind-write-attack.test.ts): counted name by
    // name and byte by byte, a push sitting on a bound landed or was refused by what the hub held
    // where the seat cannot read. Each bound is searched for where the absent folder's push
    // flips; the held folder's must flip at the same place.
    const folderAt = (name: string) => pushedWriting(`${name}/x.md`, "made blind\n");
    const held = folderAt("secret");
    const absent = folderAt("zecret"); // the same length: the seat's own bytes alike
    const anyWrite = () => undefined;
    let made = 0;
    const lands = async (pushed: { pushed: string[]; env: Record<string, string> }, options: { replayBuiltBytes?: number; replayEntries?: number }) => {
      const name = `m-flip-${made++}`;
      const other = await openFilteredMirror(join(root, name), hub, readable, options);
      await other.syncRef("refs/heads/main", hubMain);
      return other.replay(pushed.pushed, pushed.env, join(root, `o-${name}`), undefined, anyWrite).then(
        () => true,
        (error: Error) => {
          if (!(error instanceof PackRejected)) throw error;
          return false;
        },
      );
    };
    for (const option of ["replayBuiltBytes", "replayEntries"] as const) {
      let [lo, hi] = [1, 1 << 24];
      expect(await lands(absent, { [option]: hi })).toBe(true);
      expect(await lands(absent, { [option]: lo })).toBe(false);
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (await lands(absent, { [option]: mid })) hi = mid;
        else lo = mid;
      }
      expect([await lands(held, { [option]: hi }), await lands(held, { [option]: lo })], `${option} flips at ${hi}`).toEqual([true, false]);
    }
  });

  it("asks the policy of every name set blind in the seat's own order, before anything of the hub's: of two refused, the same one is told whether the hub holds the other (secret/) or not (zecret/)", async () => {
    // Asked as the replay met names — the hub's first — a push setting aaa and secret blind was
    // refused for secret (a name the hub holds, met first) where one setting aaa and zecret was
    // refused for aaa: which name the refusal named told whether the hub held the guess.
    const twoAt = (guess: string) => {
      g("reset", "-q", "--hard", "origin/main");
      write(seat, "aaa", "one\n");
      write(seat, guess, "two\n");
      g("add", "-A");
      g("commit", "-q", "-m", `aaa and ${guess}`);
      return push();
    };
    const refuseEach = (path: string) => `no write over ${path} here`;
    const said = async (pushed: { pushed: string[]; env: Record<string, string> }, out: string, guess: string) =>
      (
        await mirror.replay(pushed.pushed, pushed.env, join(root, out), undefined, refuseEach).then(
          () => "landed",
          (error: Error) => error.message,
        )
      ).replaceAll(guess, "N");
    const held = await said(twoAt("secret"), "o-two-held", "secret");
    const absent = await said(twoAt("zecret"), "o-two-absent", "zecret");
    expect(absent).toMatch(/^aaa: /);
    expect(held).toBe(absent);
  });

  it("refuses a merge, an unknown parent, and a file over a directory the seat cannot read", async () => {
    g("checkout", "-q", "-b", "side");
    write(seat, "src/side.ts", "side\n");
    g("add", "-A");
    g("commit", "-q", "-m", "side");
    g("checkout", "-q", "main");
    write(seat, "src/a.ts", "main side\n");
    g("commit", "-q", "-am", "main");
    g("merge", "-q", "--no-ff", "-m", "merge side", "side");
    const merged = push();
    await expect(mirror.replay(merged.pushed, merged.env, join(root, "out1"))).rejects.toThrow(ReplayRefused);
    await expect(mirror.replay(merged.pushed, merged.env, join(root, "out1"))).rejects.toThrow(/rebase instead of merging/);

    // A parent the seat never got from teamd: the real (unfiltered) hub commit.
    g("reset", "-q", "--hard", "origin/main");
    const env = quarantine();
    const stray = sh(["hash-object", "-w", "-t", "commit", "--stdin"], {
      gitDir: mirror.dir,
      env,
      input: `tree ${g("write-tree").trim()}\nparent ${hubMain}\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n\non the hub commit\n`,
    }).trim();
    await expect(mirror.replay([stray], env, join(root, "out2"))).rejects.toThrow(/neither a commit fetched from teamd/);

    // Naming, at a readable path, a blob the seat may not read and does not send.
    g("reset", "-q", "--hard", "origin/main");
    const secretBlob = sh(["rev-parse", `${hubMain}:secret/key.txt`], { gitDir: hub }).trim();
    g("update-index", "--add", "--cacheinfo", `100644,${secretBlob},src/stolen`);
    const stolenTree = g("write-tree", "--missing-ok").trim();
    const stolen = g("commit-tree", "-p", "HEAD", "-m", "steal", stolenTree).trim();
    const stolenPack = execFileSync("git", ["pack-objects", "--stdout", "-q"], {
      cwd: seat,
      input: `${stolen}\n${stolenTree}\n${g("rev-parse", `${stolenTree}:src`).trim()}\n`,
      env: { PATH: process.env.PATH, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
    });
    const stealEnv = quarantine();
    sh(["unpack-objects", "-q"], { gitDir: mirror.dir, input: stolenPack, env: stealEnv });
    await expect(mirror.replay([stolen], stealEnv, join(root, "out-steal"))).rejects.toThrow(/src\/stolen: the push names content .* never served you/);

    // A file at a name the seat cannot read (the hub's folder secret/, and nothing at nosuch):
    // with no write over it given, both refused in the same words (the words named the folder
    // once: an oracle of names, round fourteen).
    const fileAt = (name: string) => pushedWriting(name, "a file written blind\n");
    const collide = fileAt("secret");
    const free = fileAt("nosuch");
    const said = async (pushed: { pushed: string[]; env: Record<string, string> }, out: string, name: string) =>
      (
        await mirror.replay(pushed.pushed, pushed.env, join(root, out)).then(
          () => "landed",
          (error: Error) => error.message,
        )
      ).replaceAll(name, "N");
    expect(await said(collide, "out3", "secret")).toMatch(/^N: you may not read all of this path, so a file written there goes over a folder/);
    expect(await said(collide, "out3", "secret")).toBe(await said(free, "out3b", "nosuch"));

    // Turning a folder it sees part of into a file: refused the same way, whatever else is in it.
    g("reset", "-q", "--hard", "origin/main");
    g("rm", "-rq", "conf");
    write(seat, "conf", "now a file\n");
    g("add", "-A");
    g("commit", "-q", "-m", "conf as file");
    const dirToFile = push();
    await expect(mirror.replay(dirToFile.pushed, dirToFile.env, join(root, "out4"))).rejects.toThrow(/conf: you may not read all of this path/);

    // Given write over them (the policy's answer, asked of the path alone), each lands, over
    // whatever the hub held there: secret/ goes whole, conf/ with what the seat never saw.
    const asked: string[] = [];
    const anyWrite = (path: string, as: "file" | "folder") => {
      asked.push(`${as} ${path}`);
      return undefined;
    };
    for (const [pushed, out, gone] of [
      [collide, "out3w", "secret/"],
      [free, "out3bw", undefined],
      [dirToFile, "out4w", "conf/"],
    ] as const) {
      const { tip } = await mirror.replay(pushed.pushed, pushed.env, join(root, out), undefined, anyWrite);
      migrate(join(root, out));
      const paths = lsTree(hub, tip).map((e) => e.path);
      if (gone !== undefined) expect(paths.filter((p) => p.startsWith(gone))).toEqual([]);
      expect(paths).toContain("docs/more.md");
    }
    expect(asked).toEqual(["file secret", "file nosuch", "file conf"]);

    // A folder at a name the seat cannot read: the hub's file secret/key.txt, and nothing at
    // secret/nokey.txt. Refused alike with no write given; given it, each lands, the file gone.
    const folderAt = (name: string) => pushedWriting(`${name}/x.md`, "a folder made blind\n");
    const overFile = folderAt("secret/key.txt");
    const overNothing = folderAt("secret/nokey.txt");
    expect(await said(overFile, "out6", "key.txt")).toMatch(/^secret: you may not read this path, so a folder made there goes over a file/);
    expect(await said(overFile, "out6", "key.txt")).toBe(await said(overNothing, "out6b", "nokey.txt"));
    asked.length = 0;
    for (const [pushed, out, keyKept] of [
      [overFile, "out6w", false],
      [overNothing, "out6bw", true],
    ] as const) {
      const { tip } = await mirror.replay(pushed.pushed, pushed.env, join(root, out), undefined, anyWrite);
      migrate(join(root, out));
      const paths = lsTree(hub, tip).map((e) => e.path);
      expect(paths).toContain("secret/other.txt");
      expect(paths.filter((p) => p.endsWith("x.md"))).toHaveLength(1);
      expect(paths.includes("secret/key.txt")).toBe(keyKept);
    }
    expect(asked).toEqual([
      "folder secret",
      "folder secret/key.txt",
      "file secret/key.txt/x.md",
      "folder secret",
      "folder secret/nokey.txt",
      "file secret/nokey.txt/x.md",
    ]);

    g("reset", "-q", "--hard", "origin/main");
    g("rm", "-rq", "src/lib");
    write(seat, "src/lib", "lib is a file now\n");
    g("add", "-A");
    g("commit", "-q", "-m", "lib as file");
    const ok = push();
    const out = join(root, "out5");
    const { tip } = await mirror.replay(ok.pushed, ok.env, out);
    migrate(out);
    const paths = lsTree(hub, tip).map((e) => e.path);
    expect(paths).toContain("src/lib");
    expect(paths.some((p) => p.startsWith("src/lib/"))).toBe(false);
    expect(paths).toContain("secret/key.txt");
    expect(await mirror.filterCommit(tip)).toBe(g("rev-parse", "HEAD").trim());
  });
});

describe("a longer history", () => {
  it("filters 300 commits over 200 files correctly and quickly", async () => {
    // fast-import: a realistic history in well under a second.
    const files: string[] = [];
    for (let d = 0; d < 10; d++) for (let f = 0; f < 15; f++) files.push(`src/d${d}/f${f}.ts`);
    for (let f = 0; f < 30; f++) files.push(`secret/s${f}.txt`);
    for (let f = 0; f < 20; f++) files.push(`docs/p${f}.md`);
    let seed = 42;
    const random = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % n;
    };
    const data = (text: string): string => `data ${Buffer.byteLength(text)}\n${text}\n`;
    let stream = "";
    for (let i = 1; i <= 300; i++) {
      stream += `commit refs/heads/main\nmark :${i}\ncommitter T <t@example.invalid> ${1_700_000_000 + i} +0000\n${data(`commit ${i}`)}`;
      if (i > 1) stream += `from :${i - 1}\n`;
      const touched = i === 1 ? files : [0, 1, 2].map(() => files[random(files.length)] as string);
      for (const path of touched) stream += `M 100644 inline ${path}\n${data(`${path} at ${i}\n`)}`;
    }
    stream += "done\n";
    const bare = join(root, "big.git");
    sh(["init", "-q", "--bare", bare]);
    sh(["fast-import", "--quiet", "--done"], { gitDir: bare, input: stream });
    const tip = sh(["rev-parse", "main"], { gitDir: bare }).trim();

    const mirror = await openFilteredMirror(join(root, "big-mirror"), bare, scope("big", ["src/**", "docs/p1.md"]));
    const started = performance.now();
    const filtered = await mirror.filterCommit(tip);
    const elapsed = performance.now() - started;
    console.log(`filtered 300 commits x 200 files in ${elapsed.toFixed(0)} ms`);
    expect(elapsed).toBeLessThan(20_000);

    const hubCommits = revList(bare, tip);
    const mirrorCommits = revList(mirror.dir, filtered);
    expect(mirrorCommits.length).toBe(300);
    const filter = scope("big", ["src/**", "docs/p1.md"]);
    for (let i = 0; i < hubCommits.length; i += 37) {
      const image = await mirror.filterCommit(hubCommits[i] as string);
      expect(image).toBe(mirrorCommits[i]);
      expect(lsTree(mirror.dir, image)).toEqual(expectedTree(bare, hubCommits[i] as string, filter));
    }
    sh(["fsck", "--strict", "--no-dangling"], { gitDir: mirror.dir });
    const reopened = await openFilteredMirror(join(root, "big-mirror"), bare, filter);
    expect(await reopened.hubCommitOf(filtered)).toBe(tip);
    expect(await reopened.hubCommitOf(mirrorCommits[299] as string)).toBe(hubCommits[299]);
  });
});

describe("canonicalMode: a tree entry's mode as git reads it (get_mode, then canon_mode)", () => {
  it.each([
    ["100644", "100644"],
    ["100755", "100755"],
    ["100600", "100644"],
    ["100700", "100755"],
    // Any number of digits (round fourteen: read as at most six, these were gitlinks to the replay).
    ["1100644", "100644"],
    ["1100755", "100755"],
    ["1040000", "40000"],
    ["1120000", "120000"],
    ["0000100644", "100644"],
    // An unsigned 32-bit shift: 4 * 8^11 wraps away.
    ["400000100644", "100644"],
    ["40000", "40000"],
    ["040000", "40000"],
    ["120000", "120000"],
    ["160000", "160000"],
    ["0", "160000"],
    ["", "160000"],
    ["8", "160000"],
  ])("%j -> %s", (mode, canonical) => {
    expect(canonicalMode(mode)).toBe(canonical);
  });
});
