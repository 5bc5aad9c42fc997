import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { symbolicHead } from "../../src/effects/git.js";
import { GIT_TEST_ENV } from "../support/git-cli.js";

/** symbolicHead reads HEAD's plain `ref:` line itself and asks git about anything else: real repositories, git as the reference. */
const root = mkdtempSync(join(tmpdir(), "teamd-git-head-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
function repo(branch = "main"): string {
  const dir = join(root, `r${n++}.git`);
  execFileSync("git", ["init", "-q", "--bare", "-b", branch, dir], { env: GIT_TEST_ENV });
  return dir;
}
const gitSays = (dir: string) => execFileSync("git", ["--git-dir", dir, "symbolic-ref", "HEAD"], { env: GIT_TEST_ENV, encoding: "utf8" }).trim();

describe("symbolicHead", () => {
  it.each(["main", "trunk", "seat/w1/fix", "release-1.2_x"])("names the branch git names: %s", async (branch) => {
    const dir = repo(branch);
    expect(await symbolicHead(dir)).toBe(`refs/heads/${branch}`);
    expect(await symbolicHead(dir)).toBe(gitSays(dir));
  });

  it("a HEAD that is not a plain branch line is git's to answer: detached, reftable's placeholder, a name git refuses", async () => {
    const detached = repo();
    writeFileSync(join(detached, "HEAD"), `${"a".repeat(40)}\n`);
    await expect(symbolicHead(detached)).rejects.toThrow();
    for (const name of [".invalid", "..x", "a.lock", "x/.hidden", "a//b", "a b"]) {
      const odd = repo();
      writeFileSync(join(odd, "HEAD"), `ref: refs/heads/${name}\n`);
      let git: string | Error;
      try {
        git = gitSays(odd);
      } catch (error) {
        git = error as Error;
      }
      if (git instanceof Error) await expect(symbolicHead(odd)).rejects.toThrow();
      else expect(await symbolicHead(odd)).toBe(git);
    }
  });

  it("a HEAD that is a link is not followed by the read: git answers", async () => {
    const dir = repo();
    const elsewhere = join(root, "elsewhere-HEAD");
    writeFileSync(elsewhere, "ref: refs/heads/from-a-link\n");
    rmSync(join(dir, "HEAD"));
    symlinkSync(elsewhere, join(dir, "HEAD"));
    let git: string | undefined;
    try {
      git = gitSays(dir);
    } catch {
      git = undefined;
    }
    if (git === undefined) await expect(symbolicHead(dir)).rejects.toThrow();
    else expect(await symbolicHead(dir)).toBe(git);
  });
});
