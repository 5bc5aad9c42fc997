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

/**
 * The real clock and id source. The id comes from the global Web Crypto object, which Node loads
 * on first use: importing node:crypto here cost every `teamd` command ~6 ms of start-up, even
 * `--version`, which needs no id (issue 26).
 */
export const REAL_AMBIENT: Ambient = Object.freeze({
  now: () => Date.now(),
  newId: () => globalThis.crypto.randomUUID(),
});
