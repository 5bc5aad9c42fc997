import { spawn, execFile, type ChildProcess } from "node:child_process";
import { lstatSync } from "node:fs";
import { lstat, readlink } from "node:fs/promises";
import { BLOCK_FD, bwrapArgs, missingFeatures, seccompFdAfter, STATUS_FD } from "./bwrap-args.js";
import { classifyBwrapFailure } from "./bwrap-failure.js";
import type { Launcher, LaunchRequest, LaunchResult, ProbeResult } from "./launcher-types.js";
import { BWRAP_PROTOCOL } from "./launch-protocol.js";
import { startedOnPipes } from "./launcher-pipes.js";
import { LINUX_BASE } from "./linux-base.js";
import { launchInPty, PTY_BLOCK_FD, PTY_STATUS_FD } from "./launcher-pty.js";
import { BASH, BASH_COMMAND, closeFdsScript } from "./close-fds.js";
import { refuseContainment, type ContainmentRefusal } from "./refusal.js";
import { explainNproc, launchChain } from "./launch-chain.js";
import { isExecutable, switchIds } from "./seat-ids.js";
import { seatFilter } from "./seccomp-filter.js";
import { copyableSources, openEtcCopies, type EtcCopies } from "./etc-copies.js";
import { createSeatReadable } from "./etc-readable.js";

/**
 * The Linux launcher: the one file that runs bubblewrap. It checks what can be checked
 * before (bwrap present and new enough, the seat's user, every bind source), spawns
 * bwrap with the plan's argv, learns the seat's pid-namespace init from bwrap's status fd,
 * and reports how the run ended. It fails closed: anything it cannot establish is a
 * refusal naming the cause and the fix, and the seat does not start.
 *
 * As root (system mode) it never runs bwrap as root: `bwrap --uid N` as root still maps the
 * seat to host uid 0. The spawn switches to the plan's unprivileged uid/gid first (setgid,
 * setuid, and libuv drops supplementary groups), so the seat runs in an unprivileged user
 * namespace exactly as in user mode.
 */
export interface LinuxLauncherOptions {
  /** bubblewrap; default: the first of /usr/bin/bwrap, /usr/local/bin/bwrap, /bin/bwrap that exists. */
  readonly bwrap?: string;
  /** prlimit(1), for the rlimit fallback of limits; default /usr/bin/prlimit. */
  readonly prlimit?: string;
  /** setpriv(1), the user switch of a pty launch as root (it clears supplementary groups); default /usr/bin/setpriv. */
  readonly setpriv?: string;
  /**
   * Tests only, for the control of an escape test (test/escape/seccomp.test.ts): the same seat
   * without its seccomp filter, to show that each probe the filter refuses reaches the kernel
   * otherwise. No product code sets it (test/sandbox/seccomp-filter.test.ts checks).
   */
  readonly withoutSeccompForControl?: true;
}

const BWRAP_CANDIDATES = ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"];
const DEFAULT_START_TIMEOUT_MS = 10_000;

export function createLinuxLauncher(options: LinuxLauncherOptions = {}): Launcher {
  // Per launcher, not per module: the bwrap that passed the check. A failed check is not
  // kept — the owner may install bubblewrap and try again without restarting teamd.
  let checked: Promise<{ ok: true; bwrap: string } | { ok: false; refusal: ContainmentRefusal }> | undefined;
  // Per launcher: what each seat uid may read of /etc's copyable files, asked again only when they change.
  const seatReadable = createSeatReadable();

  function checkBwrap() {
    const pending = (checked ??= (async () => {
      const bwrap = options.bwrap ?? (await firstExecutable(BWRAP_CANDIDATES));
      if (bwrap === undefined || !(await isExecutable(bwrap))) {
        return {
          ok: false as const,
          refusal: refuseContainment(
            "containment.unavailable",
            `bubblewrap is not installed (looked for ${options.bwrap ?? BWRAP_CANDIDATES.join(", ")})`,
            "install bubblewrap 0.8.0 or later (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)",
          ),
        };
      }
      const help = await run(bwrap, ["--help"], 5_000);
      const missing = missingFeatures(help.stdout + help.stderr);
      if (missing.length > 0) {
        return {
          ok: false as const,
          refusal: refuseContainment(
            "containment.unavailable",
            `${bwrap} lacks ${missing.join(", ")}; without --disable-userns a seat could make its own user namespace, so teamd does not fall back`,
            "install bubblewrap 0.8.0 or later",
          ),
        };
      }
      return { ok: true as const, bwrap };
    })());
    void pending.then((result) => {
      if (!result.ok && checked === pending) checked = undefined;
    });
    return pending;
  }

  async function probe(user?: { uid: number; gid: number }): Promise<ProbeResult> {
    const bwrap = await checkBwrap();
    if (!bwrap.ok) return bwrap;
    const ids = switchIds(user);
    if ("refusal" in ids) return { ok: false, refusal: ids.refusal };
    // A minimal seat: the system paths, nothing else, running /usr/bin/true.
    const args = ["--unshare-all", "--unshare-user", "--disable-userns", "--assert-userns-disabled", "--die-with-parent", "--cap-drop", "ALL"];
    for (const path of LINUX_BASE.system) {
      const stats = await lstat(path).catch(() => undefined);
      if (stats?.isSymbolicLink()) args.push("--symlink", await readlink(path), path);
      else if (stats?.isDirectory()) args.push("--ro-bind", path, path);
    }
    args.push("--proc", "/proc", "--dev", "/dev", "--", "/usr/bin/true");
    const result = await run(bwrap.bwrap, args, 10_000, ids.spawn);
    if (result.code !== 0) return { ok: false, refusal: classifyBwrapFailure(result.stderr).refusal };
    const details = [`bubblewrap: ${bwrap.bwrap}`, `user namespaces: available${user ? ` to uid ${user.uid}` : ""}`];
    details.push(
      (await isExecutable(options.prlimit ?? "/usr/bin/prlimit"))
        ? "rlimits: prlimit present (open files; memory and processes where the seat has no cgroup)"
        : "rlimits: prlimit missing",
    );
    return { ok: true, details };
  }

  async function launch(request: LaunchRequest): Promise<LaunchResult> {
    const { plan } = request;
    const bwrap = await checkBwrap();
    if (!bwrap.ok) return bwrap;
    const ids = switchIds(plan);
    if ("refusal" in ids) return { ok: false, refusal: ids.refusal };
    // Every source, judged in the plan's order (the first missing one is named): a seat's plan
    // binds ~150 (each entry of /etc). In line, not awaited: one awaited lstat after another was
    // the better part of `teamd exec`'s wait, and all at once through libuv's pool of four
    // threads still ~6-9 ms on a slow machine, against ~1 ms in line (issue 26).
    const sourceStats = plan.sources.map((source) => lstatSync(source, { throwIfNoEntry: false }));
    for (const [at, source] of plan.sources.entries()) {
      const stats = sourceStats[at];
      if (stats === undefined) {
        return refused(
          "containment.failed",
          `the bind source ${source} does not exist`,
          `create ${source}, or plan the seat again (the plan is older than the host)`,
        );
      }
      if (source === plan.socket.host && !stats.isSocket()) {
        return refused("containment.failed", `the seat socket ${source} is not a unix socket`, "open the seat's socket before launching it");
      }
    }
    const pty = request.io?.kind === "pty" ? request.io : undefined;
    const { cgroup } = request;
    // Every seat runs under the filter; without one for this host, none starts.
    const filter = options.withoutSeccompForControl ? undefined : seatFilter(process.arch);
    if (filter !== undefined && !filter.ok) return filter;
    // With a cgroup, bwrap waits on a block fd after it reports the init, until the init is placed.
    const blockFd = cgroup === undefined ? undefined : pty ? PTY_BLOCK_FD : BLOCK_FD;
    const statusFd = pty ? PTY_STATUS_FD : STATUS_FD;
    const seccompFd = filter === undefined ? undefined : seccompFdAfter(blockFd ?? statusFd);
    // A ready exec's control pipe (exec-trampoline.ts) after those; pipes only.
    const controlFd = request.control === undefined || pty ? undefined : (seccompFd ?? blockFd ?? statusFd) + 1;
    // A pipes launch can hand bwrap more fds: /etc's small world-readable files go as copies
    // on the fds after the others (etc-copies.ts). A pty launch (node-pty passes no fd) binds them.
    // As another uid (system mode), only what the kernel lets that uid read and execute is copied.
    const asSeat = ids.spawn.uid !== undefined && ids.spawn.gid !== undefined ? { uid: ids.spawn.uid, gid: ids.spawn.gid } : undefined;
    const seatAccess = pty || asSeat === undefined ? undefined : await seatReadable(copyableSources(plan), asSeat);
    const copies = pty ? undefined : openEtcCopies(plan, (controlFd ?? seccompFd ?? blockFd ?? statusFd) + 1, seatAccess);
    try {
      return await launchWith(request, bwrap.bwrap, ids.spawn, { statusFd, blockFd, seccompFd, controlFd, filter, copies });
    } finally {
      copies?.close();
    }
  }

  async function launchWith(
    request: LaunchRequest,
    bwrap: string,
    spawnIds: { uid?: number; gid?: number },
    fds: {
      statusFd: number;
      blockFd: number | undefined;
      seccompFd: number | undefined;
      controlFd: number | undefined;
      filter: Extract<ReturnType<typeof seatFilter>, { ok: true }> | undefined;
      copies: EtcCopies | undefined;
    },
  ): Promise<LaunchResult> {
    const { plan, cgroup } = request;
    const pty = request.io?.kind === "pty" ? request.io : undefined;
    const { statusFd, blockFd, seccompFd, controlFd, filter, copies } = fds;
    const command = controlFd !== undefined && request.control !== undefined ? request.control.command(controlFd) : request.command;
    const args = bwrapArgs(plan, command, {
      statusFd,
      ...(seccompFd !== undefined ? { seccompFd } : {}),
      ...(blockFd !== undefined ? { blockFd } : {}),
      ...(copies !== undefined ? { copies: copies.byDest } : {}),
    });
    if (!args.ok) return { ok: false, refusal: args.refusal as ContainmentRefusal };
    const chained = await launchChain(plan, request.io, cgroup, spawnIds, options);
    if (!chained.ok) return chained;
    const { chain } = chained;
    if (pty) {
      const argv = [...chain.asUser, ...chain.rlimits, bwrap, ...args.value] as [string, ...string[]];
      return explainNproc(
        await launchInPty({
          argv,
          cols: pty.cols,
          rows: pty.rows,
          startTimeoutMs: request.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
          limits: chain.limits,
          ...(filter !== undefined && seccompFd !== undefined ? { seccomp: { fd: seccompFd, bytes: filter.bytes } } : {}),
          ...(cgroup !== undefined ? { place: (pid: number) => cgroup.place(pid) } : {}),
        }),
        plan,
        cgroup,
      );
    }
    // The closer keeps the status fd, with a cgroup the block fd after it, the filter's fd, a ready exec's control pipe, then the copies'.
    const pipesTo = controlFd ?? seccompFd ?? blockFd ?? statusFd;
    const copyFds = copies?.fds ?? [];
    const lastFd = pipesTo + copyFds.length;
    const [file, ...rest] = [BASH, ...BASH_COMMAND, closeFdsScript(lastFd), "teamd-launch", ...chain.rlimits, bwrap, ...args.value] as [string, ...string[]];
    let child: ChildProcess;
    try {
      // fd 3: bwrap's status; fd 4 (with a cgroup): the block fd the init waits on; then the filter's; then /etc's copies.
      child = spawn(file, rest, {
        stdio: [...Array.from({ length: pipesTo + 1 }, () => "pipe" as const), ...copyFds],
        env: {},
        cwd: "/",
        ...spawnIds,
      });
    } catch (error) {
      return refused("containment.unavailable", `cannot start ${file}: ${(error as Error).message}`, "check that teamd may run bubblewrap as the seat's user");
    }
    // A few KiB: the pipe holds it whole until bwrap reads it, before it runs anything of the seat.
    if (filter !== undefined && seccompFd !== undefined) {
      const filterPipe = child.stdio[seccompFd] as NodeJS.WritableStream & { on(event: "error", listener: () => void): unknown };
      filterPipe.on("error", () => undefined);
      filterPipe.end(filter.bytes);
    }
    return explainNproc(await startedOnPipes(child, request, chain.limits, cgroup, BWRAP_PROTOCOL, controlFd), plan, cgroup);
  }

  return { platform: "linux", probe, launch };
}

function refused(rule: ContainmentRefusal["rule"], reason: string, fix: string): { ok: false; refusal: ContainmentRefusal } {
  return { ok: false, refusal: refuseContainment(rule, reason, fix) };
}

async function firstExecutable(paths: readonly string[]): Promise<string | undefined> {
  for (const path of paths) if (await isExecutable(path)) return path;
  return undefined;
}

function run(
  file: string,
  args: readonly string[],
  timeoutMs: number,
  ids: { uid?: number; gid?: number } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { env: {}, cwd: "/", timeout: timeoutMs, encoding: "utf8", killSignal: "SIGKILL", ...ids }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, stdout, stderr: stderr || (error && typeof error.code !== "number" ? error.message : "") });
    });
  });
}
