import type { Readable, Writable } from "node:stream";
import type { SandboxPlan } from "./plan-types.js";
import type { CgroupLimit } from "./rlimit-args.js";
import { refuseContainment, type ContainmentRefusal } from "./refusal.js";
import { createLinuxLauncher, type LinuxLauncherOptions } from "./launcher-linux.js";
import { createMacosLauncher } from "./launcher-macos.js";
import { createWindowsLauncher } from "./launcher-windows.js";
import { createUncontainedLauncher } from "./launcher-none.js";

/**
 * One interface over the platforms' containment (DESIGN.md "src/sandbox/"): the seat
 * lifecycle asks a launcher to run a command inside a plan and gets back a handle it can
 * watch and kill. Only launchers touch the OS; what they run is decided before, as data.
 */

/** How the seat's standard streams are wired: pipes (exec, tests) or a pty (node-pty) the daemon holds the master of (a started seat; `teamd attach`). */
export type SeatIo = { readonly kind: "pipes" } | { readonly kind: "pty"; readonly cols: number; readonly rows: number };

export interface LaunchRequest {
  readonly plan: SandboxPlan;
  /** argv inside the seat; argv[0] absolute, or found on the plan's PATH. */
  readonly command: readonly string[];
  readonly io?: SeatIo;
  /** How long the sandbox may take to report its namespace init (default 10 s). */
  readonly startTimeoutMs?: number;
  /**
   * The seat's cgroups (src/sandbox/cgroup-host.ts), made by the caller: the launcher moves
   * the namespace init into them before the command runs, and applies by rlimit only what
   * they do not carry. Absent: rlimits only (partial), and a limit no rlimit expresses is refused.
   */
  readonly cgroup?: CgroupPlacement;
  /**
   * The seat's `start.containment`: absent or "bwrap", the platform's containment; "none", the
   * uncontained launcher (launcher-none.ts) — only ever because the applied team file says so.
   */
  readonly containment?: "bwrap" | "none";
}

export interface CgroupPlacement {
  /** The limits the cgroups apply. */
  readonly byCgroup: ReadonlySet<CgroupLimit>;
  /** In words, e.g. "v2 (kill), v1 (memory 536870912, pids 256)". */
  readonly summary: string;
  place(pid: number): Promise<void>;
}

export interface PipeStreams {
  readonly kind: "pipes";
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
}

/**
 * The master side of a seat's pty. stdout and stderr are one stream here, as on any
 * terminal. Data arrives from the moment the launch resolves; a listener added later
 * misses what came before (the seat manager keeps the scrollback).
 */
export interface PtyStreams {
  readonly kind: "pty";
  onData(listener: (chunk: Buffer) => void): void;
  write(data: Uint8Array): void;
  resize(cols: number, rows: number): void;
}

/**
 * How a seat's run ended. `code` follows the shell's convention: a signal death is 128+N.
 * "setup-failed": containment failed before the command ran (§11: work stops), with the
 * cause and its fix.
 */
export type SeatExit =
  | { readonly kind: "exited"; readonly code: number }
  | { readonly kind: "killed"; readonly code: number }
  | { readonly kind: "setup-failed"; readonly code: number; readonly refusal: ContainmentRefusal };

export interface SeatProcess {
  /** The host pid of the process the launcher spawned (the sandbox's outer process). */
  readonly pid: number;
  /**
   * The host pid of the seat's pid-namespace init. SIGKILL to it ends every process in the
   * seat's namespace — none can leave it, `setsid` or not. Never kill a seat by process
   * group (setsid escapes it) or by name. Uncontained (`containment: none`), there is no
   * namespace: it is the command's own pid, and kill() ends the process tree under it.
   */
  readonly initPid: number;
  readonly io: PipeStreams | PtyStreams;
  /** What the launcher could apply of the plan's limits, in words (rlimits are partial). */
  readonly limits: { readonly partial: boolean; readonly notes: readonly string[] };
  readonly exit: Promise<SeatExit>;
  /** SIGKILL the namespace init (uncontained: the process tree under the init); a no-op once the seat has exited. */
  kill(): void;
}

export type LaunchResult = { readonly ok: true; readonly seat: SeatProcess } | { readonly ok: false; readonly refusal: ContainmentRefusal };

export type ProbeResult = { readonly ok: true; readonly details: readonly string[] } | { readonly ok: false; readonly refusal: ContainmentRefusal };

export interface Launcher {
  readonly platform: NodeJS.Platform;
  /** Can seats start here, as `user` (the daemon's own user when omitted)? For `teamd doctor`. */
  probe(user?: { readonly uid: number; readonly gid: number }): Promise<ProbeResult>;
  launch(request: LaunchRequest): Promise<LaunchResult>;
}

export interface LauncherOptions {
  readonly linux?: LinuxLauncherOptions;
}

/** The launcher for a platform (default: this one): its containment, and `containment: none` where that is built. */
export function createLauncher(platform: NodeJS.Platform = process.platform, options: LauncherOptions = {}): Launcher {
  switch (platform) {
    case "linux":
      return byContainment(createLinuxLauncher(options.linux), createUncontainedLauncher(options.linux));
    case "darwin":
      return byContainment(createMacosLauncher(), uncontainedNotSupported("darwin", "macOS"));
    case "win32":
      return byContainment(createWindowsLauncher(), uncontainedNotSupported("win32", "Windows"));
    default:
      return createUnsupportedLauncher(platform);
  }
}

/**
 * One launcher over two: each launch goes to the one its request's containment names. The
 * probe (`teamd doctor`) is the contained one's: whether seats can be contained here.
 */
function byContainment(contained: Launcher, uncontained: Launcher): Launcher {
  return {
    platform: contained.platform,
    probe: (user) => contained.probe(user),
    launch: (request) => (request.containment === "none" ? uncontained : contained).launch(request),
  };
}

/** The uncontained launcher is Linux's (its wrapper, tree walk and tools are): elsewhere `containment: none` refuses too. */
function uncontainedNotSupported(platform: NodeJS.Platform, name: string): Launcher {
  const refusal = refuseContainment("containment.unavailable", `running a seat uncontained (\`containment: none\`) on ${name} is not supported yet`, "run the seat on Linux");
  return {
    platform,
    probe: async (): Promise<ProbeResult> => ({ ok: false, refusal }),
    launch: async (): Promise<LaunchResult> => ({ ok: false, refusal }),
  };
}

/** Any other platform: no containment is known there, so no seat starts. */
function createUnsupportedLauncher(platform: NodeJS.Platform): Launcher {
  const refusal = refuseContainment(
    "containment.unavailable",
    `containment on ${platform} is not supported`,
    "run seats on Linux (bubblewrap; or uncontained there, with `containment: none` in the team file: every record then says against a mistake only)",
  );
  return {
    platform,
    probe: async (): Promise<ProbeResult> => ({ ok: false, refusal }),
    launch: async (): Promise<LaunchResult> => ({ ok: false, refusal }),
  };
}
