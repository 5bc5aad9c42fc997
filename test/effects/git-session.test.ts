import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containedGit, containedGitArgv, containmentAvailable, ContainmentError, type ContainedGitOptions } from "../../src/effects/contained-git.js";
import { GitError } from "../../src/effects/git.js";
import { openGitSession, SESSION_LANES, type GitSession } from "../../src/effects/git-session.js";
import { GIT_TEST_ENV } from "../support/git-cli.js";

/**
 * A push's git session (src/effects/git-session.ts) against real bubblewrap and real git: its
 * runs answer as runs of their own sandbox would, each on a lane no other run can reach; a run
 * is stopped by its time out; what the session cannot take falls back; closed, nothing of it is
 * left. A marker argument (`teamd-session-test-<pid>`) finds this file's processes in /proc
 * without killing anything by name.
 */
const MARK = `teamd-session-test-${process.pid}`;
let root: string;
let repo: string;
let blob: string;
let context: ContainedGitOptions;
let available = false;

/** Host processes whose command line carries MARK (the sleeps this file runs inside sessions). */
function marked(): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(MARK)) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** A session run: `argv` as given (the session runs any argv it is handed; git's are built by containedGitArgv). */
async function run(session: GitSession, argv: readonly string[], options: Partial<ContainedGitOptions> = {}) {
  const spawned = await session.spawn(argv, argv, { ...context, ...options });
  if (spawned === undefined) return undefined;
  const settled = spawned.done.then(
    (value) => ({ ok: true as const, stderr: value.stderr }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  const chunks: Buffer[] = [];
  for await (const chunk of spawned.stdout) chunks.push(chunk as Buffer);
  const end = await settled;
  return { stdout: Buffer.concat(chunks).toString("utf8"), ...end };
}

beforeAll(async () => {
  available = process.platform === "linux" && (await containmentAvailable());
  root = mkdtempSync(join(tmpdir(), "teamd-session-"));
  repo = join(root, "hub.git");
  execFileSync("git", ["init", "-q", "--bare", repo], { env: GIT_TEST_ENV });
  blob = execFileSync("git", ["--git-dir", repo, "hash-object", "-w", "--stdin"], { env: GIT_TEST_ENV, input: "hello\n" }).toString().trim();
  writeFileSync(join(root, "outside.txt"), "outside\n");
  context = { gitDir: repo, readOnly: [repo], writable: [], env: { GIT_TEST_MARK: "1" }, limits: { memoryBytes: 1024 * 1024 * 1024 } };
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

describe.runIf(process.platform === "linux")("git session: one sandbox for a push's reads", () => {
  it("answers git's runs as sandboxes of their own would: output, input, exit status and stderr", async (t) => {
    if (!available) t.skip();
    const session = openGitSession(context);
    try {
      const typed = await run(session, containedGitArgv(["cat-file", "--batch-check"], repo), { input: Buffer.from(`${blob}\n${"0".repeat(40)}\n`) });
      expect(typed?.ok).toBe(true);
      expect(typed?.stdout).toBe(`${blob} blob 6\n${"0".repeat(40)} missing\n`);
      const failed = await run(session, containedGitArgv(["cat-file", "-p", "f".repeat(40)], repo));
      expect(failed?.ok).toBe(false);
      const error = failed !== undefined && !failed.ok ? failed.error : undefined;
      expect(error).toBeInstanceOf(GitError);
      expect((error as GitError).code).toBe(128);
      expect((error as GitError).stderr).toMatch(/not a valid object name|Not a valid object name/);
      // The same through containedGit, as the push's checks call it.
      const { stdout } = await containedGit(["cat-file", "-p", blob], { ...context, session });
      expect(stdout.toString()).toBe("hello\n");
    } finally {
      await session.close();
    }
  });

  it("runs at once on lanes of their own: each run sees its own three fds and no other lane's", async (t) => {
    if (!available) t.skip();
    const session = openGitSession(context);
    try {
      const runs = await Promise.all(
        Array.from({ length: 4 }, (_, i) => run(session, ["bash", "-c", `sleep 0.2; echo lane ${i}; ls /proc/self/fd | sort -n | tr '\\n' ' '`])),
      );
      runs.forEach((r, i) => {
        expect(r?.ok, JSON.stringify(r)).toBe(true);
        // 0, 1, 2 and ls's own directory fd: no other lane's socket, no session request or report channel.
        expect(r?.stdout).toBe(`lane ${i}\n0 1 2 3 `);
      });
    } finally {
      await session.close();
    }
  });

  it("is the run's sandbox: the binds read-only, nothing else of the host, no network", async (t) => {
    if (!available) t.skip();
    const session = openGitSession(context);
    try {
      const r = await run(session, [
        "bash",
        "-c",
        `touch ${repo}/x 2>/dev/null && echo wrote; cat ${root}/outside.txt 2>/dev/null && echo read-outside; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; echo "env $GIT_TEST_MARK"`,
      ]);
      expect(r?.ok).toBe(true);
      expect(r?.stdout).toBe("lo\nenv 1\n");
    } finally {
      await session.close();
    }
  });

  it("stops a run at its time out (GitError, as a run of its own), and the session goes on", async (t) => {
    if (!available) t.skip();
    const session = openGitSession(context);
    try {
      const started = Date.now();
      // bash and the sleep it starts: the run's whole process group is stopped, not git alone.
      const slow = await run(session, ["bash", "-c", "sleep 30; true", MARK], { timeoutMs: 300 });
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(slow?.ok).toBe(false);
      expect(String(slow !== undefined && !slow.ok ? slow.error : "")).toMatch(/timed out after 300 ms/);
      expect(marked()).toEqual([]);
      const next = await run(session, containedGitArgv(["cat-file", "-t", blob], repo));
      expect(next?.stdout).toBe("blob\n");
    } finally {
      await session.close();
    }
  });

  it("takes only the runs it was made for, and a lane once: the rest fall back to a sandbox of their own", async (t) => {
    if (!available) t.skip();
    const session = openGitSession(context);
    try {
      // Another env, other limits, a bind it lacks, a writable bind, a cwd, a streamed input: not its runs.
      expect(await session.spawn(["true"], ["true"], { ...context, env: { GIT_TEST_MARK: "2" } })).toBeUndefined();
      expect(await session.spawn(["true"], ["true"], { ...context, limits: { memoryBytes: 1 } })).toBeUndefined();
      expect(await session.spawn(["true"], ["true"], { ...context, readOnly: [repo, root] })).toBeUndefined();
      expect(await session.spawn(["true"], ["true"], { ...context, writable: [root] })).toBeUndefined();
      expect(await session.spawn(["true"], ["true"], { ...context, cwd: repo })).toBeUndefined();
      const { Readable } = await import("node:stream");
      expect(await session.spawn(["true"], ["true"], { ...context, input: Readable.from([]) })).toBeUndefined();
      for (let i = 0; i < SESSION_LANES; i++) expect((await run(session, ["true"]))?.ok).toBe(true);
      expect(await session.spawn(["true"], ["true"], context)).toBeUndefined();
      // Through containedGit the run still happens, in a sandbox of its own.
      const { stdout } = await containedGit(["cat-file", "-t", blob], { ...context, session });
      expect(stdout.toString()).toBe("blob\n");
    } finally {
      await session.close();
    }
  });

  it("a session whose bash is killed fails its runs in flight as containment, not as git's verdict, and takes no more", async (t) => {
    if (!available) t.skip();
    const session = openGitSession(context);
    try {
      // The run's parent is its lane's subshell, whose parent is the session's bash.
      const r = await run(session, ["bash", "-c", "kill -KILL $(cut -d' ' -f4 /proc/$PPID/stat); sleep 5; true", MARK]);
      expect(r?.ok).toBe(false);
      expect(r !== undefined && !r.ok ? r.error : undefined).toBeInstanceOf(ContainmentError);
      expect(await session.spawn(["true"], ["true"], context)).toBeUndefined();
    } finally {
      await session.close();
    }
    expect(marked()).toEqual([]);
  });

  it("closed, leaves no process of it behind, with a run still in it", async (t) => {
    if (!available) t.skip();
    const session = openGitSession(context);
    const spawned = await session.spawn(["bash", "-c", "sleep 30; true", MARK], ["bash"], context);
    expect(spawned).toBeDefined();
    spawned?.done.catch(() => undefined);
    for (let i = 0; i < 100 && marked().length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(marked().length).toBeGreaterThanOrEqual(1);
    await session.close();
    for (let i = 0; i < 100 && marked().length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(marked()).toEqual([]);
    await expect(spawned?.done).rejects.toBeInstanceOf(ContainmentError);
  });
});
