import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { effectIdOf, mergeInto, MergeConflict, NothingToMerge, summarizeChange, type ChangeSummary } from "../../src/effects/git-merge.js";
import { RefMoved } from "../../src/effects/git-receive.js";
import { RefBusy } from "../../src/effects/ref-lock.js";
import { sh } from "../support/git-cli.js";

/**
 * Real repositories: each test gets a bare hub and a working clone that plays both the
 * seat (pushing seat/w1/fix) and whoever else moves the trunk.
 */

const TRUNK = "refs/heads/main";
const BRANCH = "refs/heads/seat/w1/fix";
const POLICY = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const WHO = { name: "teamd merge", email: "merge@teamd.invalid" };
const LINES = Array.from({ length: 40 }, (_, i) => `line ${i}\n`).join("");

let root: string;
let counter = 0;

interface Repos {
  readonly hub: string;
  readonly work: string;
  /** The trunk's first commit. */
  readonly start: string;
}

function commit(work: string, message: string, files: Record<string, string | null>): string {
  for (const [path, text] of Object.entries(files)) {
    if (text === null) sh(work, ["rm", "-q", path]);
    else {
      mkdirSync(join(work, path, ".."), { recursive: true });
      writeFileSync(join(work, path), text);
      sh(work, ["add", path]);
    }
  }
  sh(work, ["commit", "-q", "--allow-empty", "-m", message]);
  return sh(work, ["rev-parse", "HEAD"]);
}

function push(repos: Repos, from: string, ref: string): void {
  sh(repos.work, ["push", "-q", "-f", repos.hub, `${from}:${ref}`]);
}

function refs(repos: Repos): string {
  return sh(repos.hub, ["for-each-ref"]);
}

function tipOf(repos: Repos, ref: string): string {
  return sh(repos.hub, ["rev-parse", ref]);
}

/** A hub with a trunk of one commit, and the work clone on a branch `fix` from it. */
function makeRepos(): Repos {
  counter += 1;
  const dir = join(root, `case-${counter}`);
  mkdirSync(dir);
  const hub = join(dir, "hub.git");
  const work = join(dir, "work");
  sh(dir, ["init", "-q", "--bare", "-b", "main", hub]);
  sh(dir, ["init", "-q", "-b", "main", work]);
  const start = commit(work, "start", { "README.md": "hello\n", "src/a.txt": LINES, "trunk.txt": "t0\n" });
  const repos = { hub, work, start };
  push(repos, "main", TRUNK);
  sh(work, ["checkout", "-q", "-b", "fix"]);
  return repos;
}

/** The trunk moves on by someone else: a commit on `main` in the clone, pushed. */
function advanceTrunk(repos: Repos, message: string, files: Record<string, string | null>): string {
  sh(repos.work, ["checkout", "-q", "main"]);
  const oid = commit(repos.work, message, files);
  push(repos, "main", TRUNK);
  sh(repos.work, ["checkout", "-q", "fix"]);
  return oid;
}

/** What `git merge` in a checkout makes of the same two commits. */
function checkoutMergeTree(repos: Repos, base: string, head: string): string {
  sh(repos.work, ["fetch", "-q", repos.hub, `+${BRANCH}:refs/remotes/hub/fix`, `+${TRUNK}:refs/remotes/hub/main`]);
  sh(repos.work, ["checkout", "-q", "--detach", base]);
  sh(repos.work, ["merge", "-q", "--no-ff", "--no-edit", head]);
  const tree = sh(repos.work, ["rev-parse", "HEAD^{tree}"]);
  sh(repos.work, ["checkout", "-q", "fix"]);
  return tree;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "teamd-merge-"));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("a clean change", () => {
  let repos: Repos;
  let summary: ChangeSummary;
  let branchCommits: string[];
  let trunkTip: string;

  beforeAll(async () => {
    repos = makeRepos();
    const first = commit(repos.work, "fix a", { "src/a.txt": LINES.replace("line 3\n", "line three\n") });
    const second = commit(repos.work, "add b", { "src/b.txt": "new\n" });
    branchCommits = [first, second];
    push(repos, "fix", BRANCH);
    trunkTip = advanceTrunk(repos, "trunk work", { "trunk.txt": "t1\n", "src/a.txt": LINES.replace("line 30\n", "line thirty\n") });
    summary = await summarizeChange(repos.hub, TRUNK, BRANCH);
  });

  it("is read from the hub: the tips, the branch's commits oldest first", () => {
    expect(summary.trunkRef).toBe(TRUNK);
    expect(summary.branchRef).toBe(BRANCH);
    expect(summary.base).toBe(trunkTip);
    expect(summary.head).toBe(branchCommits[1]);
    expect(summary.commits).toEqual(branchCommits);
  });

  it("has the tree git merge makes in a checkout", () => {
    expect(summary.tree).toBe(checkoutMergeTree(repos, summary.base, summary.head));
  });

  it("names exactly the paths the merge changes on the trunk (not what the trunk changed itself)", () => {
    expect(summary.paths).toEqual(["src/a.txt", "src/b.txt"]);
  });

  it("has an effect id that is the same when summarized again", async () => {
    const again = await summarizeChange(repos.hub, TRUNK, BRANCH);
    expect(again).toEqual(summary);
    expect(effectIdOf(again, TRUNK, POLICY)).toBe(effectIdOf(summary, TRUNK, POLICY));
    expect(effectIdOf(summary, TRUNK, POLICY)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("merges: the trunk moves to a commit of parents [base, head] with the summary's tree", async () => {
    const branchBefore = tipOf(repos, BRANCH);
    const merged = await mergeInto(repos.hub, summary, WHO, "Merge seat/w1/fix\n\nGated.");
    expect(tipOf(repos, TRUNK)).toBe(merged);
    expect(tipOf(repos, BRANCH)).toBe(branchBefore);
    expect(sh(repos.hub, ["rev-parse", `${merged}^@`]).split("\n")).toEqual([summary.base, summary.head]);
    expect(sh(repos.hub, ["rev-parse", `${merged}^{tree}`])).toBe(summary.tree);
    expect(sh(repos.hub, ["log", "-1", "--format=%an <%ae>|%cn <%ce>|%B", merged])).toBe(
      "teamd merge <merge@teamd.invalid>|teamd merge <merge@teamd.invalid>|Merge seat/w1/fix\n\nGated.",
    );
    sh(repos.hub, ["fsck", "--strict", "--no-dangling"]);
    // The branch is in the trunk now: there is nothing left to merge.
    await expect(summarizeChange(repos.hub, TRUNK, BRANCH)).rejects.toBeInstanceOf(NothingToMerge);
  });
});

describe("the effect id", () => {
  let repos: Repos;
  let summary: ChangeSummary;
  let id: string;

  beforeAll(async () => {
    repos = makeRepos();
    commit(repos.work, "fix", { "src/a.txt": LINES.replace("line 3\n", "line three\n"), "src/b.txt": "b\n" });
    push(repos, "fix", BRANCH);
    summary = await summarizeChange(repos.hub, TRUNK, BRANCH);
    id = effectIdOf(summary, TRUNK, POLICY);
  });

  it("changes when one more commit is pushed to the branch", async () => {
    commit(repos.work, "more", { "src/b.txt": "b2\n" });
    push(repos, "fix", BRANCH);
    const after = await summarizeChange(repos.hub, TRUNK, BRANCH);
    expect(after.commits).toHaveLength(2);
    expect(effectIdOf(after, TRUNK, POLICY)).not.toBe(id);
    sh(repos.work, ["reset", "-q", "--hard", "HEAD~1"]);
    push(repos, "fix", BRANCH);
    expect(effectIdOf(await summarizeChange(repos.hub, TRUNK, BRANCH), TRUNK, POLICY)).toBe(id);
  });

  it("does not change for an empty commit on the branch: it binds the change's content, not its history", async () => {
    commit(repos.work, "nothing", {});
    push(repos, "fix", BRANCH);
    const after = await summarizeChange(repos.hub, TRUNK, BRANCH);
    expect(after.head).not.toBe(summary.head);
    expect(effectIdOf(after, TRUNK, POLICY)).toBe(id);
    sh(repos.work, ["reset", "-q", "--hard", "HEAD~1"]);
    push(repos, "fix", BRANCH);
  });

  it("changes when the trunk moved, even when the merged tree and paths did not", async () => {
    const before = tipOf(repos, TRUNK);
    advanceTrunk(repos, "empty trunk commit", {});
    const after = await summarizeChange(repos.hub, TRUNK, BRANCH);
    expect(after.tree).toBe(summary.tree);
    expect(after.paths).toEqual(summary.paths);
    expect(after.base).not.toBe(summary.base);
    expect(effectIdOf(after, TRUNK, POLICY)).not.toBe(id);
    sh(repos.hub, ["update-ref", TRUNK, before]);
  });

  it("changes with the policy hash and with the destination ref", () => {
    expect(effectIdOf(summary, TRUNK, POLICY.replace(/1$/, "2"))).not.toBe(id);
    expect(effectIdOf(summary, "refs/heads/release", POLICY)).not.toBe(id);
  });

  it("changes with the tree and with the path set, and not with the paths' order or repetition", () => {
    const other = "0".repeat(40);
    expect(effectIdOf({ ...summary, tree: other }, TRUNK, POLICY)).not.toBe(id);
    expect(effectIdOf({ ...summary, base: other }, TRUNK, POLICY)).not.toBe(id);
    expect(effectIdOf({ ...summary, paths: [...summary.paths, "src/c.txt"] }, TRUNK, POLICY)).not.toBe(id);
    expect(effectIdOf({ ...summary, paths: summary.paths.slice(1) }, TRUNK, POLICY)).not.toBe(id);
    expect(effectIdOf({ ...summary, paths: [...summary.paths].reverse() }, TRUNK, POLICY)).toBe(id);
    expect(effectIdOf({ ...summary, paths: [...summary.paths, ...summary.paths] }, TRUNK, POLICY)).toBe(id);
  });

  it("cannot be made equal by moving text between fields", () => {
    const tree = "a".repeat(40);
    const base = "b".repeat(40);
    const ids = [
      effectIdOf({ paths: ["x,y"], tree, base }, TRUNK, POLICY),
      effectIdOf({ paths: ["x", "y"], tree, base }, TRUNK, POLICY),
      effectIdOf({ paths: ['x","y'], tree, base }, TRUNK, POLICY),
      effectIdOf({ paths: ["x"], tree, base }, TRUNK, `${POLICY}","y`),
      effectIdOf({ paths: [], tree, base }, TRUNK, POLICY),
      effectIdOf({ paths: [""], tree, base }, TRUNK, POLICY),
    ];
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("refuses what is not an id's input", () => {
    expect(() => effectIdOf(summary, "main", POLICY)).toThrow(/full branch name/);
    expect(() => effectIdOf({ ...summary, tree: "HEAD" }, TRUNK, POLICY)).toThrow(/not an object id/);
    expect(() => effectIdOf(summary, TRUNK, "")).toThrow(/policy hash/);
  });
});

describe("paths of renames and copies", () => {
  it("names both sides of a rename", async () => {
    const repos = makeRepos();
    sh(repos.work, ["mv", "src/a.txt", "src/renamed.txt"]);
    commit(repos.work, "rename", {});
    push(repos, "fix", BRANCH);
    const summary = await summarizeChange(repos.hub, TRUNK, BRANCH);
    expect(summary.paths).toEqual(["src/a.txt", "src/renamed.txt"]);
    expect(summary.tree).toBe(checkoutMergeTree(repos, summary.base, summary.head));
  });

  it("names both sides of a copy with modification", async () => {
    const repos = makeRepos();
    // -C finds a copy whose source the change also modifies (git's default; --find-copies-harder is not used).
    commit(repos.work, "copy", {
      "src/a.txt": LINES.replace("line 39\n", "line 39 changed\n"),
      "lib/copy.txt": LINES.replace("line 0\n", "line zero\n"),
    });
    push(repos, "fix", BRANCH);
    const status = sh(repos.hub, ["diff-tree", "-r", "-M", "-C", "--name-status", TRUNK, BRANCH]);
    expect(status).toMatch(/^C\d+\tsrc\/a\.txt\tlib\/copy\.txt$/m);
    const summary = await summarizeChange(repos.hub, TRUNK, BRANCH);
    expect(summary.paths).toEqual(["lib/copy.txt", "src/a.txt"]);
  });

  it("names paths that are not plain ASCII, sorted and unique", async () => {
    const repos = makeRepos();
    commit(repos.work, "odd names", { "dir/ü name.txt": "u\n", "dir/tab\tname.txt": "t\n", "z.txt": "z\n", "README.md": null });
    push(repos, "fix", BRANCH);
    const summary = await summarizeChange(repos.hub, TRUNK, BRANCH);
    expect(summary.paths).toEqual(["README.md", "dir/tab\tname.txt", "dir/ü name.txt", "z.txt"]);
  });
});

describe("refusals", () => {
  it("a conflict is MergeConflict naming the path, and no ref moves", async () => {
    const repos = makeRepos();
    commit(repos.work, "branch side", { "trunk.txt": "branch\n", "src/b.txt": "b\n" });
    push(repos, "fix", BRANCH);
    advanceTrunk(repos, "trunk side", { "trunk.txt": "trunk\n" });
    const before = refs(repos);
    const error = await summarizeChange(repos.hub, TRUNK, BRANCH).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MergeConflict);
    expect((error as MergeConflict).paths).toEqual(["trunk.txt"]);
    expect(refs(repos)).toBe(before);
  });

  it("NothingToMerge when the trunk already holds the branch", async () => {
    const repos = makeRepos();
    push(repos, "fix", BRANCH);
    await expect(summarizeChange(repos.hub, TRUNK, BRANCH)).rejects.toBeInstanceOf(NothingToMerge);
    advanceTrunk(repos, "trunk ahead", { "trunk.txt": "t1\n" });
    await expect(summarizeChange(repos.hub, TRUNK, BRANCH)).rejects.toBeInstanceOf(NothingToMerge);
  });

  it("refs that are not full branch names, missing refs, a ref merged into itself", async () => {
    const repos = makeRepos();
    await expect(summarizeChange(repos.hub, "main", BRANCH)).rejects.toThrow(/full branch name/);
    await expect(summarizeChange(repos.hub, TRUNK, "refs/tags/v1")).rejects.toThrow(/full branch name/);
    await expect(summarizeChange(repos.hub, TRUNK, "refs/heads/seat/w1/..fix")).rejects.toThrow(/not a valid ref name/);
    await expect(summarizeChange(repos.hub, TRUNK, BRANCH)).rejects.toThrow(/does not exist/);
    await expect(summarizeChange(repos.hub, TRUNK, TRUNK)).rejects.toThrow(/into itself/);
  });
});

describe("mergeInto is compare-and-swap", () => {
  async function prepared(): Promise<{ repos: Repos; summary: ChangeSummary }> {
    const repos = makeRepos();
    commit(repos.work, "fix", { "src/b.txt": "b\n" });
    push(repos, "fix", BRANCH);
    return { repos, summary: await summarizeChange(repos.hub, TRUNK, BRANCH) };
  }

  it("refuses with RefMoved when the trunk moved since the summary, leaving it where it moved", async () => {
    const { repos, summary } = await prepared();
    const moved = advanceTrunk(repos, "someone else", { "trunk.txt": "t1\n" });
    const error = await mergeInto(repos.hub, summary, WHO, "merge").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RefMoved);
    expect((error as RefMoved).ref).toBe(TRUNK);
    expect((error as RefMoved).actual).toBe(moved);
    expect(tipOf(repos, TRUNK)).toBe(moved);
    expect(tipOf(repos, BRANCH)).toBe(summary.head);
  });

  it("refuses with RefMoved when the branch moved since the summary, leaving the trunk", async () => {
    const { repos, summary } = await prepared();
    const moved = commit(repos.work, "late", { "src/b.txt": "late\n" });
    push(repos, "fix", BRANCH);
    const error = await mergeInto(repos.hub, summary, WHO, "merge").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RefMoved);
    expect((error as RefMoved).ref).toBe(BRANCH);
    expect((error as RefMoved).actual).toBe(moved);
    expect(tipOf(repos, TRUNK)).toBe(summary.base);
  });

  it("moves the trunk only in the same transaction that verifies the branch", async () => {
    const { repos, summary } = await prepared();
    // A lock on the branch (as a concurrent push holds it) fails the verify line; the trunk's
    // own compare-and-swap would have succeeded, and must not happen alone. Held through every
    // retry, the merge is refused (RefBusy: nothing moved), never a bare git error (issue 20).
    const lock = join(repos.hub, `${BRANCH}.lock`);
    writeFileSync(lock, "");
    try {
      await expect(mergeInto(repos.hub, summary, WHO, "merge")).rejects.toBeInstanceOf(RefBusy);
      expect(tipOf(repos, TRUNK)).toBe(summary.base);
    } finally {
      rmSync(lock);
    }
    await mergeInto(repos.hub, summary, WHO, "merge");
    expect(sh(repos.hub, ["rev-parse", `${TRUNK}^2`])).toBe(summary.head);
  });

  it("refuses a summary whose tree is not the merge of its base and head", async () => {
    const { repos, summary } = await prepared();
    const before = refs(repos);
    const other = sh(repos.hub, ["rev-parse", `${repos.start}^{tree}`]);
    await expect(mergeInto(repos.hub, { ...summary, tree: other }, WHO, "merge")).rejects.toThrow(/is not the merge/);
    expect(refs(repos)).toBe(before);
  });

  it("refuses an ident git would mangle, and a message with a NUL", async () => {
    const { repos, summary } = await prepared();
    await expect(mergeInto(repos.hub, summary, { name: "x <y>", email: "x@y" }, "merge")).rejects.toThrow(/ident/);
    await expect(mergeInto(repos.hub, summary, { name: "x", email: "x@y\nparent 0" }, "merge")).rejects.toThrow(/ident/);
    await expect(mergeInto(repos.hub, summary, { name: " ", email: "x@y" }, "merge")).rejects.toThrow(/ident/);
    await expect(mergeInto(repos.hub, summary, WHO, "a\u0000b")).rejects.toThrow(/NUL/);
    expect(tipOf(repos, TRUNK)).toBe(summary.base);
  });

  it("merges a branch that is a fast-forward as a true merge commit", async () => {
    const { repos, summary } = await prepared();
    const merged = await mergeInto(repos.hub, summary, WHO, "merge");
    expect(sh(repos.hub, ["rev-parse", `${merged}^@`]).split("\n")).toEqual([summary.base, summary.head]);
    expect(summary.tree).toBe(sh(repos.hub, ["rev-parse", `${summary.head}^{tree}`]));
    // A second merge of the same summary: the trunk is no longer at base.
    await expect(mergeInto(repos.hub, summary, WHO, "merge")).rejects.toBeInstanceOf(RefMoved);
    expect(tipOf(repos, TRUNK)).toBe(merged);
    sh(repos.hub, ["fsck", "--strict", "--no-dangling"]);
  });
});
