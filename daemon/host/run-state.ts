import type { SeatExit } from "../../src/sandbox/launcher.js";

/**
 * How a seat's run stands, in one vocabulary for every record and view (issue 22): the seat
 * manager, `teamd status`, `teamd logs`, the seat_stop record and the restart policy all say
 * these words. `paused` and `suspended` are held for the resource envelope (a later issue
 * halts runs into a handoff); nothing teamd says ever calls a suspended run completed.
 */
export const RUN_STATES = ["starting", "running", "frozen", "ended", "stopped", "crashed", "restarting", "paused", "suspended"] as const;
export type RunState = (typeof RUN_STATES)[number];

/** Who stopped a run that did not end by itself. */
export type StoppedBy = "owner" | "leads" | "stop-flag" | "bound" | "daemon";

/**
 * A run's end: by itself (ended with an exit code, or crashed), stopped by someone, or
 * suspended — halted by the owner or a bound into a handoff checkpoint its next run is given
 * (issue 27): never completed, never restarted by its restart policy.
 */
export interface RunEnd {
  readonly state: "ended" | "stopped" | "crashed" | "suspended";
  /** The command's exit code, when it exited (128 + N for a signal it died of). */
  readonly exitCode?: number;
  readonly stoppedBy?: StoppedBy;
  /** In words, for the owner: why it stopped, or how it ended. */
  readonly reason: string;
}

/**
 * A run's end from how its process went and whether teamd stopped it. Stopped wins (the exit
 * of a killed init says only "killed"); an exit with a code is `ended`; a launch that failed
 * before the command ran, or a process killed by nobody teamd knows of, `crashed`.
 */
export function runEnd(exit: SeatExit | undefined, stop: { by: StoppedBy; reason: string; suspend?: boolean } | undefined): RunEnd {
  if (stop !== undefined)
    return {
      state: stop.suspend === true ? "suspended" : "stopped",
      stoppedBy: stop.by,
      reason: stop.reason,
      ...(exit?.kind === "exited" ? { exitCode: exit.code } : {}),
    };
  if (exit === undefined) return { state: "crashed", reason: "its init did not exit after SIGKILL" };
  if (exit.kind === "exited") return { state: "ended", exitCode: exit.code, reason: `the seat's command ended (exit ${exit.code})` };
  if (exit.kind === "setup-failed") return { state: "crashed", exitCode: exit.code, reason: `the seat could not be set up: ${exit.refusal.reason}` };
  return { state: "crashed", exitCode: exit.code, reason: `the seat's init was killed (code ${exit.code})` };
}

/** One line: "ended (exit 1)", "stopped by the owner", "crashed: the seat could not be set up: ...". */
export function describeRunEnd(end: RunEnd): string {
  if (end.state === "stopped") return `stopped by ${STOPPED_BY_WORDS[end.stoppedBy ?? "daemon"]} (${end.reason})`;
  if (end.state === "suspended")
    return `suspended by ${STOPPED_BY_WORDS[end.stoppedBy ?? "daemon"]} (${end.reason}); its handoff checkpoint: teamd checkpoint show`;
  if (end.state === "ended") return `ended (exit ${end.exitCode ?? "?"})`;
  return `crashed: ${end.reason}`;
}

const STOPPED_BY_WORDS: Readonly<Record<StoppedBy, string>> = {
  owner: "the owner",
  leads: "leads",
  "stop-flag": "a stop flag",
  bound: "a bound",
  daemon: "teamd",
};

/** A run ended by itself and not cleanly: what `start.restart: on-failure` restarts. */
export function endedInFailure(end: RunEnd): boolean {
  return end.state === "crashed" || (end.state === "ended" && end.exitCode !== 0);
}
