import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import type * as FsPromises from "node:fs/promises";

/**
 * storeUsage reads a store's packs a few at a time (PACKS_AT_ONCE), never all at once: a hub holds
 * hundreds of packs (each landed push adds one), and all their reads queued on node's four I/O
 * threads at once held up every other seat's file work behind them (found by an attack on issue
 * 26's twenty-fourth round: another seat's pushes 4-8 times slower while one seat pushed nothing
 * in a loop). node:fs/promises is wrapped here to count the reads in flight; the files are real.
 */
const inFlight = vi.hoisted(() => ({ now: 0, most: 0 }));
vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof FsPromises>();
  const counted =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      inFlight.now += 1;
      inFlight.most = Math.max(inFlight.most, inFlight.now);
      try {
        return await call(...args);
      } finally {
        inFlight.now -= 1;
      }
    };
  return { ...real, lstat: counted(real.lstat), open: counted(real.open) };
});

const { PACKS_AT_ONCE, storeUsage } = await import("../../src/effects/store-usage.js");

const root = mkdtempSync(join(tmpdir(), "teamd-store-pool-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A version 2 index's header: its magic, version 2 and a fan-out whose last entry is `objects`. */
function indexHeader(objects: number): Buffer {
  const header = Buffer.alloc(8 + 256 * 4);
  header.writeUInt32BE(0xff744f63, 0);
  header.writeUInt32BE(2, 4);
  for (let i = 0; i < 256; i++) header.writeUInt32BE(Math.floor((objects * (i + 1)) / 256), 8 + i * 4);
  return header;
}

describe("storeUsage over many packs", () => {
  it("counts them all, with at most a few packs' reads in flight at once", async () => {
    const store = join(root, "hub.git");
    mkdirSync(join(store, "objects", "pack"), { recursive: true });
    mkdirSync(join(store, "objects", "info"));
    let objects = 0;
    let bytes = 0;
    for (let i = 0; i < 300; i++) {
      const name = `pack-${i.toString(16).padStart(40, "0")}`;
      writeFileSync(join(store, "objects", "pack", `${name}.idx`), indexHeader(i + 1));
      writeFileSync(join(store, "objects", "pack", `${name}.pack`), Buffer.alloc(100 + i));
      objects += i + 1;
      bytes += 100 + i;
    }
    inFlight.most = 0;
    expect(await storeUsage(store)).toEqual({ objects, bytes });
    // A pack's lstat beside its index's open: two reads a pack.
    expect(inFlight.most).toBeGreaterThan(1);
    expect(inFlight.most).toBeLessThanOrEqual(2 * PACKS_AT_ONCE);
  });
});
