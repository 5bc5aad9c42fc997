import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { builtShimBundle, teamdCodeRoot } from "../../../daemon/host/seat-layout.js";
import { ROOT } from "../../support/programs.js";

/**
 * teamd's own code is reserved (§3): the plan masks teamdCodeRoot() out of every seat. The
 * root is computed from this module's own place in the tree, so a move of the module that
 * forgets to count its folders would reserve dist/ or daemon/ instead of the package — and
 * bind node_modules and the ledger code into seats. This pins it to the package root.
 */
describe("teamdCodeRoot", () => {
  it("is the package root, holding package.json, daemon/ and node_modules/", () => {
    const root = teamdCodeRoot();
    expect(root).toBe(ROOT.replace(/\/$/, ""));
    expect((JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { name: string }).name).toBe("teamd");
    expect(existsSync(join(root, "node_modules"))).toBe(true);
    expect(builtShimBundle().startsWith(join(root, "dist") + "/")).toBe(true);
  });
});
