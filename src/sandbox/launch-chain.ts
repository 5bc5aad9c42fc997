import { BASH } from "./close-fds.js";
import type { CgroupPlacement, LaunchResult, SeatIo, SeatProcess } from "./launcher-types.js";
import type { SandboxPlan } from "./plan-types.js";
import { refuseContainment, type ContainmentRefusal } from "./refusal.js";
import { rlimitPrefix } from "./rlimit-args.js";
import { isExecutableNow } from "./seat-ids.js";

/**
 * The part of a seat's launch chain both launchers share (the bwrap one and the uncontained
 * one): `[setpriv … --] [prlimit … --]` before what runs the seat, with the checks that fail
 * closed — a limit neither the cgroup nor an rlimit can apply, prlimit or setpriv or bash
 * missing. In a pty the switch to the seat's user is setpriv's (it clears root's
 * supplementary groups; see launcher-pty.ts); on pipes it is the spawn's own uid/gid.
 */
export interface ChainOptions {
  readonly prlimit?: string;
  readonly setpriv?: string;
}

export interface Chain {
  /** setpriv's prefix (a pty as root), else empty. */
  readonly asUser: readonly string[];
  /** prlimit's prefix, else empty. */
  readonly rlimits: readonly string[];
  readonly limits: SeatProcess["limits"];
}

export async function launchChain(
  plan: SandboxPlan,
  io: SeatIo | undefined,
  cgroup: CgroupPlacement | undefined,
  spawnIds: { uid?: number; gid?: number },
  options: ChainOptions,
): Promise<{ ok: true; chain: Chain } | { ok: false; refusal: ContainmentRefusal }> {
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
  if (prefix.argv.length > 0 && !isExecutableNow(prlimit)) {
    return refused(
      "containment.limit",
      `the seat asks for limits and ${prlimit} (util-linux) is missing`,
      "install util-linux, or set `limits: none` in the team file",
    );
  }
  if (!isExecutableNow(BASH)) {
    return refused(
      "containment.unavailable",
      `${BASH} is missing; teamd needs it to close the fds it inherited before a seat starts (src/sandbox/close-fds.ts)`,
      "install bash",
    );
  }
  let asUser: string[] = [];
  if (io?.kind === "pty" && spawnIds.uid !== undefined) {
    const setpriv = options.setpriv ?? "/usr/bin/setpriv";
    asUser = [setpriv, `--reuid=${spawnIds.uid}`, `--regid=${spawnIds.gid}`, "--clear-groups", "--"];
    if (!isExecutableNow(setpriv)) {
      return refused(
        "containment.unavailable",
        `a seat in a pty as uid ${spawnIds.uid} needs ${setpriv} (util-linux) to drop root's groups, and it is missing`,
        "install util-linux",
      );
    }
  }
  const notes = cgroup === undefined ? prefix.notes : [`cgroup ${cgroup.summary}`, ...prefix.notes];
  return { ok: true, chain: { asUser, rlimits: prefix.argv, limits: { partial: prefix.partial, notes } } };
}

/**
 * RLIMIT_NPROC counts every process and thread the uid runs on the host: below that count,
 * the chain's own fork fails (EAGAIN) and the error reads like a namespace problem. Say which
 * (in a pty and with pipes alike).
 */
export function explainNproc(result: LaunchResult, plan: SandboxPlan, cgroup: CgroupPlacement | undefined): LaunchResult {
  if (
    !result.ok &&
    plan.limits !== "none" &&
    plan.limits.processes !== undefined &&
    !cgroup?.byCgroup.has("processes") &&
    /Resource temporarily unavailable/.test(result.refusal.reason)
  ) {
    return refused(
      "containment.limit",
      `the seat could not be started under its processes limit (${plan.limits.processes}): without a cgroup it is RLIMIT_NPROC, which counts every process and thread uid ${plan.uid} already runs on the host (${result.refusal.reason})`,
      "raise start.limits.processes above what that user runs, or run teamd as root (system mode) so the limit is the seat's own pids cgroup",
    );
  }
  return result;
}

function refused(rule: ContainmentRefusal["rule"], reason: string, fix: string): { ok: false; refusal: ContainmentRefusal } {
  return { ok: false, refusal: refuseContainment(rule, reason, fix) };
}
