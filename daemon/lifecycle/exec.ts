import type { Readable } from "node:stream";
import type { SeatProcess } from "../../src/sandbox/launcher.js";

/**
 * One `teamd exec` run, streamed: the command's output goes to `sink` as it comes (each
 * stream capped, so a chatty command cannot make the daemon hold more than the cap for a
 * slow owner), then its exit code; a deadline after which the run's own pid-namespace
 * init is killed (never anything by name or group). The output is never recorded.
 */
export interface ExecResult {
  readonly exitCode: number;
  readonly how: "exited" | "killed" | "setup-failed";
  readonly truncated: boolean;
  /** For setup-failed: the refusal, with its fix. */
  readonly reason?: string;
}

export type ExecSink = (stream: "stdout" | "stderr", chunk: Buffer) => void;

export const EXEC_OUTPUT_CAP = 4 * 1024 * 1024;
export const EXEC_DEFAULT_TIMEOUT_MS = 60_000;

export interface ExecOptions {
  /** Milliseconds (0: the default, 60 s), or "none": no deadline (`teamd exec --timeout 0`). */
  readonly timeoutMs: number | "none";
  readonly stdin: Uint8Array;
  /** The caller went away: the run is killed, so an abandoned command without a deadline does not run on unseen. */
  readonly signal?: AbortSignal;
}

export async function streamRun(proc: SeatProcess, options: ExecOptions, sink: ExecSink): Promise<ExecResult> {
  const io = proc.io;
  if (io.kind !== "pipes") throw new Error("exec runs with pipes");
  let truncated = false;
  const relay = (name: "stdout" | "stderr", stream: Readable) => {
    let size = 0;
    stream.on("data", (chunk: Buffer) => {
      if (size >= EXEC_OUTPUT_CAP) {
        truncated = true;
        return;
      }
      const room = EXEC_OUTPUT_CAP - size;
      if (chunk.length > room) truncated = true;
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      size += kept.length;
      sink(name, kept);
    });
    return new Promise<void>((resolve) => {
      // Ended before anyone listened (a ready exec's sandbox that died before its command: Node
      // drains a child's unread streams at its exit): its end will not come again, and waiting
      // for it hung the owner's exec past its deadline (found by an attack on the ready exec).
      if (stream.readableEnded || stream.destroyed) return resolve();
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.once("error", () => resolve());
    });
  };
  const stdout = relay("stdout", io.stdout);
  const stderr = relay("stderr", io.stderr);
  io.stdin.on("error", () => undefined);
  io.stdin.end(Buffer.from(options.stdin));
  const kill = () => proc.kill();
  const timer = options.timeoutMs === "none" ? undefined : setTimeout(kill, options.timeoutMs > 0 ? options.timeoutMs : EXEC_DEFAULT_TIMEOUT_MS);
  if (options.signal?.aborted) kill();
  options.signal?.addEventListener("abort", kill, { once: true });
  const exit = await proc.exit;
  clearTimeout(timer);
  options.signal?.removeEventListener("abort", kill);
  await Promise.all([stdout, stderr]);
  return {
    exitCode: exit.code,
    how: exit.kind,
    truncated,
    ...(exit.kind === "setup-failed" ? { reason: `${exit.refusal.rule}: ${exit.refusal.reason} (fix: ${exit.refusal.fix})` } : {}),
  };
}
