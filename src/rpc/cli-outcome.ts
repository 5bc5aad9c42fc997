import { DaemonUnavailableError, RefusalError, RpcError } from "./refusal.js";
import { RULES } from "../kernel/rules.js";

/**
 * Exit codes shared by `teamd` and `teamd-shim`, so scripts can tell a refusal (the
 * policy said no: replan) from a failure (something is broken: fix it) from a usage
 * error (the command line is wrong).
 */
export const EXIT = { ok: 0, failure: 1, usage: 2, refused: 3, unavailable: 4 } as const;

export interface CliErrorReport {
  readonly exitCode: number;
  /** One line for a terminal. */
  readonly message: string;
  /** The same, for --json. */
  readonly json: Record<string, unknown>;
}

export function reportError(error: unknown): CliErrorReport {
  if (error instanceof RefusalError) {
    return {
      exitCode: EXIT.refused,
      message: `refused by ${error.rule} (${RULES[error.rule].section}): ${error.reason}`,
      json: { error: "refused", rule: error.rule, section: RULES[error.rule].section, reason: error.reason },
    };
  }
  if (error instanceof DaemonUnavailableError) {
    return { exitCode: EXIT.unavailable, message: error.message, json: { error: "unavailable", socket: error.socketPath, message: error.message } };
  }
  if (error instanceof RpcError) {
    return { exitCode: EXIT.failure, message: error.message, json: { error: "daemon", message: error.message } };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { exitCode: EXIT.failure, message, json: { error: "failure", message } };
}
