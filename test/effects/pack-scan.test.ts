import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { deflateSync } from "node:zlib";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scanPack, type PackBounds } from "../../src/effects/pack-scan.js";
import { GIT_TEST_ENV, sh } from "../support/git-cli.js";
import { BOMB_SCRIPT } from "../support/pack-bomb.js";

/**
 * The pack header scan on packs made by real git (pack-objects, with real OFS and REF
 * deltas) and on a delta bomb (test/support/pack-bomb.ts) that real git accepts: each
 * bound refuses what crosses it, and what git itself would take passes.
 */
let root: string;
let work: string;
let bomb: string;

const BOUNDS: PackBounds = { maxObjects: 1000, maxObjectBytes: 64 * 1024 * 1024, maxTotalBytes: 256 * 1024 * 1024 };

function gitBuffer(args: readonly string[], input?: string): Buffer {
  return execFileSync("git", args, { cwd: work, env: GIT_TEST_ENV, input, stdio: ["pipe", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
}

function packFile(name: string, bytes: Buffer): string {
  const path = join(root, name);
  writeFileSync(path, bytes);
  return path;
}

/** git's own verdict on a pack: index-pack in a fresh bare repository. */
function gitAccepts(path: string): boolean {
  const bare = join(root, `bare-${Math.random().toString(36).slice(2)}`);
  execFileSync("git", ["init", "-q", "--bare", bare], { env: GIT_TEST_ENV });
  try {
    execFileSync("git", ["--git-dir", bare, "index-pack", "--strict", "--stdin"], {
      input: readFileSync(path),
      env: GIT_TEST_ENV,
      stdio: ["pipe", "pipe", "pipe"],
    });
    return true;
  } catch {
    return false;
  }
}

function bombPack(resultBytes: number, oids: readonly string[] = []): Buffer {
  return execFileSync("node", [bomb, "pack", String(resultBytes), ...oids], { cwd: work, env: GIT_TEST_ENV, maxBuffer: 64 * 1024 * 1024 });
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "teamd-pack-scan-"));
  work = join(root, "work");
  mkdirSync(work);
  sh(work, ["init", "-q", "-b", "main"]);
  bomb = join(root, "bomb.cjs");
  writeFileSync(bomb, BOMB_SCRIPT);
  // A file edited a little in each commit: pack-objects stores most versions as deltas.
  let text = Array.from({ length: 2000 }, (_, i) => `line ${i} of a file that changes a little each time\n`).join("");
  for (let i = 0; i < 5; i++) {
    text = text.replace(`line ${i * 100} `, `LINE ${i * 100} `);
    writeFileSync(join(work, "big.txt"), text);
    writeFileSync(join(work, `small-${i}.txt`), `small ${i}\n`);
    sh(work, ["add", "-A"]);
    sh(work, ["commit", "-q", "-m", `commit ${i}`]);
  }
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("scanPack", () => {
  it("passes a normal pack made by git, with OFS deltas, counting its objects", async () => {
    const pack = packFile("normal.pack", gitBuffer(["pack-objects", "--revs", "--stdout", "-q", "--delta-base-offset"], "HEAD\n"));
    const objects =
      Number(sh(work, ["rev-list", "--objects", "--count", "HEAD"]).trim()) || Number(sh(work, ["rev-list", "--objects", "HEAD"]).split("\n").length);
    const scan = await scanPack(pack, BOUNDS);
    expect(scan).toMatchObject({ ok: true });
    if (!scan.ok) return;
    expect(scan.objects).toBe(objects);
    expect(scan.deltas).toBeGreaterThan(0);
    expect(gitAccepts(pack)).toBe(true);
  });

  it("passes a pack with REF deltas (no --delta-base-offset)", async () => {
    const pack = packFile("ref.pack", gitBuffer(["pack-objects", "--revs", "--stdout", "-q"], "HEAD\n"));
    const scan = await scanPack(pack, BOUNDS);
    expect(scan).toMatchObject({ ok: true });
    if (scan.ok) expect(scan.deltas).toBeGreaterThan(0);
  });

  it("refuses an object count over the bound, and a declared object size over it", async () => {
    const pack = packFile("normal2.pack", gitBuffer(["pack-objects", "--revs", "--stdout", "-q", "--delta-base-offset"], "HEAD\n"));
    expect(await scanPack(pack, { ...BOUNDS, maxObjects: 3 })).toMatchObject({ ok: false, rule: "push.pack-objects" });
    // big.txt is ~110 KB whole: a bound below it refuses the pack.
    expect(await scanPack(pack, { ...BOUNDS, maxObjectBytes: 50_000 })).toMatchObject({ ok: false, rule: "push.object-size" });
    expect(await scanPack(pack, { ...BOUNDS, maxTotalBytes: 100_000 })).toMatchObject({ ok: false, rule: "push.object-size" });
  });

  it("refuses a 1 GiB delta bomb of a few kilobytes, which git itself would accept (shown at 1 MiB)", async () => {
    const small = packFile("bomb-1m.pack", bombPack(1 << 20));
    expect(gitAccepts(small)).toBe(true); // control: the builder makes a pack git takes
    expect(await scanPack(small, BOUNDS)).toMatchObject({ ok: true, objects: 2, deltas: 1, totalBytes: (1 << 20) + 65536 });
    const big = bombPack(1 << 30);
    expect(big.length).toBeLessThan(32 * 1024);
    const scan = await scanPack(packFile("bomb-1g.pack", big), BOUNDS);
    expect(scan).toMatchObject({ ok: false, rule: "push.object-size" });
    if (!scan.ok) expect(scan.reason).toContain(String(1 << 30));
  });

  it("refuses many deltas whose results sum past the pack's bound though each is under the object bound", async () => {
    const pack = packFile("bomb-32m.pack", bombPack(32 << 20));
    expect(await scanPack(pack, { ...BOUNDS, maxTotalBytes: 16 << 20 })).toMatchObject({ ok: false, rule: "push.object-size" });
    expect(await scanPack(pack, BOUNDS)).toMatchObject({ ok: true });
  });

  it("never reads the checksum as an object: a count one too large is push.pack whatever the checksum's bytes declare", async () => {
    const good = gitBuffer(["pack-objects", "--revs", "--stdout", "-q", "--delta-base-offset"], "HEAD\n");
    const count = good.readUInt32BE(8);
    // A checksum whose bytes, read as a header, declare a 1 GiB blob (type 3, size varint 2^30).
    const lying = Buffer.concat([Buffer.from([0xb0, 0x80, 0x80, 0x80, 0x40]), Buffer.alloc(15, 0x11)]);
    const header = Buffer.from(good.subarray(0, 12));
    header.writeUInt32BE(count + 1, 8);
    const pack = Buffer.concat([header, good.subarray(12, good.length - 20), lying]);
    const scan = await scanPack(packFile("count-over-lying-checksum.pack", pack), BOUNDS);
    expect(scan).toMatchObject({ ok: false, rule: "push.pack" });
    if (!scan.ok) expect(scan.reason).toContain(`ends before object ${count + 1} of ${count + 1}`);
  });

  it("refuses truncated, padded and corrupt packs as push.pack", async () => {
    const good = gitBuffer(["pack-objects", "--revs", "--stdout", "-q", "--delta-base-offset"], "HEAD\n");
    const cases: [string, Buffer][] = [
      ["empty", Buffer.alloc(0)],
      ["not a pack", Buffer.from("GARBAGE-GARBAGE-GARBAGE-GARBAGE")],
      ["version 4", Buffer.concat([good.subarray(0, 4), Buffer.from([0, 0, 0, 4]), good.subarray(8)])],
      ["header only", good.subarray(0, 12)],
      ["truncated in the middle", good.subarray(0, Math.floor(good.length / 2))],
      ["truncated checksum", good.subarray(0, good.length - 5)],
      ["trailing bytes", Buffer.concat([good, Buffer.from("extra")])],
      ["count larger than the objects", Buffer.concat([good.subarray(0, 8), Buffer.from([0, 0, 0, 200]), good.subarray(12)])],
      ["an object of type 5", Buffer.concat([good.subarray(0, 12), Buffer.from([((good[12] as number) & 0x8f) | 0x50]), good.subarray(13)])],
      ["the corrupt pack of seat-git.test.ts", Buffer.concat([Buffer.from("PACK\0\0\0\x02\0\0\0\x01", "binary"), Buffer.alloc(64, 0xab)])],
    ];
    for (const [name, bytes] of cases) {
      const scan = await scanPack(packFile(`corrupt-${name.replace(/\W+/g, "-")}.pack`, bytes), BOUNDS);
      expect(scan, name).toMatchObject({ ok: false, rule: "push.pack" });
    }
  });

  it("scans a pack of many small objects at git's pace (each read from the buffered window, not the file)", async () => {
    const many = join(root, "many");
    mkdirSync(many);
    sh(many, ["init", "-q", "-b", "main"]);
    const blobs = execFileSync("git", ["hash-object", "-w", "--stdin-paths"], {
      cwd: many,
      env: GIT_TEST_ENV,
      input: Array.from({ length: 5000 }, (_, i) => {
        const path = join(many, `f${i}`);
        writeFileSync(path, `file ${i} ${"x".repeat(i % 300)}\n`);
        return path;
      }).join("\n"),
    })
      .toString("utf8")
      .trim()
      .split("\n");
    const pack = packFile(
      "many.pack",
      execFileSync("git", ["pack-objects", "--stdout", "-q"], { cwd: many, env: GIT_TEST_ENV, input: blobs.join("\n") + "\n", maxBuffer: 64 * 1024 * 1024 }),
    );
    const started = Date.now();
    const scan = await scanPack(pack, { ...BOUNDS, maxObjects: 10_000 });
    expect(scan).toMatchObject({ ok: true, objects: 5000 });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("refuses a huge declared count without reading the objects", async () => {
    const good = gitBuffer(["pack-objects", "--revs", "--stdout", "-q"], "HEAD\n");
    const lying = Buffer.concat([good.subarray(0, 8), Buffer.from([0xff, 0xff, 0xff, 0xff]), good.subarray(12)]);
    expect(await scanPack(packFile("lying.pack", lying), BOUNDS)).toMatchObject({ ok: false, rule: "push.pack-objects" });
  });

  it("holds what the scan inflates, a delta's own data too, to the pack's total before it inflates it (found by an attack: 64 deltas of 64 MiB of zeros, a 4 MB pack, were 4 GiB inflated)", async () => {
    // REF_DELTAs whose data declares 8 MiB each: the sizes 0 and 0, then zeros (~8 KB deflated).
    const data = deflateSync(Buffer.concat([Buffer.from([0, 0]), Buffer.alloc(8 * 1024 * 1024 - 2)]), { level: 9 });
    const header = (size: number) => {
      const bytes = [(7 << 4) | (size & 15)];
      for (let rest = Math.floor(size / 16); rest > 0; rest = Math.floor(rest / 128)) {
        bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) | 0x80;
        bytes.push(rest & 0x7f);
      }
      return Buffer.from(bytes);
    };
    const object = Buffer.concat([header(8 * 1024 * 1024), Buffer.alloc(20, 0x11), data]);
    const body = Buffer.concat([Buffer.from("PACK"), Buffer.from([0, 0, 0, 2, 0, 0, 0, 8]), ...Array.from({ length: 8 }, () => object)]);
    const pack = packFile("delta-data.pack", Buffer.concat([body, createHash("sha1").update(body).digest()]));
    // 8 x 8 MiB of data against a total of 20 MiB: refused at the third, before it is inflated.
    expect(await scanPack(pack, { ...BOUNDS, maxTotalBytes: 20 * 1024 * 1024 })).toMatchObject({
      ok: false,
      rule: "push.object-size",
      reason: expect.stringMatching(/data declare more than 20971520 bytes in all \(by object 3 of 8\)/),
    });
    // Within the total, the same pack passes the scan (its deltas' bases are index-pack's to find).
    expect(await scanPack(pack, BOUNDS)).toMatchObject({ ok: true, objects: 8, deltas: 8 });
  });
});
