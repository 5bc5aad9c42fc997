import { DaemonUnavailableError, RefusalError, RpcError, UsageError } from "./errors.js";
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
  if (error instanceof UsageError) {
    return { exitCode: EXIT.usage, message: `${error.message} (usage: see --help)`, json: { error: "usage", message: error.message } };
  }
  if (error instanceof RpcError) {
    return { exitCode: EXIT.failure, message: error.message, json: { error: "daemon", message: error.message } };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { exitCode: EXIT.failure, message, json: { error: "failure", message } };
}

/** What runCli needs of a command-line parser (commander's Command), without importing it here. */
export interface ParsingProgram {
  parseAsync(argv: readonly string[]): Promise<unknown>;
}

/**
 * Run a CLI program and turn whatever it throws into an exit code and one message (or one
 * JSON object with --json). commander reports help and --version as errors with exit code
 * 0 (exitOverride); every other parse error is a usage error.
 */
/**
 * How an error is made safe for the terminal it is printed to: a refusal's reason can quote
 * what a seat sent (a ref name, a path), so the owner's CLI passes its terminal renderer
 * (daemon/host/terminal-text.ts). Without one, the text as it is.
 */
export interface ErrorRender {
  readonly text: (text: string) => string;
  readonly json: (json: string) => string;
}

export async function runCli(name: string, program: ParsingProgram, argv: readonly string[], render?: ErrorRender): Promise<void> {
  const json = argv.includes("--json");
  try {
    await program.parseAsync(argv);
  } catch (error) {
    const parseError = error as { code?: unknown; exitCode?: unknown };
    if (typeof parseError.code === "string" && parseError.code.startsWith("commander.")) {
      process.exitCode = parseError.exitCode === 0 ? EXIT.ok : EXIT.usage;
      return;
    }
    const report = reportError(error);
    if (json) process.stdout.write((render?.json ?? String)(JSON.stringify(report.json)) + "\n");
    else process.stderr.write(`${name}: ${(render?.text ?? String)(report.message)}\n`);
    process.exitCode = report.exitCode;
  }
}
