import { accessSync, constants, lstatSync, statSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join } from "node:path";
import type { SandboxPlan } from "../../src/sandbox/plan-types.js";

/**
 * Why a seat's start failed, in the words of the cause (issue 22): "setup-failed 1" says
 * nothing to a person whose agent lives under ~/.local/bin. Two causes are named:
 *
 * - a folder on the way to the seat's repository, home or tmp that the seat's uid cannot
 *   traverse (a root daemon whose TEAMD_HOME sits under a 0700 folder): checked before the
 *   launch from the mode bits, so the start is refused naming the folder and its mode rather
 *   than dying later (or, with limits, being misreported as a cgroup failure);
 * - a command that is not in the seat's view: looked up after a start that failed, the way
 *   execvp would inside (the seat's PATH, through the plan's mounts to the host), and on the
 *   host, so the message says where it is and why the seat cannot see it.
 */

/** Where an inside path lies on the host, through the plan's binds (the deepest one that covers it), or undefined when no bind does. */
export function hostPathOf(plan: SandboxPlan, inside: string): string | undefined {
  let best: { dest: string; src: string } | undefined;
  for (const op of plan.mounts) {
    if (op.op !== "bind" && op.op !== "ro-bind") continue;
    if (inside === op.dest || inside.startsWith(op.dest.endsWith("/") ? op.dest : `${op.dest}/`)) {
      if (best === undefined || op.dest.length > best.dest.length) best = op;
    }
  }
  if (best === undefined) {
    // A symlink the plan recreates (e.g. /bin -> usr/bin): follow it once, inside.
    for (const op of plan.mounts) {
      if (op.op === "symlink" && (inside === op.dest || inside.startsWith(`${op.dest}/`))) {
        const target = isAbsolute(op.target) ? op.target : join(dirname(op.dest), op.target);
        return hostPathOf(plan, target + inside.slice(op.dest.length));
      }
    }
    return undefined;
  }
  return best.src + inside.slice(best.dest.length);
}

function executable(path: string): boolean {
  try {
    if (!lstatSync(path).isFile() && !statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where execvp inside the seat would find `program`, as a host path, or undefined: it is not in the seat's view. */
export function inSeatView(plan: SandboxPlan, program: string): string | undefined {
  const candidates = program.includes("/")
    ? [isAbsolute(program) ? program : join(plan.cwd, program)]
    : (plan.env.PATH ?? "")
        .split(":")
        .filter((d) => d !== "")
        .map((d) => join(d, program));
  for (const inside of candidates) {
    const host = hostPathOf(plan, inside);
    if (host !== undefined && executable(host)) return inside;
  }
  return undefined;
}

/** Where `program` is on the host (the daemon's PATH, then where agent CLIs are often installed), for the message. */
export function onHost(program: string, env: NodeJS.ProcessEnv, home: string | undefined): string | undefined {
  if (program.includes("/")) return isAbsolute(program) && executable(program) ? program : undefined;
  const dirs = [
    ...(env.PATH ?? "").split(delimiter),
    ...(home !== undefined ? [join(home, ".local", "bin"), join(home, ".npm-global", "bin"), join(home, "bin")] : []),
    "/usr/local/bin",
    "/opt/homebrew/bin",
  ].filter((d) => d !== "" && isAbsolute(d));
  for (const dir of new Set(dirs)) if (executable(join(dir, program))) return join(dir, program);
  return undefined;
}

/** The message for a command not in the seat's view, or undefined when it is in it (the start failed for another reason). */
export function commandNotInView(plan: SandboxPlan, command: readonly string[], env: NodeJS.ProcessEnv): string | undefined {
  const program = command[0];
  if (program === undefined || inSeatView(plan, program) !== undefined) return undefined;
  const host = onHost(program, env, env.HOME);
  const where = host === undefined ? "it is not on the host's PATH either" : `on the host it is ${host}, which no folder bound into the seat holds`;
  return (
    `the seat's command '${program}' is not in the seat's view (it looks in ${plan.env.PATH ?? "no PATH"}); ${where}; ` +
    "fix: install it under /usr or /usr/local (e.g. `npm install -g --prefix /usr/local PACKAGE`), or name it in start.command by a path the seat sees"
  );
}
