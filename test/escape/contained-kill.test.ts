import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containedGitStream, createGitSandbox, type GitSandbox } from "../../src/effects/contained-git.js";

/**
 * Proves (docs/enforcement.md, "The daemon's git work for a seat is bounded"): a contained git
 * the daemon stops at any moment of its start leaves no process behind. A seat decides when the
 * daemon stops one — a fetch whose haves make its speculative pack be stopped at once, a
 * listing's waiting pack discarded by a refused fetch — and SIGKILL to bubblewrap alone, between
 * its clone and its report of the sandbox's init, left that init waiting forever on bubblewrap's
 * signal: reparented to pid 1, holding a pid and the run's pipes, so the run never settled (found
 * by an attack: one every ~17 fetches, without bound). Here: 240 runs stopped 0-7 ms after they
 * were started, each must settle, and no process of theirs may be left (counted on the host by
 * the folder only these runs bind).
 */
describe.runIf(process.platform === "linux")("escape: a contained git stopped during its start leaves nothing", () => {
  let dir: string;
  let hub: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "teamd-contained-kill-"));
    hub = join(dir, "hub.git");
    execFileSync("git", ["init", "-q", "--bare", hub]);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Processes on the host whose command line holds `mark` (default: this test's repository). */
  const left = (mark = hub): number[] => {
    const found: number[] = [];
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readFileSync(`/proc/${entry}/cmdline`, "latin1").includes(mark)) found.push(Number(entry));
      } catch {
        // gone
      }
    }
    return found;
  };
  const stop = (pids: readonly number[]) => {
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    }
  };

  it("240 runs stopped 0-7 ms into their start: every one settles, none leaves a process", async () => {
    const sandbox = createGitSandbox();
    let unsettled = 0;
    for (let i = 0; i < 240; i++) {
      const run = await containedGitStream(["cat-file", "--batch-check"], { gitDir: hub, readOnly: [hub], writable: [], sandbox, input: Buffer.from("") });
      await new Promise((resolve) => setTimeout(resolve, i % 8));
      run.kill();
      const settled = await Promise.race([
        run.done.then(
          () => true,
          () => true,
        ),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), 15_000)),
      ]);
      if (!settled) {
        // One is enough to fail; the rest would each wait the same.
        unsettled++;
        break;
      }
    }
    const stray = left();
    // Whatever this test left is its own to stop (by pid), pass or fail.
    stop(stray);
    expect(unsettled).toBe(0);
    expect(stray).toEqual([]);
  }, 240_000);

  it("a bubblewrap that never names its init (a seat can starve it of CPU): after the wait, it and what it started are killed", async () => {
    // In bubblewrap's place: a program that starts a child and reports nothing, as bubblewrap
    // does between its clone and its report.
    const mark = `${process.pid}.${Date.now() % 1000}`;
    const fake = join(dir, "silent-bwrap");
    writeFileSync(fake, `#!/bin/bash\nsleep 9${mark} &\nwait\n`);
    chmodSync(fake, 0o755);
    const real = createGitSandbox();
    const sandbox: GitSandbox = { bwrap: async () => fake, systemMounts: () => real.systemMounts() };
    const run = await containedGitStream(["version"], { readOnly: [], writable: [], sandbox });
    for (const deadline = Date.now() + 10_000; left(`9${mark}`).length === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 20));
    expect(left(`9${mark}`)).toHaveLength(1); // control: its child runs
    run.kill();
    const settled = await Promise.race([
      run.done.then(
        () => true,
        () => true,
      ),
      new Promise<false>((r) => setTimeout(() => r(false), 30_000)),
    ]);
    const stray = left(`9${mark}`);
    stop(stray);
    expect(settled).toBe(true);
    expect(stray).toEqual([]);
  }, 60_000);
});
