import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_LOOSE_REFS, plainRefName, readFileRef, readFileRefs } from "../../src/effects/ref-files.js";
import { sh } from "../support/git-cli.js";

/**
 * The in-line ref reader against git itself, on real repositories: where it answers, it answers
 * as `git for-each-ref` does (loose, packed, both, packed and then deleted); where it cannot be
 * sure (a symbolic or broken ref, a link, a name outside its alphabet, another format, too many
 * loose refs, a packed-refs it does not know) it says so, and the caller asks git.
 */
let root: string;
let commits: string[];
let fresh = 0;

/** An empty repository whose objects are the clone's (by alternates): refs may name its commits. */
function repo(): string {
  const dir = join(root, `r${fresh++}.git`);
  sh(root, ["init", "-q", "--bare", dir]);
  writeFileSync(join(dir, "objects", "info", "alternates"), `${join(root, "clone.git", "objects")}\n`);
  return dir;
}

/** git's own answer: the refs under `prefix`, as for-each-ref lists them. */
function gitRefs(dir: string, prefix: string): { name: string; oid: string }[] {
  const out = sh(dir, ["for-each-ref", "--format=%(objectname) %(refname)", "--", prefix]);
  return out === ""
    ? []
    : out.split("\n").map((line) => {
        const [oid = "", name = ""] = line.split(" ");
        return { name, oid };
      });
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "teamd-ref-files-"));
  const work = join(root, "work");
  sh(root, ["init", "-q", "-b", "main", work]);
  commits = [];
  for (let i = 0; i < 4; i++) {
    writeFileSync(join(work, "f"), `${i}\n`);
    sh(work, ["add", "f"]);
    sh(work, ["commit", "-q", "-m", `c${i}`]);
    commits.push(sh(work, ["rev-parse", "HEAD"]));
  }
  sh(work, ["tag", "-a", "-m", "t", "v1", commits[0] as string]);
  sh(root, ["clone", "-q", "--bare", "--no-local", work, join(root, "clone.git")]);
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("readFileRefs / readFileRef: as git answers", () => {
  it("a clone's packed refs (with a peeled tag), then loose ones over them, then a packed ref deleted", () => {
    const dir = join(root, "clone.git");
    for (const prefix of ["refs/", "refs/heads/", "refs/tags/"]) expect(readFileRefs(dir, prefix)).toEqual(gitRefs(dir, prefix));
    sh(dir, ["update-ref", "refs/heads/main", commits[2] as string]);
    sh(dir, ["update-ref", "refs/heads/seat/a/x", commits[1] as string]);
    sh(dir, ["update-ref", "refs/heads/seat/ab/y", commits[3] as string]);
    for (const prefix of ["refs/", "refs/heads/", "refs/heads/seat/", "refs/heads/seat/a/", "refs/heads/nothing/"])
      expect(readFileRefs(dir, prefix)).toEqual(gitRefs(dir, prefix));
    expect(readFileRef(dir, "refs/heads/main")).toBe(commits[2]);
    expect(readFileRef(dir, "refs/tags/v1")).toBe(sh(dir, ["rev-parse", "refs/tags/v1"]));
    // A folder of refs is not a ref; nor is a name nothing stands at.
    expect(readFileRef(dir, "refs/heads/seat")).toBeNull();
    expect(readFileRef(dir, "refs/heads/none")).toBeNull();
    sh(dir, ["update-ref", "-d", "refs/tags/v1"]);
    expect(readFileRefs(dir, "refs/")).toEqual(gitRefs(dir, "refs/"));
    expect(readFileRef(dir, "refs/tags/v1")).toBeNull();
  });

  it("random refs, some packed, some moved or deleted after: the same listing as git's (property)", () => {
    const name = fc.constantFrom("a", "b", "seat/a/x", "seat/a/y", "seat/b/x", "x.y", "UP_1", "n-2", "a+b");
    const step = fc.record({
      ref: name,
      op: fc.constantFrom("set", "set", "delete", "pack"),
      commit: fc.integer({ min: 0, max: 3 }),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 8 }), (steps) => {
        const dir = repo();
        for (const s of steps) {
          if (s.op === "pack") sh(dir, ["pack-refs", "--all", "--prune"]);
          else if (s.op === "delete") sh(dir, ["update-ref", "-d", `refs/heads/${s.ref}`]);
          else {
            // git refuses a ref beside a folder of refs of its name (a/… and a): so does this step.
            try {
              sh(dir, ["update-ref", `refs/heads/${s.ref}`, commits[s.commit] as string]);
            } catch {
              /* a name conflict: git's refusal, not a case */
            }
          }
        }
        for (const prefix of ["refs/", "refs/heads/", "refs/heads/seat/", "refs/heads/seat/a/"])
          expect(readFileRefs(dir, prefix)).toEqual(gitRefs(dir, prefix));
        for (const s of steps) {
          const ref = `refs/heads/${s.ref}`;
          const git = gitRefs(dir, ref).find((r) => r.name === ref)?.oid ?? null;
          expect(readFileRef(dir, ref)).toBe(git);
        }
      }),
      { numRuns: 25 },
    );
  }, 120_000);
});

describe("readFileRefs / readFileRef: git's to answer", () => {
  const base = () => {
    const dir = repo();
    sh(dir, ["update-ref", "refs/heads/main", commits[0] as string]);
    return dir;
  };

  it("a symbolic ref, a broken file, a link, an odd name: no answer (git answers)", () => {
    const symbolic = base();
    writeFileSync(join(symbolic, "refs", "heads", "alias"), "ref: refs/heads/main\n");
    expect(readFileRefs(symbolic, "refs/")).toBeUndefined();
    expect(readFileRef(symbolic, "refs/heads/alias")).toBeUndefined();

    const broken = base();
    writeFileSync(join(broken, "refs", "heads", "bad"), "not an id\n");
    expect(readFileRefs(broken, "refs/heads/")).toBeUndefined();
    expect(readFileRef(broken, "refs/heads/bad")).toBeUndefined();

    const linked = base();
    symlinkSync(join(linked, "refs", "heads", "main"), join(linked, "refs", "heads", "link"));
    expect(readFileRefs(linked, "refs/")).toBeUndefined();
    expect(readFileRef(linked, "refs/heads/link")).toBeUndefined();

    const odd = base();
    sh(odd, ["update-ref", "refs/heads/caf\u00e9", commits[1] as string]);
    sh(odd, ["update-ref", "refs/heads/at@x", commits[1] as string]);
    expect(readFileRefs(odd, "refs/heads/")).toBeUndefined();
    expect(readFileRef(odd, "refs/heads/caf\u00e9")).toBeUndefined();
    expect(plainRefName("refs/heads/at@x")).toBe(false);
  });

  it("a lock file is passed over, as git passes over it", () => {
    const dir = base();
    writeFileSync(join(dir, "refs", "heads", "next.lock"), `${commits[1]}\n`);
    expect(readFileRefs(dir, "refs/")).toEqual(gitRefs(dir, "refs/"));
  });

  it("more loose refs than are read in line, another ref format, an unknown packed-refs: no answer", () => {
    const many = base();
    for (let i = 0; i < MAX_LOOSE_REFS; i++) writeFileSync(join(many, "refs", "heads", `b${i}`), `${commits[0]}\n`);
    expect(readFileRefs(many, "refs/heads/")).toBeUndefined();
    unlinkSync(join(many, "refs", "heads", "b0"));
    expect(readFileRefs(many, "refs/heads/")).toEqual(gitRefs(many, "refs/heads/"));

    // reftable leaves refs/heads a file (and a reftable/ folder): not this reader's format.
    const table = repo();
    rmSync(join(table, "refs", "heads"), { recursive: true });
    writeFileSync(join(table, "refs", "heads"), "this repository uses the reftable format\n");
    mkdirSync(join(table, "reftable"));
    expect(readFileRefs(table, "refs/")).toBeUndefined();
    expect(readFileRef(table, "refs/heads/main")).toBeUndefined();

    const packed = base();
    writeFileSync(join(packed, "packed-refs"), `# pack-refs with: peeled fully-peeled sorted \n${commits[1]} refs/heads/p\n`);
    expect(readFileRefs(packed, "refs/heads/")).toEqual(gitRefs(packed, "refs/heads/"));
    writeFileSync(join(packed, "packed-refs"), `${commits[1]} refs/heads/p\ngarbage\n`);
    expect(readFileRefs(packed, "refs/heads/")).toBeUndefined();
    expect(readFileRef(packed, "refs/heads/p")).toBeUndefined();
  });

  it("a prefix that is not a ref folder, or a name not under refs/: no answer", () => {
    const dir = base();
    expect(readFileRefs(dir, "refs/heads")).toBeUndefined();
    expect(readFileRefs(dir, "refs/heads/*")).toBeUndefined();
    expect(readFileRef(dir, "HEAD")).toBeUndefined();
    expect(readFileRef(dir, "refs/heads/../config")).toBeUndefined();
  });
});
