import { chmod, mkdir, readdir, readFile, readlink, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { TeamdHome } from "../host/home.js";
import { removeSocket } from "../../src/rpc/unix-socket.js";
import { seatLayout, seatRegistryDir } from "../host/seat-layout.js";
import { killProcessTree, processRunning, processStartTime } from "../../src/sandbox/process-tree.js";

/**
 * The registry of running seats: TEAMD_HOME/run/seats.d/<team>.<seat>.json, one file per
 * running seat naming its pid-namespace init (and that namespace's identity). It is what a
 * machine-wide stop reads, and what the next daemon sweeps after a crash: a recorded init
 * still alive in the recorded namespace is killed (SIGKILL to the init ends the namespace);
 * then the file, the stale socket and the run's tmp go. An uncontained seat has no
 * namespace: its init is recorded by pid and start time and its process tree is killed
 * (its cgroups, swept after, end what left the tree). Never kill by name or by group.
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
  /** The seat's cgroup folders (daemon/lifecycle/cgroup.ts): cgroup.kill'ed and removed by the stop and the sweep. */
  readonly cgroups?: readonly string[];
  /**
   * "none": an uncontained seat (`containment: none`). It has no pid namespace (pidNamespace
   * is empty): its init is named by pid and `initStart`, and the stop and the sweep kill the
   * process tree under it (src/sandbox/process-tree.ts) as well as its cgroups. Absent: bwrap.
   */
  readonly containment?: "none";
  /**
   * The init's start time (/proc/<pid>/stat field 22). For a bwrap seat too: the kernel hands a
   * freed pid namespace's inode number to the next namespace made (seen: four unshares gave 174,
   * 175, 176, 174), and contained git and every exec make namespaces all the time, so a reused
   * pid that is init of a namespace under the recorded number can be another sandbox's init —
   * the sweep would have killed it. A registration without it (an older daemon's) is judged by
   * pid and namespace alone, as before.
   */
  readonly initStart?: string;
}

/** Whether `entry` is an uncontained seat whose recorded init still runs as that very process (pid and start time; a zombie does not). */
export function isRecordedUncontained(entry: SeatRegistration): boolean {
  return entry.containment === "none" && entry.initStart !== undefined && entry.initPid > 1 && processRunning(entry.initPid, entry.initStart);
}

export async function pidNamespaceOf(pid: number): Promise<string | undefined> {
  return readlink(`/proc/${pid}/ns/pid`).catch(() => undefined);
}

/**
 * Whether `pid` is, right now, the init of the pid namespace `recorded` — the only process the
 * sweep may kill. A seat's init is never in the sweeping daemon's own namespace, and is pid 1
 * of its own (the last NSpid field): a record naming no namespace, the host's namespace, or a
 * pid that is not its namespace's init (a reused pid, a reused namespace inode) is never killed;
 * nor, when the registration names the init's start time, a process that started at another
 * time. A pid reused between this check and the kill is the window pidfd would close (Node has none).
 */
export async function isRecordedInit(pid: number, recorded: string, start?: string): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 1 || !/^pid:\[\d+\]$/.test(recorded)) return false;
  if (start !== undefined && processStartTime(pid) !== start) return false;
  const own = await pidNamespaceOf(process.pid);
  if (own === undefined || recorded === own) return false;
  if ((await pidNamespaceOf(pid)) !== recorded) return false;
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const nspid = /^NSpid:\s*(.+)$/m.exec(status)?.[1]?.trim().split(/\s+/);
  return nspid !== undefined && nspid.length >= 2 && nspid[nspid.length - 1] === "1";
}

export async function register(home: TeamdHome, entry: SeatRegistration): Promise<void> {
  const dir = seatRegistryDir(home);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = seatLayout(home, entry.team, entry.seat).registryFile;
  const temp = `${file}.${process.pid}.tmp`;
  // 0640: in system mode the directory is the owner group's (setgid, owner-group.ts), so the
  // owner's CLI can read who to kill; in user mode the directory itself is 0700.
  // chmod as well: the service's UMask (0077) would narrow the mode writeFile asks for.
  await writeFile(temp, JSON.stringify(entry) + "\n", { mode: 0o640 });
  await chmod(temp, 0o640);
  await rename(temp, file);
}

export async function unregister(home: TeamdHome, team: string, seat: string): Promise<void> {
  await rm(seatLayout(home, team, seat).registryFile, { force: true });
}

/**
 * The registered seats. The daemon prunes a file it cannot parse (prune: true, the default);
 * the owner's CLI only reads (prune: false): the registry is the daemon's to change.
 */
export async function registrations(home: TeamdHome, options: { prune?: boolean } = {}): Promise<SeatRegistration[]> {
  const dir = seatRegistryDir(home);
  const names = await readdir(dir).catch(() => [] as string[]);
  const found: SeatRegistration[] = [];
  for (const name of names.filter((n) => n.endsWith(".json"))) {
    try {
      found.push(JSON.parse(await readFile(join(dir, name), "utf8")) as SeatRegistration);
    } catch {
      if (options.prune ?? true) await rm(join(dir, name), { force: true });
    }
  }
  return found;
}

/** After a crash: kill what a dead daemon left running, remove its registry files, sockets and tmp. Returns what was swept. */
export async function sweep(home: TeamdHome, log: (line: string) => void): Promise<string[]> {
  const swept: string[] = [];
  for (const entry of await registrations(home)) {
    const layout = seatLayout(home, entry.team, entry.seat);
    if (isRecordedUncontained(entry)) {
      // No namespace to end: the tree under the recorded init (what left it escapes; its cgroups, swept after, hold that).
      const killed = killProcessTree(entry.initPid, entry.initStart);
      if (killed.length > 0)
        log(`sweep: killed the leftover uncontained seat ${entry.team}/${entry.seat} (init pid ${entry.initPid}, ${killed.length} process(es) in its tree)`);
    } else if (await isRecordedInit(entry.initPid, entry.pidNamespace, entry.initStart)) {
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
