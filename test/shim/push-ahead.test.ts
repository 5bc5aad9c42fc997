import { execFileSync } from "node:child_process";
import type * as ChildProcess from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { Packer } from "../../shim/push-pack.js";

/**
 * The push's git processes the remote helper starts while the daemon answers the listing
 * (shim/git-remote.ts startPushAhead): `git cat-file` for the names of the push's tips, and
 * `pack-objects` where no pack was made on a guess. With the front's pack there, cat-file is
 * started only if asked (namedByFront answers an ordinary push without it): its start ahead was a
 * fork of the helper, ~4-8 ms of its one thread on the push's path, for a process then stopped
 * unused (issue 26). node:child_process is wrapped here to count the starts; git is real.
 */
const started = vi.hoisted(() => ({ commands: [] as string[] }));
vi.mock("node:child_process", async (importOriginal) => {
  const real = await importOriginal<typeof ChildProcess>();
  return {
    ...real,
    spawn: ((command: string, args: readonly string[], options: ChildProcess.SpawnOptions) => {
      started.commands.push([command, ...args.slice(0, 1)].join(" "));
      return real.spawn(command, args, options);
    }) as typeof real.spawn,
  };
});

const { startPushAhead } = await import("../../shim/git-remote.js");

const repo = mkdtempSync(join(tmpdir(), "teamd-push-ahead-"));
execFileSync("git", ["init", "-q", repo]);
execFileSync("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "--allow-empty", "-m", "one"]);
const head = execFileSync("git", ["-C", repo, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
afterAll(() => rmSync(repo, { recursive: true, force: true }));

/** A pack as the front's adoption gives it, its process already gone. */
function frontPack(): Packer {
  return { front: true, input: () => undefined, done: Promise.resolve(), succeeded: () => true, failed: () => false, stop: () => undefined };
}

describe("git-remote-teamd: the push's processes started ahead", () => {
  const gitDir = process.env.GIT_DIR;
  beforeEach(() => {
    started.commands.length = 0;
    // The helper's git runs on the repository git names in GIT_DIR.
    process.env.GIT_DIR = join(repo, ".git");
    return () => {
      if (gitDir === undefined) delete process.env.GIT_DIR;
      else process.env.GIT_DIR = gitDir;
    };
  });

  it("with the front's pack: no process until the names are asked, then cat-file, which answers", async () => {
    const ahead = startPushAhead(frontPack());
    expect(started.commands).toEqual([]);
    const named = ahead.named();
    expect(ahead.named()).toBe(named);
    expect(started.commands).toEqual(["git cat-file"]);
    named.child.stdin.end(`${head}^{commit}\n`);
    expect(await named.answer(1)).toBe(`${head} commit\n`);
    ahead.stop();
  });

  it("without a pack made on a guess: cat-file and pack-objects at once", () => {
    const ahead = startPushAhead(undefined);
    expect(started.commands.sort()).toEqual(["git cat-file", "git pack-objects"]);
    ahead.stop();
  });

  it("asked after it stopped: the process it starts goes at once, and its answer is none", async () => {
    const ahead = startPushAhead(frontPack());
    ahead.stop();
    const named = ahead.named();
    named.child.stdin.on("error", () => undefined);
    expect(await named.answer(1)).toBeUndefined();
  });
});
