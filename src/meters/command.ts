import { spawn, type ChildProcess } from "node:child_process";
import type { CommandMeterConfig } from "./config.js";
import { MeterError, type MeterAdapter, type MeterReading } from "./meter.js";
import { currencyCode, minorDigits, parseDecimal, readingAmount } from "./money.js";
import { checkWindow, rfc3339 } from "./window.js";

/**
 * The `command` meter: an owner-configured program that prints the spend of its source for a
 * window, run the way the notice hook runs the owner's command (daemon/server/notices.ts): argv
 * only, never a shell; its own process group, stopped whole — SIGKILL to the group, by the pid
 * teamd started — when it runs past its time (10 s) or prints past its bound (64 KiB); an
 * environment of PATH, HOME, LANG, LC_ALL and TZ from the daemon's and nothing else of it (no
 * admin key the daemon holds reaches the command), plus
 *
 *   TEAMD_METER_FROM, TEAMD_METER_TO   the window, RFC 3339 UTC ([from, to))
 *   TEAMD_METER_NAME, TEAMD_METER_TEAM, TEAMD_METER_LAB
 *
 * It exits 0 and prints one JSON object: `{"amount": "12.34", "currency": "USD"}` (a decimal
 * string in the major unit; more digits than the currency's minor unit are rounded up) or
 * `{"amountMinor": 1234, "currency": "USD"}` (an integer in the minor unit). Anything else is a
 * MeterError naming what was wrong, quoting at most a short, escaped excerpt of what it printed.
 */
export const COMMAND_TIMEOUT_MS = 10_000;
export const COMMAND_MAX_OUTPUT_BYTES = 64 * 1024;
const STDERR_KEPT = 512;
const EXCERPT_CHARS = 60;
const PASSED_ENV = ["PATH", "HOME", "LANG", "LC_ALL", "TZ"];
const FIELDS = ["amount", "amountMinor", "currency"];
const SHAPE = `{"amount": "12.34", "currency": "USD"} or {"amountMinor": 1234, "currency": "USD"}`;

export interface CommandMeterOptions {
  /** How long a run may take before its process group is killed (default 10 s). */
  readonly timeoutMs?: number;
  /** The most it may print on stdout (default 64 KiB). */
  readonly maxOutputBytes?: number;
  /** The environment PATH, HOME, LANG, LC_ALL and TZ are taken from (default the daemon's). */
  readonly env?: NodeJS.ProcessEnv;
}

/** A short excerpt of text a command printed, every character outside printable ASCII escaped. */
export function excerpt(text: string, max: number = EXCERPT_CHARS): string {
  const cut = [...text].slice(0, max);
  const shown = cut
    .map((c) => {
      const code = c.codePointAt(0) as number;
      if (c === '"' || c === "\\") return `\\${c}`;
      if (code >= 0x20 && code < 0x7f) return c;
      return code <= 0xffff ? `\\u${code.toString(16).padStart(4, "0")}` : `\\u{${code.toString(16)}}`;
    })
    .join("");
  return `"${shown}"${[...text].length > max ? "…" : ""}`;
}

export function createCommandMeter(config: CommandMeterConfig, options: CommandMeterOptions = {}): MeterAdapter {
  const timeoutMs = options.timeoutMs ?? COMMAND_TIMEOUT_MS;
  const maxOutput = options.maxOutputBytes ?? COMMAND_MAX_OUTPUT_BYTES;
  const program = config.command[0] as string;
  const label = `meter '${config.name}' (command ${excerpt(program, 80)})`;

  function parse(stdout: string, window: { from: number; to: number }): MeterReading {
    const text = stdout.trim();
    if (text === "") throw new MeterError(`${label}: printed nothing; it must print ${SHAPE}`);
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      throw new MeterError(`${label}: did not print JSON (it printed ${excerpt(text)}); it must print ${SHAPE}`);
    }
    if (typeof data !== "object" || data === null || Array.isArray(data))
      throw new MeterError(`${label}: printed JSON that is not an object; it must print ${SHAPE}`);
    const out = data as Record<string, unknown>;
    const unknown = Object.keys(out).find((k) => !FIELDS.includes(k));
    if (unknown !== undefined) throw new MeterError(`${label}: printed an unknown field ${excerpt(unknown, 32)}; it must print ${SHAPE}`);
    const currency = currencyCode(out.currency);
    if (currency === undefined) throw new MeterError(`${label}: 'currency' must be an ISO 4217 code such as "USD"`);
    const hasMajor = Object.prototype.hasOwnProperty.call(out, "amount");
    const hasMinor = Object.prototype.hasOwnProperty.call(out, "amountMinor");
    if (hasMajor === hasMinor) throw new MeterError(`${label}: print exactly one of 'amount' (a decimal string) and 'amountMinor' (an integer): ${SHAPE}`);
    let amount: number;
    if (hasMinor) {
      const minor = out.amountMinor;
      if (typeof minor !== "number" || !Number.isSafeInteger(minor) || minor < 0)
        throw new MeterError(`${label}: 'amountMinor' must be a whole number ≥ 0 of the currency's minor unit (cents)`);
      amount = minor;
    } else {
      const major = typeof out.amount === "string" ? parseDecimal(out.amount) : undefined;
      if (major === undefined)
        throw new MeterError(
          `${label}: 'amount' must be a decimal string such as "12.34"${typeof out.amount === "number" ? " (a string: a JSON number may not survive parsing exactly)" : ""}`,
        );
      amount = readingAmount(config.name, major, minorDigits(currency));
    }
    return { amount, currency, from: window.from, to: window.to };
  }

  function read(window: { from: number; to: number }, signal: AbortSignal): Promise<MeterReading> {
    checkWindow(config.name, window);
    if (signal.aborted) return Promise.reject(new MeterError(`${label}: the read was cancelled`));
    const base = options.env ?? process.env;
    const env: NodeJS.ProcessEnv = {
      TEAMD_METER_FROM: rfc3339(window.from),
      TEAMD_METER_TO: rfc3339(window.to),
      TEAMD_METER_NAME: config.name,
      TEAMD_METER_TEAM: config.team,
      TEAMD_METER_LAB: config.lab,
    };
    for (const name of PASSED_ENV) if (base[name] !== undefined) env[name] = base[name];

    return new Promise<MeterReading>((resolve, reject) => {
      let child: ChildProcess;
      try {
        child = spawn(program, config.command.slice(1), { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
      } catch {
        reject(new MeterError(`${label}: could not be started`));
        return;
      }
      const stdout: Buffer[] = [];
      let stdoutBytes = 0;
      let stderr = "";
      let failure: MeterError | undefined;
      let exited = false;
      let settled = false;

      /** The command's whole process group, by the pid teamd started: never by name. */
      const killGroup = () => {
        if (child.pid === undefined) return;
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      };
      const finish = (outcome: () => MeterReading) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        child.stdout?.destroy();
        child.stderr?.destroy();
        try {
          resolve(outcome());
        } catch (error) {
          reject(error instanceof MeterError ? error : new MeterError(`${label}: its output could not be read`));
        }
      };
      /** Stop the run for `why`; it settles once the command has exited. */
      const stop = (why: MeterError) => {
        failure ??= why;
        killGroup();
        if (exited)
          finish(() => {
            throw failure;
          });
      };
      const onAbort = () => stop(new MeterError(`${label}: the read was cancelled`));
      const timer = setTimeout(
        () =>
          stop(
            new MeterError(`${label}: did not finish within ${Math.round(timeoutMs / 100) / 10} s; teamd killed its process group (pid ${child.pid ?? "?"})`),
          ),
        timeoutMs,
      );
      signal.addEventListener("abort", onAbort, { once: true });

      child.stdout?.on("data", (chunk: Buffer) => {
        stdoutBytes += chunk.byteLength;
        if (stdoutBytes > maxOutput) {
          stop(new MeterError(`${label}: printed more than ${maxOutput} bytes; teamd killed its process group`));
          return;
        }
        stdout.push(chunk);
      });
      child.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-STDERR_KEPT)));
      child.once("error", (error: NodeJS.ErrnoException) => {
        const why =
          error.code === "ENOENT"
            ? "could not be started: no such program (give its absolute path, or one on the daemon's PATH)"
            : error.code === "EACCES"
              ? "could not be started: it is not executable (chmod +x)"
              : `could not be started (${error.code ?? "error"})`;
        exited = true;
        stop(new MeterError(`${label}: ${why}`));
      });
      child.once("exit", () => {
        exited = true;
        if (failure !== undefined)
          finish(() => {
            throw failure;
          });
      });
      child.once("close", (code: number | null, sig: NodeJS.Signals | null) => {
        exited = true;
        finish(() => {
          if (failure !== undefined) throw failure;
          if (code !== 0) {
            const last = stderr.trim().split("\n").pop() ?? "";
            throw new MeterError(
              `${label}: exited ${sig ?? code}${last !== "" ? ` (its last error line: ${excerpt(last)})` : ""}; it must exit 0 and print ${SHAPE}`,
            );
          }
          return parse(Buffer.concat(stdout).toString("utf8"), window);
        });
      });
    });
  }

  return { name: config.name, read };
}
