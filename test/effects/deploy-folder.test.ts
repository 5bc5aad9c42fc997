import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  isPinnedFile,
  makeMissingFile,
  pinnedPathIsFile,
  prepareDeployFolder,
  readPinnedFile,
  removeDeployFolder,
  sweepDeployFolders,
  type PinnedFile,
} from "../../src/effects/deploy-folder.js";
import { ExportRefused } from "../../src/effects/git-export.js";
import { sh } from "../support/git-cli.js";

/**
 * The deploy folder (src/effects/deploy-folder.ts) on real folders and a real hub: the owner's
 * pinned files read without following a link at the file or at any folder of its path, the
 * folder made fresh and owner-only under TEAMD_HOME with the artifact's tree and the pinned
 * files over it with exactly their pinned modes, never written through a link or over another
 * kind of entry the artifact planted, removed on failure, swept at start.
 */
let root: string;
let hub: string;

/** A commit of the hub whose tree the `build` callback writes. */
function artifact(name: string, build: (work: string) => void): string {
  const work = join(root, `work-${name}`);
  sh(root, ["init", "-q", "-b", "main", work]);
  build(work);
  sh(work, ["add", "-A"]);
  sh(work, ["commit", "-qm", name]);
  sh(work, ["push", "-q", hub, `HEAD:refs/heads/${name}`]);
  return sh(work, ["rev-parse", "HEAD"]);
}

let plain: string;
let executable: string;
let linkAtFile: string;
let linkAtFolder: string;
let fileAtFolder: string;
let folderAtFile: string;
let linkAtWorkdir: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "teamd-deploy-folder-"));
  hub = join(root, "hub.git");
  sh(root, ["init", "-q", "--bare", hub]);
  plain = artifact("plain", (w) => {
    mkdirSync(join(w, "deploy"));
    writeFileSync(join(w, "app.txt"), "app\n");
    writeFileSync(join(w, "deploy/run.sh"), "artifact's own\n");
  });
  // The artifact's own deploy/run.sh and deploy/vars are executable: the pinned ones are not.
  executable = artifact("executable", (w) => {
    mkdirSync(join(w, "deploy"));
    writeFileSync(join(w, "deploy/run.sh"), "#!/bin/sh\nartifact's own\n", { mode: 0o755 });
    writeFileSync(join(w, "deploy/vars"), "artifact's own\n", { mode: 0o755 });
  });
  // Each plants something where the pinned deploy/run.sh goes.
  linkAtFile = artifact("link-at-file", (w) => {
    mkdirSync(join(w, "deploy"));
    symlinkSync("/etc/passwd", join(w, "deploy/run.sh"));
  });
  linkAtFolder = artifact("link-at-folder", (w) => {
    mkdirSync(join(w, "elsewhere"));
    writeFileSync(join(w, "elsewhere/keep"), "x\n");
    symlinkSync("elsewhere", join(w, "deploy"));
  });
  // The owner's workdir ops/app: the artifact makes ops a link to a folder outside the tree.
  linkAtWorkdir = artifact("link-at-workdir", (w) => {
    writeFileSync(join(w, "app.txt"), "app\n");
    symlinkSync(root, join(w, "ops"));
  });
  fileAtFolder = artifact("file-at-folder", (w) => writeFileSync(join(w, "deploy"), "a file\n"));
  folderAtFile = artifact("folder-at-file", (w) => {
    mkdirSync(join(w, "deploy/run.sh"), { recursive: true });
    writeFileSync(join(w, "deploy/run.sh/inner"), "x\n");
  });
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const mode = (path: string): number => lstatSync(path).mode & 0o777;
const pinned = (bytes: string, fileMode = 0o755): ReadonlyMap<string, PinnedFile> =>
  new Map([["deploy/run.sh", { bytes: Buffer.from(bytes), mode: fileMode }]]);

describe("readPinnedFile", () => {
  let repo: string;
  beforeAll(async () => {
    repo = await mkdtemp(join(root, "repo-"));
    mkdirSync(join(repo, "deploy"));
    writeFileSync(join(repo, "deploy/run.sh"), "#!/bin/sh\necho run\n", { mode: 0o755 });
    writeFileSync(join(repo, "deploy/vars"), "A=1\n", { mode: 0o600 });
    writeFileSync(join(repo, "outside"), "not pinned\n");
    symlinkSync("../outside", join(repo, "deploy/link"));
    symlinkSync(join(repo, "deploy"), join(repo, "linked-dir"));
  });

  const read = async (path: string): Promise<PinnedFile> => {
    const file = await readPinnedFile(repo, path);
    if (!isPinnedFile(file)) throw new Error(`${path} ${file.absent}`);
    return file;
  };

  it("reads a regular file's bytes, executable as 0755", async () => {
    const file = await read("deploy/run.sh");
    expect(file.bytes.toString()).toBe("#!/bin/sh\necho run\n");
    expect(file.mode).toBe(0o755);
  });

  it("writes a file without any execute bit as 0644, whatever its other bits", async () => {
    expect((await read("deploy/vars")).mode).toBe(0o644);
  });

  it.each([
    ["a missing file", "deploy/missing", "is missing", false, true],
    ["a missing folder of its path", "nowhere/run.sh", "is missing (no folder nowhere)", false, true],
    ["a file where a folder of its path goes", "outside/run.sh", "is missing (outside is not a folder)", false],
    ["a folder", "deploy", "is not a regular file", false],
    ["a path that is not canonical", "deploy/../outside", "is not a canonical path of the repository", false],
    ["a symbolic link planted where the pinned file is expected (not followed)", "deploy/link", "is a symbolic link, which teamd does not follow", true],
  ])("reads nothing from %s, and says why", async (_what, path, absent, link, missing?: boolean) => {
    // `missing`: nothing is there, under real folders (a start pin's mount point may be made there).
    expect(await readPinnedFile(repo, path)).toEqual({ absent, link, ...(missing === true ? { missing } : {}) });
  });

  it("makes a missing path's folders and an empty file beneath real folders, never through a link, never over what is there", async () => {
    expect(await makeMissingFile(repo, "made/deep/PIN.md")).toBe(true);
    expect(readFileSync(join(repo, "made/deep/PIN.md"), "utf8")).toBe("");
    expect(await pinnedPathIsFile(repo, "made/deep/PIN.md")).toBe(true);
    // Through a folder link: refused, nothing made where it points.
    expect(await makeMissingFile(repo, "linked-dir/PIN.md")).toMatchObject({ link: true });
    expect(existsSync(join(repo, "deploy/PIN.md"))).toBe(false);
    // An existing file is kept as it is; a link at the path is refused.
    expect(await makeMissingFile(repo, "deploy/run.sh")).toBe(true);
    expect(readFileSync(join(repo, "deploy/run.sh"), "utf8")).not.toBe("");
    expect(await makeMissingFile(repo, "deploy/link")).toMatchObject({ link: true });
  });

  it("reads nothing under a symbolic link in a folder of its path: every component is opened without following a link", async () => {
    // linked-dir -> the repository's own deploy/: the same bytes, but through a link.
    expect(await readPinnedFile(repo, "linked-dir/run.sh")).toEqual({
      absent: "is under a symbolic link (linked-dir), which teamd does not follow",
      link: true,
    });
  });

  it("reads no host file through a folder link a merged trunk brought into the owner's tree (ci -> a folder outside it)", async () => {
    // The owner's working tree after pulling a trunk that merged a seat's `ci` symlink (a blob
    // a seat can push): ci/secret would name a file outside the repository.
    const host = await mkdtemp(join(root, "host-"));
    writeFileSync(join(host, "secret"), "host only\n", { mode: 0o600 });
    const owner = await mkdtemp(join(root, "owner-"));
    mkdirSync(join(owner, "ops"));
    symlinkSync(host, join(owner, "ci"));
    // Deeper too: a real folder whose child is the link, and a link to a link.
    symlinkSync(host, join(owner, "ops/ci"));
    symlinkSync(join(owner, "ci"), join(owner, "ci2"));
    for (const [path, where] of [
      ["ci/secret", "ci"],
      ["ops/ci/secret", "ops/ci"],
      ["ci2/secret", "ci2"],
    ] as const) {
      expect(await readPinnedFile(owner, path)).toEqual({ absent: `is under a symbolic link (${where}), which teamd does not follow`, link: true });
    }
  });

  it("reads a fifo as not a regular file, without hanging at its open", async () => {
    execFileSync("mkfifo", [join(repo, "deploy/fifo")]);
    expect(await readPinnedFile(repo, "deploy/fifo")).toEqual({ absent: "is not a regular file", link: false });
  });

  it("answers missing, not an error, when the repository itself cannot be opened", async () => {
    const file = await readPinnedFile(join(root, "no-such-repository"), "deploy/run.sh");
    expect(isPinnedFile(file)).toBe(false);
    expect(file).toMatchObject({
      link: false,
      absent: expect.stringMatching(/^is missing \(the owner's repository .* cannot be opened: ENOENT\)$/) as unknown,
    });
  });
});

describe("prepareDeployFolder", () => {
  it("makes tree/ (the artifact with the pinned files over it) and an empty home/, owner only, under TEAMD_HOME/deploys/", async () => {
    const home = await mkdtemp(join(root, "home-"));
    const folder = await prepareDeployFolder(home, { hub, commit: plain, maxBytes: 1 << 20 }, pinned("#!/bin/sh\npinned\n"));
    expect(folder.dir.startsWith(join(home, "deploys", "run-"))).toBe(true);
    expect(folder.tree).toBe(join(folder.dir, "tree"));
    expect(folder.home).toBe(join(folder.dir, "home"));
    expect([mode(join(home, "deploys")), mode(folder.dir), mode(folder.tree), mode(folder.home)]).toEqual([0o700, 0o700, 0o700, 0o700]);
    expect(readdirSync(folder.home)).toEqual([]);
    expect(readFileSync(join(folder.tree, "app.txt"), "utf8")).toBe("app\n");
    // The pinned bytes replace the artifact's own file (0644) at that path, with the pinned mode.
    expect(readFileSync(join(folder.tree, "deploy/run.sh"), "utf8")).toBe("#!/bin/sh\npinned\n");
    expect(mode(join(folder.tree, "deploy/run.sh"))).toBe(0o755);
    await removeDeployFolder(folder);
    expect(existsSync(folder.dir)).toBe(false);
    expect(readdirSync(join(home, "deploys"))).toEqual([]);
  });

  it("writes a pinned file over the artifact's file with exactly the pinned mode, either way (the artifact's mode does not carry over)", async () => {
    const home = await mkdtemp(join(root, "home-"));
    const files = new Map([
      // The artifact's run.sh is 0755 and vars 0755: pinned 0644 loses the x bit; a pinned 0755 keeps it.
      ["deploy/run.sh", { bytes: Buffer.from("#!/bin/sh\npinned\n"), mode: 0o755 }],
      ["deploy/vars", { bytes: Buffer.from("A=1\n"), mode: 0o644 }],
      ["app.txt", { bytes: Buffer.from("pinned app\n"), mode: 0o755 }],
    ]);
    const folder = await prepareDeployFolder(home, { hub, commit: executable, maxBytes: 1 << 20 }, files);
    expect(mode(join(folder.tree, "deploy/vars"))).toBe(0o644);
    expect(readFileSync(join(folder.tree, "deploy/vars"), "utf8")).toBe("A=1\n");
    expect(mode(join(folder.tree, "deploy/run.sh"))).toBe(0o755);
    await removeDeployFolder(folder);
    // And an artifact's 0644 file under a pinned 0755 (the case an executable pinned script lost its x bit).
    const again = await prepareDeployFolder(home, { hub, commit: plain, maxBytes: 1 << 20 }, files);
    expect(mode(join(again.tree, "app.txt"))).toBe(0o755);
    expect(mode(join(again.tree, "deploy/run.sh"))).toBe(0o755);
    expect(mode(join(again.tree, "deploy/vars"))).toBe(0o644);
    await removeDeployFolder(again);
  });

  it("writes the pinned mode exactly whatever the daemon's umask", async () => {
    const home = await mkdtemp(join(root, "home-"));
    const before = process.umask(0o077);
    try {
      const folder = await prepareDeployFolder(home, { hub, commit: plain, maxBytes: 1 << 20 }, pinned("#!/bin/sh\n", 0o755));
      expect(mode(join(folder.tree, "deploy/run.sh"))).toBe(0o755);
      await removeDeployFolder(folder);
    } finally {
      process.umask(before);
    }
  });

  it("makes the folders a pinned file's path needs when the artifact has none", async () => {
    const home = await mkdtemp(join(root, "home-"));
    const files = new Map([
      ["ops/new/vars", { bytes: Buffer.from("A=1\n"), mode: 0o644 }],
      ["ops/new/run", { bytes: Buffer.from("#!/bin/sh\n"), mode: 0o755 }],
    ]);
    const folder = await prepareDeployFolder(home, { hub, commit: plain, maxBytes: 1 << 20 }, files);
    expect(readFileSync(join(folder.tree, "ops/new/vars"), "utf8")).toBe("A=1\n");
    // A file the write creates takes the pinned mode.
    expect(mode(join(folder.tree, "ops/new/vars"))).toBe(0o644);
    expect(mode(join(folder.tree, "ops/new/run"))).toBe(0o755);
    await removeDeployFolder(folder);
  });

  it.each([
    [
      "a symbolic link where the pinned file goes",
      () => linkAtFile,
      /the artifact has a symbolic link at deploy\/run.sh, where the pinned deploy\/run.sh goes/,
    ],
    ["a symbolic link where a folder of its path goes", () => linkAtFolder, /the artifact has a symbolic link at deploy, where the pinned deploy\/run.sh goes/],
    ["a file where a folder of its path goes", () => fileAtFolder, /the artifact has another kind of entry at deploy, where the pinned deploy\/run.sh goes/],
    [
      "a folder where the pinned file goes",
      () => folderAtFile,
      /the artifact has another kind of entry at deploy\/run.sh, where the pinned deploy\/run.sh goes/,
    ],
  ])("refuses an artifact with %s, writes nothing through it, and leaves no folder", async (_what, commit, message) => {
    const home = await mkdtemp(join(root, "home-"));
    const attempt = prepareDeployFolder(home, { hub, commit: commit(), maxBytes: 1 << 20 }, pinned("pinned\n"));
    await expect(attempt).rejects.toBeInstanceOf(ExportRefused);
    await expect(attempt).rejects.toThrow(message);
    expect(readdirSync(join(home, "deploys"))).toEqual([]);
    // Nothing reached the link's target.
    expect(readFileSync(join(root, "work-link-at-folder", "elsewhere/keep"), "utf8")).toBe("x\n");
  });

  it("gives the command's working folder inside the tree, and refuses an artifact that makes a folder of it a link or a file", async () => {
    const home = await mkdtemp(join(root, "home-"));
    const folder = await prepareDeployFolder(home, { hub, commit: plain, maxBytes: 1 << 20 }, new Map(), "deploy");
    expect(folder.cwd).toBe(join(folder.tree, "deploy"));
    const atRoot = await prepareDeployFolder(home, { hub, commit: plain, maxBytes: 1 << 20 }, new Map());
    expect(atRoot.cwd).toBe(atRoot.tree);
    for (const [commit, workdir, message] of [
      [linkAtWorkdir, "ops/app", /the artifact has a symbolic link at ops, where the deploy command's working folder ops\/app goes/],
      [linkAtWorkdir, "ops", /the artifact has a symbolic link at ops, where the deploy command's working folder ops goes/],
      [plain, "app.txt", /the artifact has another kind of entry at app.txt, where the deploy command's working folder app.txt goes/],
    ] as const) {
      const fresh = await mkdtemp(join(root, "home-"));
      const attempt = prepareDeployFolder(fresh, { hub, commit, maxBytes: 1 << 20 }, new Map(), workdir);
      await expect(attempt).rejects.toBeInstanceOf(ExportRefused);
      await expect(attempt).rejects.toThrow(message);
      expect(readdirSync(join(fresh, "deploys"))).toEqual([]);
    }
  });

  it("refuses a tree larger than its limit, and leaves no folder", async () => {
    const home = await mkdtemp(join(root, "home-"));
    await expect(prepareDeployFolder(home, { hub, commit: plain, maxBytes: 3 }, new Map())).rejects.toBeInstanceOf(ExportRefused);
    expect(readdirSync(join(home, "deploys"))).toEqual([]);
  });

  it("removes the folder on any other failure too, and rethrows it as it was", async () => {
    const home = await mkdtemp(join(root, "home-"));
    const attempt = prepareDeployFolder(home, { hub, commit: "0123456789abcdef0123456789abcdef01234567", maxBytes: 1 << 20 }, new Map());
    await expect(attempt).rejects.toThrow();
    await expect(attempt).rejects.not.toBeInstanceOf(ExportRefused);
    expect(readdirSync(join(home, "deploys"))).toEqual([]);
  });

  it("gives each deploy a folder of its own", async () => {
    const home = await mkdtemp(join(root, "home-"));
    const [a, b] = await Promise.all([1, 2].map(() => prepareDeployFolder(home, { hub, commit: plain, maxBytes: 1 << 20 }, new Map())));
    expect(a?.dir).not.toBe(b?.dir);
    expect(readdirSync(join(home, "deploys")).length).toBe(2);
  });
});

describe("sweepDeployFolders", () => {
  it("removes every folder a dead daemon left and names them", async () => {
    const home = await mkdtemp(join(root, "home-"));
    const left = await prepareDeployFolder(home, { hub, commit: plain, maxBytes: 1 << 20 }, new Map());
    mkdirSync(join(home, "deploys", "run-other", "tree"), { recursive: true });
    const swept = await sweepDeployFolders(home);
    expect(swept.sort()).toEqual([left.dir.slice(join(home, "deploys").length + 1), "run-other"].sort());
    expect(readdirSync(join(home, "deploys"))).toEqual([]);
  });

  it("answers nothing when no deploy ever ran (no deploys/ folder)", async () => {
    const home = await mkdtemp(join(root, "home-"));
    expect(await sweepDeployFolders(home)).toEqual([]);
    expect(existsSync(join(home, "deploys"))).toBe(false);
  });
});
