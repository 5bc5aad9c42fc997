import { createDaemon } from "./daemon.js";
import { resolveHome } from "../host/home.js";
import { parseSeatSpec } from "../host/names.js";
import { startHold } from "./start-hold.js";
import type { Ambient } from "../host/ambient.js";

export interface ServeOptions {
  readonly seat?: string[];
}

/**
 * `teamd serve`: run the daemon in the foreground until SIGTERM or SIGINT, then remove
 * its sockets and exit 0. Prints one `ready` line on stdout once every socket listens,
 * so scripts and tests can wait for it instead of sleeping.
 */
export async function serve(options: ServeOptions, ambient: Ambient): Promise<void> {
  const home = resolveHome();
  if (home.mode === "system" && process.getuid?.() !== 0) {
    throw new Error(
      `${home.root} belongs to root: it is a system daemon's home (system mode), and a system daemon runs as root (systemctl start teamd); for a daemon of your own, set TEAMD_HOME to a folder of yours`,
    );
  }
  const seats = (options.seat ?? []).map(parseSeatSpec);
  const log = (line: string) => process.stderr.write(`${new Date(ambient.now()).toISOString()} teamd: ${line}\n`);
  const failPrepareAt = process.env.TEAMD_TEST_FAIL_AT;
  const crashAfterMerge = process.env.TEAMD_TEST_CRASH_AFTER_MERGE === "1";
  const crashInDeploy = process.env.TEAMD_TEST_CRASH_IN_DEPLOY === "1";
  const holdFolder = process.env.TEAMD_TEST_HOLD_START;
  const refusalBudget = parseRefusalBudget(process.env.TEAMD_REFUSAL_BUDGET);
  const actBudget = parseActBudget(process.env.TEAMD_ACT_BUDGET);
  const servedRate = parseServedRate(process.env.TEAMD_SERVED_RATE);
  const startSettleMs = parseStartSettle(process.env.TEAMD_START_SETTLE_MS);
  const daemon = createDaemon({
    home,
    seats,
    log,
    ambient,
    ...(failPrepareAt ? { failPrepareAt } : {}),
    ...(crashAfterMerge ? { crashAfterMerge } : {}),
    ...(crashInDeploy ? { crashInDeploy } : {}),
    ...(holdFolder ? { holdStart: startHold(holdFolder) } : {}),
    ...(refusalBudget ? { refusalBudget } : {}),
    ...(actBudget ? { actBudget } : {}),
    ...(servedRate ? { servedRate } : {}),
    ...(process.env.TEAMD_SEAT_GIT_BOUNDS ? { seatGitBounds: process.env.TEAMD_SEAT_GIT_BOUNDS } : {}),
    ...(startSettleMs !== undefined ? { startSettleMs } : {}),
  });
  await daemon.start();

  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping`);
    daemon.stop().then(
      () => {
        log("stopped; sockets removed");
        process.exit(0);
      },
      (error: unknown) => {
        log(`stop failed: ${String(error)}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
  // SIGHUP reloads the daemon's own configuration (the notice hook); a team file is only
  // ever put in force by teamd apply.
  process.on("SIGHUP", () => {
    log("SIGHUP: reloading the daemon's configuration");
    daemon.reload();
  });
  process.stdout.write(`teamd: ready pid=${process.pid} control=${home.controlSocket} instance=${daemon.instance}\n`);
}

/** BURST/PER_MINUTE in whole numbers (BURST at least 1); unset, undefined (the default). Anything else is refused at start, never guessed. */
function parseRate(name: string, value: string | undefined, example: string, unit: number): { burst: number; perMinute: number } | undefined {
  if (value === undefined || value === "") return undefined;
  const match = /^(\d{1,9})\/(\d{1,9})$/.exec(value);
  if (match === null || Number(match[1]) < 1) throw new Error(`${name} is '${value}'; it is BURST/PER_MINUTE, e.g. ${example} (BURST at least 1)`);
  return { burst: Number(match[1]) * unit, perMinute: Number(match[2]) * unit };
}

/**
 * TEAMD_START_SETTLE_MS=N (0 to 60000): how long `teamd start` watches a seat's command before it
 * answers — a command that ends within it is a failed start, with its last lines. Unset, 2000. A
 * script that starts seats whose commands it knows to run long may lower it; anything but a whole
 * number in range is refused at start, never guessed.
 */
export function parseStartSettle(value: string | undefined): number | undefined {
  if (value === undefined || value === "") return undefined;
  if (!/^\d{1,5}$/.test(value) || Number(value) > 60_000)
    throw new Error(`TEAMD_START_SETTLE_MS is '${value}'; it is a whole number of milliseconds from 0 to 60000 (unset: 2000)`);
  return Number(value);
}

/** TEAMD_REFUSAL_BUDGET=BURST/PER_MINUTE (e.g. 300/60): each seat's refusal budget; unset, the default. */
export function parseRefusalBudget(value: string | undefined): { burst: number; perMinute: number } | undefined {
  return parseRate("TEAMD_REFUSAL_BUDGET", value, "300/60", 1);
}

/** TEAMD_SERVED_RATE=BURST/PER_MINUTE (e.g. 600/120): each seat's rate of distinct served reads; unset, the default. */
export function parseServedRate(value: string | undefined): { burst: number; perMinute: number } | undefined {
  return parseRate("TEAMD_SERVED_RATE", value, "600/120", 1);
}

/** TEAMD_ACT_BUDGET=BURST/PER_MINUTE in MiB of ledger records (e.g. 16/2): each seat's act budget; unset, the default. */
export function parseActBudget(value: string | undefined): { burst: number; perMinute: number } | undefined {
  return parseRate("TEAMD_ACT_BUDGET", value, "16/2", 2 ** 20);
}
