import { execFileSync } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { syncRefFolders } from "../../src/effects/durable-git.js";
import { migrateAndUpdate } from "../../src/effects/git-receive.js";
import { GIT_TEST_ENV } from "../support/git-cli.js";

/** A hub's ref moved by the daemon is on disk before its outcome is recorded (durable-git.ts). */
const made: string[] = [];
afterEach(async () => {
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function folder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "teamd-durable-"));
  made.push(dir);
  return dir;
}

describe("durable git", () => {
  it("syncs every folder of a ref's path and the repository's own, and passes over one git removed", async () => {
    const synced: string[] = [];
    await syncRefFolders("/hub.git", "refs/heads/seat/w1/fix", async (path) => {
      synced.push(path);
      if (path.endsWith("/w1")) throw Object.assign(new Error("gone"), { code: "ENOENT" });
    });
    expect(synced.sort()).toEqual(["/hub.git", "/hub.git/refs", "/hub.git/refs/heads", "/hub.git/refs/heads/seat", "/hub.git/refs/heads/seat/w1"]);
    // Any other failure is the act's: its outcome is not recorded as done on a ref that may not last.
    await expect(syncRefFolders("/hub.git", "refs/heads/x", async () => Promise.reject(Object.assign(new Error("EIO"), { code: "EIO" })))).rejects.toThrow(
      "EIO",
    );
  });

  it("moves a pushed ref in the hub with git told to fsync it (git 2.39 does not by default)", async () => {
    const dir = await folder();
    const hub = join(dir, "hub.git");
    execFileSync("git", ["init", "-q", "--bare", hub], { env: GIT_TEST_ENV });
    const tree = execFileSync("git", ["--git-dir", hub, "mktree"], { input: "", env: GIT_TEST_ENV, encoding: "utf8" }).trim();
    const commit = execFileSync("git", ["--git-dir", hub, "commit-tree", "-m", "c", tree], { env: GIT_TEST_ENV, encoding: "utf8" }).trim();
    // A git on PATH that notes its arguments, then runs the real one.
    const real = execFileSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).trim();
    const bin = join(dir, "bin");
    execFileSync("mkdir", [bin]);
    const log = join(dir, "git.log");
    writeFileSync(join(bin, "git"), `#!/bin/sh\nprintf '%s\\n' "$*" >> ${JSON.stringify(log)}\nexec ${JSON.stringify(real)} "$@"\n`);
    chmodSync(join(bin, "git"), 0o755);
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path ?? ""}`;
    try {
      await migrateAndUpdate(hub, undefined, "refs/heads/seat/w1/fix", commit, "");
    } finally {
      process.env.PATH = path;
    }
    expect(execFileSync("git", ["--git-dir", hub, "rev-parse", "refs/heads/seat/w1/fix"], { encoding: "utf8" }).trim()).toBe(commit);
    const updates = readFileSync(log, "utf8")
      .split("\n")
      .filter((line) => line.includes("update-ref"));
    expect(updates.length).toBe(1);
    expect(updates[0]).toContain("core.fsync=objects,reference");
    expect(updates[0]).toContain("core.fsyncMethod=fsync");
  });
});
