import { readdirSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withScratchIndex } from "../../src/effects/git-scratch-index.js";

/**
 * The throwaway index a file write builds its commit with (src/effects/git-scratch-index.ts),
 * on a real temp folder: named by the caller's id, gone once the work settles.
 */
let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "teamd-scratch-index-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("withScratchIndex", () => {
  it("names the index index-<id> in the scratch folder and removes it after", async () => {
    const scratch = await mkdtemp(join(root, "scratch-"));
    const commit = await withScratchIndex(scratch, "fixed-id", async (index) => {
      expect(index).toBe(join(scratch, "index-fixed-id"));
      writeFileSync(index, "an index git wrote");
      return "abc";
    });
    expect(commit).toBe("abc");
    expect(readdirSync(scratch)).toEqual([]);
  });

  it("makes the scratch folder (0700) when it is missing: a seat's first file write may come before any push", async () => {
    const scratch = join(await mkdtemp(join(root, "scratch-")), "quarantine");
    await withScratchIndex(scratch, "first", async (index) => {
      writeFileSync(index, "an index git wrote");
    });
    expect(statSync(scratch).mode & 0o777).toBe(0o700);
    expect(readdirSync(scratch)).toEqual([]);
  });

  it("removes it when the work throws, and is quiet when git never wrote one", async () => {
    const scratch = await mkdtemp(join(root, "scratch-"));
    await expect(
      withScratchIndex(scratch, "boom", async (index) => {
        writeFileSync(index, "partial");
        throw new Error("update-ref failed");
      }),
    ).rejects.toThrow("update-ref failed");
    expect(readdirSync(scratch)).toEqual([]);
    await expect(withScratchIndex(scratch, "none", async () => "no index")).resolves.toBe("no index");
  });
});
