import { existsSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** How often a held start looks at its file, and how many looks at most (60 s: a test left it, the start goes on). */
const LOOK_MS = 50;
const LOOKS = 1_200;

/**
 * Test seam (TEAMD_TEST_HOLD_START=FOLDER): a seat's start, its spend reserved and nothing yet
 * made, waits while FOLDER/TEAM.SEAT exists, bounded. A test uses it to hold a seat in
 * "starting" until the daemon's own timer (a meter read) has fired, then lets it go. Only the
 * daemon's environment names the folder: the owner's, never a seat's.
 */
export function startHold(folder: string): (team: string, seat: string) => Promise<void> {
  return async (team, seat) => {
    const file = join(folder, `${team}.${seat}`);
    for (let look = 0; look < LOOKS && existsSync(file); look++) await sleep(LOOK_MS);
  };
}
