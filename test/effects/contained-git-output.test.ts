import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containedGit, containedGitStream, containmentAvailable, GitOutputTooLarge } from "../../src/effects/contained-git.js";
import { GIT_TEST_ENV } from "../support/git-cli.js";

/**
 * A contained run's stdout is held whole in the daemon (issue 20: the daemon never works for a
 * seat unbounded): past its bound git is killed and the run rejects with GitOutputTooLarge, so a
 * seat's objects that expand (a tree listing a million paths from a few hundred bytes) never
 * become the daemon's memory. Real contained git over a real repository.
 */
const available = process.platform === "linux" && (await containmentAvailable());

describe.runIf(available)("containedGit's output bound", () => {
  let dir: string;
  let repo: string;
  let blob: string;
  let bomb: string;
  const g = (args: string[], input?: string) =>
    execFileSync("git", args, { cwd: repo, env: { ...process.env, ...GIT_TEST_ENV }, encoding: "utf8", input, maxBuffer: 64 * 2 ** 20 }).trim();

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "teamd-contained-output-"));
    repo = join(dir, "repo.git");
    execFileSync("git", ["init", "-q", "--bare", repo]);
    blob = g(["hash-object", "-w", "--stdin"], "x".repeat(2 * 2 ** 20));
    // A tree bomb: 100 names for the empty blob, 100 names for that tree, 100 for that one —
    // three small tree objects listing a million paths.
    const empty = g(["hash-object", "-w", "--stdin"], "");
    let tree = g(["mktree"], Array.from({ length: 100 }, (_, i) => `100644 blob ${empty}\tf${i}\n`).join(""));
    for (let level = 0; level < 2; level++) tree = g(["mktree"], Array.from({ length: 100 }, (_, i) => `040000 tree ${tree}\td${i}\n`).join(""));
    bomb = tree;
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("a run printing past its bound is stopped and rejects GitOutputTooLarge; under it, the whole output", async () => {
    const args = ["cat-file", "blob", blob];
    await expect(containedGit(args, { gitDir: repo, readOnly: [repo], writable: [], maxOutputBytes: 2 ** 20 })).rejects.toBeInstanceOf(GitOutputTooLarge);
    const { stdout } = await containedGit(args, { gitDir: repo, readOnly: [repo], writable: [], maxOutputBytes: 4 * 2 ** 20 });
    expect(stdout.length).toBe(2 * 2 ** 20);
  });

  it("a stream read late still has all of git's output, though git has exited by then", async () => {
    // Node resumes an exited child's unread output streams (and drops what they hold) unless
    // something listens: a fetch's pack, held while its wants were checked, arrived empty.
    // Small enough for the pipe, so git writes it all and exits before anything reads.
    const small = g(["hash-object", "-w", "--stdin"], "y".repeat(16 * 1024));
    const stream = await containedGitStream(["cat-file", "blob", small], { gitDir: repo, readOnly: [repo], writable: [] });
    // Long past git's exit (~20 ms). (`done` settles only once the output is read to its end.)
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const parts: Buffer[] = [];
    for await (const chunk of stream.stdout) parts.push(chunk);
    await stream.done;
    expect(Buffer.concat(parts).toString("latin1")).toBe("y".repeat(16 * 1024));
  });

  it("a stream stopped unread settles: its process is gone and `done` rejects", async () => {
    const stream = await containedGitStream(["cat-file", "blob", blob], { gitDir: repo, readOnly: [repo], writable: [] });
    // 2 MiB: more than the pipe holds, so git is still writing when it is stopped.
    await new Promise((resolve) => setTimeout(resolve, 300));
    stream.kill();
    await expect(stream.done).rejects.toThrow();
  });

  it("a tree bomb's listing past the bound is stopped: a million paths from three small trees", async () => {
    const args = ["ls-tree", "-r", "-z", "--name-only", bomb];
    // Control: the listing is real (under the default bound, about 9 MB) and larger than the bound given here.
    const { stdout } = await containedGit(args, { gitDir: repo, readOnly: [repo], writable: [] });
    expect(stdout.toString("latin1").split("\0").filter(Boolean)).toHaveLength(1_000_000);
    await expect(containedGit(args, { gitDir: repo, readOnly: [repo], writable: [], maxOutputBytes: 4 * 2 ** 20 })).rejects.toBeInstanceOf(GitOutputTooLarge);
  }, 60_000);
});
