import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { BWRAP_PROTOCOL } from "../../src/sandbox/launch-protocol.js";
import { startedOnPipes } from "../../src/sandbox/launcher-pipes.js";
import type { SandboxPlan } from "../../src/sandbox/plan-types.js";
import { pidsRunning } from "../support/seat-procs.js";

/**
 * A chain that fails before its command ran is explained from its stderr — all of it, even when
 * the chain's exit is seen before its last stderr bytes are read. A clean-clone run under load
 * explained a bwrap failure (a pids-limited `teamd exec`) as "no message": the explanation had
 * been made at the exit, before the pipe was drained.
 *
 * A real child on real pipes: it exits at once (status fd closed, no init reported) and leaves a
 * grandchild holding its stderr, which writes bwrap's line 300 ms later, so the exit is always
 * seen first.
 */
const plan = { limits: "none" } as unknown as SandboxPlan;
const LINE = "bwrap: Can't fork for pid 1: Resource temporarily unavailable";

function lateStderrChain(delaySeconds: number) {
  return spawn("bash", ["--norc", "--noprofile", "-c", `(exec 3>&-; sleep ${delaySeconds}; echo "${LINE}" >&2) & exit 1`], {
    stdio: ["pipe", "pipe", "pipe", "pipe"],
  });
}

describe.runIf(process.platform === "linux")("a chain's failure read from its whole stderr (launcher-pipes.ts)", () => {
  it("a line printed after the exit was seen still explains the failure", async () => {
    const child = lateStderrChain(0.3);
    let exitedAt = 0;
    child.once("exit", () => (exitedAt = performance.now()));
    const result = await startedOnPipes(child, { plan, command: ["true"] }, { partial: false, notes: [] }, undefined, BWRAP_PROTOCOL);
    // The control: the exit came first; the explanation waited for the line.
    expect(exitedAt).toBeGreaterThan(0);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.refusal.reason).toContain("Can't fork for pid 1: Resource temporarily unavailable");
    expect(result.refusal.reason).not.toContain("no message");
  });

  it("a chain silent past the start timeout is stopped with its children: an init bubblewrap cloned but never named is not left behind", async () => {
    // In bubblewrap's place: a process that starts a child (as bwrap clones the seat's init) and
    // reports nothing on the status fd. Killed alone, its child stayed, reparented to pid 1.
    const mark = `7${process.pid}${Date.now() % 1000}`;
    const child = spawn("bash", ["--norc", "--noprofile", "-c", `sleep ${mark} & wait`], { stdio: ["pipe", "pipe", "pipe", "pipe"] });
    const left = () => pidsRunning(["sleep", mark]);
    try {
      const launch = startedOnPipes(child, { plan, command: ["true"], startTimeoutMs: 2_000 }, { partial: false, notes: [] }, undefined, BWRAP_PROTOCOL);
      for (const deadline = Date.now() + 1_500; left().length === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 20));
      expect(left()).toHaveLength(1); // control: the child it started runs while the launch waits
      const result = await launch;
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.refusal.reason).toContain("did not report the seat's init within 2000 ms");
      for (const deadline = Date.now() + 10_000; left().length > 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 20));
      expect(left()).toEqual([]);
    } finally {
      for (const pid of left()) process.kill(pid, "SIGKILL");
      if (child.pid !== undefined && child.exitCode === null) child.kill("SIGKILL");
    }
  }, 30_000);

  it("a stderr held open past the bound does not hold the refusal: it says what it had", async () => {
    // The grandchild holds stderr for 30 s and prints nothing; its pid comes on stdout.
    const child = spawn("bash", ["--norc", "--noprofile", "-c", "(exec 3>&-; exec sleep 30) & echo $!; exit 1"], { stdio: ["pipe", "pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const started = performance.now();
    try {
      const result = await startedOnPipes(child, { plan, command: ["true"] }, { partial: false, notes: [] }, undefined, BWRAP_PROTOCOL);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.refusal.reason).toContain("no message");
      // Far below the grandchild's 30 s (the bound is 2 s; no tighter timing is asserted).
      expect(performance.now() - started).toBeLessThan(25_000);
    } finally {
      const pid = Number(out.trim());
      if (pid > 1) process.kill(pid, "SIGKILL");
    }
  }, 30_000);
});
