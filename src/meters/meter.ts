/**
 * A meter (§8): what reports the spend of one source — a provider workspace or project, or the
 * owner's own command — for a window of time, in the provider's billing currency. The daemon
 * reads each configured meter every so often (src/meters/config.ts), turns each reading into a
 * record, and the kernel's arithmetic (src/kernel/envelope-spend.ts) counts it; a meter that
 * cannot answer throws a MeterError, and the daemon counts that source's usage as spent.
 */

/** What a meter reported for a window: an amount in the billing currency's minor units (cents), integer. */
export interface MeterReading {
  /** Minor units of `currency` (cents for USD), an integer ≥ 0. */
  readonly amount: number;
  /** ISO 4217 code, upper case (`USD`). */
  readonly currency: string;
  /** The window asked for, Unix milliseconds: [from, to). */
  readonly from: number;
  readonly to: number;
}

export interface MeterAdapter {
  /** The meter's name in the owner's configuration. */
  readonly name: string;
  read(window: { from: number; to: number }, signal: AbortSignal): Promise<MeterReading>;
}

/**
 * Why a meter could not report. Its message is safe to record and show: it names the meter, what
 * failed and the fix, and never contains a credential — no adapter quotes a request header, and
 * none quotes a provider's answer (a provider's error may repeat the request); the command
 * adapter quotes at most a short, escaped excerpt of the command's own output, and the command is
 * given no credential of teamd's. It carries no `cause` for the same reason.
 */
export class MeterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MeterError";
  }
}
