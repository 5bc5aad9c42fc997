import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../support/programs.js";

/** docs/cli-reference.md is generated from the programs' --help and must match them (no drift). */
describe("docs/cli-reference.md", () => {
  it("matches what teamd and teamd-shim say about themselves", () => {
    const r = spawnSync(process.execPath, [join(ROOT, "dist/scripts/cli-reference.js"), "--check"], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
  });
});
