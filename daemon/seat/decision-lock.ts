/**
 * The machine's one decision lock (§15: a revocation or a decision is never raced), taken in
 * arrival order.
 *
 * It also paces a burst. At most `perTurn` holders take it in one turn of the event loop; the
 * next one waits for the following turn (a setImmediate), still in arrival order. Without
 * that, a burst of 64 requests is decided in one go and the group commit only starts once
 * the last of them is queued: every request of the burst then waits for all 64 decisions,
 * two commits and the whole burst's replies, and the seats' side and the daemon take turns
 * being idle. With slices, the group commit (scheduled by the first slice's intents, so it
 * runs first in the next turn) hands the first slice to its worker while the next slice is
 * decided, and the first replies leave while later requests are still on their way to the
 * disk. Nothing is decided out of order and nothing is skipped: a holder only waits a turn.
 */
export type DecisionLock = () => Promise<() => void>;

/** Holders per turn: measured with 64 requests in flight (docs/development.md, the `seat` bench). */
export const DECISIONS_PER_TURN = 16;

export function createDecisionLock(perTurn = DECISIONS_PER_TURN): DecisionLock {
  if (!Number.isInteger(perTurn) || perTurn < 1) throw new Error(`decisions per turn must be a positive integer, got ${perTurn}`);
  let tail: Promise<void> = Promise.resolve();
  let inTurn = 0;
  let resetQueued = false;
  // The count starts again with the next turn; queued at the turn's first holder, so a holder
  // waiting for that turn finds it already reset.
  const count = () => {
    inTurn++;
    if (resetQueued) return;
    resetQueued = true;
    setImmediate(() => {
      resetQueued = false;
      inTurn = 0;
    });
  };
  return () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const acquired = tail.then(async () => {
      if (inTurn >= perTurn) await new Promise<void>((resolve) => setImmediate(resolve));
      count();
      return release;
    });
    tail = acquired.then(() => released);
    return acquired;
  };
}
