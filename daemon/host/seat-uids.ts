import { closeSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { RefusalError } from "../../src/rpc/errors.js";
import type { TeamdHome } from "./home.js";
import { SEAT_SYSTEM_USER, type SeatUser } from "./users.js";

/**
 * One host uid per seat in system mode (issue 21, finding 2: seats of one uid shared the
 * kernel keyring, and everything else the kernel keys by uid — RLIMIT_NPROC, user-namespace
 * counts, /proc access, files in a shared tmp). The ids come from a range teamd owns: the
 * subordinate ids /etc/subuid and /etc/subgid give the `teamd-seat` user (setup.sh adds them),
 * which no other user of the machine is given. Each seat (team/seat) gets the smallest offset
 * in that range no home of the machine holds — claimed in SEAT_ID_CLAIMS, one file per offset
 * made with O_EXCL, so two daemons (two TEAMD_HOMEs) never share a uid (found by an attack:
 * two homes counted from 0, and one seat exhausted another's per-uid inotify instances) — and
 * kept in TEAMD_HOME/seat-ids.json, never handed to another seat while its home exists: its
 * files keep their owner across restarts. A home that is gone frees its claims.
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

export interface SeatIdFiles {
  readonly subuid: string;
  readonly subgid: string;
  readonly passwd: string;
  readonly group: string;
  /** The machine's claims, one file per offset of the range: what makes a seat's uid its own on the host, across every TEAMD_HOME. */
  readonly claims: string;
}

/** Root's, outside every TEAMD_HOME: two daemons of one machine (two homes) share the range. */
export const SEAT_ID_CLAIMS = "/var/lib/teamd-seat-ids";

const SYSTEM_FILES: SeatIdFiles = { subuid: "/etc/subuid", subgid: "/etc/subgid", passwd: "/etc/passwd", group: "/etc/group", claims: SEAT_ID_CLAIMS };

/**
 * Who holds an offset of the range on this machine: the home (its path and identity, so a
 * home removed — or another made at its path — is told apart) and the seat.
 */
interface Claim {
  readonly home: string;
  readonly dev: number;
  readonly ino: number;
  readonly seat: string;
}

function claimFor(home: TeamdHome, seat: string): Claim {
  const stats = statSync(home.root);
  return { home: home.root, dev: stats.dev, ino: stats.ino, seat };
}

function sameClaim(a: Claim, b: Claim): boolean {
  return a.home === b.home && a.dev === b.dev && a.ino === b.ino && a.seat === b.seat;
}

function readClaim(dir: string, offset: number): Claim | undefined {
  try {
    const parsed = JSON.parse(readFileSync(join(dir, String(offset)), "utf8")) as Claim;
    return typeof parsed.home === "string" && typeof parsed.seat === "string" ? parsed : { home: "?", dev: -1, ino: -1, seat: "?" };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    // Unreadable or torn: held by someone, never taken over by guess.
    return { home: "?", dev: -1, ino: -1, seat: "?" };
  }
}

/** A claim whose home is gone (or is another folder at its path now): its seat's files went with it. */
function stale(claim: Claim): boolean {
  if (claim.home === "?") return false;
  try {
    const stats = statSync(claim.home);
    return stats.dev !== claim.dev || stats.ino !== claim.ino;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT";
  }
}

/** Take `offset` for `claim`: atomic across processes (O_EXCL), or false when someone holds it. */
function takeOffset(dir: string, offset: number, claim: Claim): boolean {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let fd: number;
  try {
    fd = openSync(join(dir, String(offset)), "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  try {
    writeSync(fd, JSON.stringify(claim) + "\n");
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * The smallest offset no home of this machine holds, taken for `claim` (skipping `mine`, this
 * home's own). A stale claim is moved aside first — rename is atomic, so of two daemons taking
 * it over only one moves it — and then taken as a free one.
 */
function claimFree(dir: string, count: number, claim: Claim, mine: ReadonlySet<number>): number | undefined {
  for (let offset = 0; offset < count; offset++) {
    if (mine.has(offset)) continue;
    if (takeOffset(dir, offset, claim)) return offset;
    const held = readClaim(dir, offset);
    if (held === undefined || !stale(held)) continue;
    try {
      // Aside under a name of its own (the stale home's identity): of two daemons renaming it, one finds it gone.
      renameSync(join(dir, String(offset)), join(dir, `${offset}.stale-${held.dev}-${held.ino}-${process.pid}`));
    } catch {
      continue;
    }
    if (takeOffset(dir, offset, claim)) return offset;
  }
  return undefined;
}

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
        `Fix: run scripts/setup.sh as root (it adds them), or: usermod --add-subuids 1879048192-1879113727 --add-subgids 1879048192-1879113727 ${SEAT_SYSTEM_USER}`,
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
  const claim = claimFor(home, key);
  let offset = allocated[key];
  if (offset !== undefined) {
    if (offset >= count)
      throw new RefusalError(
        "containment.undecidable",
        `${path} gives ${key} the offset ${offset}, past the range of '${SEAT_SYSTEM_USER}' (${count} ids); fix: restore the range`,
      );
    const held = readClaim(files.claims, offset);
    if (held === undefined) takeOffset(files.claims, offset, claim);
    else if (!sameClaim(held, claim)) {
      throw new RefusalError(
        "containment.undecidable",
        `uid ${uids.start + offset} of ${key} is claimed on this machine by ${held.home} (${held.seat}); fix: remove the claim ${join(files.claims, String(offset))} only if that home is gone`,
      );
    }
  } else {
    offset = claimFree(files.claims, count, claim, new Set(Object.values(allocated)));
    if (offset === undefined) {
      throw new RefusalError(
        "containment.unavailable",
        `the seat id range of '${SEAT_SYSTEM_USER}' (${count} ids) is used up on this machine; fix: give it a larger range in ${files.subuid} and ${files.subgid}`,
      );
    }
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
