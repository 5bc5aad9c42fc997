import { readlink } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import type { TeamdHome } from "../host/home.js";
import { cgroupEmpty, killRecordedCgroups } from "./cgroup.js";
import { isRecordedInit, isRecordedUncontained, registrations, type SeatRegistration } from "./registry.js";
import { killProcessTree } from "../../src/sandbox/process-tree.js";

/**
 * The owner's own hand on the seats, for when the daemon cannot be asked (§11: the
 * machine-wide stop works with the daemon hung or dead). It reads the registry the daemon
 * keeps under TEAMD_HOME/run/seats.d and sends SIGKILL to each seat's recorded pid-namespace
 * init — only while that pid is still the init of the recorded namespace (isRecordedInit: a
 * reused pid is never hit); killing the init ends every process in the namespace — and
 * writes each seat's recorded cgroup.kill, which ends the rest (`teamd exec` runs). An
 * uncontained seat (`containment: none`) has no namespace: the process tree under its recorded
 * init (pid and start time) is killed instead, and its cgroup.kill ends what left that tree
 * where it has a cgroup. Never by process group or by name. It only reads the registry: the
 * daemon (or the next one's sweep) removes the files, sockets and tmp, so nothing it keeps is
 * changed behind its back.
 */
export interface SeatKill {
  readonly team: string;
  readonly seat: string;
  readonly initPid: number;
  /**
   * killed: it was running and is gone now; gone: it was not running; alive: it outlived the
   * wait; unseen: its process exists but this user may not inspect it (a seat of another uid,
   * e.g. a system-mode seat seen by a non-root owner) — never taken for gone (fail closed).
   */
  readonly outcome: "killed" | "gone" | "alive" | "unseen";
}

/** Is the recorded pid still there, though its namespace cannot be read? (EACCES/EPERM: another uid's process.) */
async function unseen(entry: SeatRegistration): Promise<boolean> {
  // Uncontained: the init's start time is world-readable; "unseen" is a tree this user may not signal.
  if (entry.containment === "none") return false;
  return readlink(`/proc/${entry.initPid}/ns/pid`).then(
    () => false,
    (error: NodeJS.ErrnoException) => error.code === "EACCES" || error.code === "EPERM",
  );
}

/** Kill every registered seat still running, then wait (at most waitMs on the caller's clock `now`) until each has left its namespace. */
export async function killRegisteredSeats(home: TeamdHome, waitMs: number, now: () => number, team?: string): Promise<SeatKill[]> {
  const targets: { entry: SeatRegistration; sent: boolean; hidden: boolean }[] = [];
  for (const entry of await registrations(home, { prune: false })) {
    // A team's stop reaches that team's seats only (§9).
    if (team !== undefined && entry.team !== team) continue;
    let sent = false;
    // Running, but not this user's to inspect or signal (system mode, a non-root owner): its cgroup.kill below is the way.
    let hidden = await unseen(entry);
    if (isRecordedUncontained(entry)) {
      try {
        sent = killProcessTree(entry.initPid, entry.initStart).length > 0;
      } catch (error) {
        // Another uid's tree (system mode, a non-root owner): its cgroup.kill below is the way.
        if ((error as NodeJS.ErrnoException).code !== "EPERM") throw error;
        hidden = true;
      }
    } else if (await isRecordedInit(entry.initPid, entry.pidNamespace, entry.initStart)) {
      try {
        process.kill(entry.initPid, "SIGKILL");
        sent = true;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "EPERM")
          throw new Error(
            `not allowed to kill seat ${entry.team}/${entry.seat} (init pid ${entry.initPid}): run teamd stop --all as the daemon's user (or root)`,
          );
        if (code !== "ESRCH") throw error;
      }
    }
    targets.push({ entry, sent, hidden });
  }
  // And each seat's cgroup.kill (v2): it also ends what `teamd exec` ran in the seat, in pid
  // namespaces of its own. Only folders shaped as this home's seat cgroups are written.
  const killed = new Set(
    await killRecordedCgroups(
      home,
      targets.map((t) => t.entry),
    ),
  );
  // A seat whose processes this user may not inspect (system mode, a non-root owner) is known
  // down only by its cgroups: every recorded one of them empty (or gone) after the kill.
  const leavesOf = (e: SeatRegistration) => (e.cgroups ?? []).filter((leaf) => killed.has(leaf));
  const downByCgroup = async (e: SeatRegistration) => {
    const leaves = leavesOf(e);
    if (leaves.length === 0) return false;
    for (const leaf of leaves) if (!(await cgroupEmpty(leaf))) return false;
    return true;
  };
  // Uncontained: up while its recorded init lives, unless every recorded cgroup of it is empty
  // (an init of another uid, stopped by this CLI, is killed by its cgroup alone).
  const stillIn = async (e: SeatRegistration) =>
    e.containment === "none"
      ? isRecordedUncontained(e) && !(await downByCgroup(e))
      : (await isRecordedInit(e.initPid, e.pidNamespace, e.initStart)) || ((await unseen(e)) && !(await downByCgroup(e)));
  const deadline = now() + waitMs;
  for (;;) {
    const alive = [];
    for (const t of targets) if (await stillIn(t.entry)) alive.push(t);
    if (alive.length === 0 || now() >= deadline) break;
    await sleep(50);
  }
  const result: SeatKill[] = [];
  for (const t of targets) {
    if (t.entry.containment === "none") {
      const up = await stillIn(t.entry);
      const outcome = up ? (t.hidden ? "unseen" : "alive") : t.sent || (t.hidden && leavesOf(t.entry).length > 0) ? "killed" : "gone";
      result.push({ team: t.entry.team, seat: t.entry.seat, initPid: t.entry.initPid, outcome });
      continue;
    }
    const alive = await isRecordedInit(t.entry.initPid, t.entry.pidNamespace, t.entry.initStart);
    const hidden = !alive && (await unseen(t.entry));
    const byCgroup = hidden && (await downByCgroup(t.entry));
    const outcome = alive ? "alive" : hidden && !byCgroup ? "unseen" : t.sent || byCgroup || (t.hidden && leavesOf(t.entry).length > 0) ? "killed" : "gone";
    result.push({ team: t.entry.team, seat: t.entry.seat, initPid: t.entry.initPid, outcome });
  }
  return result;
}
