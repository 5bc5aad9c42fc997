import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PACK_FILE_NAME } from "../../src/effects/pack-file-name.js";

/**
 * The remote helper's front (shim/git-remote-front.sh, as the build installs it): run by /bin/sh
 * on a real repository, under a process whose command line is a `git push` (or is not), with a
 * stub in place of the shim that reports what it was run with — its arguments, TEAMD_EARLY_PACK,
 * the front's account on fd 4 and git's stdin on fd 0. The pack it starts is a real
 * pack-objects', checked with git's own index-pack.
 */
const FRONT = join(process.cwd(), "dist/shim-bundle/teamd-shim.cjs.git-remote");

const STUB = `const { readFileSync } = require("node:fs");
let account = null;
if (process.env.TEAMD_EARLY_PACK !== undefined) account = readFileSync(4, "latin1");
process.stdout.write(JSON.stringify({ argv: process.argv.slice(2), early: process.env.TEAMD_EARLY_PACK ?? null, account, stdin: readFileSync(0, "utf8") }));
`;

interface Ran {
  readonly argv: string[];
  readonly early: string | null;
  readonly account: string | null;
  readonly stdin: string;
}

describe.runIf(process.platform === "linux")("git-remote-teamd's front", () => {
  let dir: string;
  let repo: string;
  let tmp: string;
  let bin: string;
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t.invalid", ...args], {
      cwd: repo,
      encoding: "utf8",
      env: { PATH: process.env.PATH ?? "", HOME: dir },
    }).trim();
  const commit = (name: string) => {
    writeFileSync(join(repo, name), `${name}\n`);
    git("add", name);
    git("commit", "-qm", name);
    return git("rev-parse", "HEAD");
  };
  const note = (...oids: string[]) => writeFileSync(join(repo, ".git/teamd-push-guess"), ["# teamd push guess 1", ...oids, ""].join("\n"));
  /**
   * The front as git runs it for a remote named `remote`: its parent a shell, whose parent's
   * command line is `git … push` (`pushing`) or `git … fetch`; `env` added to the seat's.
   */
  const front = (options: { pushing?: boolean; remote?: string; env?: Record<string, string | undefined>; stdin?: string } = {}): Ran => {
    const env: Record<string, string> = { PATH: process.env.PATH ?? "", HOME: dir, GIT_DIR: ".git", TEAMD_TMP: tmp, TEAMD_SHIM: join(bin, "stub.js") };
    for (const [name, value] of Object.entries(options.env ?? {})) {
      if (value === undefined) delete env[name];
      else env[name] = value;
    }
    // bash, named git, with `push` among its words, runs sh, which runs the front (`; :` keeps each a process of its own).
    const run = spawnSync(
      "bash",
      [
        "-c",
        `sh -c '"$0" "$1" teamd::seat; :' "${join(bin, "git-remote-teamd")}" "${options.remote ?? "teamd"}"; :`,
        options.pushing === false ? "fetch" : "push",
      ],
      {
        argv0: "git",
        cwd: repo,
        env,
        input: options.stdin ?? "capabilities\n",
        encoding: "utf8",
        timeout: 30_000,
      },
    );
    if (run.status !== 0) throw new Error(`the front failed (${run.status}): ${run.stderr}`);
    return JSON.parse(run.stdout) as Ran;
  };
  const packs = () => readdirSync(tmp).filter((name) => name.startsWith(".teamd-pack-"));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "teamd-front-"));
    repo = join(dir, "repo");
    tmp = join(dir, "tmp");
    bin = join(dir, "bin");
    for (const folder of [repo, tmp, bin]) mkdirSync(folder);
    copyFileSync(FRONT, join(bin, "git-remote-teamd"));
    chmodSync(join(bin, "git-remote-teamd"), 0o755);
    writeFileSync(join(bin, "stub.js"), STUB);
    git("init", "-q", "-b", "main");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("starts a push's pack on its guess, tells the helper of it on fd 4, and gives it git's stdin", () => {
    const base = commit("a");
    git("update-ref", "refs/remotes/teamd/main", base);
    const held = commit("b");
    note(held);
    const tip = commit("c");

    const ran = front({ stdin: "capabilities\nlist for-push\n" });
    expect(ran.argv).toEqual(["--git-remote-helper", "teamd", "teamd::seat"]);
    expect(ran.stdin).toBe("capabilities\nlist for-push\n");
    expect(ran.early).toMatch(PACK_FILE_NAME);
    const [pid, ...rest] = (ran.account ?? "").split("\n");
    expect(pid).toMatch(/^pid [1-9][0-9]*$/);
    // The tip, then what it leaves out: the note's commits, then the tracking refs'; then its exit.
    expect(rest).toEqual([tip, "--not", held, base, ".", "exit 0", ""]);
    // The pack is pack-objects' own: c's commit, tree and blob, nothing b or a left.
    const pack = join(tmp, ran.early as string);
    execFileSync("git", ["index-pack", pack], { cwd: repo, stdio: "ignore" });
    const objects = execFileSync("git", ["verify-pack", "-v", pack.replace(/\.pack$/, ".idx")], { cwd: repo, encoding: "utf8" }).match(
      /^[0-9a-f]{40} (commit|tree|blob) /gm,
    );
    expect(objects?.map((line) => line.split(" ")[1]).sort()).toEqual(["blob", "commit", "tree"]);
  });

  it("starts no pack for what is not a push, and runs the helper with git's words as they were", () => {
    const base = commit("a");
    git("update-ref", "refs/remotes/teamd/main", base);
    commit("b");
    // (A TEAMD_EARLY_PACK in the seat's own environment does not reach the helper: only the front's account names a pack.)
    const ran = front({ pushing: false, stdin: "capabilities\n", env: { TEAMD_EARLY_PACK: ".teamd-pack-01234567-89ab-cdef-0123-456789abcdef.pack" } });
    expect(ran).toEqual({ argv: ["--git-remote-helper", "teamd", "teamd::seat"], early: null, account: null, stdin: "capabilities\n" });
    expect(packs()).toEqual([]);
  });

  it("starts no pack where there is no guess to make or it is not plainly one", () => {
    commit("a");
    // Nothing the daemon was seen to hold: no note, no tracking ref.
    expect(front().early).toBeNull();
    // A note that is not one, a line that is not an object id, a link.
    const a = git("rev-parse", "HEAD");
    for (const text of ["# something else\n" + a + "\n", `# teamd push guess 1\n${a}\n--all\n`, `# teamd push guess 1\n${a.toUpperCase()}\n`]) {
      writeFileSync(join(repo, ".git/teamd-push-guess"), text);
      expect(front().early, text).toBeNull();
    }
    rmSync(join(repo, ".git/teamd-push-guess"));
    symlinkSync(join(dir, "elsewhere"), join(repo, ".git/teamd-push-guess"));
    writeFileSync(join(dir, "elsewhere"), `# teamd push guess 1\n${a}\n`);
    expect(front().early).toBeNull();
    rmSync(join(repo, ".git/teamd-push-guess"));
    note(a);
    // A remote name that is not a plain name, no tmp folder, a linked worktree's repository.
    expect(front({ remote: "../x" }).early).toBeNull();
    expect(front({ env: { TEAMD_TMP: undefined } }).early).toBeNull();
    expect(front({ env: { TEAMD_TMP: "relative" } }).early).toBeNull();
    writeFileSync(join(repo, ".git/commondir"), "..\n");
    expect(front().early).toBeNull();
    rmSync(join(repo, ".git/commondir"));
    // And with all of it as it should be, it does.
    expect(front().early).toMatch(PACK_FILE_NAME);
  });

  it("finds the shim beside the name git ran where the environment names none", () => {
    writeFileSync(join(bin, "teamd-shim"), STUB.replace("argv: process.argv.slice(2)", 'argv: ["beside", ...process.argv.slice(2)]'));
    const ran = front({ pushing: false, env: { TEAMD_SHIM: undefined } });
    expect(ran.argv).toEqual(["beside", "--git-remote-helper", "teamd", "teamd::seat"]);
  });
});
