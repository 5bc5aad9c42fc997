import { lstatSync, mkdirSync, readFileSync, readlinkSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDeployCommand } from "../../src/effects/deploy-run.js";
import { NotAnArtifact, summarizeArtifact } from "../../src/effects/git-artifact.js";
import { exportTree, ExportRefused } from "../../src/effects/git-export.js";
import { sh } from "../support/git-cli.js";
import { waitFor } from "../support/wait.js";

/**
 * The two host-side pieces of a deploy, on real git and real processes: the export of exactly
 * an artifact's tree (not what a checkout or `git archive` would make of it), and the run of
 * the owner's command (its exit, its environment, its deadline, its process group).
 */
let root: string;
let hub: string;
let commit: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "teamd-deploy-fx-"));
  const work = join(root, "work");
  mkdirSync(join(work, "bin"), { recursive: true });
  sh(root, ["init", "-q", "-b", "main", work]);
  // Attributes a checkout or an archive would act on: none may change what is exported.
  writeFileSync(join(work, ".gitattributes"), "*.txt text eol=crlf\nsecret.md export-ignore\nsubst.c export-subst\n");
  writeFileSync(join(work, "a.txt"), "one\ntwo\n");
  writeFileSync(join(work, "secret.md"), "kept\n");
  writeFileSync(join(work, "subst.c"), "$Format:%H$\n");
  writeFileSync(join(work, "bin/run.sh"), "#!/bin/sh\necho run\n", { mode: 0o755 });
  symlinkSync("../a.txt", join(work, "bin/link"));
  sh(work, ["add", "-A"]);
  sh(work, ["commit", "-qm", "tree"]);
  commit = sh(work, ["rev-parse", "HEAD"]);
  hub = join(root, "hub.git");
  sh(root, ["clone", "-q", "--bare", work, hub]);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The process exists and is not a zombie (it may vanish between the two reads). */
function running(pid: number): boolean {
  try {
    return !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
  } catch {
    return false;
  }
}

describe("exportTree", () => {
  it("writes each blob as stored, with its mode and links, and nothing else", async () => {
    const dest = await mkdtemp(join(root, "export-"));
    const result = await exportTree(hub, commit, dest, { maxBytes: 1 << 20 });
    expect(result.files).toBe(6);
    expect(readdirSync(dest).sort()).toEqual([".gitattributes", "a.txt", "bin", "secret.md", "subst.c"]);
    // No eol conversion, no export-ignore, no export-subst.
    expect(readFileSync(join(dest, "a.txt"), "utf8")).toBe("one\ntwo\n");
    expect(readFileSync(join(dest, "secret.md"), "utf8")).toBe("kept\n");
    expect(readFileSync(join(dest, "subst.c"), "utf8")).toBe("$Format:%H$\n");
    expect(lstatSync(join(dest, "bin/run.sh")).mode & 0o111).not.toBe(0);
    expect(lstatSync(join(dest, "a.txt")).mode & 0o111).toBe(0);
    expect(readlinkSync(join(dest, "bin/link"))).toBe("../a.txt");
  });

  it("refuses a tree larger than its limit before writing anything", async () => {
    const dest = await mkdtemp(join(root, "export-"));
    await expect(exportTree(hub, commit, dest, { maxBytes: 10 })).rejects.toBeInstanceOf(ExportRefused);
    expect(readdirSync(dest)).toEqual([]);
  });

  it("refuses a tree bomb (a million paths from three small trees) by its entry bound, before writing anything", async () => {
    // A seat's trees reuse one another: 100 names for the empty blob, 100 for that tree, 100 for that one.
    const empty = sh(hub, ["hash-object", "-w", "--stdin"], "");
    let tree = sh(hub, ["mktree"], Array.from({ length: 100 }, (_, i) => `100644 blob ${empty}\tf${i}\n`).join(""));
    for (let level = 0; level < 2; level++) tree = sh(hub, ["mktree"], Array.from({ length: 100 }, (_, i) => `040000 tree ${tree}\td${i}\n`).join(""));
    const bomb = sh(hub, ["commit-tree", "-m", "bomb", tree]);
    const dest = await mkdtemp(join(root, "export-"));
    const refused = await exportTree(hub, bomb, dest, { maxBytes: 1 << 20 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ExportRefused);
    // Stopped by the count, or before it by the listing's own bound (a million entries' listing is about 75 MB).
    expect((refused as Error).message).toContain("a deploy exports at most 200000 entries");
    expect(readdirSync(dest)).toEqual([]);
    // Control: under a bound that holds it, the same kind of tree (one level less) is written whole.
    const small = sh(hub, ["commit-tree", "-m", "small", sh(hub, ["mktree"], `040000 tree ${sh(hub, ["mktree"], `100644 blob ${empty}\tf\n`)}\td\n`)]);
    const ok = await mkdtemp(join(root, "export-"));
    expect((await exportTree(hub, small, ok, { maxBytes: 1 << 20, maxEntries: 1 })).files).toBe(1);
  }, 60_000);

  it("reads blobs in bounded batches: a tree of several blobs larger than one batch is written whole", async () => {
    const big = (fill: string) => sh(hub, ["hash-object", "-w", "--stdin"], fill.repeat(40 * 1024 * 1024));
    const tree = sh(hub, ["mktree"], `100644 blob ${big("a")}\ta\n100644 blob ${big("b")}\tb\n100755 blob ${big("c")}\tc\n`);
    const many = sh(hub, ["commit-tree", "-m", "big", tree]);
    const dest = await mkdtemp(join(root, "export-"));
    expect(await exportTree(hub, many, dest, { maxBytes: 1 << 30 })).toEqual({ files: 3, bytes: 3 * 40 * 1024 * 1024 });
    for (const name of ["a", "b", "c"]) expect(lstatSync(join(dest, name)).size).toBe(40 * 1024 * 1024);
    expect(readFileSync(join(dest, "b")).subarray(0, 4).toString()).toBe("bbbb");
    expect(lstatSync(join(dest, "c")).mode & 0o111).not.toBe(0);
    await rm(dest, { recursive: true, force: true });
  }, 60_000);
});

describe("summarizeArtifact refuses what is no artifact of the trunk, before any sandbox runs", () => {
  it.each([
    ["revision syntax", "main~1"],
    ["a commit the hub does not hold", "0123456789abcdef0123456789abcdef01234567"],
  ])("%s", async (_what, named) => {
    await expect(summarizeArtifact(hub, "refs/heads/main", named)).rejects.toBeInstanceOf(NotAnArtifact);
  });

  it("a root commit", async () => {
    await expect(summarizeArtifact(hub, "refs/heads/main", undefined)).rejects.toThrow(/root commit/);
  });
});

describe("runDeployCommand", () => {
  const base = { cwd: tmpdir(), timeoutMs: 10_000, tailBytes: 64 };

  it("returns the exit status and only the last bytes of the output", async () => {
    const exit = await runDeployCommand({
      ...base,
      argv: ["/bin/sh", "-c", "i=0; while [ $i -lt 100 ]; do echo line$i; i=$((i+1)); done; echo failing >&2; exit 7"],
      env: {},
    });
    expect(exit.kind).toBe("exited");
    if (exit.kind !== "exited") return;
    expect(exit.code).toBe(7);
    expect(Buffer.byteLength(exit.tail)).toBeLessThanOrEqual(64);
    expect(exit.tail).toContain("failing");
    expect(exit.tail).not.toContain("line0\n");
  });

  it("gives the command exactly the environment it is handed, nothing of the caller's", async () => {
    process.env.TEAMD_TEST_DEPLOY_CANARY = "must-not-leak";
    try {
      const exit = await runDeployCommand({ ...base, tailBytes: 4096, argv: ["/usr/bin/env"], env: { ONLY: "this" } });
      expect(exit).toMatchObject({ kind: "exited", code: 0 });
      if (exit.kind === "exited") expect(exit.tail.trim().split("\n")).toEqual(["ONLY=this"]);
    } finally {
      delete process.env.TEAMD_TEST_DEPLOY_CANARY;
    }
  });

  it("kills the whole process group at the deadline, a child it left behind too", async () => {
    const pidFile = join(root, "child.pid");
    const exit = await runDeployCommand({ ...base, timeoutMs: 500, argv: ["/bin/sh", "-c", `sleep 60 & echo $! > ${pidFile}; wait`], env: {} });
    expect(exit).toMatchObject({ kind: "killed", timedOut: true });
    const child = Number(readFileSync(pidFile, "utf8").trim());
    // SIGKILL is delivered at once, but the kernel tears the process down a moment later:
    // gone (or a zombie) within 2 s, where it would otherwise sleep for 60.
    expect(await waitFor(() => !running(child), 2000)).toBe(true);
  });

  it("kills what a finished command left running", async () => {
    const pidFile = join(root, "orphan.pid");
    const exit = await runDeployCommand({ ...base, argv: ["/bin/sh", "-c", `sleep 60 >/dev/null 2>&1 & echo $! > ${pidFile}`], env: {} });
    expect(exit).toMatchObject({ kind: "exited", code: 0 });
    const orphan = Number(readFileSync(pidFile, "utf8").trim());
    expect(await waitFor(() => !running(orphan), 2000)).toBe(true);
  });

  it("reports a program that cannot start: nothing ran", async () => {
    const exit = await runDeployCommand({ ...base, argv: ["/nonexistent/deploy"], env: {} });
    expect(exit).toMatchObject({ kind: "not-started" });
  });
});
