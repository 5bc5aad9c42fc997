import { describe, expect, it, beforeAll, afterAll } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gitPathProblem, refNameProblem } from "../../src/kernel/git-names.js";

/**
 * The kernel's git-name rules (src/kernel/git-names.ts) against the git on this machine: every
 * name git refuses, the kernel refuses too, so no name the daemon lets through can make git
 * refuse inside an effect (an unknown outcome, issue 20). The kernel may refuse more (its own
 * length bounds, a broader case fold); it must never refuse less.
 */
const refs = [
  "refs/heads/main",
  "refs/heads/a..b",
  "refs/heads/a b",
  "refs/heads/a\tb",
  "refs/heads/a~b",
  "refs/heads/a^b",
  "refs/heads/a:b",
  "refs/heads/a?b",
  "refs/heads/a*b",
  "refs/heads/a[b",
  "refs/heads/a\\b",
  "refs/heads/a/",
  "refs/heads//a",
  "refs/heads/a.",
  "refs/heads/.a",
  "refs/heads/a.lock",
  "refs/heads/a.lock/b",
  "refs/heads/a@{b",
  "refs/heads/a@b",
  "refs/heads/é",
  "@",
  "main",
  "refs/heads/a\u007f",
];

const paths = [
  "src/a.txt",
  "src/.git/x",
  "src/.GIT/x",
  "src/git~1/x",
  "src/GIT~1/x",
  "src/.git./x",
  "src/.git /x",
  "src/.git::$INDEX_ALLOCATION/x",
  "src/.git:x",
  "src/.g\u200cit/x",
  "src/.git\ufeff/x",
  "src/\u200c.git/x",
  "src/.gi\u200et/x",
  "src/.g\u202ait/x",
  "src/.g\u206ait/x",
  "src/.gitx/x",
  "src/git~2/x",
  "src/.git~1/x",
  "src/a/./b",
  "src/a//b",
  "src/a/../b",
  "src/..a",
  ".gitmodules",
];

describe.runIf(process.platform === "linux")("git agrees: what git refuses, the kernel refuses", () => {
  let repo: string;
  let blob: string;
  const git = (args: string[], input?: string) => spawnSync("git", args, { cwd: repo, input, encoding: "utf8" });

  beforeAll(() => {
    repo = mkdtempSync(join(tmpdir(), "teamd-git-names-"));
    expect(git(["init", "-q"]).status).toBe(0);
    blob = git(["hash-object", "-w", "--stdin"], "x\n").stdout.trim();
  });
  afterAll(() => rmSync(repo, { recursive: true, force: true }));

  it.each(refs)("ref %j", (ref) => {
    const gitTakes = git(["check-ref-format", ref]).status === 0;
    const kernelTakes = refNameProblem(ref) === undefined;
    if (!gitTakes) expect(kernelTakes).toBe(false);
    else expect(kernelTakes).toBe(true);
  });

  it.each(paths)("path %j", (path) => {
    const added = git(["-c", "core.protectHFS=true", "-c", "core.protectNTFS=true", "update-index", "--add", "--cacheinfo", `100644,${blob},${path}`]);
    git(["rm", "-q", "--cached", "--", path]);
    const gitTakes = added.status === 0;
    const kernelTakes = gitPathProblem(path) === undefined;
    if (!gitTakes) expect(kernelTakes, added.stderr).toBe(false);
    else expect(kernelTakes, `git takes ${JSON.stringify(path)}`).toBe(true);
  });
});
