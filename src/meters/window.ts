import { MeterError } from "./meter.js";

/**
 * The window a meter is read for: Unix milliseconds, [from, to). The providers report in whole
 * UTC days, so a provider meter asks for the days the window touches and counts each day
 * (bucket) that overlaps it.
 */
export interface MeterWindow {
  readonly from: number;
  readonly to: number;
}

export const DAY_MS = 86_400_000;

/** The window an adapter is asked for, checked: integer Unix milliseconds, from before to. */
export function checkWindow(meter: string, window: MeterWindow): void {
  const { from, to } = window;
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 0 || from >= to)
    throw new MeterError(`meter '${meter}': the window to read must be integer Unix milliseconds with from before to`);
}

/** A time as RFC 3339 in UTC, to the second when it has no milliseconds: `2026-11-01T00:00:00Z`. */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.000Z$/, "Z");
}

/** The start of the UTC day `ms` falls in. */
export const floorDay = (ms: number): number => ms - (ms % DAY_MS);

/** The first UTC midnight at or after `ms`. */
export const ceilDay = (ms: number): number => (ms % DAY_MS === 0 ? ms : floorDay(ms) + DAY_MS);

/** Whether a bucket [start, end) shares any time with the window. */
export const overlaps = (start: number, end: number, window: MeterWindow): boolean => start < window.to && end > window.from;
