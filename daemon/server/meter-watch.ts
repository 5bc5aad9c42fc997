import { spendPeriod } from "../../src/kernel/envelope-spend.js";
import { describeError } from "../../src/ledger/errors.js";
import type { Ledger } from "../../src/ledger/index.js";
import { policyInForce } from "../../src/ledger/policy-in-force.js";
import { createMeter, type MeterAdapter, type MeterConfig } from "../../src/meters/index.js";
import type { SeatManager } from "../lifecycle/manager.js";
import type { SpendBook } from "./spend-book.js";

/**
 * The spend envelope's meters, read (§8; issue 28): each meter the owner configured
 * (TEAMD_HOME/meters.json, src/meters/config.ts) is read for its team's current period — at
 * the daemon's start and then every `every` — and each reading goes to the spend book, which
 * records it and answers with the running seats whose reservation no longer fits: they are
 * halted here, into their handoff (suspended, never completed). A meter that cannot be read
 * is remembered; once its lab's last report is older than the team's `stale-after`, the lab's
 * usage counts as spent, and its running seats are halted the same way (fail closed).
 * Reads of one meter never overlap; a read is bounded by the adapter's own time limits.
 */
export interface MeterWatch {
  /** Read every meter once now (tests; the daemon's start). */
  readAll(): Promise<void>;
  close(): void;
}

export function watchMeters(options: {
  readonly meters: readonly MeterConfig[];
  readonly book: SpendBook;
  readonly ledger: () => Ledger | undefined;
  readonly seats: () => SeatManager | undefined;
  readonly now: () => number;
  readonly log: (line: string) => void;
  /** Adapters by config (tests give their own clocks or servers; default: src/meters' own). */
  readonly adapter?: (config: MeterConfig) => MeterAdapter;
}): MeterWatch {
  const controller = new AbortController();
  const timers: NodeJS.Timeout[] = [];
  const busy = new Set<string>();
  const lastError = new Map<string, string>();

  const halt = async (team: string, halts: readonly { seat: string; why: string }[]) => {
    const seats = options.seats();
    for (const h of halts) {
      options.log(`seat ${h.seat} (team ${team}): ${h.why}`);
      await seats?.halt(team, h.seat, h.why).catch((error: unknown) => options.log(`seat ${h.seat} (team ${team}): the halt failed: ${describeError(error)}`));
    }
  };

  // The seats whose launch holds a reservation: running, and starting too — a launch reserves
  // before it runs, so a report landing while a seat was still starting released its
  // reservation (covered, and not "running") and it ran on with none, never reserving again nor
  // halted at a report (test/escape/spend-attack.test.ts). A halt waits for a start to land.
  const running = () =>
    (options.seats()?.list() ?? [])
      .filter((v) => v.state === "running" || v.state === "starting")
      .map((v) => ({ team: v.team, seat: v.seat, runId: v.runId, ...(v.lab !== undefined ? { lab: v.lab } : {}) }));

  const readOne = async (config: MeterConfig, adapter: MeterAdapter): Promise<void> => {
    if (busy.has(config.name) || controller.signal.aborted) return;
    const ledger = options.ledger();
    if (ledger === undefined || ledger.state.status !== "ready") return;
    let spend;
    try {
      spend = policyInForce(ledger, config.team).policy.ceiling?.spend;
    } catch {
      return;
    }
    if (spend === undefined) return; // a team without a spend ceiling counts nothing
    busy.add(config.name);
    const now = options.now();
    try {
      const reading = await adapter.read({ from: spendPeriod(spend.period, now).start, to: now }, controller.signal);
      if (reading.currency.toUpperCase() !== spend.currency) {
        throw new Error(
          `meter ${config.name} reports in ${reading.currency}, and team ${config.team}'s spend is in ${spend.currency}; fix the meter or the team file`,
        );
      }
      if (lastError.delete(config.name)) options.log(`meter ${config.name}: reading again`);
      await halt(config.team, await options.book.report(config, reading, options.now(), running()));
    } catch (error) {
      const reason = describeError(error);
      options.book.failed(config, reason, options.now());
      if (lastError.get(config.name) !== reason) options.log(`meter ${config.name} (team ${config.team}, lab ${config.lab}): ${reason}`);
      lastError.set(config.name, reason);
      // Its lab's usage now counts as spent once its last report is stale: the running seats of
      // the lab meet their boundary here.
      const status = options.book.status(config.team, options.now());
      if (status?.labs.find((l) => l.lab === config.lab)?.meter !== "fresh") {
        await halt(
          config.team,
          running()
            .filter((r) => r.team === config.team && r.lab === config.lab)
            .map((r) => ({
              seat: r.seat,
              why: `halted: spend (team ${config.team}, lab ${config.lab}: its usage cannot be established — meter ${config.name}: ${reason})`,
            })),
        );
      }
    } finally {
      busy.delete(config.name);
    }
  };

  const adapters = options.meters.map((config) => ({ config, adapter: (options.adapter ?? ((c: MeterConfig) => createMeter(c)))(config) }));
  for (const { config, adapter } of adapters) {
    const timer = setInterval(() => void readOne(config, adapter), config.everyMs);
    timer.unref();
    timers.push(timer);
  }
  return {
    readAll: async () => {
      await Promise.all(adapters.map(({ config, adapter }) => readOne(config, adapter)));
    },
    close() {
      controller.abort();
      for (const timer of timers) clearInterval(timer);
    },
  };
}
