import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { indexNames, quarantinedObjects } from "../../src/effects/pack-index.js";
import { GIT_TEST_ENV, sh } from "../support/git-cli.js";

/**
 * The in-line reader of a quarantine's pack index against git's own answer (`show-index` and
 * `cat-file` over the same folder), on packs real git wrote; and every shape it does not
 * recognise — a folder git could answer differently for, an index it cannot vouch for — is
 * left to git (undefined), never answered.
 */
let root: string;
let work: string;
let objects: string;
let held: string[];
let absent: string[];
let indexFile: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "teamd-pack-index-"));
  work = join(root, "work");
  sh(root, ["init", "-q", "-b", "main", work]);
  for (let i = 0; i < 30; i++) {
    writeFileSync(join(work, `f${i}.txt`), `file ${i}\n`.repeat(i + 1));
    sh(work, ["add", "-A"]);
    sh(work, ["commit", "-qm", `c${i}`]);
  }
  // The quarantine's shape: objects/pack with the one pack index-pack writes.
  objects = join(root, "q", "objects");
  mkdirSync(join(objects, "pack"), { recursive: true });
  const pack = execFileSync("git", ["pack-objects", "--revs", "--stdout", "-q"], { cwd: work, env: GIT_TEST_ENV, input: "HEAD~10\n" });
  execFileSync("git", ["index-pack", "--stdin"], { cwd: work, env: { ...GIT_TEST_ENV, GIT_OBJECT_DIRECTORY: objects }, input: pack });
  indexFile = join(objects, "pack", readdirSync(join(objects, "pack")).find((name) => name.endsWith(".idx")) ?? "");
  held = execFileSync("git", ["show-index"], { input: readFileSync(indexFile), encoding: "utf8" })
    .trim()
    .split("\n")
    .map((line) => line.split(" ")[1] ?? "");
  const all = sh(work, ["rev-list", "--objects", "--no-object-names", "--all"]).split("\n");
  absent = all.filter((oid) => !held.includes(oid));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("quarantinedObjects", () => {
  it("answers as git does for every object of the repository, held or not", async () => {
    expect(held.length).toBeGreaterThan(30);
    expect(absent.length).toBeGreaterThan(10);
    const reader = await quarantinedObjects(objects);
    expect(reader).toBeDefined();
    const gitSays = execFileSync("git", ["cat-file", "--batch-check=%(objectname)"], {
      cwd: work,
      env: { ...GIT_TEST_ENV, GIT_OBJECT_DIRECTORY: objects },
      input: [...held, ...absent].join("\n") + "\n",
      encoding: "utf8",
    });
    const missing = new Set(
      gitSays
        .split("\n")
        .filter((line) => line.endsWith(" missing"))
        .map((line) => line.split(" ")[0]),
    );
    for (const oid of [...held, ...absent]) expect(reader?.has(oid), oid).toBe(!missing.has(oid));
    // Not an id, or not one of SHA-1's length: never held.
    expect(reader?.has("HEAD")).toBe(false);
    expect(reader?.has(held[0]?.toUpperCase() ?? "")).toBe(false);
    expect(reader?.has(`${held[0] ?? ""}00`)).toBe(false);
  });

  it("leaves to git a folder it could answer differently for: a loose object, a second pack, a .keep, no pack", async () => {
    const shapes: [string, (dir: string) => void][] = [
      ["a loose object", (dir) => mkdirSync(join(dir, "ab"))],
      ["an info folder", (dir) => mkdirSync(join(dir, "info"))],
      ["a second index", (dir) => copyFileSync(indexFile, join(dir, "pack", `pack-${"0".repeat(40)}.idx`))],
      ["a .keep", (dir) => writeFileSync(join(dir, "pack", `${indexFile.split("/").at(-1)?.slice(0, -4)}.keep`), "")],
      ["no pack beside the index", (dir) => rmSync(join(dir, "pack", `${indexFile.split("/").at(-1)?.slice(0, -4)}.pack`))],
      ["no index", (dir) => rmSync(join(dir, "pack", indexFile.split("/").at(-1) ?? ""))],
    ];
    for (const [name, change] of shapes) {
      const copy = join(root, `shape-${shapes.findIndex(([n]) => n === name)}`, "objects");
      mkdirSync(join(copy, ".."));
      execFileSync("cp", ["-a", objects, join(copy, "..")], { stdio: "ignore" });
      change(copy);
      expect(await quarantinedObjects(copy), name).toBeUndefined();
    }
    expect(await quarantinedObjects(join(root, "nowhere"))).toBeUndefined();
  });
});

describe("indexNames", () => {
  const bytes = () => readFileSync(indexFile);

  it("reads the names table of git's index", () => {
    const names = indexNames(bytes());
    expect(names?.length).toBe(held.length * 20);
    expect(Array.from({ length: held.length }, (_, i) => names?.subarray(i * 20, i * 20 + 20).toString("hex"))).toEqual([...held].sort());
  });

  it("vouches for no index it cannot check: wrong magic or version, a fan-out that falls or disagrees with the names, names out of order, a short file", () => {
    const count = held.length;
    const cases: [string, (b: Buffer) => Buffer][] = [
      ["magic", (b) => (b.writeUInt32BE(0x12345678, 0), b)],
      ["version 1", (b) => (b.writeUInt32BE(1, 4), b)],
      ["a falling fan-out", (b) => (b.writeUInt32BE(count + 5, 8 + 100 * 4), b)],
      [
        "a fan-out that disagrees with the names (still ascending)",
        (b) => {
          const at = Array.from({ length: 255 }, (_, i) => i).find((i) => b.readUInt32BE(8 + i * 4) < b.readUInt32BE(12 + i * 4)) ?? 0;
          b.writeUInt32BE(b.readUInt32BE(8 + at * 4) + 1, 8 + at * 4);
          return b;
        },
      ],
      ["a count past the file", (b) => (b.writeUInt32BE(count * 1000, 8 + 255 * 4), b)],
      [
        "names out of order",
        (b) => {
          const first = Buffer.from(b.subarray(1032, 1052));
          b.copy(b, 1032, 1052, 1072);
          first.copy(b, 1052);
          return b;
        },
      ],
      ["a repeated name", (b) => (b.copy(b, 1052, 1032, 1052), b)],
      ["truncated", (b) => b.subarray(0, 1032 + count * 20)],
      ["empty", () => Buffer.alloc(0)],
    ];
    for (const [name, corrupt] of cases) expect(indexNames(corrupt(bytes())), name).toBeUndefined();
    // Control: the untouched file is read.
    expect(indexNames(bytes())).toBeDefined();
  });
});
