import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/**
 * The owner's CLI as npm installs it (package.json's bin): the bundled front and its command
 * bundles (scripts/build-shim.ts). TEAMD_UNBUNDLED is the same program from tsc's output, which
 * test/daemon/cli-bundle.test.ts holds it to.
 */
export const TEAMD = join(ROOT, "dist/bin/teamd.cjs");
export const TEAMD_UNBUNDLED = join(ROOT, "dist/daemon/main.js");
export const SHIM = join(ROOT, "dist/shim/main.js");

export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run one of our programs to completion (bounded by a timeout) and collect its output. */
export interface RunAs {
  readonly cwd?: string;
  /** Run as this user (tests running as root use it to be an ordinary owner). */
  readonly uid?: number;
  readonly gid?: number;
  /** Written to the program's standard input, which is then closed (absent: left open, unread). */
  readonly input?: string;
}

export function run(program: string, args: readonly string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 15_000, as: RunAs = {}): Promise<RunResult> {
  const { input, ...spawnAs } = as;
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [program, ...args],
      // A long ledger's `teamd log --json` is many MiB: past execFile's default 1 MiB the child is killed.
      { env: { ...process.env, ...env }, timeout: timeoutMs, encoding: "utf8", maxBuffer: 256 * 2 ** 20, ...spawnAs },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

export async function makeTempHome(prefix = "teamd-test-"): Promise<{ dir: string; remove(): Promise<void> }> {
  // Short paths: a unix socket path must fit in 107 bytes.
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export interface DaemonProcess {
  readonly child: ChildProcess;
  readonly home: string;
  readonly stderr: () => string;
  /** SIGTERM, then wait for exit (SIGKILL after a deadline); resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * `teamd start`'s settle window in tests (TEAMD_START_SETTLE_MS): what a test waits for most —
 * every start waited the daemon's 2 s, ~a fifth of the suite's time — and looked at only by the
 * tests of a start that fails: those run with the daemon's own default, giving
 * `TEAMD_START_SETTLE_MS: undefined` (FAILED_START_WINDOW). Every seat command of the others that
 * must outlive the window (a crash after it, a first run that lives 2.5 s) outlives 2 s too.
 */
export const TEST_START_SETTLE_MS = "500";
/** The env a test of failed starts gives its daemon: the daemon's own settle window (2 s), as an owner has it. */
export const FAILED_START_WINDOW: NodeJS.ProcessEnv = Object.freeze({ TEAMD_START_SETTLE_MS: undefined });

/** Start a real `teamd serve` and wait for its ready line. */
export function startDaemon(
  home: string,
  args: readonly string[] = [],
  timeoutMs = 15_000,
  env: NodeJS.ProcessEnv = {},
  as: RunAs = {},
): Promise<DaemonProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TEAMD, "serve", ...args], {
      ...as,
      env: { ...process.env, TEAMD_START_SETTLE_MS: TEST_START_SETTLE_MS, ...env, TEAMD_HOME: home },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`teamd serve did not become ready in ${timeoutMs} ms; stderr: ${err}`));
    }, timeoutMs);
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      if (out.includes("teamd: ready")) {
        clearTimeout(timer);
        resolve({
          child,
          home,
          stderr: () => err,
          async stop() {
            if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
            const killer = setTimeout(() => child.kill("SIGKILL"), 5000);
            const code = await exited;
            clearTimeout(killer);
            return code;
          },
        });
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`teamd serve exited with ${code} before ready; stderr: ${err}`));
    });
  });
}
