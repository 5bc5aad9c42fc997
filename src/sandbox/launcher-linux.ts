import { spawn, execFile, type ChildProcess } from "node:child_process";
import { access, lstat, readlink } from "node:fs/promises";
import { constants as fsConstants } from "node:fs";
import { constants as osConstants } from "node:os";
import { PassThrough, type Readable } from "node:stream";
import { BLOCK_FD, bwrapArgs, missingFeatures, STATUS_FD } from "./bwrap-args.js";
import { classifyBwrapFailure } from "./bwrap-failure.js";
import type { CgroupPlacement, Launcher, LaunchRequest, LaunchResult, ProbeResult, SeatExit, SeatProcess } from "./launcher.js";
import { LINUX_BASE } from "./linux-base.js";
import { launchInPty, PTY_BLOCK_FD, PTY_STATUS_FD } from "./launcher-pty.js";
import { BASH, closeFdsScript } from "./close-fds.js";
import { refuseContainment, type ContainmentRefusal } from "./refusal.js";
import { rlimitPrefix } from "./rlimit-args.js";

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
}

const BWRAP_CANDIDATES = ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"];
const DEFAULT_START_TIMEOUT_MS = 10_000;
/** How much of bwrap's stderr is kept to explain a setup failure. */
const SNIFF_BYTES = 8192;

export function createLinuxLauncher(options: LinuxLauncherOptions = {}): Launcher {
  // Per launcher, not per module: the bwrap that passed the check. A failed check is not
  // kept — the owner may install bubblewrap and try again without restarting teamd.
  let checked: Promise<{ ok: true; bwrap: string } | { ok: false; refusal: ContainmentRefusal }> | undefined;

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
    details.push((await isExecutable(options.prlimit ?? "/usr/bin/prlimit")) ? "rlimits: prlimit present (open files; memory and processes where the seat has no cgroup)" : "rlimits: prlimit missing");
    return { ok: true, details };
  }

  async function launch(request: LaunchRequest): Promise<LaunchResult> {
    const { plan } = request;
    const bwrap = await checkBwrap();
    if (!bwrap.ok) return bwrap;
    const ids = switchIds(plan);
    if ("refusal" in ids) return { ok: false, refusal: ids.refusal };
    for (const source of plan.sources) {
      const stats = await lstat(source).catch(() => undefined);
      if (stats === undefined) {
        return refused("containment.failed", `the bind source ${source} does not exist`, `create ${source}, or plan the seat again (the plan is older than the host)`);
      }
      if (source === plan.socket.host && !stats.isSocket()) {
        return refused("containment.failed", `the seat socket ${source} is not a unix socket`, "open the seat's socket before launching it");
      }
    }
    const pty = request.io?.kind === "pty" ? request.io : undefined;
    const { cgroup } = request;
    // With a cgroup, bwrap waits on a block fd after it reports the init, until the init is placed.
    const args = bwrapArgs(plan, request.command, { statusFd: pty ? PTY_STATUS_FD : STATUS_FD, ...(cgroup !== undefined ? { blockFd: pty ? PTY_BLOCK_FD : BLOCK_FD } : {}) });
    if (!args.ok) return { ok: false, refusal: args.refusal as ContainmentRefusal };
    const prlimit = options.prlimit ?? "/usr/bin/prlimit";
    // What the seat's cgroup applies gets no rlimit; what neither can apply stops the seat.
    const prefix = rlimitPrefix(plan.limits, prlimit, cgroup?.byCgroup);
    if (prefix.unapplicable.length > 0) {
      return refused(
        "containment.limit",
        `the seat asks for ${prefix.unapplicable.join("; ")}, and ${cgroup === undefined ? "it has no cgroup of its own here (teamd is not root and has no delegated cgroup subtree)" : "its cgroup cannot carry it (that controller is missing)"}`,
        "run teamd as root (system mode) or give it a delegated cgroup subtree (systemd: Delegate=yes), or drop that limit from start.limits in the team file (or write `limits: none`)",
      );
    }
    if (prefix.argv.length > 0 && !(await isExecutable(prlimit))) {
      return refused("containment.limit", `the seat asks for limits and ${prlimit} (util-linux) is missing`, "install util-linux, or set `limits: none` in the team file");
    }
    if (!(await isExecutable(BASH))) {
      return refused("containment.unavailable", `${BASH} is missing; teamd needs it to close the fds it inherited before a seat starts (src/sandbox/close-fds.ts)`, "install bash");
    }
    if (pty) {
      // In a pty the user switch is setpriv's (see launcher-pty.ts), never node-pty's.
      const setpriv = options.setpriv ?? "/usr/bin/setpriv";
      const asUser = ids.spawn.uid === undefined ? [] : [setpriv, `--reuid=${ids.spawn.uid}`, `--regid=${ids.spawn.gid}`, "--clear-groups", "--"];
      if (asUser.length > 0 && !(await isExecutable(setpriv))) {
        return refused("containment.unavailable", `a seat in a pty as uid ${ids.spawn.uid} needs ${setpriv} (util-linux) to drop root's groups, and it is missing`, "install util-linux");
      }
      const argv = [...asUser, ...prefix.argv, bwrap.bwrap, ...args.value] as [string, ...string[]];
      const notes = cgroup === undefined ? prefix.notes : [`cgroup ${cgroup.summary}`, ...prefix.notes];
      return explainNproc(await launchInPty({ argv, cols: pty.cols, rows: pty.rows, startTimeoutMs: request.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS, limits: { partial: prefix.partial, notes }, ...(cgroup !== undefined ? { place: (pid: number) => cgroup.place(pid) } : {}) }));
    }
    // The closer keeps the status fd and, with a cgroup, the block fd after it.
    const [file, ...rest] = [BASH, "-c", closeFdsScript(cgroup === undefined ? STATUS_FD : BLOCK_FD), "teamd-launch", ...prefix.argv, bwrap.bwrap, ...args.value] as [string, ...string[]];
    let child: ChildProcess;
    try {
      // fd 3: bwrap's status; fd 4 (with a cgroup): the block fd the init waits on.
      child = spawn(file, rest, { stdio: cgroup === undefined ? ["pipe", "pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe", "pipe", "pipe"], env: {}, cwd: "/", ...ids.spawn });
    } catch (error) {
      return refused("containment.unavailable", `cannot start ${file}: ${(error as Error).message}`, "check that teamd may run bubblewrap as the seat's user");
    }
    const notes = cgroup === undefined ? prefix.notes : [`cgroup ${cgroup.summary}`, ...prefix.notes];
    return explainNproc(await started(child, request, { partial: prefix.partial, notes }, cgroup));

    // RLIMIT_NPROC counts every process and thread the uid runs on the host: below that count,
    // bwrap's own clone fails (EAGAIN) and the error reads like a namespace problem. Say which
    // (in a pty and with pipes alike).
    function explainNproc(result: LaunchResult): LaunchResult {
      if (!result.ok && plan.limits !== "none" && plan.limits.processes !== undefined && !cgroup?.byCgroup.has("processes") && /Resource temporarily unavailable/.test(result.refusal.reason)) {
        return refused(
          "containment.limit",
          `the seat could not be started under its processes limit (${plan.limits.processes}): without a cgroup it is RLIMIT_NPROC, which counts every process and thread uid ${plan.uid} already runs on the host (${result.refusal.reason})`,
          "raise start.limits.processes above what that user runs, or run teamd as root (system mode) so the limit is the seat's own pids cgroup",
        );
      }
      return result;
    }
  }

  return { platform: "linux", probe, launch };
}

/**
 * Wire up a spawned bwrap: tee stderr (kept to explain a setup failure, passed on whole),
 * read the status fd for the init pid and the command's exit code, and resolve once the
 * namespace exists — or refuse when bwrap fails or stays silent before that.
 */
function started(child: ChildProcess, request: LaunchRequest, limits: SeatProcess["limits"], cgroup: CgroupPlacement | undefined): Promise<LaunchResult> {
  const status = child.stdio[STATUS_FD] as Readable;
  const stdout = child.stdout as Readable;
  const stderrIn = child.stderr as Readable;
  const stderr = new PassThrough();
  let sniffed = "";
  stderrIn.on("data", (chunk: Buffer) => {
    if (sniffed.length < SNIFF_BYTES) sniffed += chunk.toString("utf8").slice(0, SNIFF_BYTES - sniffed.length);
  });
  stderrIn.pipe(stderr);

  let statusText = "";
  let initPid: number | undefined;
  let commandExit: number | undefined;
  let killed = false;
  let exited = false;
  let onInit: (() => void) | undefined;
  status.setEncoding("utf8");
  status.on("data", (chunk: string) => {
    statusText += chunk;
    for (const doc of statusText.split("\n")) {
      const child = /"child-pid"\s*:\s*(\d+)/.exec(doc);
      if (child && initPid === undefined) initPid = Number(child[1]);
      const code = /"exit-code"\s*:\s*(\d+)/.exec(doc);
      if (code) commandExit = Number(code[1]);
    }
    if (initPid !== undefined) onInit?.();
  });
  const statusDone = new Promise<void>((resolve) => {
    status.once("close", () => resolve());
    status.once("error", () => resolve());
  });
  const processDone = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", (error) => {
      // A spawn that failed never writes to the status fd: close it so the exit can settle.
      status.destroy();
      resolve({ code: null, signal: null, error });
    });
  });
  const exit: Promise<SeatExit> = Promise.all([processDone, statusDone]).then(([done]) => {
    exited = true;
    const code = done.code ?? (done.signal ? 128 + (osConstants.signals[done.signal] ?? 0) : 1);
    if (killed) return { kind: "killed", code };
    if (commandExit !== undefined) return { kind: "exited", code: commandExit };
    if (done.signal) return { kind: "exited", code };
    const refusal = done.error
      ? refuseContainment("containment.unavailable", `cannot run bubblewrap: ${done.error.message}`, "check that bubblewrap is installed and executable by the seat's user")
      : classifyBwrapFailure(sniffed).refusal;
    return { kind: "setup-failed", code, refusal };
  });

  return new Promise<LaunchResult>((resolve) => {
    const timeoutMs = request.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    const timer = setTimeout(() => {
      // bwrap said nothing in time: stop what we started (by its pid) and refuse.
      onInit = undefined;
      if (child.pid !== undefined && !exited) child.kill("SIGKILL");
      resolve(refused("containment.failed", `bubblewrap did not report the seat's namespace within ${timeoutMs} ms`, "run `teamd doctor`; the host may be overloaded"));
    }, timeoutMs);
    onInit = () => {
      clearTimeout(timer);
      onInit = undefined;
      const pid = initPid as number;
      if (cgroup !== undefined) {
        // The init waits on the block fd: move it into the seat's cgroups, then release it.
        // It has not forked yet, so everything the seat ever runs is born inside them.
        const block = child.stdio[BLOCK_FD] as NodeJS.WritableStream;
        // bwrap may be gone before the byte arrives (EPIPE): its exit reports that, not this stream.
        block.on("error", () => undefined);
        void cgroup.place(pid).then(
          () => {
            block.end("1");
            publish(pid);
          },
          (error: unknown) => {
            if (child.pid !== undefined && !exited) child.kill("SIGKILL");
            resolve(refused("containment.limit", (error as Error).message, "run `teamd doctor` (cgroups); or drop start.limits from the team file (`limits: none`)"));
          },
        );
        return;
      }
      publish(pid);
    };
    const publish = (pid: number) => {
      const seat: SeatProcess = {
        pid: child.pid as number,
        initPid: pid,
        io: { kind: "pipes", stdin: child.stdin as NonNullable<ChildProcess["stdin"]>, stdout, stderr },
        limits,
        exit,
        // The init pid is only signalled while bwrap has not exited: bwrap reaps the init and
        // exits right after, so the window in which the number could belong to a new process
        // is that of a pid wrap-around within bwrap's last instructions. (pidfd would close it;
        // Node has none.)
        kill() {
          if (exited) return;
          killed = true;
          try {
            process.kill(pid, "SIGKILL");
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
          }
        },
      };
      resolve({ ok: true, seat });
    };
    if (initPid !== undefined) onInit();
    void exit.then((how) => {
      if (onInit === undefined) return; // already resolved with the seat
      clearTimeout(timer);
      onInit = undefined;
      resolve({ ok: false, refusal: how.kind === "setup-failed" ? how.refusal : classifyBwrapFailure(sniffed).refusal });
    });
  });
}

/**
 * The uid/gid switch for the spawn. Root switches to the seat's user (never stays root);
 * anyone else can only run seats as themselves — unprivileged bwrap maps just the caller.
 */
function switchIds(user: { uid: number; gid: number } | undefined): { spawn: { uid?: number; gid?: number } } | { refusal: ContainmentRefusal } {
  const uid = process.getuid?.();
  const gid = process.getgid?.();
  if (user === undefined) {
    if (uid === 0) return { refusal: refuseContainment("containment.host-root", "teamd runs as root and no seat user was given; a seat never runs as root", "give the seat the dedicated unprivileged user (system mode)") };
    return { spawn: {} };
  }
  if (user.uid === 0 || user.gid === 0) {
    return { refusal: refuseContainment("containment.host-root", `the plan runs the seat as uid ${user.uid}, gid ${user.gid}; a seat never runs as root`, "plan the seat for an unprivileged user") };
  }
  if (uid === 0) return { spawn: { uid: user.uid, gid: user.gid } };
  if (uid !== user.uid || gid !== user.gid) {
    return {
      refusal: refuseContainment(
        "containment.unavailable",
        `teamd runs as uid ${uid}, gid ${gid} and cannot start a seat as uid ${user.uid}, gid ${user.gid}`,
        "plan the seat for teamd's own user (user mode), or run teamd as root (system mode) to run seats as a dedicated user",
      ),
    };
  }
  return { spawn: {} };
}

function refused(rule: ContainmentRefusal["rule"], reason: string, fix: string): { ok: false; refusal: ContainmentRefusal } {
  return { ok: false, refusal: refuseContainment(rule, reason, fix) };
}

async function isExecutable(path: string): Promise<boolean> {
  return access(path, fsConstants.X_OK).then(
    () => true,
    () => false,
  );
}

async function firstExecutable(paths: readonly string[]): Promise<string | undefined> {
  for (const path of paths) if (await isExecutable(path)) return path;
  return undefined;
}

function run(file: string, args: readonly string[], timeoutMs: number, ids: { uid?: number; gid?: number } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { env: {}, cwd: "/", timeout: timeoutMs, encoding: "utf8", killSignal: "SIGKILL", ...ids }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, stdout, stderr: stderr || (error && typeof error.code !== "number" ? error.message : "") });
    });
  });
}
