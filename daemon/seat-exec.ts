import type { Readable } from "node:stream";
import type { SeatProcess } from "../src/sandbox/launcher.js";

/**
 * One `teamd exec` run, collected: the command's output (each stream capped, so a chatty
 * command cannot fill the daemon's memory), its exit code, and a deadline after which the
 * run's own pid-namespace init is killed (never anything by name or group).
 */
export interface ExecResult {
  readonly exitCode: number;
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  readonly how: "exited" | "killed" | "setup-failed";
  readonly truncated: boolean;
  /** For setup-failed: the refusal, with its fix. */
  readonly reason?: string;
}

export const EXEC_OUTPUT_CAP = 4 * 1024 * 1024;
export const EXEC_DEFAULT_TIMEOUT_MS = 60_000;

export async function collectRun(proc: SeatProcess, options: { timeoutMs: number; stdin: Uint8Array }): Promise<ExecResult> {
  let truncated = false;
  const collect = (stream: Readable) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on("data", (chunk: Buffer) => {
      if (size >= EXEC_OUTPUT_CAP) {
        truncated = true;
        return;
      }
      const room = EXEC_OUTPUT_CAP - size;
      if (chunk.length > room) truncated = true;
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      chunks.push(kept);
      size += kept.length;
    });
    return new Promise<Buffer>((resolve) => {
      const done = () => resolve(Buffer.concat(chunks));
      stream.once("end", done);
      stream.once("close", done);
      stream.once("error", done);
    });
  };
  const stdout = collect(proc.io.stdout);
  const stderr = collect(proc.io.stderr);
  proc.io.stdin.on("error", () => undefined);
  proc.io.stdin.end(Buffer.from(options.stdin));
  const timer = setTimeout(() => proc.kill(), options.timeoutMs > 0 ? options.timeoutMs : EXEC_DEFAULT_TIMEOUT_MS);
  const exit = await proc.exit;
  clearTimeout(timer);
  const [out, err] = await Promise.all([stdout, stderr]);
  return {
    exitCode: exit.code,
    stdout: out,
    stderr: err,
    how: exit.kind,
    truncated,
    ...(exit.kind === "setup-failed" ? { reason: `${exit.refusal.rule}: ${exit.refusal.reason} (fix: ${exit.refusal.fix})` } : {}),
  };
}
