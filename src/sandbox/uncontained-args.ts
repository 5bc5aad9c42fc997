import { basename, dirname, join } from "node:path";
import { LINUX_BASE, SHIM_BIN } from "./linux-base.js";
import type { LinuxBase } from "./plan.js";
import type { SandboxPlan } from "./plan-types.js";
import { closeFdsScript } from "./close-fds.js";
import { BLOCK_FD, STATUS_FD } from "./bwrap-args.js";

/**
 * What an uncontained seat (`containment: none`, launcher-none.ts) runs with, derived from the
 * same plan a bwrap seat gets (pure). There are no mounts: every path the seat sees is the
 * host's, so what the plan names by its inside path is named by its host path here —
 *
 * - TEAMD_SOCKET: the seat socket's host path (inside a bwrap seat /run/teamd/shim.sock);
 * - TEAMD_SHIM: the shim bundle's host path;
 * - PATH: a host folder holding `teamd-shim` and `git-remote-teamd` (links to the bundle, and
 *   to the remote helper's front where the plan has one) first, then the plan's PATH without
 *   its inside-only /run/teamd/bin;
 * - the rest of the plan's environment as is (HOME, TMPDIR, the seat's repository as the
 *   working folder: those are host paths already), and nothing of the daemon's.
 */
export interface UncontainedRun {
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** The links to make before the launch: folder, and each name → its host file (the bundle, the front). Absent: the plan has no shim. */
  readonly shimBin?: { readonly dir: string; readonly bundle: string; readonly links: readonly ShimLink[] };
}

export interface ShimLink {
  readonly name: string;
  /** The host path the name links to. */
  readonly target: string;
}

/** The shim bundle's host path: the source of the plan's bind onto the inside shim path. */
export function shimBundleOf(plan: SandboxPlan, base: LinuxBase = LINUX_BASE): string | undefined {
  for (const op of plan.mounts) if (op.op === "ro-bind" && op.dest === base.inside.shim) return op.src;
  return undefined;
}

/** The host folder of the bundle's command names: beside the bundle, one per bundle version. */
export function shimBinDir(bundle: string): string {
  return join(dirname(bundle), `bin-${basename(bundle).replace(/\.[cm]?js$/, "")}`);
}

export function uncontainedRun(plan: SandboxPlan, base: LinuxBase = LINUX_BASE): UncontainedRun {
  const bundle = shimBundleOf(plan, base);
  const dir = bundle === undefined ? undefined : shimBinDir(bundle);
  const planPath = (plan.env.PATH ?? base.path.join(":")).split(":").filter((p: string) => p !== SHIM_BIN && p !== "");
  // The names the plan gives the bundle and the front inside (teamd-shim, git-remote-teamd), as
  // links there to the host files bound at their targets.
  const hostOf = new Map(plan.mounts.flatMap((op) => (op.op === "ro-bind" ? [[op.dest, op.src] as const] : [])));
  const links = plan.mounts.flatMap((op): ShimLink[] => {
    if (op.op !== "symlink" || dirname(op.dest) !== SHIM_BIN) return [];
    const target = hostOf.get(op.target);
    return target !== undefined && (op.target === base.inside.shim || op.target === base.inside.gitRemote) ? [{ name: basename(op.dest), target }] : [];
  });
  const env: Record<string, string> = { ...plan.env, TEAMD_SOCKET: plan.socket.host, PATH: [...(dir !== undefined ? [dir] : []), ...planPath].join(":") };
  if (bundle !== undefined) env.TEAMD_SHIM = bundle;
  else delete env.TEAMD_SHIM;
  const sorted: Record<string, string> = {};
  for (const name of Object.keys(env).sort()) sorted[name] = env[name] as string;
  return {
    env: Object.freeze(sorted),
    cwd: plan.cwd,
    ...(bundle !== undefined && dir !== undefined ? { shimBin: { dir, bundle, links } } : {}),
  };
}

/**
 * The chain after the launch wrapper: [setpriv … --] [prlimit … --] command. Each execs the
 * next in place, so the pid the wrapper reports is the command's.
 */
export function uncontainedArgv(command: readonly string[], asUser: readonly string[], rlimits: readonly string[]): [string, ...string[]] {
  return [...asUser, ...rlimits, ...command] as [string, ...string[]];
}

/**
 * The uncontained launch wrapper (bash -c; `"$@"` is the chain): inherited fds closed first
 * (close-fds.ts), then it reports its own pid as the seat's init — on fd 3 (pipes) or appended
 * to the status file "$0" (pty) — waits, when the seat has a cgroup, for one byte on the
 * block fd (fd 4; in a pty the FIFO "$0.block", opened before the report so the daemon's byte
 * cannot be lost) until the daemon has moved it in, and execs the chain in place. Exit 125:
 * the wrapper itself failed.
 */
export function selfReportingWrapper(status: "fd" | "file", blocked: boolean): string {
  const steps: string[] = [];
  if (status === "file") {
    // As the bwrap pty wrapper: Ctrl-C at `teamd attach` reaches the program as a byte.
    steps.push("stty -isig 2>/dev/null");
    if (blocked) steps.push(`exec ${BLOCK_FD}<"$0.block" || exit 125`);
    steps.push(`printf '{"child-pid": %d}\\n' "$$" >>"$0" || exit 125`);
  } else {
    steps.push(`printf '{"child-pid": %d}\\n' "$$" >&${STATUS_FD} || exit 125`, `exec ${STATUS_FD}>&-`);
  }
  if (blocked) steps.push(`read -r -n 1 _ <&${BLOCK_FD} || exit 125`, `exec ${BLOCK_FD}<&-`);
  steps.push('exec "$@"');
  return closeFdsScript(status === "fd" ? (blocked ? BLOCK_FD : STATUS_FD) : 2, steps.join("; "));
}
