import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Duplex, Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { createReadyExecs, type ReadyRun } from "../../../daemon/lifecycle/ready-exec.js";
import { streamRun } from "../../../daemon/lifecycle/exec.js";
import type { LaunchResult, SeatExit, SeatProcess } from "../../../src/sandbox/launcher-types.js";
import type { SandboxPlan } from "../../../src/sandbox/plan-types.js";
import { waitFor } from "../../support/wait.js";

/**
 * The ready exec's bookkeeping (daemon/lifecycle/ready-exec.ts) with real processes: its
 * "launch" runs the real trampoline (src/sandbox/exec-trampoline.ts) under the host's bash, not in
 * bubblewrap (test/integration/ready-exec.test.ts runs it in real seats), with its control pipe
 * on fd 6 as the launcher gives it. What is checked is what the daemon does around it: nothing of
 * a command before its record, no sandbox that died reused (an attack found the owner's exec hung
 * on one), one per seat, stopped when idle or discarded.
 */
const PLAN = {} as SandboxPlan;
const FD = 6;

/** A real bash trampoline as a SeatProcess on pipes, with its control pipe. */
function launchTrampoline(control: { command(fd: number): readonly string[] }, launched: number[]): Promise<LaunchResult> {
  const [file, ...args] = control.command(FD) as [string, ...string[]];
  const child = spawn(file, args, { stdio: ["pipe", "pipe", "pipe", "ignore", "ignore", "ignore", "pipe"], env: { PATH: "/usr/bin:/bin" }, cwd: "/" });
  launched.push(child.pid as number);
  let killed = false;
  const exit = new Promise<SeatExit>((resolve) =>
    child.once("close", (code, signal) => resolve(killed ? { kind: "killed", code: 137 } : { kind: "exited", code: code ?? (signal ? 137 : 1) })),
  );
  const seat: SeatProcess = {
    pid: child.pid as number,
    initPid: child.pid as number,
    io: {
      kind: "pipes",
      stdin: child.stdin as NonNullable<typeof child.stdin>,
      stdout: child.stdout as Readable,
      stderr: child.stderr as Readable,
      control: (child.stdio as unknown as Duplex[])[FD] as Duplex,
    },
    limits: { partial: false, notes: [] },
    exit,
    kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      killed = true;
      child.kill("SIGKILL");
    },
  };
  return Promise.resolve({ ok: true, seat });
}

function harness(timing = { delayMs: 1, idleMs: 60_000 }) {
  const launched: number[] = [];
  const readyExecs = createReadyExecs(() => undefined, timing);
  let live = true;
  const run: ReadyRun = { runId: "run-1", plan: PLAN, launch: (control) => launchTrampoline(control, launched), live: () => live };
  const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/^\S+ \S+ Z/.test(readStat(pid));
  return {
    readyExecs,
    launched,
    run,
    alive,
    endRun: () => (live = false),
    /** Prepared and waiting: the launch resolved and the entry is ready to take. */
    async ready(key = "t/s") {
      readyExecs.prepare(key, run);
      await waitFor(() => launched.length > 0, 5_000);
      await sleep(100);
    },
  };
}

function readStat(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return "";
  }
}

async function collect(proc: SeatProcess) {
  let stdout = "";
  let stderr = "";
  const result = await streamRun(proc, { timeoutMs: 10_000, stdin: new Uint8Array(0) }, (stream, chunk) => {
    if (stream === "stdout") stdout += chunk.toString();
    else stderr += chunk.toString();
  });
  return { ...result, stdout, stderr };
}

describe.runIf(process.platform === "linux")("ready execs: taken once, after the record, never dead", () => {
  it("is taken by an exec of its run and plan, runs the command once the record is durable, and is gone after", async () => {
    const h = harness();
    await h.ready();
    expect(h.readyExecs.take("t/s", "run-2", PLAN, ["true"])).toBeUndefined(); // another run: not taken, and stopped
    expect(h.readyExecs.take("t/s", "run-1", PLAN, ["true"])).toBeUndefined();
    await h.ready();
    const taken = h.readyExecs.take("t/s", "run-1", PLAN, ["sh", "-c", "echo out; echo err >&2; exit 4"]);
    expect(taken).toBeDefined();
    expect(h.readyExecs.take("t/s", "run-1", PLAN, ["true"])).toBeUndefined(); // once
    let recorded!: () => void;
    const recording = new Promise<void>((resolve) => (recorded = resolve));
    const running = taken?.run(["sh", "-c", "echo out; echo err >&2; exit 4"], recording);
    await sleep(200);
    // Before the record, the trampoline still waits: nothing of the command ran.
    expect(h.alive(h.launched[1] as number)).toBe(true);
    recorded();
    const proc = await running;
    expect(proc).toBeDefined();
    expect(await collect(proc as SeatProcess)).toMatchObject({ exitCode: 4, how: "exited", stdout: "out\n", stderr: "err\n" });
  });

  it("a record that fails stops it and is the answer: the command never runs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "teamd-ready-exec-"));
    try {
      const h = harness();
      await h.ready();
      const mark = join(dir, "ran");
      const taken = h.readyExecs.take("t/s", "run-1", PLAN, ["touch", mark]);
      await expect(taken?.run(["touch", mark], Promise.reject(new Error("ledger.unavailable")))).rejects.toThrow(/ledger\.unavailable/);
      expect(await waitFor(() => !h.alive(h.launched[0] as number), 5_000)).toBe(true);
      expect(existsSync(mark)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("one that died while the exec's record was made is not used: run answers undefined, so the exec launches its own", async () => {
    const h = harness();
    await h.ready();
    const taken = h.readyExecs.take("t/s", "run-1", PLAN, ["echo", "owner"]);
    let recorded!: () => void;
    const recording = new Promise<void>((resolve) => (recorded = resolve));
    const running = taken?.run(["echo", "owner"], recording);
    // The seat's cgroup killed it under the record (its run ending, an OOM): Node drains its unread streams.
    process.kill(h.launched[0] as number, "SIGKILL");
    await sleep(300);
    recorded();
    expect(await running).toBeUndefined();
  });

  it("one that died before it was taken is not taken", async () => {
    const h = harness();
    await h.ready();
    process.kill(h.launched[0] as number, "SIGKILL");
    await sleep(300);
    expect(h.readyExecs.take("t/s", "run-1", PLAN, ["true"])).toBeUndefined();
  });

  it("a command not there fails as bwrap's launch does: a failed setup with its words", async () => {
    const h = harness();
    await h.ready();
    const proc = await h.readyExecs.take("t/s", "run-1", PLAN, ["no-such-command-here"])?.run(["no-such-command-here"], Promise.resolve());
    const result = await collect(proc as SeatProcess);
    expect(result).toMatchObject({ how: "setup-failed", stderr: "bwrap: execvp no-such-command-here: No such file or directory\n" });
    expect(result.reason).toMatch(
      /^containment\.failed: the seat's command no-such-command-here could not be started inside the seat: No such file or directory/,
    );
  });

  it("a first word env would read as a variable never takes one (and stops it)", async () => {
    const h = harness();
    await h.ready();
    expect(h.readyExecs.take("t/s", "run-1", PLAN, ["FOO=bar", "true"])).toBeUndefined();
    expect(await waitFor(() => !h.alive(h.launched[0] as number), 5_000)).toBe(true);
  });

  it("an exec that comes while one is still on its way launches its own, and that one is stopped, not made beside it", async () => {
    const h = harness({ delayMs: 200, idleMs: 60_000 });
    h.readyExecs.prepare("t/s", h.run);
    expect(h.readyExecs.take("t/s", "run-1", PLAN, ["true"])).toBeUndefined();
    await sleep(500);
    expect(h.launched).toHaveLength(0);
    // The next answered exec prepares again.
    await h.ready();
    expect(h.readyExecs.take("t/s", "run-1", PLAN, ["true"])).toBeDefined();
  });

  it("one per seat; stopped when nobody takes it within its idle time, or when discarded", async () => {
    const h = harness({ delayMs: 1, idleMs: 400 });
    await h.ready();
    h.readyExecs.prepare("t/s", h.run);
    await sleep(100);
    expect(h.launched).toHaveLength(1);
    expect(await waitFor(() => !h.alive(h.launched[0] as number), 5_000)).toBe(true);
    await h.ready("t/other");
    await h.readyExecs.discard("t/other");
    expect(h.alive(h.launched[1] as number)).toBe(false);
    // A run that is no longer live by its start gets none.
    h.endRun();
    h.readyExecs.prepare("t/third", h.run);
    await sleep(200);
    expect(h.launched).toHaveLength(2);
  });

  it("streamRun answers for a process whose streams ended before anyone listened (it waited for an end that had come)", async () => {
    const child = spawn("sh", ["-c", "echo lost; exit 3"], { stdio: ["pipe", "pipe", "pipe"] });
    const exit = new Promise<SeatExit>((resolve) => child.once("close", (code) => resolve({ kind: "exited", code: code ?? 1 })));
    await exit;
    expect(child.stdout?.readableEnded || child.stdout?.destroyed).toBe(true);
    const proc: SeatProcess = {
      pid: child.pid as number,
      initPid: child.pid as number,
      io: { kind: "pipes", stdin: child.stdin as NonNullable<typeof child.stdin>, stdout: child.stdout as Readable, stderr: child.stderr as Readable },
      limits: { partial: false, notes: [] },
      exit,
      kill: () => undefined,
    };
    const answered = await Promise.race([collect(proc), sleep(5_000).then(() => "hung" as const)]);
    expect(answered).toMatchObject({ exitCode: 3, how: "exited" });
  });
});
