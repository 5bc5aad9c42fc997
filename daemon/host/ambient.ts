import { randomUUID } from "node:crypto";

/**
 * What teamd's programs take from the world beyond their inputs: the time and fresh ids.
 * Made real here, once, and injected everywhere else — through the composition root
 * (daemon/server/daemon.ts) in the daemon, through the program's entry (daemon/cli.ts) in the
 * owner's CLI — so a test can fix them (wall 10: the lint refuses Date.now(), new Date() and
 * randomUUID() in daemon/ but here).
 */
export interface Ambient {
  /** The time, unix ms. */
  readonly now: () => number;
  /** A fresh unique id (a UUID). */
  readonly newId: () => string;
}

/** The real clock and id source. */
export const REAL_AMBIENT: Ambient = Object.freeze({
  now: () => Date.now(),
  newId: () => randomUUID(),
});
