import type { Duplex, Readable, Writable } from "node:stream";
import type { SandboxPlan } from "./plan-types.js";
import type { CgroupLimit } from "./rlimit-args.js";
import type { ContainmentRefusal } from "./refusal.js";

/**
 * The launcher interface (launcher.ts picks the platform's): what a launch asks for and what
 * it hands back. Its own file because every platform's launcher and their shared parts
 * (launch-chain.ts, launcher-pipes.ts, launcher-pty.ts) implement it while launcher.ts
 * creates them: with the types beside the factory, each imported the other.
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
  /**
   * A control pipe into the sandbox beside the streams (pipes only; the bwrap launcher alone
   * gives one): the launcher picks its fd inside and runs `command(fd)` in place of `command`.
   * A ready exec's trampoline reads its command from it (exec-trampoline.ts).
   */
  readonly control?: { command(fd: number): readonly string[] };
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
  /** The daemon's end of the request's control pipe, when it asked for one and the launcher gave it. */
  readonly control?: Duplex;
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
