import { existsSync, lstatSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareQuarantineRoot, sweepQuarantineRoot, withReplayFolder } from "../../src/effects/push-replay.js";

/**
 * The daemon-side folders a seat's push passes through (src/effects/push-replay.ts), on real
 * temp folders: owner-only, named by the caller's id, and gone once the work settles, whether
 * it returned or threw.
 */
let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "teamd-push-replay-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const mode = (path: string): number => lstatSync(path).mode & 0o777;

describe("prepareQuarantineRoot", () => {
  it("makes the root and its missing parents owner-only, and is idempotent", async () => {
    const quarantine = join(root, "q1", "git", "quarantine");
    await prepareQuarantineRoot(quarantine);
    expect(mode(quarantine)).toBe(0o700);
    expect(mode(join(root, "q1", "git"))).toBe(0o700);
    writeFileSync(join(quarantine, "kept"), "x");
    await prepareQuarantineRoot(quarantine);
    expect(readdirSync(quarantine)).toEqual(["kept"]);
  });
});

describe("sweepQuarantineRoot", () => {
  it("removes what a stopped daemon left (a quarantine, a replay folder, a scratch index), following no link; a missing root is nothing to do", async () => {
    const quarantine = join(root, "q-sweep");
    const outside = join(root, "outside");
    mkdirSync(join(outside, "keep"), { recursive: true });
    writeFileSync(join(outside, "keep", "file"), "x");
    mkdirSync(join(quarantine, "push-abc", "objects", "pack"), { recursive: true });
    writeFileSync(join(quarantine, "push-abc", "incoming.pack"), "PACK");
    mkdirSync(join(quarantine, "replay-1", "pack"), { recursive: true });
    writeFileSync(join(quarantine, "index-2"), "");
    symlinkSync(outside, join(quarantine, "push-link"));
    expect((await sweepQuarantineRoot(quarantine)).sort()).toEqual(["index-2", "push-abc", "push-link", "replay-1"]);
    expect(readdirSync(quarantine)).toEqual([]);
    expect(existsSync(join(outside, "keep", "file"))).toBe(true);
    expect(await sweepQuarantineRoot(join(root, "never-made"))).toEqual([]);
  });
});

describe("withReplayFolder", () => {
  it("hands the work replay-<id>/ with an empty pack/, owner only, and removes it after", async () => {
    const quarantine = join(root, "q2");
    let seen = "";
    const result = await withReplayFolder(quarantine, "fixed-id", async (out) => {
      seen = out;
      expect(out).toBe(join(quarantine, "replay-fixed-id"));
      expect(readdirSync(out)).toEqual(["pack"]);
      expect([mode(quarantine), mode(out), mode(join(out, "pack"))]).toEqual([0o700, 0o700, 0o700]);
      writeFileSync(join(out, "pack", "pack-x.pack"), "objects");
      return { result: "done" as const };
    });
    expect(result).toEqual({ result: "done" });
    expect(existsSync(seen)).toBe(false);
    expect(readdirSync(quarantine)).toEqual([]);
  });

  it("removes the folder when the work throws, and rethrows", async () => {
    const quarantine = join(root, "q3");
    await expect(
      withReplayFolder(quarantine, "boom", async (out) => {
        writeFileSync(join(out, "pack", "partial"), "x");
        throw new Error("replay failed");
      }),
    ).rejects.toThrow("replay failed");
    expect(readdirSync(quarantine)).toEqual([]);
  });

  it("keeps two pushes' folders apart by their ids", async () => {
    const quarantine = join(root, "q4");
    await withReplayFolder(quarantine, "a", async (a) => {
      await withReplayFolder(quarantine, "b", async (b) => {
        expect(readdirSync(quarantine).sort()).toEqual(["replay-a", "replay-b"]);
        expect(a).not.toBe(b);
      });
      expect(readdirSync(quarantine)).toEqual(["replay-a"]);
    });
  });
});
