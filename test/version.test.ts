import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TEAMD_VERSION } from "../src/rpc/index.js";
import { ROOT } from "./support/programs.js";

describe("release version", () => {
  it("reported by the handshake equals package.json's", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
    expect(TEAMD_VERSION).toBe(pkg.version);
  });
});
