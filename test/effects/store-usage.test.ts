import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seatStorage } from "../../src/effects/git-storage.js";
import { storeUsage } from "../../src/effects/store-usage.js";
import { sh } from "../support/git-cli.js";

/**
 * The in-line bound of an object store against git's own walks on real repositories: never
 * below what `rev-list --count --objects` and `--disk-usage` find for any set of refs (so a
 * quota that the bound passes, the walk passes); the whole store's count as git counts it; and
 * no answer where the bound would not be certain. Then seatStorage: the bound only where the
 * caller says it is enough, and the walk's exact figures otherwise.
 */
let root: string;
let fresh = 0;

function hubWith(pushes: readonly { seat: string; files: number; pack: boolean }[]): string {
  const hub = join(root, `hub${fresh}.git`);
  const work = join(root, `work${fresh++}`);
  sh(root, ["init", "-q", "--bare", "-b", "main", hub]);
  sh(root, ["init", "-q", "-b", "main", work]);
  writeFileSync(join(work, "README"), "base\n");
  sh(work, ["add", "-A"]);
  sh(work, ["commit", "-qm", "base"]);
  sh(work, ["push", "-q", hub, "main"]);
  pushes.forEach((push, i) => {
    sh(work, ["checkout", "-q", "-B", `b${i}`, "main"]);
    for (let f = 0; f < push.files; f++) writeFileSync(join(work, `p${i}-${f}.txt`), `${i} ${f}\n`.repeat(50 + f));
    sh(work, ["add", "-A"]);
    sh(work, ["commit", "-q", "--allow-empty", "-m", `push ${i}`]);
    // The hub's receive-pack keeps a pack of at least unpackLimit objects as a pack, and unpacks a smaller one.
    sh(hub, ["config", "receive.unpackLimit", push.pack ? "1" : "100000"]);
    sh(work, ["push", "-q", hub, `HEAD:refs/heads/seat/${push.seat}/b${i}`]);
  });
  return hub;
}

function walked(hub: string, range: readonly string[]): { objects: number; bytes: number } {
  return {
    objects: Number(sh(hub, ["rev-list", "--count", "--objects", ...range])),
    bytes: Number(sh(hub, ["rev-list", "--disk-usage", "--objects", ...range])),
  };
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "teamd-store-usage-"));
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("storeUsage", () => {
  it("is never below git's walks, for the whole store or a seat's share, packed or loose (property over random hubs)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ seat: fc.constantFrom("a", "b"), files: fc.integer({ min: 0, max: 4 }), pack: fc.boolean() }), { minLength: 1, maxLength: 4 }),
        async (pushes) => {
          const hub = hubWith(pushes);
          const usage = await storeUsage(hub);
          expect(usage).toBeDefined();
          const all = walked(hub, ["--all"]);
          expect(usage?.objects).toBeGreaterThanOrEqual(all.objects);
          expect(usage?.bytes).toBeGreaterThanOrEqual(all.bytes);
          for (const seat of ["a", "b"]) {
            const share = walked(hub, [`--glob=refs/heads/seat/${seat}/*`, "--not", `--exclude=refs/heads/seat/${seat}/*`, "--glob=refs/*"]);
            expect(usage?.objects).toBeGreaterThanOrEqual(share.objects);
            expect(usage?.bytes).toBeGreaterThanOrEqual(share.bytes);
          }
          // The count is the store's as git counts it (loose and in packs), not merely large.
          const counted = Object.fromEntries(
            sh(hub, ["count-objects", "-v"])
              .split("\n")
              .map((line) => line.split(": ")),
          ) as Record<string, string>;
          expect(usage?.objects).toBe(Number(counted.count) + Number(counted["in-pack"]));
        },
      ),
      { numRuns: 12 },
    );
  }, 120_000);

  it("gives no bound where it would not be certain: alternates, a pack without its index, a link, too many loose objects", async () => {
    const cases: [string, (hub: string) => void][] = [
      ["alternates", (hub) => writeFileSync(join(hub, "objects", "info", "alternates"), `${join(root, "hub0.git", "objects")}\n`)],
      [
        "a pack without its index",
        (hub) => {
          const idx = readdirSync(join(hub, "objects", "pack")).find((name) => name.endsWith(".idx")) ?? "";
          unlinkSync(join(hub, "objects", "pack", idx));
        },
      ],
      [
        "a link among the loose objects",
        (hub) => {
          mkdirSync(join(hub, "objects", "ee"), { recursive: true });
          symlinkSync("/etc/hostname", join(hub, "objects", "ee", "0".repeat(38)));
        },
      ],
      [
        "more loose objects than it reads",
        (hub) => {
          mkdirSync(join(hub, "objects", "ef"), { recursive: true });
          for (let i = 0; i < 4097; i++) writeFileSync(join(hub, "objects", "ef", i.toString(16).padStart(38, "0")), "");
        },
      ],
    ];
    for (const [name, change] of cases) {
      const hub = hubWith([{ seat: "a", files: 2, pack: true }]);
      expect(await storeUsage(hub), `${name}: control`).toBeDefined();
      change(hub);
      expect(await storeUsage(hub), name).toBeUndefined();
    }
  }, 60_000);
});

describe("seatStorage", () => {
  it("gives the bound only where the caller says it is enough; the walk's exact figures otherwise", async () => {
    const hub = hubWith([
      { seat: "a", files: 3, pack: true },
      { seat: "b", files: 2, pack: false },
    ]);
    const prefix = "refs/heads/seat/a/";
    const exact = walked(hub, [`--glob=${prefix}*`, "--not", `--exclude=${prefix}*`, "--glob=refs/*"]);
    const usage = await storeUsage(hub);
    const walkedFigures = await seatStorage(hub, prefix);
    expect(walkedFigures).toMatchObject({ refs: 1, objects: exact.objects, bytes: exact.bytes, exact: true });
    const notEnough = await seatStorage(hub, prefix, { enough: () => false });
    expect(notEnough).toMatchObject({ objects: exact.objects, bytes: exact.bytes, exact: true });
    let offered: unknown;
    const bounded = await seatStorage(hub, prefix, {
      enough: (atMost) => {
        offered = atMost;
        return true;
      },
    });
    expect(offered).toEqual(usage);
    expect(bounded).toMatchObject({ refs: 1, objects: usage?.objects, bytes: usage?.bytes, exact: false });
    // A seat with no branch holds nothing: no bound, no walk.
    expect(await seatStorage(hub, "refs/heads/seat/none/", { enough: () => true })).toMatchObject({ refs: 0, objects: 0, bytes: 0, exact: true });
  }, 60_000);
});
