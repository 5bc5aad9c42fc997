import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { appliedTeam } from "../support/applied-team.js";
import type { TeamdHarness } from "../support/teamd-harness.js";
import { waitFor } from "../support/wait.js";
import { readyExecProcesses } from "../support/ready-exec-processes.js";
import { READY_EXEC_IDLE_MS } from "../../daemon/lifecycle/ready-exec.js";

/**
 * A seat's next `teamd exec` runs in a sandbox made after the last one was answered
 * (daemon/lifecycle/ready-exec.ts, issue 26), through a real daemon and real bubblewrap. What
 * the command sees must be what a fresh launch gives it, so each check runs the same command
 * both ways — the first exec of a run, or one after the ready sandbox's idle time, is a fresh
 * launch — and compares. Which way an exec went is read from inside: the start time of its
 * pid namespace's init (/proc/1/stat), before or after the exec was asked for.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = teamFile(`  scout:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
`);

const TICKS = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
/** The host's clock since boot, in the ticks /proc/PID/stat counts a start in. */
const ticksNow = () => Math.floor(Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]) * TICKS);
/** A command's prefix that prints its init's start (ticks since boot) on the first line. */
const INIT_START = "cut -d' ' -f22 /proc/1/stat;";

/** What a command in the seat can see of how it was started, but its init's start time. */
const SEEN = [
  "env",
  "echo ---; ls /proc/self/fd",
  "echo ---; id; umask; pwd; echo $0",
  "echo ---; grep -E '^(Cap|NoNewPrivs|Seccomp)' /proc/self/status",
  "echo ---; cat /proc/self/cgroup",
  "echo ---; ulimit -a",
  "echo ---; cat /proc/self/mountinfo | cut -d' ' -f5,6 | sort",
  "echo ---; ls -la /etc | cut -c1-10,40- | sort",
].join("; ");

describe.runIf(process.platform === "linux")("a seat's next exec in a sandbox made for it: as a fresh launch's, and bounded", () => {
  let h: TeamdHarness;

  /** Runs `script` in the seat; `ready` says whether its sandbox was there before the exec was asked for. */
  const run = async (script: string, extra: { args?: string[]; input?: string } = {}) => {
    const asked = ticksNow();
    const result = await h.run(["exec", ...(extra.args ?? []), "scout@proj", "--", "sh", "-c", `${INIT_START} ${script}`], {
      ...(extra.input !== undefined ? { input: extra.input } : {}),
    });
    const [first = "", ...rest] = result.stdout.split("\n");
    return { ...result, stdout: rest.join("\n"), ready: Number(first) < asked, initStart: Number(first) };
  };
  /** The ready sandboxes of this harness's daemon on the host. */
  const readyProcesses = () => readyExecProcesses(h.home);
  /** Waits out the ready sandbox's idle time (the one the last exec left, once it is made): the next exec is a fresh launch. */
  const idle = async () => {
    await sleep(1_000);
    expect(await waitFor(() => readyProcesses().length === 0, READY_EXEC_IDLE_MS + 5_000)).toBe(true);
  };
  /** Waits for the ready sandbox an answered exec leaves. */
  const readied = async () => {
    expect(await waitFor(() => readyProcesses().length > 0, 10_000)).toBe(true);
    // Its bwrap has reported its init and bash is reading the control pipe: what the daemon waits for before it is ready.
    await sleep(300);
  };

  beforeAll(async () => {
    h = await appliedTeam("teamd-ready-exec-", TEAM_FILE);
    await h.ok(["start", "scout@proj"]);
  }, 90_000);

  afterAll(async () => {
    await h?.run(["stop", "scout@proj"]).catch(() => undefined);
    await h?.cleanup();
  }, 60_000);

  it("the next exec takes the sandbox made for it, and its command sees what a fresh launch's sees", async () => {
    const fresh = await run(SEEN);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(fresh.ready).toBe(false);
    await readied();
    const ready = await run(SEEN);
    expect(ready.code, ready.stderr).toBe(0);
    expect(ready.ready).toBe(true);
    expect(ready.stdout).toBe(fresh.stdout);
    expect(ready.stderr).toBe(fresh.stderr);
    // Its init was started after the last exec was answered, not at the seat's start.
    expect(ready.initStart).toBeGreaterThan(fresh.initStart);
  }, 60_000);

  it("a command that is not there or not executable fails as bubblewrap's own launch does, with its words", async () => {
    await idle();
    const cases: string[][] = [["no-such-command-here"], ["/etc/passwd"], ["/etc"], ["/no/such/path"]];
    for (const argv of cases) {
      expect(readyProcesses()).toEqual([]);
      const fresh = await h.run(["exec", "scout@proj", "--", ...argv]);
      await readied();
      const ready = await h.run(["exec", "scout@proj", "--", ...argv]);
      // The control: the ready sandbox was there, and taken (none is left to count).
      expect(readyProcesses().length).toBe(0);
      expect(ready.code, argv.join(" ")).toBe(fresh.code);
      expect(ready.stderr).toBe(fresh.stderr);
      expect(fresh.stderr).toMatch(/bwrap: execvp .*: (No such file or directory|Permission denied)\n.*containment\.failed/);
      await idle();
    }
  }, 180_000);

  it("passes the command's words exactly; a first word with '=' is not read as a variable", async () => {
    await idle();
    expect(readyProcesses()).toEqual([]);
    const words = ["a b", "", "-n", "line\nbreak", "é ü", "$HOME", "x=y", "--"];
    const argv = ["printf", "[%s]\\n", ...words];
    const fresh = await h.run(["exec", "scout@proj", "--", ...argv]);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(fresh.stdout).toBe(words.map((w) => `[${w}]\n`).join(""));
    await readied();
    const ready = await h.run(["exec", "scout@proj", "--", ...argv]);
    expect(ready).toMatchObject({ code: 0, stdout: fresh.stdout, stderr: fresh.stderr });
    // env would take FOO=bar for a variable and run `true`; execvp looks for a program of that name.
    await readied();
    const assignment = await h.run(["exec", "scout@proj", "--", "FOO=bar", "true"]);
    expect(assignment.code).not.toBe(0);
    expect(assignment.stderr).toMatch(/execvp FOO=bar: No such file or directory/);
  }, 60_000);

  it("stdin reaches the command, its output and exit code come back, and its deadline kills it", async () => {
    await run("true");
    await readied();
    const piped = await run("read line; echo got:$line; echo err >&2; exit 5", { args: ["-i"], input: "hello\n" });
    expect(piped.ready).toBe(true);
    expect(piped).toMatchObject({ code: 5, stdout: "got:hello\n", stderr: "err\n" });
    await readied();
    const started = Date.now();
    const timed = await h.run(["exec", "--timeout", "1", "scout@proj", "--", "sh", "-c", "echo begun; sleep 30"]);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(timed.code).not.toBe(0);
    expect(timed.stdout).toBe("begun\n");
    expect(timed.stderr).toMatch(/killed after 1 s/);
  }, 60_000);

  it("an exec whose record cannot be made runs nothing in the ready sandbox, and stops it", async () => {
    await run("true");
    await readied();
    const mark = join(h.home, "seats", "proj", "scout", "tmp", "unrecorded-ready-exec");
    h.ledgerAway();
    try {
      const refused = await h.run(["exec", "scout@proj", "--", "sh", "-c", "echo ran > /tmp/unrecorded-ready-exec"]);
      expect(refused.code, refused.stderr).toBe(3);
      expect(refused.stderr).toMatch(/ledger\.unavailable/);
    } finally {
      h.ledgerBack();
    }
    expect(await waitFor(() => readyProcesses().length === 0, 5_000)).toBe(true);
    await sleep(300);
    expect(existsSync(mark)).toBe(false);
  }, 60_000);

  it("one nobody takes is stopped after its idle time, and by the seat's stop", async () => {
    await run("true");
    await readied();
    expect(readyProcesses().length).toBeGreaterThan(0);
    const since = Date.now();
    await idle();
    expect(Date.now() - since).toBeGreaterThan(READY_EXEC_IDLE_MS - 1_500);
    await run("true");
    await readied();
    expect((await h.run(["stop", "scout@proj"])).code).toBe(0);
    expect(readyProcesses()).toEqual([]);
    expect((await h.run(["start", "scout@proj"])).code).toBe(0);
    // A new run: its first exec is a fresh launch, never the old run's sandbox.
    const first = await run("true");
    expect(first).toMatchObject({ code: 0, ready: false });
  }, 60_000);

  describe.runIf(asRoot)("as root: the seat's own v2 cgroup", () => {
    it("a frozen seat keeps none; after the thaw the next exec is a fresh launch", async () => {
      await run("true");
      await readied();
      const frozen = await h.run(["freeze", "scout@proj"]);
      if (frozen.code !== 0 && /containment\.freeze/.test(frozen.stderr)) return; // no v2 freezer here: seat-freeze.test.ts says so
      expect(frozen.code, frozen.stderr).toBe(0);
      expect(readyProcesses()).toEqual([]);
      expect((await h.run(["thaw", "scout@proj"])).code).toBe(0);
      const after = await run("true");
      expect(after).toMatchObject({ code: 0, ready: false });
    }, 60_000);
  });
});
