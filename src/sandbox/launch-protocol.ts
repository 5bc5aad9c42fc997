import { classifyBwrapFailure } from "./bwrap-failure.js";
import { refuseContainment, type ContainmentRefusal } from "./refusal.js";
import { killProcessTree } from "./process-tree.js";

/**
 * Who reports a launched seat and how its end is read, for the two ways a seat's chain runs
 * (the pipes path, launcher-pipes.ts, and the pty path, launcher-pty.ts, serve both):
 *
 * - bwrap: bubblewrap writes the pid-namespace init (`child-pid`) and the command's
 *   `exit-code` to its status fd; an exit without an exit code is a containment failure,
 *   explained from bwrap's stderr. Killing the init ends the whole namespace.
 * - none (uncontained, launcher-none.ts): the launch wrapper writes its own pid as the
 *   `child-pid` and then execs the chain in place (setpriv, prlimit and the command keep that
 *   pid), so the process's own exit is the command's. There is no namespace: the stop kills
 *   the process tree under that pid (process-tree.ts) — a process that left the tree escapes
 *   it, which is why a seat with a cgroup is stopped by `cgroup.kill` as well.
 */
export interface LaunchProtocol {
  /** Who reports the seat, in messages ("bubblewrap"). */
  readonly reporter: string;
  /** "status": the status fd carries the command's exit code; "process": the process's exit is the command's. */
  readonly exitFrom: "status" | "process";
  /** Why a launch that ended without running the command failed, from its stderr. */
  failure(sniffed: string): ContainmentRefusal;
  /** SIGKILL the seat from its init, by pid (never by group or name); a gone pid is no error. */
  kill(initPid: number): void;
}

export const BWRAP_PROTOCOL: LaunchProtocol = {
  reporter: "bubblewrap",
  exitFrom: "status",
  failure: (sniffed) => classifyBwrapFailure(sniffed).refusal,
  kill(initPid) {
    try {
      process.kill(initPid, "SIGKILL");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
    }
  },
};

export const UNCONTAINED_PROTOCOL: LaunchProtocol = {
  reporter: "the uncontained seat's launch wrapper",
  exitFrom: "process",
  failure: (sniffed) => {
    const line = sniffed.trim().split("\n").slice(-1)[0]?.trim() ?? "";
    return refuseContainment(
      "containment.failed",
      `the uncontained seat did not start${line ? `: ${line}` : ""}`,
      "check the seat's command, its user and the launch wrapper's tools (bash, setpriv, prlimit)",
    );
  },
  kill: (initPid) => void killProcessTree(initPid),
};
