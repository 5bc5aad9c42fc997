import { refuseContainment, type ContainmentRefusal } from "./refusal.js";

/**
 * Why bubblewrap failed before the seat's command ran, from what it printed (pure). bwrap
 * reports its own failures on stderr as "bwrap: ..." and exits 1 without writing an
 * exit-code to its status fd; the launcher calls this only then, so a seat that prints
 * "bwrap: ..." itself cannot pass for a containment failure. Each cause names its fix.
 */
export type BwrapFailureKind = "userns" | "bind-source" | "mount" | "exec" | "other";

export interface BwrapFailure {
  readonly kind: BwrapFailureKind;
  readonly refusal: ContainmentRefusal;
}

const USERNS_FIX =
  "enable unprivileged user namespaces: `sysctl user.max_user_namespaces=15000`; on Debian also `sysctl kernel.unprivileged_userns_clone=1`; " +
  "on Ubuntu 23.10+ AppArmor blocks them unless bwrap has a profile (`/etc/apparmor.d/bwrap` with `userns,`) or `sysctl kernel.apparmor_restrict_unprivileged_userns=0`; " +
  "inside a container, run it with user namespaces allowed (e.g. docker --security-opt seccomp=unconfined, or podman)";

export function classifyBwrapFailure(stderr: string): BwrapFailure {
  const lines = stderr
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.startsWith("bwrap:"));
  const line = lines[lines.length - 1] ?? stderr.trim().split("\n").slice(-1)[0] ?? "";
  const message = line.replace(/^bwrap:\s*/, "") || "no message";
  if (/namespace|uid map|gid map|setgroups|unshare/i.test(message) && !/execvp/.test(message)) {
    return {
      kind: "userns",
      refusal: refuseContainment("containment.unavailable", `bubblewrap cannot create the seat's namespaces: ${message}`, USERNS_FIX),
    };
  }
  const source = /Can't find source path (.*?): (.*)$/.exec(message);
  if (source) {
    return {
      kind: "bind-source",
      refusal: refuseContainment(
        "containment.failed",
        `a bind source of the seat's plan is missing or unreachable: ${source[1]} (${source[2]})`,
        `create ${source[1]} or make it reachable by the seat's user (not under /root or another 0700 folder), then plan the seat again`,
      ),
    };
  }
  const exec = /execvp (.*?): (.*)$/.exec(message);
  if (exec) {
    return {
      kind: "exec",
      refusal: refuseContainment(
        "containment.failed",
        `the seat's command ${exec[1]} could not be started inside the seat: ${exec[2]}`,
        "name a command that exists inside the seat (a system path, the node runtime, or a file in a seat folder)",
      ),
    };
  }
  if (/^Can't |^Failed to |mount/i.test(message)) {
    return {
      kind: "mount",
      refusal: refuseContainment(
        "containment.failed",
        `bubblewrap could not build the seat's root: ${message}`,
        "check the path it names; `teamd doctor` probes the host",
      ),
    };
  }
  return {
    kind: "other",
    refusal: refuseContainment("containment.failed", `bubblewrap failed before the seat's command ran: ${message}`, "run `teamd doctor` to probe the host"),
  };
}
