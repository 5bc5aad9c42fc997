import { boundText } from "../../src/ledger/bounded-text.js";
import { createTokenBuckets } from "../seat/token-buckets.js";

/** One internal error's line in the daemon's log: an error's stack echoes what a caller sent (a path, a ref), so it is bounded like a record's text. */
export const INTERNAL_ERROR_LINE_BYTES = 4096;
/** Internal error lines logged at once, then a minute, before the rest are counted instead of written. */
export const INTERNAL_ERROR_LINES = { burst: 60, perMinute: 60 } as const;

/**
 * The daemon's log of internal errors (a failure that is no refusal: a bug, or a stream a seat
 * cut off mid-call). A seat can cause them — an outside attack made stack traces by cutting its
 * own pushes short — so each line is bounded (its length and sha-256 kept), and past a rate the
 * lines are counted and the count said with the next line written: a seat cannot fill the
 * owner's disk or journal through the daemon's log.
 */
export function createInternalErrorLog(log: (line: string) => void, clock: () => number): (error: unknown, method: string) => void {
  const lines = createTokenBuckets(INTERNAL_ERROR_LINES, clock);
  let dropped = 0;
  return (error, method) => {
    if (lines.level("log") < 1) {
      dropped += 1;
      return;
    }
    lines.take("log", 1);
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    const skipped = dropped > 0 ? ` (${dropped} more internal errors were not written: past ${INTERNAL_ERROR_LINES.perMinute} a minute)` : "";
    dropped = 0;
    log(boundText(`internal error in ${method}: ${text}${skipped}`, INTERNAL_ERROR_LINE_BYTES));
  };
}
