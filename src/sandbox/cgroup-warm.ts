import { close, constants as fsConstants, openSync, readFileSync, write } from "node:fs";
import { parseCgroupMounts, parseSelfCgroup } from "./cgroup-plan.js";

/**
 * Moving a process into a cgroup (a write to `cgroup.procs`) takes the kernel's
 * cgroup_threadgroup_rwsem for writing, and the first such write after a quiet while waits for
 * an RCU grace period before it may (the rwsem's rcu_sync): 10-25 ms measured on a 2-core guest
 * (Linux 6.18, cgroup v1 and v2 alike), on the path of every `teamd exec`, seat start and
 * contained git run of a seat with cgroups (issue 26). A write that comes while the rwsem is
 * still in its writer mode — during a grace period another writer started, or within about one
 * grace period after the last writer left — does not wait again.
 *
 * So as a request that will move a process arrives, the daemon moves itself into the cgroup it
 * is already in: the kernel takes the same rwsem (and waits the grace period, on a thread of
 * libuv's pool, not the daemon's), and the move itself is a no-op. The real move that follows
 * milliseconds later finds the rwsem warm. Where the daemon may not write its own cgroup (an
 * ordinary owner under systemd), the write fails and nothing changes: it is only lost time saved.
 *
 * The daemon's own cgroup is read afresh each time (never one recorded earlier): a daemon moved
 * meanwhile (by systemd, by its owner) is never moved back. Its two /proc files are read and
 * the file opened in line (microseconds, and never O_CREAT: a path that is not there is not
 * made), so that the write is queued at once: the request's own work that follows holds the
 * daemon's thread for milliseconds, and a step waiting for it would start the wait that late.
 */
export function warmCgroupMoves(): void {
  // One at a time: the write holds a thread of libuv's pool (four, shared with every file the
  // daemon reads or writes) for the grace period, and a second write would wait the same one.
  if (warming) return;
  let target: string | undefined;
  try {
    target = warmTarget(readFileSync("/proc/self/mounts", "utf8"), readFileSync("/proc/self/cgroup", "utf8"));
  } catch {
    return;
  }
  if (target === undefined) return;
  const written = writeOwnPid(target, () => {
    warming = false;
  });
  if (written) warming = true;
}

/**
 * This process's pid written to `file` through libuv's pool, `done` called once it is written or
 * failed; false (and `done` never called) when the file cannot be opened — it is never created
 * (O_WRONLY alone) and a link is not followed.
 */
export function writeOwnPid(file: string, done: () => void): boolean {
  let fd: number;
  try {
    fd = openSync(file, fsConstants.O_WRONLY | fsConstants.O_NOFOLLOW);
  } catch {
    // Not warmed: the move that follows waits as it would have.
    return false;
  }
  write(fd, String(process.pid), () => {
    close(fd, () => undefined);
    done();
  });
  return true;
}

// eslint-disable-next-line teamd/module-state -- whether the one warm write is in flight (a second would hold a second pool thread for the same wait)
let warming = false;

/**
 * The daemon's own `cgroup.procs` in one hierarchy, from /proc/self/mounts and /proc/self/cgroup:
 * v2 where it is mounted (on a hybrid host it carries no controller, so no controller's attach
 * runs even in principle), else the first v1 hierarchy mounted. Undefined where the daemon's
 * place in it is unknown or not a plain path.
 */
export function warmTarget(mountsText: string, selfCgroupText: string): string | undefined {
  const mounts = parseCgroupMounts(mountsText);
  const self = parseSelfCgroup(selfCgroupText);
  const ordered = [...mounts.filter((m) => m.type === "cgroup2"), ...mounts.filter((m) => m.type === "cgroup" && m.controllers.length > 0)];
  for (const mount of ordered) {
    const own = self[mount.type === "cgroup2" ? "0" : [...mount.controllers].sort().join(",")];
    // Outside this cgroup namespace's view ("/.."), removed, or not absolute: not ours to write.
    if (own === undefined || !own.startsWith("/") || own.split("/").includes("..") || own.endsWith(" (deleted)")) continue;
    return `${mount.path.replace(/\/+$/, "")}${own === "/" ? "" : own}/cgroup.procs`;
  }
  return undefined;
}
