import { spawn } from "node:child_process";

/**
 * Run an owner-declared deploy command (§3 deploy, §10): outside every sandbox, as the
 * daemon's user, so it inherits nothing — argv without a shell, the working folder and the
 * environment the caller built (explicit, minimal: no variable of the daemon's own leaks in),
 * stdin closed, a deadline after which its whole process group is killed. Whatever it leaves
 * running when it exits is killed too (its group), so a deploy never outlives its outcome.
 *
 * Its output is kept only as a bounded tail for the caller to show: it may carry anything the
 * command printed (a token, a URL with credentials), so it is never recorded.
 */
export interface DeployRun {
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  /** How many bytes of combined stdout and stderr to keep (the last ones). */
  readonly tailBytes: number;
}

export type DeployExit =
  | { readonly kind: "exited"; readonly code: number; readonly tail: string }
  | { readonly kind: "killed"; readonly signal: string; readonly timedOut: boolean; readonly tail: string }
  /** The program could not be started at all (not found, not executable): nothing ran. */
  | { readonly kind: "not-started"; readonly reason: string };

export function runDeployCommand(run: DeployRun): Promise<DeployExit> {
  const [program, ...args] = run.argv;
  if (program === undefined) return Promise.resolve({ kind: "not-started", reason: "the command is empty" });
  return new Promise((resolve) => {
    let tail = Buffer.alloc(0);
    const keep = (chunk: Buffer) => {
      tail = Buffer.concat([tail, chunk]);
      if (tail.length > run.tailBytes) tail = tail.subarray(tail.length - run.tailBytes);
    };
    const child = spawn(program, args, { cwd: run.cwd, env: { ...run.env }, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let timedOut = false;
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // ESRCH: the group is gone already.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, run.timeoutMs);
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    child.once("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ kind: "not-started", reason: `${program}: ${error.code ?? error.message}` });
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      // Anything it started and left behind goes with it; then the pipes close.
      killGroup();
      const text = () => tail.toString("utf8");
      child.once("close", () => {
        if (code !== null) resolve({ kind: "exited", code, tail: text() });
        else resolve({ kind: "killed", signal: signal ?? "unknown", timedOut, tail: text() });
      });
    });
  });
}
