import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RefusalError } from "../../src/rpc/index.js";
import type { TeamdHome } from "./home.js";
import { SEAT_SYSTEM_USER, type SeatUser } from "./users.js";

/**
 * One host uid per seat in system mode (issue 21, finding 2: seats of one uid shared the
 * kernel keyring, and everything else the kernel keys by uid — RLIMIT_NPROC, user-namespace
 * counts, /proc access, files in a shared tmp). The ids come from a range teamd owns: the
 * subordinate ids /etc/subuid and /etc/subgid give the `teamd-seat` user (setup.sh adds them),
 * which no other user of the machine is given. Each seat (team/seat) gets the next free offset
 * in that range, kept in TEAMD_HOME/seat-ids.json and never handed to another seat — its files
 * keep their owner across restarts, and a removed seat's uid is not a new seat's.
 *
 * Inside its user namespace every seat still sees `teamd-seat`'s own ids (bwrap --uid/--gid),
 * so /etc/passwd names it and programs that look their user up find one.
 */
export interface IdRange {
  readonly start: number;
  readonly count: number;
}

export const SEAT_IDS_FILE = "seat-ids.json";

/** The range a subordinate-id file gives `name` (the first line naming it), or undefined. Pure. */
export function subordinateRange(text: string, name: string): IdRange | undefined {
  for (const line of text.split("\n")) {
    const [owner, start, count] = line.trim().split(":");
    if (owner !== name || start === undefined || count === undefined || !/^\d+$/.test(start) || !/^\d+$/.test(count)) continue;
    const range = { start: Number(start), count: Number(count) };
    // Node's spawn takes a uid as a 32-bit signed integer: the range must end below 2^31.
    if (range.start > 0 && range.count > 0 && range.start + range.count <= 2 ** 31 - 1) return range;
  }
  return undefined;
}

/** The offset a seat has, or the smallest one no seat has (undefined when the range is full). Pure. */
export function seatOffset(allocated: Readonly<Record<string, number>>, key: string, count: number): number | undefined {
  const held = allocated[key];
  if (held !== undefined) return held;
  const used = new Set(Object.values(allocated));
  for (let offset = 0; offset < count; offset++) if (!used.has(offset)) return offset;
  return undefined;
}

export interface SeatIdFiles {
  readonly subuid: string;
  readonly subgid: string;
  readonly passwd: string;
  readonly group: string;
}

const SYSTEM_FILES: SeatIdFiles = { subuid: "/etc/subuid", subgid: "/etc/subgid", passwd: "/etc/passwd", group: "/etc/group" };

/**
 * The seat's own host ids, with `teamd-seat`'s as the ids it sees inside. Fails closed: no
 * seat user, no range, a full range, or an id of the range that /etc/passwd or /etc/group
 * gives to someone.
 */
export function seatHostUser(
  home: TeamdHome,
  team: string,
  seat: string,
  base: SeatUser,
  files: SeatIdFiles = SYSTEM_FILES,
): SeatUser & { readonly inside: { uid: number; gid: number } } {
  const read = (path: string) => {
    try {
      return readFileSync(path, "utf8");
    } catch {
      return "";
    }
  };
  const uids = subordinateRange(read(files.subuid), SEAT_SYSTEM_USER);
  const gids = subordinateRange(read(files.subgid), SEAT_SYSTEM_USER);
  if (uids === undefined || gids === undefined) {
    throw new RefusalError(
      "containment.unavailable",
      `system mode runs each seat as a uid of its own, from the subordinate ids of '${SEAT_SYSTEM_USER}', and ${files.subuid} or ${files.subgid} gives it none. ` +
        `Fix: run scripts/setup.sh as root (it adds them), or: usermod --add-subuids 2000000000-2000065535 --add-subgids 2000000000-2000065535 ${SEAT_SYSTEM_USER}`,
    );
  }
  const path = join(home.root, SEAT_IDS_FILE);
  let allocated: Record<string, number> = {};
  const text = read(path);
  if (text !== "") {
    try {
      const parsed = JSON.parse(text) as unknown;
      if (typeof parsed !== "object" || parsed === null || Object.values(parsed).some((v) => !Number.isSafeInteger(v) || (v as number) < 0))
        throw new Error("not a map of offsets");
      allocated = parsed as Record<string, number>;
    } catch (error) {
      // Never guess: a lost map would hand one seat's files to another.
      throw new RefusalError(
        "containment.undecidable",
        `${path} cannot be read (${(error as Error).message}); fix: restore it from a backup, or remove it only if no seat folder exists`,
      );
    }
  }
  const key = `${team}/${seat}`;
  const count = Math.min(uids.count, gids.count);
  const offset = seatOffset(allocated, key, count);
  if (offset === undefined || offset >= count) {
    throw new RefusalError(
      "containment.unavailable",
      `the seat id range of '${SEAT_SYSTEM_USER}' (${count} ids) is used up; fix: give it a larger range in ${files.subuid} and ${files.subgid}`,
    );
  }
  const uid = uids.start + offset;
  const gid = gids.start + offset;
  const taken = (file: string, id: number) =>
    read(file)
      .split("\n")
      .find((line) => line.split(":")[2] === String(id))
      ?.split(":")[0];
  const user = taken(files.passwd, uid);
  const group = taken(files.group, gid);
  if (user !== undefined || group !== undefined) {
    throw new RefusalError(
      "containment.unavailable",
      `the seat id range of '${SEAT_SYSTEM_USER}' overlaps ${user !== undefined ? `user '${user}' (uid ${uid})` : `group '${group}' (gid ${gid})`}; fix: give '${SEAT_SYSTEM_USER}' a subordinate range no user or group has`,
    );
  }
  if (allocated[key] === undefined) {
    const next = { ...allocated, [key]: offset };
    // Written whole, then renamed: a crash leaves the old map or the new one, never half of one.
    writeFileSync(`${path}.tmp`, JSON.stringify(next, null, 2) + "\n", { mode: 0o600 });
    renameSync(`${path}.tmp`, path);
  }
  return { name: `${SEAT_SYSTEM_USER}+${offset}`, uid, gid, inside: { uid: base.uid, gid: base.gid } };
}
