import { spawn, type ChildProcess } from "node:child_process";
import { expect } from "vitest";
import { TEAMD } from "./programs.js";
import type { TeamdHarness } from "./teamd-harness.js";
import { waitFor } from "./wait.js";

/** One `teamd forward` a test runs, as a person does, once it said where it listens. */
export interface ForwardRun {
  readonly child: ChildProcess;
  readonly port: number;
  stderr(): string;
  readonly exit: Promise<number | null>;
}

/**
 * `teamd forward` runs a test starts, each stopped (SIGKILL, by its own pid) and awaited by
 * stopAll, for an afterEach.
 */
export function forwardRuns(harness: () => Pick<TeamdHarness, "repo" | "env">): { start(args: string[]): Promise<ForwardRun>; stopAll(): Promise<void> } {
  const children: ChildProcess[] = [];
  return {
    async start(args) {
      const h = harness();
      const child = spawn(process.execPath, [TEAMD, "forward", ...args], { env: { ...process.env, ...h.env }, cwd: h.repo, stdio: ["ignore", "pipe", "pipe"] });
      children.push(child);
      let out = "";
      let err = "";
      child.stdout?.setEncoding("utf8").on("data", (d: string) => (out += d));
      child.stderr?.setEncoding("utf8").on("data", (d: string) => (err += d));
      const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      expect(await waitFor(() => /forwarding 127\.0\.0\.1:\d+/.test(out) || child.exitCode !== null, 15_000), err).toBe(true);
      const port = Number(/forwarding 127\.0\.0\.1:(\d+)/.exec(out)?.[1] ?? 0);
      return { child, port, stderr: () => err, exit };
    },
    async stopAll() {
      for (const child of children.splice(0)) {
        if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
          process.kill(child.pid, "SIGKILL");
          await new Promise((resolve) => child.once("exit", resolve));
        }
      }
    },
  };
}
