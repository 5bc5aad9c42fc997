import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { removeSeatTree } from "../../../daemon/lifecycle/remove-tree.js";
import { makeTempHome } from "../../support/programs.js";

/**
 * A seat's per-run tmp removed at its stop (issue 22; attacks in test/escape/seat-output.test.ts):
 * a folder the seat locked (mode 000: as the daemon's own uid, in user mode, it blocks the
 * removal; as root it does not) and links to host files, none followed.
 */
describe("removeSeatTree", () => {
  let tmp: { dir: string; remove(): Promise<void> };
  beforeEach(async () => {
    tmp = await makeTempHome("teamd-rmtree-");
  });
  afterEach(async () => {
    await tmp.remove();
  });

  it("removes a tree with a locked folder and links out of it, following none of them", async () => {
    const tree = join(tmp.dir, "tmp");
    const outside = join(tmp.dir, "outside");
    mkdirSync(join(tree, "locked", "inner"), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(outside, "keep"), "keep\n");
    writeFileSync(join(tree, "locked", "f"), "x\n");
    symlinkSync(outside, join(tree, "dir-link"));
    symlinkSync(join(outside, "keep"), join(tree, "locked", "file-link"));
    chmodSync(join(tree, "locked"), 0o000);
    await removeSeatTree(tree);
    expect(existsSync(tree)).toBe(false);
    expect(readFileSync(join(outside, "keep"), "utf8")).toBe("keep\n");
  });

  it("is quiet about a tree that is not there", async () => {
    await expect(removeSeatTree(join(tmp.dir, "absent"))).resolves.toBeUndefined();
  });
});
