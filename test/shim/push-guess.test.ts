import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GUESS_COMMITS, GUESS_FILE, guessPush, heldAfter, localCommit, recordPushed } from "../../shim/push-guess.js";

/**
 * The remote helper's guess of a push (shim/push-guess.ts), read from a real repository's
 * files and held to what git itself says of them: HEAD's commit, the tracking refs' tips and
 * the helper's note. Where it does not plainly understand what it reads, there is no guess.
 */
describe("git-remote-teamd: the push's guess", () => {
  let dir: string;
  let gitDir: string;
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t.invalid", ...args], {
      cwd: dir,
      encoding: "utf8",
      env: { PATH: process.env.PATH ?? "" },
    }).trim();
  const commit = (name: string) => {
    writeFileSync(join(dir, name), `${name}\n`);
    git("add", name);
    git("commit", "-qm", name);
    return git("rev-parse", "HEAD");
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "teamd-push-guess-"));
    gitDir = join(dir, ".git");
    git("init", "-q", "-b", "main");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("is HEAD's commit less the remote's tracking refs, loose and packed, each once", () => {
    const base = commit("a");
    git("update-ref", "refs/remotes/teamd/main", base);
    git("update-ref", "refs/remotes/teamd/seat/w1/x", base);
    const second = commit("b");
    git("update-ref", "refs/remotes/teamd/seat/w1/y", second);
    git("update-ref", "refs/remotes/other/main", second);
    const tip = commit("c");
    expect(guessPush(gitDir, "teamd")).toEqual({ tip, excludes: expect.arrayContaining([base, second]) as unknown });
    expect(guessPush(gitDir, "teamd")?.excludes).toHaveLength(2);
    git("pack-refs", "--all");
    expect(guessPush(gitDir, "teamd")?.tip).toBe(tip);
    expect(new Set(guessPush(gitDir, "teamd")?.excludes)).toEqual(new Set([base, second]));
    // A loose ref stands over its packed line, as in git.
    git("update-ref", "refs/remotes/teamd/seat/w1/y", tip);
    expect(new Set(guessPush(gitDir, "teamd")?.excludes)).toEqual(new Set([base, tip]));
    // A detached HEAD is its commit.
    git("checkout", "-q", "--detach", base);
    expect(guessPush(gitDir, "teamd")?.tip).toBe(base);
    // Tracking refs ref-files.ts cannot read as git would (a symbolic one among them): the note alone.
    git("symbolic-ref", "refs/remotes/teamd/HEAD", "refs/remotes/teamd/main");
    expect(guessPush(gitDir, "teamd")).toBeUndefined();
    recordPushed(gitDir, [second]);
    expect(guessPush(gitDir, "teamd")).toEqual({ tip: base, excludes: [second] });
  });

  it("adds the note recordPushed left, and reads back what it wrote", () => {
    const base = commit("a");
    const tip = commit("b");
    expect(guessPush(gitDir, "teamd")).toBeUndefined();
    recordPushed(gitDir, [base, base, "not an id", ""]);
    expect(guessPush(gitDir, "teamd")).toEqual({ tip, excludes: [base] });
    expect(readFileSync(join(gitDir, GUESS_FILE), "utf8")).toBe(`# teamd push guess 1\n${base}\n`);
    // Kept to its bound: the first GUESS_COMMITS ids.
    const many = Array.from({ length: GUESS_COMMITS + 10 }, (_, i) => i.toString(16).padStart(40, "0"));
    recordPushed(gitDir, many);
    expect(guessPush(gitDir, "teamd")?.excludes).toEqual(many.slice(0, GUESS_COMMITS));
  });

  it("notes the daemon's listing as the push left it (heldAfter): a moved branch's old commit is not held", () => {
    const [a, b, c, d, e] = ["a", "b", "c", "d", "e"].map((x) => x.repeat(40)) as [string, string, string, string, string];
    const listed = [
      { name: "refs/heads/main", oid: a },
      { name: "refs/heads/seat/w1/x", oid: b },
      { name: "refs/heads/seat/w1/y", oid: c },
      { name: "refs/heads/seat/w1/z", oid: a },
      { name: "refs/heads/seat/w2/q", oid: d },
    ];
    const present = new Set([a, b, c]);
    const cases: [string, { hubRef: string; oid: string }[], string[]][] = [
      ["nothing landed: the listing, of what this repository has", [], [a, b, c]],
      ["a branch moved: its old commit goes", [{ hubRef: "refs/heads/seat/w1/x", oid: e }], [a, e, c]],
      ["a branch created", [{ hubRef: "refs/heads/seat/w1/n", oid: e }], [a, b, c, e]],
      ["a branch deleted", [{ hubRef: "refs/heads/seat/w1/y", oid: "" }], [a, b]],
      ["a commit another ref still holds stays", [{ hubRef: "refs/heads/seat/w1/z", oid: e }], [a, b, c, e]],
      ["a deleted branch that was not listed", [{ hubRef: "refs/heads/seat/w1/none", oid: "" }], [a, b, c]],
    ];
    for (const [what, landed, held] of cases) expect(heldAfter(listed, present, landed), what).toEqual(held);
  });

  it("reads no note of another form, and no note that is not a plain file", () => {
    const base = commit("a");
    commit("b");
    const note = join(gitDir, GUESS_FILE);
    writeFileSync(note, `${base}\n`);
    expect(guessPush(gitDir, "teamd")).toBeUndefined();
    rmSync(note);
    writeFileSync(join(dir, "elsewhere"), `# teamd push guess 1\n${base}\n`);
    symlinkSync(join(dir, "elsewhere"), note);
    expect(guessPush(gitDir, "teamd")).toBeUndefined();
    rmSync(note);
    // Past what a note of GUESS_COMMITS ids of either length can be.
    writeFileSync(note, `# teamd push guess 1\n${`${base}\n`.repeat((GUESS_COMMITS + 1) * 2)}`);
    expect(guessPush(gitDir, "teamd")).toBeUndefined();
  });

  it("makes no guess it does not plainly understand", () => {
    const base = commit("a");
    commit("b");
    git("update-ref", "refs/remotes/teamd/main", base);
    expect(guessPush(gitDir, "teamd")).toBeDefined();
    // No tracking ref and no note: a pack of HEAD's whole history is no guess.
    expect(guessPush(gitDir, "elsewhere")).toBeUndefined();
    // A remote that is not a plain name (git names a URL's remote by the URL).
    for (const remote of ["teamd::seat", "../teamd", ".", "", undefined]) expect(guessPush(gitDir, remote)).toBeUndefined();
    expect(guessPush(undefined, "teamd")).toBeUndefined();
    // A linked worktree's refs are in its common folder.
    writeFileSync(join(gitDir, "commondir"), "..\n");
    expect(guessPush(gitDir, "teamd")).toBeUndefined();
    rmSync(join(gitDir, "commondir"));
    // A tracking ref that is not an object id, or a link: the tracking refs are not read (and there is no note).
    writeFileSync(join(gitDir, "refs/remotes/teamd/bad"), "garbage\n");
    expect(guessPush(gitDir, "teamd")).toBeUndefined();
    rmSync(join(gitDir, "refs/remotes/teamd/bad"));
    symlinkSync(join(gitDir, "refs/remotes/teamd/main"), join(gitDir, "refs/remotes/teamd/link"));
    expect(guessPush(gitDir, "teamd")).toBeUndefined();
    rmSync(join(gitDir, "refs/remotes/teamd/link"));
    // An unborn branch has no commit to guess.
    git("checkout", "-q", "--orphan", "empty");
    expect(guessPush(gitDir, "teamd")).toBeUndefined();
  });

  it("reads no tracking refs past ref-files.ts's bound of loose refs", () => {
    const base = commit("a");
    mkdirSync(join(gitDir, "refs/remotes/teamd"), { recursive: true });
    for (let i = 0; i < 1100; i++) writeFileSync(join(gitDir, `refs/remotes/teamd/r${i}`), `${base}\n`);
    expect(guessPush(gitDir, "teamd")).toBeUndefined();
  });

  it("reads what a push's source names as git resolves it: HEAD, a plain ref, loose or packed; nothing else", () => {
    const first = commit("a");
    const second = commit("b");
    git("branch", "side", first);
    expect(localCommit(gitDir, "HEAD")).toBe(git("rev-parse", "HEAD"));
    expect(localCommit(gitDir, "refs/heads/main")).toBe(second);
    expect(localCommit(gitDir, "refs/heads/side")).toBe(first);
    git("pack-refs", "--all");
    expect(localCommit(gitDir, "refs/heads/side")).toBe(first);
    git("checkout", "-q", "--detach", first);
    expect(localCommit(gitDir, "HEAD")).toBe(first);
    // Not a ref this reads, no such ref, another name for one, no repository: git's cat-file answers.
    for (const source of ["main", "HEAD~1", "refs/heads/none", `${second}`, "refs/heads/a..b"]) expect(localCommit(gitDir, source), source).toBeUndefined();
    expect(localCommit(undefined, "HEAD")).toBeUndefined();
    writeFileSync(join(gitDir, "commondir"), "..\n");
    expect(localCommit(gitDir, "HEAD")).toBeUndefined();
  });
});
