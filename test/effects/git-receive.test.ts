import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containedGit, containmentAvailable } from "../../src/effects/contained-git.js";
import { git, GitError } from "../../src/effects/git.js";
import {
  changedPaths,
  migrateAndUpdate,
  checkPushSelfContained,
  newCommits,
  PackRejected,
  pushedCommits,
  unsentObject,
  commitAncestry,
  readRef,
  receivePack,
  RefMoved,
  servedCommit,
  type Quarantine,
} from "../../src/effects/git-receive.js";
import { GIT_TEST_ENV, sh } from "../support/git-cli.js";

/**
 * Real repositories, real bubblewrap. The hub is a bare repository; `work` plays the seat:
 * it makes commits and packs them the way the remote helper does (pack-objects --revs,
 * not thin), and the daemon's side takes them in.
 */
let root: string;
let hub: string;
let work: string;
let quarantineRoot: string;
let base: string;

function shBuffer(cwd: string, args: readonly string[], input?: string): Buffer {
  return execFileSync("git", args, { cwd, env: GIT_TEST_ENV, input, stdio: ["pipe", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
}

function commit(message: string, files: Record<string, string | null>): string {
  for (const [path, text] of Object.entries(files)) {
    if (text === null) sh(work, ["rm", "-q", path]);
    else {
      mkdirSync(join(work, path, ".."), { recursive: true });
      writeFileSync(join(work, path), text);
      sh(work, ["add", path]);
    }
  }
  sh(work, ["commit", "-q", "--allow-empty", "-m", message]);
  return sh(work, ["rev-parse", "HEAD"]);
}

/** What the remote helper sends: the objects `tip` reaches and `exclude` does not, not thin. */
function packOf(tip: string, exclude: readonly string[] = []): Buffer {
  return shBuffer(work, ["pack-objects", "--revs", "--stdout", "-q"], [tip, ...exclude.map((oid) => `^${oid}`)].join("\n") + "\n");
}

function hubHas(oid: string): boolean {
  try {
    execFileSync("git", ["--git-dir", hub, "cat-file", "-e", oid], { env: GIT_TEST_ENV, stdio: "pipe" });
    return true;
  } catch {
    return false;
  }
}

/** Host processes whose command line names `path` (a contained run binds its quarantine by name). */
function processesNaming(path: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (argv.includes(path)) found.push(`${entry}: ${argv.replace(/\0/g, " ").slice(0, 120)}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

function hubSnapshot(): string {
  return `${readdirSync(join(hub, "objects", "pack"))
    .sort()
    .join(",")}|${sh(hub, ["for-each-ref"])}`;
}

async function receiveAll(pack: Buffer, tip: string): Promise<{ q: Quarantine; commits: string[] }> {
  const q = await receivePack(hub, pack, { quarantineRoot, maxBytes: 16 * 1024 * 1024 });
  try {
    return { q, commits: await newCommits(hub, q, tip) };
  } catch (error) {
    await q.dispose();
    throw error;
  }
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "teamd-receive-"));
  hub = join(root, "hub.git");
  work = join(root, "work");
  quarantineRoot = join(root, "quarantine");
  mkdirSync(quarantineRoot, { mode: 0o700 });
  sh(root, ["init", "-q", "--bare", "-b", "main", hub]);
  sh(root, ["init", "-q", "-b", "main", work]);
  base = commit("base", { "README.md": "hello\n", "src/a.txt": Array.from({ length: 40 }, (_, i) => `line ${i}\n`).join(""), "trunk.txt": "t0\n" });
  sh(work, ["push", "-q", hub, "main"]);
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("containment", () => {
  it("runs here", async () => {
    expect(await containmentAvailable()).toBe(true);
  });

  it("cannot write outside the writable binds", async () => {
    const args = ["update-ref", "refs/heads/contained", base];
    await expect(containedGit(args, { gitDir: hub, readOnly: [hub], writable: [] })).rejects.toBeInstanceOf(GitError);
    expect(await readRef(hub, "refs/heads/contained")).toBeUndefined();
    // The same command with the hub writable does write: the refusal above was the bind's.
    await containedGit(args, { gitDir: hub, readOnly: [], writable: [hub] });
    expect(await readRef(hub, "refs/heads/contained")).toBe(base);
    sh(hub, ["update-ref", "-d", "refs/heads/contained"]);
  });

  it("has no network", async () => {
    let connections = 0;
    const server = createServer((_request, response) => response.writeHead(404).end());
    server.on("connection", () => (connections += 1));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const url = `http://127.0.0.1:${port}/repo.git`;
      await expect(containedGit(["ls-remote", url], { readOnly: [], writable: [] })).rejects.toBeInstanceOf(GitError);
      expect(connections).toBe(0);
      // Uncontained, the same request does reach the server: the test can see a connection.
      await expect(git(["ls-remote", url])).rejects.toBeInstanceOf(GitError);
      expect(connections).toBeGreaterThan(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("sees none of the host but what it is given", async () => {
    const secret = join(root, "secret.txt");
    writeFileSync(secret, "no\n");
    await expect(containedGit(["hash-object", secret], { readOnly: [], writable: [] })).rejects.toBeInstanceOf(GitError);
    const { stdout } = await containedGit(["hash-object", secret], { readOnly: [secret], writable: [] });
    expect(stdout.toString("utf8").trim()).toMatch(/^[0-9a-f]{40}$/);
  });
});

describe("receivePack", () => {
  it("quarantines a good pack; the hub has its objects only after migrateAndUpdate", async () => {
    const tip = commit("seat work", { "src/b.txt": "b\n" });
    const { q, commits } = await receiveAll(packOf(tip, [base]), tip);
    try {
      expect(commits).toEqual([tip]);
      expect(existsSync(q.objects)).toBe(true);
      expect(hubHas(tip)).toBe(false);
      await migrateAndUpdate(hub, q, "refs/heads/seat/alice/one", tip, "");
    } finally {
      await q.dispose();
    }
    expect(existsSync(q.dir)).toBe(false);
    expect(hubHas(tip)).toBe(true);
    expect(await readRef(hub, "refs/heads/seat/alice/one")).toBe(tip);
    expect(() => sh(hub, ["fsck", "--strict", "--no-dangling"])).not.toThrow();
  });

  it("works for a hub whose path has a colon (the alternates variable is a colon list)", async () => {
    const odd = join(root, "odd:dir", "hub.git");
    sh(root, ["clone", "-q", "--bare", "--no-local", hub, odd]);
    const tip = commit("for the odd hub", { "src/odd.txt": "odd\n" });
    const q = await receivePack(odd, packOf(tip, [base]), { quarantineRoot, maxBytes: 1024 * 1024 });
    try {
      expect(await newCommits(odd, q, tip)).toEqual([tip]);
    } finally {
      await q.dispose();
    }
  });

  it("refuses a corrupt pack and leaves the hub as it was", async () => {
    const tip = commit("more", { "src/c.txt": Array.from({ length: 200 }, (_, i) => `c ${i}\n`).join("") });
    const pack = packOf(tip, [base]);
    const flipped = Buffer.from(pack);
    for (let at = Math.floor(pack.length / 2); at < Math.floor(pack.length / 2) + 8; at++) flipped[at] = (flipped[at] as number) ^ 0xff;
    const before = hubSnapshot();
    for (const bad of [flipped, pack.subarray(0, pack.length - 30), Buffer.from("PACK but not really a pack at all, just some garbage bytes")]) {
      const refused = await receivePack(hub, bad, { quarantineRoot, maxBytes: 1024 * 1024 }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(PackRejected);
      expect((refused as PackRejected).reason).toMatch(/^pack is corrupt: \S/);
    }
    expect(hubSnapshot()).toBe(before);
    expect(readdirSync(quarantineRoot)).toEqual([]);
  });

  it("refuses a pack over the bound, reading no further", async () => {
    let pulled = 0;
    async function* chunks(): AsyncIterable<Uint8Array> {
      for (let i = 0; i < 100; i++) {
        pulled += 1;
        yield Buffer.alloc(1024);
      }
    }
    const refused = await receivePack(hub, chunks(), { quarantineRoot, maxBytes: 4 * 1024 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PackRejected);
    expect((refused as PackRejected).reason).toBe("pack exceeds 4 KiB");
    expect(pulled).toBe(5);
    expect(readdirSync(quarantineRoot)).toEqual([]);
  });

  it("refuses a pack that lacks an object its commit needs", async () => {
    const tip = commit("tree left out", { "src/d.txt": "d\n" });
    // The commit alone, by id: its new tree and blob are in neither the pack nor the hub.
    const pack = shBuffer(work, ["pack-objects", "--stdout", "-q"], `${tip}\n`);
    await expect(receiveAll(pack, tip)).rejects.toBeInstanceOf(PackRejected);
    expect(readdirSync(quarantineRoot)).toEqual([]);
  });

  it("refuses a tip whose history lacks an object, with and without `readable` (the walk to the readable is the connectivity check then)", async () => {
    // A quarantine index-pack could not have made (it refuses a pack that is not connected):
    // loose objects, a commit and its tree, the tree's blob in neither it nor the hub.
    const dir = join(quarantineRoot, "hand-made");
    const objects = join(dir, "objects");
    mkdirSync(objects, { recursive: true });
    const env = { ...GIT_TEST_ENV, GIT_OBJECT_DIRECTORY: objects, GIT_ALTERNATE_OBJECT_DIRECTORIES: join(hub, "objects") };
    const run = (args: readonly string[], input?: string) =>
      execFileSync("git", ["--git-dir", hub, ...args], { cwd: root, env, input, encoding: "utf8" }).trim();
    const lost = run(["hash-object", "--stdin"], "never stored\n");
    const tree = run(["mktree", "--missing"], `100644 blob ${lost}\tlost.txt\n`);
    const tip = run(["commit-tree", "-p", base, "-m", "lost blob", tree]);
    const q: Quarantine = {
      dir,
      objects,
      env: { GIT_OBJECT_DIRECTORY: objects, GIT_ALTERNATE_OBJECT_DIRECTORIES: join(hub, "objects") },
      dispose: () => rm(dir, { recursive: true, force: true }),
    };
    try {
      await expect(newCommits(hub, q, tip)).rejects.toThrow(/the push is not connected/);
      // With `readable`, in the words of an object named and not sent (unsentObject), as when the hub holds it.
      await expect(newCommits(hub, q, tip, { readable: [base] })).rejects.toThrow(`push refused: ${unsentObject()}`);
    } finally {
      await q.dispose();
    }
  });

  it("stops writing a pack the moment its admission is refused, though the stream stalls, and leaves nothing in the quarantine", async () => {
    const tip = commit("stalled", { "src/stall.txt": "s\n" });
    const pack = packOf(tip, [base]);
    let release: () => void = () => undefined;
    async function* stalled() {
      yield pack.subarray(0, 10);
      // The seat's stream goes quiet (it never ends here until the test lets it).
      await new Promise<void>((resolve) => (release = resolve));
      yield pack.subarray(10);
    }
    const refusal = new Error("over the quota");
    const admitted = new Promise<never>((_resolve, reject) => setTimeout(() => reject(refusal), 100));
    admitted.catch(() => undefined);
    await expect(receivePack(hub, stalled(), { quarantineRoot, maxBytes: 1024 * 1024, admitted })).rejects.toBe(refusal);
    expect(readdirSync(quarantineRoot)).toEqual([]);
    // index-pack and the read sandbox, started as the pack began, have ended with it.
    expect(processesNaming(quarantineRoot)).toEqual([]);
    release();
  });

  it("runs a push's reads of its quarantine in the quarantine's one git session, not a sandbox each; without one, the same answers", async () => {
    const tip = commit("session", { "src/session.txt": "one sandbox\n" });
    const pack = packOf(tip, [base]);
    const limits = { memoryBytes: 1024 * 1024 * 1024 };
    const q = await receivePack(hub, pack, { quarantineRoot, maxBytes: 1024 * 1024, limits });
    const alone = await receivePack(hub, pack, { quarantineRoot, maxBytes: 1024 * 1024, limits, session: false });
    try {
      expect(q.session).toBeDefined();
      expect(alone.session).toBeUndefined();
      const taken: string[] = [];
      const fellBack: string[] = [];
      const host = q.session as NonNullable<Quarantine["session"]>;
      const counted: Quarantine = {
        ...q,
        dir: q.dir,
        objects: q.objects,
        env: q.env,
        dispose: q.dispose,
        session: {
          async spawn(gitArgs, args, options) {
            const spawned = await host.spawn(gitArgs, args, options);
            (spawned === undefined ? fellBack : taken).push(args[0] ?? "");
            return spawned;
          },
        },
      };
      const inSession = await pushedCommits(hub, counted, tip, { readable: [base], limits });
      const ancestor = await commitAncestry(hub, counted, base, tip, { limits });
      // The listing, the walk, the commit text and the changed paths, and the ancestry: each a run of the session.
      expect(taken.length).toBeGreaterThanOrEqual(5);
      expect(fellBack).toEqual([]);
      // The same answers from runs of their own.
      expect(await pushedCommits(hub, alone, tip, { readable: [base], limits })).toEqual(inSession);
      expect(await commitAncestry(hub, alone, base, tip, { limits })).toBe(ancestor);
      expect(inSession.commits.at(-1)).toBe(tip);
      expect(inSession.paths).toContain("src/session.txt");
    } finally {
      await q.dispose();
      await alone.dispose();
    }
  });

  it("checks every new commit of a push, not only its tip: the checks started on a one-commit guess are not what a longer push is judged by", async () => {
    // One commit: the checks started beside the listing are the push's.
    const one = commit("one", { "src/one.txt": "1\n" });
    const single = await receivePack(hub, packOf(one, [base]), { quarantineRoot, maxBytes: 1024 * 1024 });
    try {
      const checked = await pushedCommits(hub, single, one, { readable: [base] });
      expect(checked.commits.at(-1)).toBe(one);
      expect(checked.paths).toContain("src/one.txt");
    } finally {
      await single.dispose();
    }
    // Three: the first writes a path the tip does not touch, and its message drives a terminal.
    const first = commit("first", { "docs/first.md": "first\n" });
    const second = commit("second", { "src/second.txt": "2\n" });
    const third = commit("third", { "src/third.txt": "3\n" });
    const three = await receivePack(hub, packOf(third, [base]), { quarantineRoot, maxBytes: 1024 * 1024 });
    try {
      const checked = await pushedCommits(hub, three, third, { readable: [base] });
      expect(checked.commits.slice(-3)).toEqual([first, second, third]);
      expect(checked.paths).toEqual(expect.arrayContaining(["docs/first.md", "src/second.txt", "src/third.txt"]));
    } finally {
      await three.dispose();
    }
    const loud = commit("loud \u001b[31mred", { "src/loud.txt": "4\n" });
    const quiet = commit("quiet", { "src/quiet.txt": "5\n" });
    expect(loud).not.toBe(quiet);
    const told = await receivePack(hub, packOf(quiet, [base]), { quarantineRoot, maxBytes: 1024 * 1024 });
    try {
      await expect(pushedCommits(hub, told, quiet, { readable: [base] })).rejects.toMatchObject({ rule: "push.commit-text" });
    } finally {
      await told.dispose();
    }
  });

  describe("a streamed pack (no size declared): held to its room as it arrives", () => {
    const KiB = 1024;
    /** `total` bytes of `pack` (repeated as needed) in 16 KiB chunks; `pulled` counts what was taken. */
    function chunks(pack: Buffer, total: number, pulled: { bytes: number }, hold?: Promise<void>) {
      return (async function* () {
        for (let at = 0; at < total; at += 16 * KiB) {
          if (at === 16 * KiB && hold !== undefined) await hold;
          const n = Math.min(16 * KiB, total - at);
          pulled.bytes += n;
          yield Buffer.alloc(n, pack.subarray(0, Math.min(pack.length, n)));
        }
      })();
    }
    const overQuota = new Error("past the quota");

    it("stops at the chunk that passes the room once it is known, with over()'s rejection, and reads no further", async () => {
      const pack = packOf(commit("streamed big", { "src/streamed.txt": "x\n" }), [base]);
      const pulled = { bytes: 0 };
      const sizes: number[] = [];
      const room = {
        atMost: 1024 * KiB,
        bytes: Promise.resolve(64 * KiB),
        over: async (size: number): Promise<never> => {
          sizes.push(size);
          throw overQuota;
        },
      };
      await expect(receivePack(hub, chunks(pack, 512 * KiB, pulled), { quarantineRoot, maxBytes: 1024 * KiB, room })).rejects.toBe(overQuota);
      // The fifth chunk is the first past 64 KiB: the stream was not read on.
      expect(sizes).toEqual([80 * KiB]);
      expect(pulled.bytes).toBe(80 * KiB);
      expect(readdirSync(quarantineRoot)).toEqual([]);
    });

    it("is held to atMost until the room is known, and to the room once it is, though the stream ended first", async () => {
      const pack = packOf(commit("streamed early", { "src/early.txt": "e\n" }), [base]);
      let known: (bytes: number) => void = () => undefined;
      const late = new Promise<number>((resolve) => (known = resolve));
      const sizes: number[] = [];
      const room = {
        atMost: 48 * KiB,
        bytes: late,
        over: async (size: number): Promise<never> => {
          sizes.push(size);
          throw overQuota;
        },
      };
      // Past atMost with the room not yet known: refused at the chunk that passes it.
      await expect(receivePack(hub, chunks(pack, 256 * KiB, { bytes: 0 }), { quarantineRoot, maxBytes: 1024 * KiB, room })).rejects.toBe(overQuota);
      expect(sizes).toEqual([64 * KiB]);
      // Under atMost, ended before the room is known: held to the room once it comes (32 KiB).
      const pending = receivePack(hub, chunks(pack, 40 * KiB, { bytes: 0 }), { quarantineRoot, maxBytes: 1024 * KiB, room });
      pending.catch(() => undefined);
      setTimeout(() => known(32 * KiB), 50);
      await expect(pending).rejects.toBe(overQuota);
      expect(sizes).toEqual([64 * KiB, 40 * KiB]);
      expect(readdirSync(quarantineRoot)).toEqual([]);
    });

    it("control: a real pack within its room is taken in and indexed, as a declared one is", async () => {
      const tip = commit("streamed ok", { "src/ok-streamed.txt": "ok\n" });
      const pack = packOf(tip, [base]);
      const over = async (): Promise<never> => {
        throw overQuota;
      };
      const streamed = (async function* () {
        for (let at = 0; at < pack.length; at += 100) yield pack.subarray(at, at + 100);
      })();
      const q = await receivePack(hub, streamed, {
        quarantineRoot,
        maxBytes: 1024 * KiB,
        room: { atMost: 1024 * KiB, bytes: Promise.resolve(pack.length), over },
      });
      try {
        // The commits of this file's branch since base, this one last.
        expect((await newCommits(hub, q, tip)).at(-1)).toBe(tip);
        expect(q.pack?.bytes).toBe(pack.length);
      } finally {
        await q.dispose();
      }
    });

    it("a refused admission stops a streamed pack too, though its room never comes", async () => {
      const pack = packOf(commit("streamed refused", { "src/refused.txt": "r\n" }), [base]);
      let release: () => void = () => undefined;
      const hold = new Promise<void>((resolve) => (release = resolve));
      const admitted = new Promise<never>((_resolve, reject) => setTimeout(() => reject(overQuota), 50));
      admitted.catch(() => undefined);
      const room = { atMost: 1024 * KiB, bytes: admitted.then(() => 0), over: async (): Promise<never> => Promise.reject(new Error("not this")) };
      await expect(receivePack(hub, chunks(pack, 64 * KiB, { bytes: 0 }, hold), { quarantineRoot, maxBytes: 1024 * KiB, admitted, room })).rejects.toBe(
        overQuota,
      );
      expect(readdirSync(quarantineRoot)).toEqual([]);
      release();
    });
  });

  it("asks admitObjects of the header's count before reading on: its refusal wins over a pack that is corrupt past its header", async () => {
    const tip = commit("counted", { "src/count.txt": "c\n" });
    const pack = packOf(tip, [base]);
    const corrupt = Buffer.concat([pack.subarray(0, 12), Buffer.alloc(pack.length - 12, 0xee)]);
    const asked: number[] = [];
    const refusal = new Error("past the objects quota");
    const admitObjects = async (objects: number) => {
      asked.push(objects);
      throw refusal;
    };
    await expect(receivePack(hub, corrupt, { quarantineRoot, maxBytes: 1024 * 1024, admitObjects })).rejects.toBe(refusal);
    expect(asked).toEqual([pack.readUInt32BE(8)]);
    expect(readdirSync(quarantineRoot)).toEqual([]);
    // Control: admitted, the same corrupt pack is refused for what it is.
    await expect(receivePack(hub, corrupt, { quarantineRoot, maxBytes: 1024 * 1024, admitObjects: async () => undefined })).rejects.toBeInstanceOf(
      PackRejected,
    );
  });

  it("refuses a thin pack (a delta against an object it does not carry)", async () => {
    sh(work, ["checkout", "-q", "-b", "thin", base]);
    const big = Array.from({ length: 500 }, (_, i) => `thin ${i}\n`).join("");
    const before = commit("big file", { "src/big.txt": big });
    sh(work, ["push", "-q", hub, "thin"]);
    const tip = commit("small change", { "src/big.txt": `${big}one more\n` });
    const thin = shBuffer(work, ["pack-objects", "--revs", "--thin", "--stdout", "-q"], `${tip}\n^${before}\n`);
    const refused = await receivePack(hub, thin, { quarantineRoot, maxBytes: 1024 * 1024 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PackRejected);
    expect((refused as PackRejected).reason).toMatch(/unresolved delta/);
    sh(work, ["checkout", "-q", "main"]);
  });

  it("refuses objects fsck finds bad (a tree entry named .git)", async () => {
    const blob = sh(work, ["hash-object", "-w", "--stdin"], "hook\n");
    const tree = sh(work, ["mktree"], `100644 blob ${blob}\t.git\n`);
    const tip = sh(work, ["commit-tree", "-p", base, "-m", "evil", tree]);
    const refused = await receiveAll(packOf(tip, [base]), tip).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PackRejected);
    expect((refused as PackRejected).reason).toMatch(/\.git/);
  });

  it("refuses a tip that is not a commit, or not there", async () => {
    const tip = sh(work, ["rev-parse", "HEAD"]);
    const q = await receivePack(hub, packOf(tip, [base]), { quarantineRoot, maxBytes: 1024 * 1024 });
    try {
      const tree = sh(work, ["rev-parse", "HEAD^{tree}"]);
      await expect(newCommits(hub, q, tree)).rejects.toThrow(/is a tree, not a commit/);
      await expect(newCommits(hub, q, "1".repeat(40))).rejects.toThrow(/in neither the pack nor the hub/);
      await expect(newCommits(hub, q, "--all")).rejects.toBeInstanceOf(PackRejected);
    } finally {
      await q.dispose();
    }
  });

  it("with `readable`, refuses a tree naming an object the pusher was never served", async () => {
    // The hub has a blob on a branch the seat may not read; the seat names it without sending it.
    sh(work, ["checkout", "-q", "-b", "secret", base]);
    const secretTip = commit("secret", { "secret/key.txt": "the key\n" });
    sh(work, ["push", "-q", hub, "secret"]);
    sh(work, ["checkout", "-q", "main"]);
    const blob = sh(work, ["rev-parse", `${secretTip}:secret/key.txt`]);
    const tree = sh(work, ["mktree"], `100644 blob ${blob}\tstolen.txt\n`);
    const tip = sh(work, ["commit-tree", "-p", base, "-m", "steal", tree]);
    const pack = shBuffer(work, ["pack-objects", "--stdout", "-q"], `${tip}\n${tree}\n`);
    const q = await receivePack(hub, pack, { quarantineRoot, maxBytes: 1024 * 1024 });
    try {
      // Connected as far as the hub is concerned...
      expect(await newCommits(hub, q, tip)).toEqual([tip]);
      // ...but not from what the seat could read.
      await expect(newCommits(hub, q, tip, { readable: [base, "f".repeat(40)] })).rejects.toThrow(unsentObject());
    } finally {
      await q.dispose();
    }
    // An honest push passes the same check.
    const honest = commit("honest", { "src/e.txt": "e\n" });
    const { q: q2 } = await receiveAll(packOf(honest, [base]), honest);
    try {
      expect(await newCommits(hub, q2, honest, { readable: [base] })).toContain(honest);
    } finally {
      await q2.dispose();
    }
  });
});

describe("an object named and not sent: one refusal whether the hub holds it or not (round fourteen)", () => {
  // The hub holds a blob, a tree and a commit on a branch the seat may not read; the seat names
  // each without sending it, and beside it an id of the same kind the hub lacks. index-pack
  // --strict refused the second at once, the walk the first a contained run later: the time of
  // the refusal said whether the hub holds a guess. Both now pass index-pack and are refused by
  // the same walk, in the same words.
  let hidden: { blob: string; tree: string; commit: string };
  let lacking: { blob: string; tree: string; commit: string };
  beforeAll(() => {
    sh(work, ["checkout", "-q", "-b", "unread", base]);
    const tip = commit("unread", { "unread/key.txt": "the unread key\n" });
    sh(work, ["push", "-q", hub, "unread"]);
    sh(work, ["checkout", "-q", "main"]);
    hidden = { blob: sh(work, ["rev-parse", `${tip}:unread/key.txt`]), tree: sh(work, ["rev-parse", `${tip}:unread`]), commit: tip };
    const blob = sh(work, ["hash-object", "--stdin"], "a guess the hub lacks\n");
    const tree = sh(work, ["mktree", "--missing"], `100644 blob ${blob}\tkey.txt\n`);
    const made = sh(work, ["commit-tree", "-p", base, "-m", "nowhere", tree]);
    lacking = { blob, tree, commit: made };
  });

  /** A commit on `base` whose tree names `oid` (as `kind`) at guess/, sent without it. */
  function naming(kind: "blob" | "tree" | "commit", oid: string): { tip: string; pack: Buffer } {
    const mode = { blob: "100644", tree: "040000", commit: "160000" }[kind];
    const tree = sh(work, ["mktree", "--missing"], `${mode} ${kind} ${oid}\tguess\n`);
    const tip =
      kind === "commit"
        ? sh(work, ["commit-tree", "-p", oid, "-m", "on a guess", sh(work, ["rev-parse", `${base}^{tree}`])])
        : sh(work, ["commit-tree", "-p", base, "-m", "a guess", tree]);
    return { tip, pack: shBuffer(work, ["pack-objects", "--stdout", "-q"], kind === "commit" ? `${tip}\n` : `${tip}\n${tree}\n`) };
  }

  async function refusal(pack: Buffer, check: (q: Quarantine) => Promise<unknown>): Promise<string> {
    // index-pack takes the pack either way: what it names is the walk's to check.
    const q = await receivePack(hub, pack, { quarantineRoot, maxBytes: 1024 * 1024 });
    try {
      const refused = await check(q).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(PackRejected);
      return (refused as PackRejected).reason;
    } finally {
      await q.dispose();
    }
  }

  it.each(["blob", "tree", "commit"] as const)("a %s named in the pushed history", async (kind) => {
    const held = naming(kind, hidden[kind]);
    const lacked = naming(kind, lacking[kind]);
    const said = {
      held: await refusal(held.pack, (q) => pushedCommits(hub, q, held.tip, { readable: [base] })),
      lacked: await refusal(lacked.pack, (q) => pushedCommits(hub, q, lacked.tip, { readable: [base] })),
    };
    expect(said.held).toBe(unsentObject());
    expect(said.lacked).toBe(unsentObject());
    expect(readdirSync(quarantineRoot)).toEqual([]);
  });

  it.each(["blob", "tree", "commit"] as const)("a %s named as the pushed tip (a blob was 'a blob, not a commit' when the hub held it)", async (kind) => {
    const pack = packOf(commit(`beside a ${kind} tip`, { [`src/${kind}.txt`]: `${kind}\n` }), [base]);
    expect(await refusal(pack, (q) => pushedCommits(hub, q, hidden[kind], { readable: [base] }))).toBe(unsentObject());
    expect(await refusal(pack, (q) => pushedCommits(hub, q, lacking[kind], { readable: [base] }))).toBe(unsentObject());
    // Control: a tip the pack carries is judged for its type, as before.
    const sent = sh(work, ["hash-object", "-w", "--stdin"], `a ${kind} sent as the tip\n`);
    const withBlob = shBuffer(work, ["pack-objects", "--stdout", "-q"], `${sent}\n`);
    expect(await refusal(withBlob, (q) => pushedCommits(hub, q, sent, { readable: [base] }))).toBe(`the pushed tip ${sent} is a blob, not a commit`);
  });

  it("a push of several refs: refused whole either way, for the guess, whether it is in the history or the tip", async () => {
    const clean = commit("clean beside", { "src/clean.txt": "clean\n" });
    for (const kind of ["blob", "tree"] as const) {
      for (const oid of [hidden[kind], lacking[kind]]) {
        const guess = naming(kind, oid);
        const pack = packOf(clean, [base]);
        const cleanObjects = sh(work, ["rev-list", "--objects", "--no-object-names", clean, "--not", base]).split("\n");
        const guessObjects = [guess.tip, sh(work, ["rev-parse", `${guess.tip}^{tree}`])];
        const both = shBuffer(work, ["pack-objects", "--stdout", "-q"], [...cleanObjects, ...guessObjects].map((oid) => `${oid}\n`).join(""));
        expect(await refusal(both, (q) => checkPushSelfContained(hub, q, [clean, guess.tip], [base]))).toBe(unsentObject());
        // The guess as the second ref's tip, beside the clean one.
        expect(await refusal(pack, (q) => checkPushSelfContained(hub, q, [clean, oid], [base]))).toBe(unsentObject());
      }
    }
  });

  it.each([".gitattributes", ".gitmodules"])(
    "a guess named (not sent) at src/%s, as a file and as a folder: the same refusal whether the hub holds it or not (index-pack's fsck read it from the hub)",
    async (name) => {
      for (const kind of ["blob", "tree"] as const) {
        const said: string[] = [];
        for (const oid of [hidden[kind], lacking[kind]]) {
          const src = sh(work, ["mktree", "--missing"], `${kind === "blob" ? "100644" : "040000"} ${kind} ${oid}\t${name}\n`);
          const root = sh(work, ["mktree", "--missing"], `040000 tree ${src}\tsrc\n`);
          const tip = sh(work, ["commit-tree", "-p", base, "-m", `a guess at ${name}`, root]);
          const pack = shBuffer(work, ["pack-objects", "--stdout", "-q"], `${tip}\n${root}\n${src}\n`);
          said.push(await refusal(pack, (q) => pushedCommits(hub, q, tip, { readable: [base] })));
        }
        expect(said, kind).toEqual([unsentObject(), unsentObject()]);
      }
    },
  );

  it("a .gitattributes or .gitmodules the pack does not carry is read by git's fsck all the same: left as the parent had it, copied, or named for content the hub has", async () => {
    sh(work, ["checkout", "-q", "-b", "attributes", base]);
    const withAttributes = commit("attributes", {
      ".gitattributes": "*.txt text\n",
      "src/notes.txt": '[submodule "x"]\n\tpath = x\n\turl = --upload-pack=touch /tmp/pwn\n',
    });
    sh(work, ["push", "-q", hub, "attributes"]);
    // The root tree changes, its .gitattributes does not: git sends no blob for it (index-pack,
    // seeing the pack alone, cannot read it: git 2.39 fails then, and that failure is passed).
    const beside = commit("beside the attributes", { "other.txt": "o\n" });
    const q = await receivePack(hub, packOf(beside, [withAttributes]), { quarantineRoot, maxBytes: 1024 * 1024 });
    try {
      expect((await pushedCommits(hub, q, beside, { readable: [withAttributes] })).paths).toEqual(["other.txt"]);
    } finally {
      await q.dispose();
    }
    sh(work, ["push", "-q", hub, "attributes"]);
    // A copy of it in a new folder: the blob is the hub's already, so git does not send it; it is read, and lands.
    const copied = commit("copied attributes", { "sub/.gitattributes": "*.txt text\n" });
    const q2 = await receivePack(hub, packOf(copied, [beside]), { quarantineRoot, maxBytes: 1024 * 1024 });
    try {
      expect((await pushedCommits(hub, q2, copied, { readable: [beside] })).paths).toEqual(["sub/.gitattributes"]);
    } finally {
      await q2.dispose();
    }
    // A .gitmodules naming content the seat may read (src/notes.txt, never read as a .gitmodules):
    // not sent, it is read now, and its URL, an option, refuses the push.
    sh(work, ["reset", "-q", "--hard", beside]);
    const named = commit("modules from notes", { ".gitmodules": '[submodule "x"]\n\tpath = x\n\turl = --upload-pack=touch /tmp/pwn\n' });
    // (git's own pack-objects, sparse, sends the blob here: the seat sends only the commit and its tree.)
    const withoutBlob = shBuffer(work, ["pack-objects", "--stdout", "-q"], `${named}\n${sh(work, ["rev-parse", `${named}^{tree}`])}\n`);
    expect(await refusal(withoutBlob, (q3) => pushedCommits(hub, q3, named, { readable: [beside] }))).toMatch(/^"\.gitmodules": .*gitmodulesUrl/);
    // Sent, it is read by index-pack's fsck: the same URL is refused there.
    sh(work, ["reset", "-q", "--hard", beside]);
    const sent = commit("modules sent", { ".gitmodules": '[submodule "y"]\n\tpath = y\n\turl = --upload-pack=touch /tmp/pwn2\n' });
    const refused = await receivePack(hub, packOf(sent, [beside]), { quarantineRoot, maxBytes: 1024 * 1024 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PackRejected);
    expect((refused as PackRejected).reason).toMatch(/gitmodulesUrl/);
    expect(readdirSync(quarantineRoot)).toEqual([]);
    sh(work, ["checkout", "-q", "main"]);
  });

  it("twenty .gitattributes deleted in one commit, and a .gitattributes moved: no false refusal (one ls-tree a commit, deletions not read)", async () => {
    sh(work, ["checkout", "-q", "-b", "many-attributes", base]);
    const files = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`d${i}/.gitattributes`, `*.d${i} text\n`]));
    const made = commit("many attributes", files);
    sh(work, ["push", "-q", hub, "many-attributes"]);
    const gone = commit("none left", Object.fromEntries(Object.keys(files).map((path) => [path, null])));
    const moved = (() => {
      sh(work, ["checkout", "-q", made]);
      sh(work, ["mv", "d0/.gitattributes", "d0/sub.gitattributes"]);
      mkdirSync(join(work, "e"), { recursive: true });
      sh(work, ["mv", "d1/.gitattributes", "e/.gitattributes"]);
      return commit("moved", {});
    })();
    for (const tip of [gone, moved]) {
      const q = await receivePack(hub, packOf(tip, [made]), { quarantineRoot, maxBytes: 1024 * 1024 });
      try {
        expect((await pushedCommits(hub, q, tip, { readable: [made] })).commits).toEqual([tip]);
      } finally {
        await q.dispose();
      }
    }
    sh(work, ["checkout", "-q", "main"]);
  });

  it("an object the pack carries as another type than what names it claims is refused as corrupt, by the walk (index-pack --strict did)", async () => {
    const blob = sh(work, ["hash-object", "-w", "--stdin"], "inside\n");
    const inner = sh(work, ["mktree"], `100644 blob ${blob}\tinner.txt\n`);
    // A tree entry of blob mode naming a tree: git's mktree will not write it, so it is written by hand.
    const entry = Buffer.concat([Buffer.from("100644 confused\0"), Buffer.from(inner, "hex")]);
    const outer = execFileSync("git", ["hash-object", "-w", "-t", "tree", "--literally", "--stdin"], { cwd: work, env: GIT_TEST_ENV, input: entry })
      .toString("utf8")
      .trim();
    const tip = sh(work, ["commit-tree", "-p", base, "-m", "confused", outer]);
    const pack = shBuffer(work, ["pack-objects", "--stdout", "-q"], `${tip}\n${outer}\n${inner}\n${blob}\n`);
    expect(await refusal(pack, (q) => pushedCommits(hub, q, tip, { readable: [base] }))).toMatch(
      /^pack is corrupt: .*is a (?:tree, not a blob|blob, not a tree)/,
    );
    expect(await refusal(pack, (q) => newCommits(hub, q, tip))).toMatch(/^pack is corrupt: .*is a (?:tree, not a blob|blob, not a tree)/);
    // A blob's entry naming a tree the seat may read: git names it as it stops, and it is not the
    // pack's, so in the words of an object unsent (which object git met as what is not told
    // apart from what the hub holds: round fourteen).
    const readableTree = sh(work, ["rev-parse", `${base}:src`]);
    const onReadable = execFileSync("git", ["hash-object", "-w", "-t", "tree", "--literally", "--stdin"], {
      cwd: work,
      env: GIT_TEST_ENV,
      input: Buffer.concat([Buffer.from("100644 confused\0"), Buffer.from(readableTree, "hex")]),
    })
      .toString("utf8")
      .trim();
    const tip2 = sh(work, ["commit-tree", "-p", base, "-m", "confused by a readable tree", onReadable]);
    const pack2 = shBuffer(work, ["pack-objects", "--stdout", "-q"], `${tip2}\n${onReadable}\n`);
    expect(await refusal(pack2, (q) => pushedCommits(hub, q, tip2, { readable: [base] }))).toBe(unsentObject());
  });
});

describe("changedPaths", () => {
  let trunk: string;
  beforeAll(() => {
    sh(work, ["checkout", "-q", "-b", "trunk-line", base]);
    trunk = commit("trunk moves", { "trunk.txt": "t1\n", "trunk-only.txt": "new on trunk\n" });
    sh(work, ["push", "-q", hub, "trunk-line:main"]);
  });

  it("counts every commit's paths, renames and copies on both sides", async () => {
    sh(work, ["checkout", "-q", "-b", "paths", base]);
    const original = readFileSync(join(work, "src/a.txt"), "utf8");
    const touched = commit("touch", { "src/a.txt": "changed\n", "notes.md": "n\n" });
    // The last commits leave src/a.txt as it was: the path was still written by this push.
    const reverted = commit("revert a", { "src/a.txt": original });
    mkdirSync(join(work, "docs"));
    sh(work, ["mv", "notes.md", "docs/notes.md"]);
    const renamed = commit("rename", {});
    // A copy is found (-C) when its source changes in the same commit.
    const copied = commit("copy", { "src/a-copy.txt": original, "src/a.txt": `${original}one more\n` });
    const { q, commits } = await receiveAll(packOf(copied, [base]), copied);
    try {
      expect(commits).toEqual([touched, reverted, renamed, copied]);
      const changed = await changedPaths(hub, q, commits);
      expect(changed.paths).toEqual(["docs/notes.md", "notes.md", "src/a-copy.txt", "src/a.txt"]);
      expect(changed.commits).toEqual([
        { oid: touched, paths: ["notes.md", "src/a.txt"] },
        { oid: reverted, paths: ["src/a.txt"] },
        { oid: renamed, paths: ["docs/notes.md", "notes.md"] },
        { oid: copied, paths: ["src/a-copy.txt", "src/a.txt"] },
      ]);
    } finally {
      await q.dispose();
    }
  });

  it("a root commit contributes every path it adds", async () => {
    const tree = sh(work, ["mktree"], `100644 blob ${sh(work, ["hash-object", "-w", "--stdin"], "x\n")}\tonly.txt\n`);
    const orphan = sh(work, ["commit-tree", "-m", "orphan", tree]);
    const { q, commits } = await receiveAll(packOf(orphan), orphan);
    try {
      expect((await changedPaths(hub, q, commits)).paths).toEqual(["only.txt"]);
    } finally {
      await q.dispose();
    }
  });

  it("a clean merge of trunk contributes nothing of trunk's; an evil merge contributes what it made up", async () => {
    sh(work, ["checkout", "-q", "-b", "seat-merge", base]);
    const own = commit("seat work", { "src/seat.txt": "seat\n" });
    sh(work, ["merge", "-q", "--no-edit", "--no-ff", trunk]);
    const merge = sh(work, ["rev-parse", "HEAD"]);
    const { q, commits } = await receiveAll(packOf(merge, [base, trunk]), merge);
    try {
      expect(commits).toEqual([own, merge]);
      const changed = await changedPaths(hub, q, commits);
      expect(changed.paths).toEqual(["src/seat.txt"]);
      expect(changed.commits[1]).toEqual({ oid: merge, paths: [] });
    } finally {
      await q.dispose();
    }

    sh(work, ["checkout", "-q", "-b", "seat-evil", own]);
    sh(work, ["merge", "-q", "--no-commit", "--no-ff", trunk]);
    writeFileSync(join(work, "trunk.txt"), "rewritten by the merge\n");
    sh(work, ["add", "trunk.txt"]);
    sh(work, ["mv", "README.md", "README-moved.md"]);
    sh(work, ["commit", "-q", "--no-edit"]);
    const evil = sh(work, ["rev-parse", "HEAD"]);
    const { q: q2, commits: commits2 } = await receiveAll(packOf(evil, [base, trunk]), evil);
    try {
      const changed = await changedPaths(hub, q2, commits2);
      const merged = changed.commits.find((entry) => entry.oid === evil);
      // trunk-only.txt came from trunk unchanged; trunk.txt and the rename are the merge's own.
      expect(merged?.paths).toEqual(["README-moved.md", "README.md", "trunk.txt"]);
      expect(changed.paths).not.toContain("trunk-only.txt");
    } finally {
      await q2.dispose();
    }
  });
});

describe("migrateAndUpdate", () => {
  it("moves a ref only from where the push said it was", async () => {
    sh(work, ["checkout", "-q", "-b", "cas", base]);
    const first = commit("first", { "cas/1.txt": "1\n" });
    const second = commit("second", { "cas/2.txt": "2\n" });
    const ref = "refs/heads/seat/alice/cas";
    const { q } = await receiveAll(packOf(second, [base]), second);
    try {
      await migrateAndUpdate(hub, q, ref, first, "");
      await expect(migrateAndUpdate(hub, q, ref, second, "")).rejects.toBeInstanceOf(RefMoved);
      await expect(migrateAndUpdate(hub, q, ref, second, base)).rejects.toBeInstanceOf(RefMoved);
      expect(await readRef(hub, ref)).toBe(first);
      await migrateAndUpdate(hub, q, ref, second, first);
      expect(await readRef(hub, ref)).toBe(second);
      await expect(migrateAndUpdate(hub, undefined, ref, "", first)).rejects.toBeInstanceOf(RefMoved);
      await migrateAndUpdate(hub, undefined, ref, "", second);
      expect(await readRef(hub, ref)).toBeUndefined();
      await expect(migrateAndUpdate(hub, undefined, "refs/heads/bad..name", second, "")).rejects.toThrow(/not a valid ref name/);
    } finally {
      await q.dispose();
    }
    expect(() => sh(hub, ["fsck", "--strict", "--no-dangling"])).not.toThrow();
  });

  it("leaves the quarantine whole: a second ref of the same push is checked against what the pack carried", async () => {
    // One push of two refs, the second built on the first (git push teamd a b).
    sh(work, ["checkout", "-q", "-b", "multi", base]);
    const first = commit("multi first", { "multi/1.txt": "1\n" });
    const second = commit("multi second", { "multi/2.txt": "2\n" });
    const { q } = await receiveAll(packOf(second, [base]), second);
    try {
      expect(await newCommits(hub, q, first, { readable: [base] })).toEqual([first]);
      await migrateAndUpdate(hub, q, "refs/heads/seat/alice/multi-a", first, "");
      // The first ref's objects are in the hub now, and still in the quarantine for the second.
      // What the first ref landed the seat may read (daemon/seat/git.ts adds it): the second lists its own commit alone.
      expect(await newCommits(hub, q, second, { readable: [base, first] })).toEqual([second]);
      await migrateAndUpdate(hub, q, "refs/heads/seat/alice/multi-b", second, "");
      expect(await readRef(hub, "refs/heads/seat/alice/multi-b")).toBe(second);
    } finally {
      await q.dispose();
    }
    expect(existsSync(q.dir)).toBe(false);
    expect(hubHas(first) && hubHas(second)).toBe(true);
    expect(() => sh(hub, ["fsck", "--strict", "--no-dangling"])).not.toThrow();
  });

  it("still refuses, on the second ref of a push, an object the pack did not carry and the pusher was never served", async () => {
    sh(work, ["checkout", "-q", "-b", "bob-only", base]);
    const bobTip = commit("bob's", { "bob/key.txt": "bob only\n" });
    sh(work, ["push", "-q", hub, "bob-only"]);
    const blob = sh(work, ["rev-parse", `${bobTip}:bob/key.txt`]);
    sh(work, ["checkout", "-q", "-b", "taker", base]);
    const first = commit("taker first", { "taker/1.txt": "1\n" });
    const tree = sh(work, ["mktree"], `040000 tree ${sh(work, ["rev-parse", `${first}^{tree}`])}\tbase\n100644 blob ${blob}\ttaken.txt\n`);
    const taken = sh(work, ["commit-tree", "-p", first, "-m", "take", tree]);
    // The first ref's objects and the second's commit and tree: the blob is named, never sent.
    const firstObjects = sh(work, ["rev-list", "--objects", "--no-object-names", first, `^${base}`]);
    const pack = shBuffer(work, ["pack-objects", "--stdout", "-q"], `${firstObjects}\n${taken}\n${tree}\n`);
    const q = await receivePack(hub, pack, { quarantineRoot, maxBytes: 1024 * 1024 });
    try {
      expect(await newCommits(hub, q, first, { readable: [base] })).toEqual([first]);
      await migrateAndUpdate(hub, q, "refs/heads/seat/alice/taker", first, "");
      await expect(newCommits(hub, q, taken, { readable: [base, first] })).rejects.toThrow(unsentObject());
    } finally {
      await q.dispose();
    }
  });
});

describe("commitAncestry", () => {
  it("answers whether a hub commit is an ancestor of a pushed tip, over the quarantine, in contained git under the seat's limits", async () => {
    // A commit the hub has that the pushed line does not descend from, and a pushed line from base.
    sh(work, ["checkout", "-q", "-b", "elsewhere", base]);
    const elsewhere = commit("elsewhere", { "src/elsewhere.txt": "e\n" });
    sh(work, ["push", "-q", hub, "elsewhere"]);
    sh(work, ["checkout", "-q", "-b", "line", base]);
    commit("line 1", { "src/line.txt": "1\n" });
    const tip = commit("line 2", { "src/line.txt": "2\n" });
    const q = await receivePack(hub, packOf(tip, [base]), { quarantineRoot, maxBytes: 1024 * 1024 });
    try {
      expect(hubHas(tip)).toBe(false);
      expect(await commitAncestry(hub, q, base, tip)).toBe(true);
      expect(await commitAncestry(hub, q, elsewhere, tip)).toBe(false);
      // The seat's limits hold the walk: with 1 MiB of data git cannot run at all, so the push is
      // refused (push.pack) — git on the daemon's own account would have answered true.
      const walked = commitAncestry(hub, q, base, tip, { limits: { memoryBytes: 1024 * 1024 } });
      await expect(walked).rejects.toBeInstanceOf(PackRejected);
      await expect(walked).rejects.toThrow(/within your limits/);
    } finally {
      await q.dispose();
    }
    // A push that sent nothing: over the hub alone, contained all the same (found by an attack:
    // a push of no pack walked seat-written history with plain git).
    expect(await commitAncestry(hub, undefined, base, elsewhere)).toBe(true);
    expect(await commitAncestry(hub, undefined, elsewhere, base)).toBe(false);
    await expect(commitAncestry(hub, undefined, base, elsewhere, { limits: { memoryBytes: 1024 * 1024 } })).rejects.toThrow(/within your limits/);
  });
});

describe("servedCommit", () => {
  it("answers whether a hub commit is reachable from the tips the seat may read, in contained git under its limits (failing closed)", async () => {
    sh(work, ["checkout", "-q", "-b", "served", base]);
    const served = commit("served", { "src/served.txt": "s\n" });
    sh(work, ["push", "-q", hub, "served"]);
    expect(await servedCommit(hub, base, [served])).toBe(true);
    expect(await servedCommit(hub, served, [served])).toBe(true);
    expect(await servedCommit(hub, served, [base])).toBe(false);
    expect(await servedCommit(hub, served, [])).toBe(false);
    // Not a commit (its tree), and not there at all.
    expect(await servedCommit(hub, sh(work, ["rev-parse", `${served}^{tree}`]), [served])).toBe(false);
    expect(await servedCommit(hub, "0".repeat(40), [served])).toBe(false);
    // Under limits git cannot run in, the walk fails and the answer is no (plain git answered yes).
    expect(await servedCommit(hub, base, [served], { limits: { memoryBytes: 1024 * 1024 } })).toBe(false);
  });
});
