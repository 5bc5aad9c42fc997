import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeRefInLine } from "../../src/effects/ref-write.js";

/**
 * A ref written in line (src/effects/ref-write.ts) against git's own `update-ref` on a real bare
 * repository: where it writes, git reads the same refs after as after git's own update; where it
 * says "git", nothing of it is left (no lock, no ref) and git's update is the one to run.
 */
describe("writeRefInLine: a ref written as git writes it, or left to git", () => {
  let dir: string;
  let hub: string;
  let commits: string[];
  const git = (repo: string, ...args: string[]) =>
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t.invalid", `--git-dir=${repo}`, ...args], {
      encoding: "utf8",
      env: { PATH: process.env.PATH ?? "", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
    }).trim();
  const refs = (repo: string) => git(repo, "for-each-ref", "--format=%(objectname) %(refname)");
  const locks = (repo: string): string[] => {
    const out: string[] = [];
    const walk = (folder: string) => {
      for (const entry of readdirSync(folder, { withFileTypes: true })) {
        if (entry.isDirectory()) walk(join(folder, entry.name));
        else if (entry.name.endsWith(".lock")) out.push(join(folder, entry.name));
      }
    };
    walk(repo);
    return out;
  };
  /** A second bare repository with the same objects and refs: where git's own update runs. */
  const twin = () => {
    const copy = join(dir, `twin-${Math.random().toString(36).slice(2)}.git`);
    execFileSync("cp", ["-a", hub, copy]);
    return copy;
  };
  const gitUpdate = (repo: string, ref: string, newOid: string, oldOid: string) =>
    spawnSync("git", [`--git-dir=${repo}`, "update-ref", ref, newOid, oldOid || "0".repeat(40)], { env: { PATH: process.env.PATH ?? "" } }).status === 0;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "teamd-ref-write-"));
    hub = join(dir, "hub.git");
    execFileSync("git", ["init", "-q", "--bare", "--template=", "-b", "main", hub]);
    const work = join(dir, "work");
    execFileSync("git", ["init", "-q", "-b", "main", work]);
    commits = [];
    for (const name of ["a", "b", "c"]) {
      writeFileSync(join(work, name), `${name}\n`);
      execFileSync("git", ["-C", work, "add", name]);
      execFileSync("git", ["-C", work, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", name]);
      commits.push(execFileSync("git", ["-C", work, "rev-parse", "HEAD"], { encoding: "utf8" }).trim());
    }
    execFileSync("git", ["-C", work, "push", "-q", hub, "main"]);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("makes a new ref, folders and all, and moves one from its expected value, as git update-ref does", async () => {
    const [a, b, c] = commits as [string, string, string];
    const other = twin();
    expect(await writeRefInLine(hub, "refs/heads/seat/w1/new", b, "")).toBe("written");
    expect(gitUpdate(other, "refs/heads/seat/w1/new", b, "")).toBe(true);
    expect(await writeRefInLine(hub, "refs/heads/main", a, c)).toBe("written");
    expect(gitUpdate(other, "refs/heads/main", a, c)).toBe(true);
    expect(refs(hub)).toBe(refs(other));
    expect(readFileSync(join(hub, "refs/heads/seat/w1/new"), "utf8")).toBe(`${b}\n`);
    expect(statSync(join(hub, "refs/heads/seat/w1/new")).mode & 0o777).toBe(statSync(join(other, "refs/heads/seat/w1/new")).mode & 0o777);
    expect(locks(hub)).toEqual([]);
  });

  it("gives a repository shared with a group what git gives it: the ref group-writable, each new folder group-writable and setgid", async () => {
    const [a, b] = commits as [string, string, string];
    git(hub, "config", "core.sharedRepository", "group");
    const other = twin();
    expect(await writeRefInLine(hub, "refs/heads/seat/w9/deep/new", a, "")).toBe("written");
    expect(gitUpdate(other, "refs/heads/seat/w9/deep/new", a, "")).toBe(true);
    expect(await writeRefInLine(hub, "refs/heads/main", b, commits[2] as string)).toBe("written");
    expect(gitUpdate(other, "refs/heads/main", b, commits[2] as string)).toBe(true);
    const modes = (repo: string) =>
      ["refs/heads/seat/w9", "refs/heads/seat/w9/deep", "refs/heads/seat/w9/deep/new", "refs/heads/main"].map((path) => {
        const info = statSync(join(repo, path));
        return `${path} ${(info.mode & 0o7777).toString(8)} ${info.gid}`;
      });
    expect(modes(hub)).toEqual(modes(other));
    expect(modes(hub)[0]).toMatch(/ 2775 /);
    expect(refs(hub)).toBe(refs(other));
    // Any other sharing is git's to apply.
    for (const value of ["all", "0640", "true"]) {
      const repo = twin();
      git(repo, "config", "core.sharedRepository", value);
      expect(await writeRefInLine(repo, "refs/heads/seat/w9/other", a, ""), value).toBe("git");
    }
  });

  it("moves a packed ref by writing it loose over the packed one, as git does", async () => {
    const [a, , c] = commits as [string, string, string];
    git(hub, "update-ref", "refs/heads/seat/w1/p", c);
    git(hub, "pack-refs", "--all");
    expect(existsSync(join(hub, "refs/heads/seat/w1/p"))).toBe(false);
    expect(await writeRefInLine(hub, "refs/heads/seat/w1/p", a, c)).toBe("written");
    expect(git(hub, "rev-parse", "refs/heads/seat/w1/p")).toBe(a);
  });

  it("leaves to git, with nothing left behind, what is not the expected value, a held lock, or a name beside another", async () => {
    const [a, b, c] = commits as [string, string, string];
    git(hub, "update-ref", "refs/heads/seat/w1/x", b);
    git(hub, "update-ref", "refs/heads/seat/w1/dir/inside", b);
    git(hub, "update-ref", "refs/heads/packed/inside", b);
    git(hub, "update-ref", "refs/heads/packedfile", b);
    git(hub, "pack-refs", "--all");
    const before = refs(hub);
    const cases: Array<[string, string, string]> = [
      // Not the value expected: the ref moved, or it exists where none was expected, or the reverse.
      ["refs/heads/main", a, b],
      ["refs/heads/seat/w1/x", a, ""],
      ["refs/heads/seat/w1/none", a, c],
      // A ref where a folder of refs is (loose, packed), and under a ref (loose, packed).
      ["refs/heads/seat/w1/dir", a, ""],
      ["refs/heads/packed", a, ""],
      ["refs/heads/seat/w1/x/under", a, ""],
      ["refs/heads/packedfile/under", a, ""],
      // Not a name this writes.
      ["refs/heads/bad..name", a, ""],
      ["HEAD", a, c],
      ["refs/heads/seat/w1/y", "not-an-id", ""],
    ];
    for (const [ref, newOid, oldOid] of cases) {
      expect(await writeRefInLine(hub, ref, newOid, oldOid), ref).toBe("git");
      expect(refs(hub), ref).toBe(before);
      expect(locks(hub), ref).toEqual([]);
    }
    // A lock another update holds: left as it is, the ref untouched.
    writeFileSync(join(hub, "refs/heads/main.lock"), "");
    expect(await writeRefInLine(hub, "refs/heads/main", a, c)).toBe("git");
    expect(git(hub, "rev-parse", "refs/heads/main")).toBe(c);
    expect(existsSync(join(hub, "refs/heads/main.lock"))).toBe(true);
  });

  it("leaves to git a repository git would write another way: a reflog, its config, a work tree, a folder that is a link", async () => {
    const [a, , c] = commits as [string, string, string];
    const tries: Array<[string, (repo: string) => void]> = [
      ["a logs folder", (repo) => mkdirSync(join(repo, "logs"))],
      ["core.logAllRefUpdates", (repo) => git(repo, "config", "core.logAllRefUpdates", "true")],
      ["an include", (repo) => git(repo, "config", "include.path", "/dev/null")],
      ["not bare", (repo) => git(repo, "config", "core.bare", "false")],
      ["a reftable folder", (repo) => mkdirSync(join(repo, "reftable"))],
      [
        "a folder on the way that is a link",
        (repo) => {
          mkdirSync(join(dir, "elsewhere"));
          symlinkSync(join(dir, "elsewhere"), join(repo, "refs/heads/seat"));
        },
      ],
    ];
    for (const [what, change] of tries) {
      const repo = twin();
      change(repo);
      expect(await writeRefInLine(repo, "refs/heads/seat/w1/new", a, ""), what).toBe("git");
      // (The link is on that ref's way only: main is written.)
      if (what !== "a folder on the way that is a link") expect(await writeRefInLine(repo, "refs/heads/main", a, c), what).toBe("git");
      expect(locks(repo), what).toEqual([]);
      expect(existsSync(join(dir, "elsewhere", "w1")), what).toBe(false);
    }
  });

  it("random creates and moves, some packed first: the refs git reads after are git's own update's (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.tuple(fc.constantFrom("refs/heads/x", "refs/heads/seat/w1/y", "refs/heads/seat/w1/y/z", "refs/heads/q/r"), fc.nat(2), fc.nat(3), fc.boolean()),
          {
            minLength: 1,
            maxLength: 6,
          },
        ),
        async (steps) => {
          const mine = twin();
          const theirs = twin();
          for (const [ref, next, expected, pack] of steps) {
            if (pack) for (const repo of [mine, theirs]) git(repo, "pack-refs", "--all");
            const newOid = commits[next] as string;
            const oldOid = expected === 3 ? "" : (commits[expected] as string);
            const wrote = await writeRefInLine(mine, ref, newOid, oldOid);
            const gitWrote = gitUpdate(theirs, ref, newOid, oldOid);
            // Written in line only where git writes too; else git, run on the same repository, decides.
            if (wrote === "written") expect(gitWrote).toBe(true);
            else gitUpdate(mine, ref, newOid, oldOid);
            expect(refs(mine)).toBe(refs(theirs));
            expect(locks(mine)).toEqual([]);
          }
          rmSync(mine, { recursive: true, force: true });
          rmSync(theirs, { recursive: true, force: true });
        },
      ),
      { numRuns: 40 },
    );
  });
});
