import { mkdtemp, open, rm, writeFile, type FileHandle } from "node:fs/promises";
import { constants as fsConstants } from "node:fs";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { watch, type FSWatcher } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { killWithChildren } from "./kill-with-children.js";
import { BASH, BASH_COMMAND, closeFdsScript } from "./close-fds.js";
import { BWRAP_PROTOCOL, type LaunchProtocol } from "./launch-protocol.js";
import { selfReportingWrapper } from "./uncontained-args.js";
import type { LaunchResult, SeatExit, SeatProcess } from "./launcher-types.js";
import { refuseContainment, type ContainmentRefusal } from "./refusal.js";
import type * as NodePtyModule from "node-pty";
import { EarlyOutput } from "./early-output.js";

/**
 * A seat in a pty (node-pty): the daemon holds the master; the seat's stdin, stdout and
 * stderr are the slave. What node-pty cannot do is hand bwrap an extra fd for its JSON
 * status (node's own fds are close-on-exec and forkpty passes only the slave), so a
 * short bash script closes every inherited fd above 2 (close-fds.ts), opens the status fd
 * onto a file in a private folder of the daemon's (mode 0700) and execs the rest:
 * `bash -c '…; exec 3>>"$0" && exec "$@"' FILE [setpriv] [prlimit] bwrap …`.
 * The daemon reads that file for the init pid (start) and the command's exit code (end).
 *
 * An uncontained seat (launcher-none.ts) has no bwrap to report it: its wrapper writes its
 * own pid to that file and execs `[setpriv] [prlimit] COMMAND` in place (uncontained-args.ts).
 *
 * forkpty's setuid keeps the caller's supplementary groups (root's gid 0 among them), so
 * in system mode the switch to the seat's user is `setpriv --clear-groups`, never
 * node-pty's own uid/gid options.
 */
export interface PtyLaunch {
  /** argv after the status wrapper: [setpriv …] [prlimit …] bwrap args (bwrap told --json-status-fd 3). */
  readonly argv: readonly [string, ...string[]];
  readonly cols: number;
  readonly rows: number;
  readonly startTimeoutMs: number;
  readonly limits: SeatProcess["limits"];
  /**
   * With a cgroup: bwrap is told --block-fd PTY_BLOCK_FD and waits there after reporting the
   * init; `place` moves the init into the seat's cgroups, and only then is it released. A
   * failed placement kills it before the seat's command ever runs.
   */
  readonly place?: (initPid: number) => Promise<void>;
  /** The wrapper's environment and working folder (uncontained: the seat's; default none and /). */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Who reports the seat (launch-protocol.ts); default bubblewrap. Uncontained, the wrapper reports itself and execs the chain in place. */
  readonly protocol?: LaunchProtocol;
  /** The seat's seccomp filter and the fd bwrap was told to read it from (--seccomp FD); the wrapper opens it there. */
  readonly seccomp?: { readonly fd: number; readonly bytes: Buffer };
}

/** The fd the wrapper opens the status file on; bwrap's --json-status-fd must name it. */
export const PTY_STATUS_FD = 3;
/** The fd the wrapper opens the block FIFO on (with a cgroup); bwrap's --block-fd must name it. */
export const PTY_BLOCK_FD = 4;
const SNIFF_BYTES = 8192;
/**
 * What the command prints before anyone listens is held, up to this much, for the first listener.
 * The command runs as soon as its init is released, and the launch resolves only after that (the
 * block fd closed, the launch folder removed) and the caller listens later still (after its own
 * awaits): under load a seat's first lines — an agent's banner, `teamd exec -t`'s prompt — were
 * printed into no listener and lost (a clean-clone run; three runs in three under CPU load).
 */
const EARLY_BYTES = 1024 * 1024;
const POLL_MS = 10;
// Inherited fds are closed first (close-fds.ts), then fd 3 is opened on the status file.
// `stty -isig`: the seat runs in a session of its own (bwrap --new-session), so the pty's
// foreground group is bwrap's own process: with ISIG on, an owner's Ctrl-C at `teamd attach`
// killed the whole seat (measured: exit 130). Off, Ctrl-C reaches the seat's program as a
// byte, as in raw mode; a program that turns ISIG back on has chosen that for itself.
// With a cgroup, also fd 4: the read end of a FIFO the daemon holds open (read-write, so
// neither side's open blocks); bwrap reads one byte from it before it runs the command.
// With a filter, the next fd: the compiled seccomp filter, read by bwrap --seccomp (the
// wrapper opens it as the daemon's user, before setpriv, from the daemon's 0700 folder).
function bwrapWrapper(blocked: boolean, seccompFd: number | undefined): string {
  const steps = [`stty -isig 2>/dev/null; exec ${PTY_STATUS_FD}>>"$0" || exit 125`];
  if (blocked) steps.push(`exec ${PTY_BLOCK_FD}<"$0.block" || exit 125`);
  if (seccompFd !== undefined) steps.push(`exec ${seccompFd}<"$0.seccomp" || exit 125`);
  return closeFdsScript(2, [...steps, 'exec "$@"'].join("; "));
}

const execFileAsync = promisify(execFile);

type NodePty = typeof NodePtyModule;

/** node-pty, or why it did not load. The module loader keeps what it loaded: a later launch pays nothing. */
function loadNodePty(): Promise<NodePty | Error> {
  return import("node-pty").then(
    (module) => module,
    (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
  );
}

export async function launchInPty(request: PtyLaunch): Promise<LaunchResult> {
  const protocol = request.protocol ?? BWRAP_PROTOCOL;
  const self = protocol.exitFrom === "process";
  const wrapper = self ? selfReportingWrapper("file", request.place !== undefined) : bwrapWrapper(request.place !== undefined, request.seccomp?.fd);
  const nodePty = await loadNodePty();
  if (nodePty instanceof Error) {
    return refused(
      "containment.unavailable",
      `a pty cannot be opened: node-pty did not load (${nodePty.message})`,
      "reinstall teamd's dependencies (npm ci builds node-pty with node-gyp: python3, make and a C++ compiler)",
    );
  }
  const dir = await mkdtemp(join(tmpdir(), "teamd-launch-"));
  const statusFile = join(dir, "status");
  await writeFile(statusFile, "", { mode: 0o600 });
  if (request.seccomp !== undefined) await writeFile(`${statusFile}.seccomp`, request.seccomp.bytes, { mode: 0o600 });
  // Read through a handle of our own: once the wrapper holds its fd 3 (it has when bwrap
  // reports the init), the folder is removed, so a daemon killed later leaves nothing in tmp.
  const handle = await open(statusFile, "r");
  let block: FileHandle | undefined;
  if (request.place !== undefined) {
    const fifo = `${statusFile}.block`;
    try {
      await execFileAsync("mkfifo", ["-m", "600", fifo]);
      block = await open(fifo, fsConstants.O_RDWR);
    } catch (error) {
      await handle.close();
      await rm(dir, { recursive: true, force: true }).catch(() => undefined);
      return refused(
        "containment.limit",
        `the seat's cgroup placement needs a FIFO and none could be made: ${(error as Error).message}`,
        "check that the daemon's temporary folder is writable and mkfifo (coreutils) is installed",
      );
    }
  }
  const readStatus = async () => {
    const { buffer, bytesRead } = await handle.read({ buffer: Buffer.alloc(16384), position: 0 }).catch(() => ({ buffer: Buffer.alloc(0), bytesRead: 0 }));
    return buffer.subarray(0, bytesRead).toString("utf8");
  };
  let removed: Promise<void> | undefined;
  const removeDir = () => (removed ??= rm(dir, { recursive: true, force: true }).catch(() => undefined));
  let term: NodePtyModule.IPty;
  try {
    term = nodePty.spawn(BASH, [...BASH_COMMAND, wrapper, statusFile, ...request.argv], {
      name: "xterm-256color",
      cols: request.cols,
      rows: request.rows,
      cwd: request.cwd ?? "/",
      // Nothing of the daemon's environment: bwrap --clearenv sets the seat's own; this is
      // only what the wrapper, setpriv and prlimit see. Uncontained, it is the seat's own
      // (the plan's, built from an allowlist) and its working folder.
      env: { ...(request.env ?? {}) },
      encoding: null,
    });
  } catch (error) {
    await handle.close();
    await block?.close();
    await removeDir();
    return refused(
      "containment.unavailable",
      `a pty cannot be opened: ${(error as Error).message}`,
      "check that /dev/ptmx exists and the host has free ptys (sysctl kernel.pty.max)",
    );
  }

  const listeners: Array<(chunk: Buffer) => void> = [];
  let sniffed = "";
  let initPid: number | undefined;
  let exited = false;
  let killed = false;
  const early = new EarlyOutput(EARLY_BYTES);
  term.onData((data) => {
    const chunk = typeof data === "string" ? Buffer.from(data, "utf8") : (data as Buffer);
    if (sniffed.length < SNIFF_BYTES) sniffed += chunk.toString("utf8").slice(0, SNIFF_BYTES - sniffed.length);
    if (listeners.length === 0) {
      early.hold(chunk);
      return;
    }
    for (const listener of listeners) listener(chunk);
  });

  const parse = (text: string) => {
    let child: number | undefined;
    let code: number | undefined;
    for (const doc of text.split("\n")) {
      const c = /"child-pid"\s*:\s*(\d+)/.exec(doc);
      if (c && child === undefined) child = Number(c[1]);
      const e = /"exit-code"\s*:\s*(\d+)/.exec(doc);
      if (e) code = Number(e[1]);
    }
    return { child, code };
  };

  const exit: Promise<SeatExit> = new Promise<{ exitCode: number; signal?: number }>((resolve) => {
    term.onExit((how) => resolve(how));
  }).then(async (how) => {
    exited = true;
    const status = parse(await readStatus());
    initPid ??= status.child;
    await handle.close().catch(() => undefined);
    await block?.close().catch(() => undefined);
    await removeDir();
    const code = how.signal ? 128 + how.signal : how.exitCode;
    if (killed) return { kind: "killed", code };
    if (status.code !== undefined) return { kind: "exited", code: status.code };
    if (how.signal) return { kind: "exited", code };
    // Uncontained: once the wrapper reported itself, it has exec'd the command; its exit is the command's.
    if (self && status.child !== undefined) return { kind: "exited", code };
    const refusal: ContainmentRefusal =
      code === 125
        ? refuseContainment(
            "containment.failed",
            `the launch wrapper could not open ${protocol.reporter === "bubblewrap" ? "bubblewrap's" : "its"} status file`,
            "check that the daemon's temporary folder is writable",
          )
        : protocol.failure(sniffed);
    return { kind: "setup-failed", code, refusal };
  });

  return new Promise<LaunchResult>((resolve) => {
    let settled = false;
    let watcher: FSWatcher | undefined;
    const stopWatching = () => {
      watcher?.close();
      clearInterval(poll);
      clearTimeout(timer);
    };
    const settle = (result: LaunchResult) => {
      if (settled) return;
      settled = true;
      stopWatching();
      resolve(result);
    };
    const timer = setTimeout(() => {
      // bwrap said nothing in time: stop what we started (the wrapper's pid, which is
      // bwrap's after exec) with its children — an init it cloned but did not report, killed
      // without it, waited forever under pid 1 (killWithChildren) — and refuse.
      if (!exited) {
        killed = true;
        void killWithChildren(term.pid);
      }
      settle(
        refused(
          "containment.failed",
          `${protocol.reporter} did not report the seat's init within ${request.startTimeoutMs} ms`,
          "run `teamd doctor`; the host may be overloaded",
        ),
      );
    }, request.startTimeoutMs);
    let reading = false;
    const check = async () => {
      if (settled || reading) return;
      reading = true;
      const { child } = parse(await readStatus());
      reading = false;
      if (child === undefined || settled) return;
      initPid = child;
      if (block !== undefined && request.place !== undefined) {
        // The init waits on the block fd: into the seat's cgroups first, then released.
        stopWatching();
        try {
          await request.place(child);
          await block.write(Buffer.from("x"));
        } catch (error) {
          killed = true;
          try {
            process.kill(child, "SIGKILL");
          } catch {
            // already gone
          }
          settle(
            refused(
              "containment.limit",
              `the seat could not be placed in its cgroups: ${(error as Error).message}`,
              "run `teamd doctor` (cgroups); or drop start.limits from the team file (`limits: none`)",
            ),
          );
          return;
        } finally {
          await block.close().catch(() => undefined);
        }
      }
      await removeDir();
      if (settled) return;
      settle({ ok: true, seat: seatOf(child) });
    };
    const seatOf = (pid: number): SeatProcess => {
      return {
        pid: term.pid,
        initPid: pid,
        io: {
          kind: "pty",
          onData: (listener) => {
            listeners.push(listener);
            // The first listener gets what came before it, in order, before anything later.
            if (listeners.length === 1) for (const chunk of early.drain()) listener(chunk);
          },
          write: (data) => {
            if (!exited) term.write(Buffer.from(data) as unknown as string);
          },
          resize: (cols, rows) => {
            if (!exited) term.resize(cols, rows);
          },
        },
        limits: request.limits,
        exit,
        // As with pipes: the init is signalled only while bwrap (uncontained: the command) has
        // not been reaped, and never by node-pty's kill (a pid, after the fact) or by process group.
        kill() {
          if (exited) return;
          killed = true;
          protocol.kill(pid);
        },
      };
    };
    try {
      watcher = watch(statusFile, () => void check());
      watcher.on("error", () => undefined);
    } catch {
      // inotify unavailable: the poll below still finds it
    }
    const poll = setInterval(() => void check(), POLL_MS);
    void check();
    void exit.then((how) => {
      if (settled) return;
      // A command so quick that it ended before the status file was read still ran: hand
      // back the seat (already exited) so the caller sees its exit code.
      if (initPid !== undefined) settle({ ok: true, seat: seatOf(initPid) });
      else settle({ ok: false, refusal: how.kind === "setup-failed" ? how.refusal : protocol.failure(sniffed) });
    });
  });
}

function refused(rule: ContainmentRefusal["rule"], reason: string, fix: string): { ok: false; refusal: ContainmentRefusal } {
  return { ok: false, refusal: refuseContainment(rule, reason, fix) };
}
