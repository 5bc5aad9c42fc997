import { mkdir, readdir, readFile, readlink, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { TeamdHome } from "./home.js";
import { removeSocket } from "../src/rpc/unix-socket.js";
import { seatLayout, seatRegistryDir } from "./seat-layout.js";

/**
 * The registry of running seats: TEAMD_HOME/run/seats.d/<team>.<seat>.json, one file per
 * running seat naming its pid-namespace init (and that namespace's identity). It is what a
 * machine-wide stop reads, and what the next daemon sweeps after a crash: a recorded init
 * still alive in the recorded namespace is killed (SIGKILL to the init ends the namespace);
 * then the file, the stale socket and the run's tmp go. Never kill by name or by group.
 */
export interface SeatRegistration {
  readonly team: string;
  readonly seat: string;
  readonly runId: string;
  readonly initPid: number;
  /** readlink /proc/<initPid>/ns/pid at publish: guards the sweep against a reused pid. */
  readonly pidNamespace: string;
  readonly daemonPid: number;
  readonly startedAt: string;
}

export async function pidNamespaceOf(pid: number): Promise<string | undefined> {
  return readlink(`/proc/${pid}/ns/pid`).catch(() => undefined);
}

export async function register(home: TeamdHome, entry: SeatRegistration): Promise<void> {
  const dir = seatRegistryDir(home);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = seatLayout(home, entry.team, entry.seat).registryFile;
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, JSON.stringify(entry) + "\n", { mode: 0o600 });
  await rename(temp, file);
}

export async function unregister(home: TeamdHome, team: string, seat: string): Promise<void> {
  await rm(seatLayout(home, team, seat).registryFile, { force: true });
}

export async function registrations(home: TeamdHome): Promise<SeatRegistration[]> {
  const dir = seatRegistryDir(home);
  const names = await readdir(dir).catch(() => [] as string[]);
  const found: SeatRegistration[] = [];
  for (const name of names.filter((n) => n.endsWith(".json"))) {
    try {
      found.push(JSON.parse(await readFile(join(dir, name), "utf8")) as SeatRegistration);
    } catch {
      await rm(join(dir, name), { force: true });
    }
  }
  return found;
}

/** After a crash: kill what a dead daemon left running, remove its registry files, sockets and tmp. Returns what was swept. */
export async function sweep(home: TeamdHome, log: (line: string) => void): Promise<string[]> {
  const swept: string[] = [];
  for (const entry of await registrations(home)) {
    const layout = seatLayout(home, entry.team, entry.seat);
    const ns = await pidNamespaceOf(entry.initPid);
    if (ns !== undefined && ns === entry.pidNamespace) {
      try {
        process.kill(entry.initPid, "SIGKILL");
        log(`sweep: killed the leftover seat ${entry.team}/${entry.seat} (init pid ${entry.initPid})`);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
      }
    }
    await removeSocket(layout.socket);
    await rm(layout.tmp, { recursive: true, force: true });
    await unregister(home, entry.team, entry.seat);
    swept.push(`${entry.team}/${entry.seat}`);
  }
  return swept;
}
