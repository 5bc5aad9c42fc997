import { execFileSync } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { syncNewObjects, syncRefFolders } from "../../src/effects/durable-git.js";
import { mergeInto, summarizeChange } from "../../src/effects/git-merge.js";
import { commitFile } from "../../daemon/seat/files.js";
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
    const { dir, hub, hubGit } = await bareHub();
    const commit = hubGit(["commit-tree", "-m", "c", hubGit(["mktree"], "")]);
    const log = await withGitLog(dir, () => migrateAndUpdate(hub, undefined, "refs/heads/seat/w1/fix", commit, ""));
    expect(hubGit(["rev-parse", "refs/heads/seat/w1/fix"])).toBe(commit);
    const updates = log.filter((line) => line.includes("update-ref"));
    expect(updates.length).toBe(1);
    expect(updates[0]).toContain("core.fsync=objects,reference");
    expect(updates[0]).toContain("core.fsyncMethod=fsync");
  });

  it("syncs the loose-object folders of the objects a commit adds to its parents, and the object store's own", async () => {
    const { hub, hubGit } = await bareHub();
    const blobA = hubGit(["hash-object", "-w", "--stdin"], "a\n");
    const treeA = hubGit(["mktree"], `100644 blob ${blobA}\ta.txt\n`);
    const a = hubGit(["commit-tree", "-m", "a", treeA]);
    const blobB = hubGit(["hash-object", "-w", "--stdin"], "b\n");
    const sub = hubGit(["mktree"], `100644 blob ${blobB}\tb.txt\n`);
    const treeB = hubGit(["mktree"], `100644 blob ${blobA}\ta.txt\n040000 tree ${sub}\tdir\n`);
    const b = hubGit(["commit-tree", "-p", a, "-m", "b", treeB]);
    const synced = new Set<string>();
    await syncNewObjects(hub, b, [a], async (path) => void synced.add(path));
    const objects = join(hub, "objects");
    // b, its tree, the new subtree and blob: not a's tree, commit or blob, unless one shares a folder with them.
    const expected = new Set([objects, ...[b, treeB, sub, blobB].map((oid) => join(objects, oid.slice(0, 2)))]);
    expect(synced).toEqual(expected);
    for (const old of [a, treeA, blobA]) if (!expected.has(join(objects, old.slice(0, 2)))) expect(synced.has(join(objects, old.slice(0, 2)))).toBe(false);
    // Packed, the objects have no loose folder: nothing to sync there, and no failure.
    hubGit(["update-ref", "refs/heads/b", b]);
    hubGit(["repack", "-adq"]);
    hubGit(["prune-packed"]);
    await expect(syncNewObjects(hub, b, [a])).resolves.toBeUndefined();
    // Any other failure is the act's.
    await expect(syncNewObjects(hub, b, [a], async () => Promise.reject(Object.assign(new Error("EIO"), { code: "EIO" })))).rejects.toThrow("EIO");
  });

  it("a merge syncs its new objects' folders before it moves the trunk", async () => {
    const { dir, hub, hubGit } = await bareHub();
    const blob = (text: string) => hubGit(["hash-object", "-w", "--stdin"], text);
    const tree = (entries: Record<string, string>) =>
      hubGit(
        ["mktree"],
        Object.entries(entries)
          .map(([name, oid]) => `100644 blob ${oid}\t${name}\n`)
          .join(""),
      );
    const base = hubGit(["commit-tree", "-m", "base", tree({ "a.txt": blob("a\n"), "b.txt": blob("b\n") })]);
    const trunk = hubGit(["commit-tree", "-p", base, "-m", "trunk", tree({ "a.txt": blob("a2\n"), "b.txt": blob("b\n") })]);
    const branch = hubGit(["commit-tree", "-p", base, "-m", "branch", tree({ "a.txt": blob("a\n"), "b.txt": blob("b2\n") })]);
    hubGit(["update-ref", "refs/heads/main", trunk]);
    hubGit(["update-ref", "refs/heads/seat/w1/fix", branch]);
    const summary = await summarizeChange(hub, "refs/heads/main", "refs/heads/seat/w1/fix");
    const log = await withGitLog(dir, () => mergeInto(hub, summary, { name: "teamd", email: "teamd@localhost" }, "merge"));
    const at = (needle: string) => log.findIndex((line) => line.includes(needle));
    expect(at("rev-list --objects --no-object-names")).toBeGreaterThanOrEqual(0);
    expect(at("rev-list --objects --no-object-names")).toBeLessThan(at("update-ref --stdin"));
  });
});

describe("durable git: a file write", () => {
  it("syncs its new objects' folders before it moves the seat's branch", async () => {
    const { dir, hub, hubGit } = await bareHub();
    const trunk = hubGit(["commit-tree", "-m", "base", hubGit(["mktree"], `100644 blob ${hubGit(["hash-object", "-w", "--stdin"], "a\n")}\ta.txt\n`)]);
    hubGit(["update-ref", "refs/heads/main", trunk]);
    const ref = "refs/heads/seat/w1/notes";
    let commit = "";
    const log = await withGitLog(dir, async () => {
      commit = await commitFile(
        hub,
        ref,
        { parent: trunk, old: undefined },
        "docs/notes.txt",
        { message: "" } as Parameters<typeof commitFile>[4],
        Buffer.from("notes\n"),
        { team: "proj", seat: "w1" } as Parameters<typeof commitFile>[6],
        "100644",
        join(dir, "scratch"),
        "t1",
      );
    });
    expect(hubGit(["rev-parse", ref])).toBe(commit);
    const at = (needle: string) => log.findIndex((line) => line.includes(needle));
    expect(at(`rev-list --objects --no-object-names ${commit} --not ${trunk}`)).toBeGreaterThanOrEqual(0);
    expect(at(`rev-list --objects --no-object-names ${commit} --not ${trunk}`)).toBeLessThan(at("update-ref"));
  });
});

/** A bare hub (trunk main) in a fresh folder, and git run on it (stdin `input`, stdout trimmed). */
async function bareHub(): Promise<{ dir: string; hub: string; hubGit: (args: string[], input?: string) => string }> {
  const dir = await folder();
  const hub = join(dir, "hub.git");
  execFileSync("git", ["init", "-q", "--bare", "-b", "main", hub], { env: GIT_TEST_ENV });
  const hubGit = (args: string[], input?: string) =>
    execFileSync("git", ["--git-dir", hub, ...args], { env: GIT_TEST_ENV, encoding: "utf8", ...(input !== undefined ? { input } : {}) }).trim();
  return { dir, hub, hubGit };
}

/** Runs `act` with a git on PATH that notes each call's arguments, then runs the real one; the calls, in order. */
async function withGitLog(dir: string, act: () => Promise<unknown>): Promise<string[]> {
  const real = execFileSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).trim();
  const bin = join(dir, "bin-log");
  execFileSync("mkdir", ["-p", bin]);
  const log = join(dir, "git-calls.log");
  writeFileSync(join(bin, "git"), `#!/bin/sh\nprintf '%s\\n' "$*" >> ${JSON.stringify(log)}\nexec ${JSON.stringify(real)} "$@"\n`);
  chmodSync(join(bin, "git"), 0o755);
  const path = process.env.PATH;
  process.env.PATH = `${bin}:${path ?? ""}`;
  try {
    await act();
  } finally {
    process.env.PATH = path;
  }
  return readFileSync(log, "utf8").split("\n");
}
