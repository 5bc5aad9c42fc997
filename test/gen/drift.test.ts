import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { ROOT } from "../support/programs.js";

/**
 * src/gen/ is committed and never edited. Regenerate into a temp directory with the same
 * buf config and local plugin, and require byte equality: a .proto changed without
 * `npm run gen` (or a hand edit of src/gen/) fails here.
 */
const BUF = join(ROOT, "node_modules/.bin/buf");
const PATH = `${join(ROOT, "node_modules/.bin")}:${process.env.PATH ?? ""}`;

function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

describe("generated code", () => {
  it("is lint-clean protobuf (buf lint)", () => {
    execFileSync(BUF, ["lint"], { cwd: ROOT, env: { ...process.env, PATH }, stdio: "pipe" });
  });

  it("matches what `npm run gen` produces from proto/", () => {
    const out = mkdtempSync(join(tmpdir(), "teamd-gen-"));
    try {
      execFileSync(BUF, ["generate", "-o", out], { cwd: ROOT, env: { ...process.env, PATH }, stdio: "pipe" });
      const fresh = join(out, "src/gen");
      const committed = join(ROOT, "src/gen");
      expect(listFiles(committed), "files in src/gen/ differ from a fresh `npm run gen`").toEqual(listFiles(fresh));
      for (const file of listFiles(fresh)) {
        const same = readFileSync(join(fresh, file)).equals(readFileSync(join(committed, file)));
        expect(same, `src/gen/${file} is stale: run \`npm run gen\` and commit the result`).toBe(true);
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
