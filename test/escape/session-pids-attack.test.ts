import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containedGit, containmentAvailable, ContainmentError, type ContainedGitOptions } from "../../src/effects/contained-git.js";
import { GitError } from "../../src/effects/git.js";
import { openGitSession, type GitSession } from "../../src/effects/git-session.js";
import { GIT_TEST_ENV } from "../support/git-cli.js";

/**
 * A seat that runs out of processes while its push's git session starts a run (found by an
 * attack on src/effects/git-session.ts): the run's subshell cannot fork git, bash retries for
 * ~15 s and gives up, and the run was never answered — its time out only marked it to be killed
 * once it had a pid, which it never got — so the push held its quarantine, its sandbox and one
 * of the seat's four git slots for ever. Four such pushes shut the seat out of git.
 *
 * Here the seat's pids cgroup (a real one, v1, as root) is filled from the host with sleeps this
 * file starts and stops by pid, leaving the session's bash one fork: its subshell's. A run must
 * be answered at its time out while the cgroup is full, and once git cannot be started at all,
 * as a failure to contain (never a verdict of git's); the session goes on once the seat has
 * processes again, and nothing of it is left after it closes.
 */
const PIDS_ROOT = "/sys/fs/cgroup/pids";
const asRoot = process.getuid?.() === 0;
const leaf = join(PIDS_ROOT, `teamd-session-pids-${process.pid}`);
const MAX = 40;
let root: string;
let repo: string;
let context: ContainedGitOptions;
const sleepers: ChildProcess[] = [];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const current = () => Number(readFileSync(join(leaf, "pids.current"), "utf8").trim());

/** Sleeps of this file's in the seat's cgroup until it holds `target` processes. */
async function fillTo(target: number): Promise<void> {
  while (current() < target) {
    const s = spawn("sleep", ["600"], { stdio: "ignore" });
    sleepers.push(s);
    await new Promise((resolve) => s.once("spawn", resolve));
    writeFileSync(join(leaf, "cgroup.procs"), String(s.pid));
  }
}

function release(): void {
  for (const s of sleepers.splice(0)) if (s.exitCode === null && s.signalCode === null) s.kill("SIGKILL");
}

describe.runIf(process.platform === "linux" && asRoot && existsSync(join(PIDS_ROOT, "cgroup.procs")))(
  "attack: a push's git session when the seat's processes run out",
  () => {
    beforeAll(() => {
      root = mkdtempSync(join(tmpdir(), "teamd-session-pids-"));
      repo = join(root, "hub.git");
      execFileSync("git", ["init", "-q", "--bare", repo], { env: GIT_TEST_ENV });
      mkdirSync(leaf);
      writeFileSync(join(leaf, "pids.max"), String(MAX));
      context = {
        gitDir: repo,
        readOnly: [repo],
        writable: [],
        env: {},
        limits: { cgroupProcs: [join(leaf, "cgroup.procs")], memoryBytes: 1024 * 1024 * 1024 },
      };
    });
    afterAll(async () => {
      release();
      for (let i = 0; i < 50 && existsSync(leaf); i++) {
        try {
          rmdirSync(leaf);
        } catch {
          await sleep(100);
        }
      }
      rmSync(root, { recursive: true, force: true });
    });

    /**
     * A session warmed (its sandbox up), the seat's cgroup then filled to one fork short of its
     * bound, `attack` run, the cgroup freed; then the session must take a new run, and closed,
     * leave nothing of it in the cgroup.
     */
    async function withSeatFull(attack: (session: GitSession) => Promise<void>): Promise<void> {
      const session = openGitSession(context);
      try {
        expect((await containedGit(["--version"], { ...context, session })).stdout.toString()).toMatch(/^git version/);
        // One fork left: the session's subshell for the run takes it, and git has none.
        await fillTo(MAX - 1);
        await attack(session);
        release();
        // The run's git, if bash's retry started it meanwhile, was killed when its pid came: the session takes new runs.
        const later = await containedGit(["--version"], { ...context, session, timeoutMs: 30_000 });
        expect(later.stdout.toString()).toMatch(/^git version/);
      } finally {
        release();
        await session.close();
      }
      for (let i = 0; i < 50 && current() > 0; i++) await sleep(100);
      expect(current()).toBe(0);
    }

    it("a run whose git cannot be forked is answered at its time out, not never; the session goes on once the seat has processes again", async (t) => {
      if (!(await containmentAvailable())) t.skip();
      await withSeatFull(async (session) => {
        const started = Date.now();
        const run = containedGit(["--version"], { ...context, session, timeoutMs: 3_000 }).then(
          () => "ran",
          (error: unknown) => error,
        );
        const answer = await Promise.race([run, sleep(8_000).then(() => "pending")]);
        expect(answer).toBeInstanceOf(GitError);
        expect(String(answer)).toMatch(/timed out after 3000 ms/);
        expect(Date.now() - started).toBeLessThan(8_000);
      });
    }, 60_000);

    it("a run whose git cannot be started at all (past bash's retries) is answered as containment failing, at once, with no time out of its own", async (t) => {
      if (!(await containmentAvailable())) t.skip();
      await withSeatFull(async (session) => {
        const started = Date.now();
        // The default time out (120 s) is far past the test: only the subshell's own report answers it.
        const answer = await containedGit(["--version"], { ...context, session }).then(
          () => "ran",
          (error: unknown) => error,
        );
        const took = Date.now() - started;
        expect(answer).toBeInstanceOf(ContainmentError);
        expect(String(answer)).toMatch(/could not be started in the push's git session/);
        // bash retries a failed fork for ~15 s (1 + 2 + 4 + 8), then gives up.
        expect(took).toBeGreaterThan(10_000);
        expect(took).toBeLessThan(40_000);
      });
    }, 90_000);
  },
);
