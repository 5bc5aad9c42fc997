import { spawn, type ChildProcess } from "node:child_process";
import { chmod, lstat, mkdir, readlink, rename, rm, symlink } from "node:fs/promises";
import { join } from "node:path";
import { BASH, BASH_COMMAND } from "./close-fds.js";
import type { Launcher, LaunchRequest, LaunchResult, ProbeResult } from "./launcher-types.js";
import { explainNproc, launchChain, type ChainOptions } from "./launch-chain.js";
import { UNCONTAINED_PROTOCOL } from "./launch-protocol.js";
import { startedOnPipes } from "./launcher-pipes.js";
import { launchInPty } from "./launcher-pty.js";
import { refuseContainment, type ContainmentRefusal } from "./refusal.js";
import { switchIds } from "./seat-ids.js";
import { selfReportingWrapper, uncontainedArgv, uncontainedRun, type UncontainedRun } from "./uncontained-args.js";

/**
 * The uncontained launcher (`containment: none` in the team file): the seat's pinned command
 * runs directly on the host — no namespace, no mount plan, no network namespace. It can read
 * and write everything its host user can, so every refusal teamd makes for it holds against
 * a mistake only (M), and every record of the seat says so. What still holds:
 *
 * - the environment is the plan's, built from the allowlist (nothing of the daemon's), with
 *   the seat socket, the shim and its command names at their host paths (uncontained-args.ts);
 * - it never runs as root: as root (system mode) the chain switches to the seat's user first
 *   (setpriv --clear-groups in a pty, the spawn's uid/gid on pipes), exactly as the bwrap
 *   launcher does; rlimits apply through prlimit; where the seat has cgroups (the daemon as
 *   root) the wrapper waits until it is moved into them, so everything it runs is born there;
 * - the stop: `cgroup.kill` where it has a cgroup, else SIGKILL to the process tree under its
 *   init by pid (process-tree.ts) — a process that left the tree escapes that.
 *
 * Linux only for now: the wrapper closes inherited fds through /proc, and the tree walk and
 * the tools (setpriv, prlimit) are Linux's; other platforms refuse (launcher.ts).
 */
const DEFAULT_START_TIMEOUT_MS = 10_000;

export function createUncontainedLauncher(options: ChainOptions = {}): Launcher {
  async function probe(): Promise<ProbeResult> {
    return { ok: true, details: ["containment: none — seats run uncontained on the host (refusals hold against a mistake only)"] };
  }

  async function launch(request: LaunchRequest): Promise<LaunchResult> {
    const { plan, cgroup } = request;
    const ids = switchIds(plan);
    if ("refusal" in ids) return { ok: false, refusal: ids.refusal };
    if (plan.egress !== undefined) {
      return refused(
        "containment.unavailable",
        "start.network is not supported yet for an uncontained seat: its egress proxy lives in the seat's own network namespace, which an uncontained seat does not have (and the host's network is open to it anyway)",
        "drop start.network from the seat, or run it contained (remove `containment: none`)",
      );
    }
    const socket = await lstat(plan.socket.host).catch(() => undefined);
    if (socket === undefined || !socket.isSocket())
      return refused("containment.failed", `the seat socket ${plan.socket.host} is not a unix socket`, "open the seat's socket before launching it");
    const cwd = await lstat(plan.cwd).catch(() => undefined);
    if (cwd === undefined || !cwd.isDirectory())
      return refused("containment.failed", `the seat's working folder ${plan.cwd} does not exist`, `create ${plan.cwd}, or plan the seat again`);
    const run = uncontainedRun(plan);
    try {
      await linkShimNames(run);
    } catch (error) {
      return refused(
        "containment.failed",
        `the shim's command names could not be linked: ${(error as Error).message}`,
        "check that teamd may write beside its shim copy (TEAMD_HOME/shim)",
      );
    }
    const chained = await launchChain(plan, request.io, cgroup, ids.spawn, options);
    if (!chained.ok) return chained;
    const { chain } = chained;
    const argv = uncontainedArgv(request.command, chain.asUser, chain.rlimits);
    const place = cgroup !== undefined ? { place: (pid: number) => cgroup.place(pid) } : {};
    const startTimeoutMs = request.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    if (request.io?.kind === "pty") {
      const result = await launchInPty({
        argv,
        cols: request.io.cols,
        rows: request.io.rows,
        startTimeoutMs,
        limits: chain.limits,
        env: run.env,
        cwd: run.cwd,
        protocol: UNCONTAINED_PROTOCOL,
        ...place,
      });
      return explainNproc(result, plan, cgroup);
    }
    let child: ChildProcess;
    try {
      // fd 3: the wrapper's report of its pid; fd 4 (with a cgroup): the byte it waits for.
      child = spawn(BASH, [...BASH_COMMAND, selfReportingWrapper("fd", cgroup !== undefined), "teamd-launch", ...argv], {
        stdio: cgroup === undefined ? ["pipe", "pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe", "pipe", "pipe"],
        env: { ...run.env },
        cwd: run.cwd,
        ...ids.spawn,
      });
    } catch (error) {
      return refused("containment.unavailable", `cannot start ${BASH}: ${(error as Error).message}`, "check that teamd may run programs as the seat's user");
    }
    return explainNproc(await startedOnPipes(child, { ...request, startTimeoutMs }, chain.limits, cgroup, UNCONTAINED_PROTOCOL), plan, cgroup);
  }

  return { platform: "linux", probe, launch };
}

/**
 * The folder PATH starts with: `teamd-shim` and `git-remote-teamd` as links to the bundle
 * (the shim answers to the name it is run by) and to the remote helper's front. Made once per bundle version, atomically: a
 * folder built aside and renamed into place, so two seats starting at once never see half of it.
 */
async function linkShimNames(run: UncontainedRun): Promise<void> {
  const bin = run.shimBin;
  if (bin === undefined) return;
  const complete = async (dir: string) => {
    for (const link of bin.links) if ((await readlink(join(dir, link.name)).catch(() => undefined)) !== link.target) return false;
    return true;
  };
  if (await complete(bin.dir)) return;
  const temp = `${bin.dir}.${process.pid}.${Date.now()}.tmp`;
  await mkdir(temp, { mode: 0o755 });
  try {
    // chmod as well: a service's UMask (0077) would narrow the mode, and in system mode the
    // seat's user must reach these names (as it reaches the bundle beside them).
    await chmod(temp, 0o755);
    for (const link of bin.links) await symlink(link.target, join(temp, link.name));
    await rm(bin.dir, { recursive: true, force: true });
    await rename(temp, bin.dir).catch(async (error: NodeJS.ErrnoException) => {
      // Another start made it meanwhile: theirs will do when it is complete.
      if (!(await complete(bin.dir))) throw error;
    });
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}

function refused(rule: ContainmentRefusal["rule"], reason: string, fix: string): { ok: false; refusal: ContainmentRefusal } {
  return { ok: false, refusal: refuseContainment(rule, reason, fix) };
}
