import type { MountOp, SandboxPlan } from "./plan-types.js";
import { refuseContainment, type Checked } from "./refusal.js";

/**
 * Plan -> bubblewrap argv (pure). The order is bwrap's: options apply as they are read, so
 * --clearenv precedes every --setenv, and mounts are made in the plan's order (a folder
 * before what is mounted inside it, masks last, the root made read-only at the very end).
 *
 * Namespaces: --unshare-all, and --unshare-user explicitly (--unshare-all only *tries* the
 * user namespace, and falls back silently without one); then --disable-userns so the seat
 * cannot make a user namespace of its own (where unprivileged mount, unshare and ptrace
 * tricks begin), and --assert-userns-disabled so bwrap fails rather than run when it could
 * not. Both need bubblewrap 0.8.0; with an older one the launcher refuses — there is no
 * weaker fallback (see `requiredFeatures`).
 */
export const STATUS_FD = 3;
/** The fd bwrap's sandbox waits on before it runs anything of the seat (--block-fd, bubblewrap 0.1). */
export const BLOCK_FD = 4;

/** The bwrap options teamd's argv needs beyond the 0.4-era basics, each with the version that added it. */
export const REQUIRED_FEATURES = Object.freeze([
  { flag: "--disable-userns", since: "0.8.0" },
  { flag: "--assert-userns-disabled", since: "0.8.0" },
  { flag: "--json-status-fd", since: "0.5.0" },
  { flag: "--size", since: "0.7.0" },
  { flag: "--perms", since: "0.5.0" },
  { flag: "--die-with-parent", since: "0.3.0" },
]);

/** Which required flags `bwrap --help` does not list (pure: the help text comes in as data). */
export function missingFeatures(helpText: string): string[] {
  return REQUIRED_FEATURES.filter(({ flag }) => !new RegExp(`^\\s*${flag}\\b`, "m").test(helpText)).map(({ flag, since }) => `${flag} (bubblewrap ${since})`);
}

export interface BwrapArgsOptions {
  /** The fd bwrap writes its JSON status to (child-pid at start, exit-code at the end). */
  readonly statusFd?: number;
  /**
   * bwrap's --block-fd: the namespace init (whose pid the status fd reports) waits until a
   * byte arrives here before it forks or runs the command — the window in which the launcher
   * moves it into the seat's cgroups, so the whole tree is born inside them.
   */
  readonly blockFd?: number;
  /**
   * bwrap's --seccomp: the fd the seat's compiled filter is read from (src/sandbox/seccomp-filter.ts).
   * bwrap loads it into the namespace's init and the seat's command, just before it runs them.
   */
  readonly seccompFd?: number;
  /**
   * By a copyable bind's dest: the fd its file's content is read from and the bits it gets
   * (etc-copies.ts). Such a bind becomes `--perms P --file FD DEST`: a file in the seat's
   * root, which the plan makes read-only at the end, and no mount. Absent: every bind a bind.
   */
  readonly copies?: ReadonlyMap<string, { readonly fd: number; readonly perms: number }>;
}

/** The fd after the status fd and, when there is one, the block fd: where a launch passes the filter. */
export function seccompFdAfter(lastFd: number): number {
  return lastFd + 1;
}

/**
 * Every namespace unshared, no nested user namespace, no capability, the sandbox dies with
 * its parent and has no controlling terminal to inject into: the isolation every bwrap
 * teamd runs starts from (a seat here; sandboxed git in src/effects/contained-git.ts).
 */
export const ISOLATION: readonly string[] = Object.freeze([
  "--unshare-all",
  "--unshare-user",
  "--disable-userns",
  "--assert-userns-disabled",
  "--die-with-parent",
  "--new-session",
  "--cap-drop",
  "ALL",
]);

export function bwrapArgs(plan: SandboxPlan, command: readonly string[], options: BwrapArgsOptions = {}): Checked<string[]> {
  if (command.length === 0 || (command[0] ?? "").length === 0) return refuse("no command to run in the seat");
  if (command.some((arg) => arg.includes("\u0000"))) return refuse("a command argument contains a NUL byte");
  const args: string[] = [
    ...ISOLATION,
    "--hostname",
    plan.hostname,
    "--uid",
    String(plan.inside?.uid ?? plan.uid),
    "--gid",
    String(plan.inside?.gid ?? plan.gid),
    "--clearenv",
  ];
  for (const [name, value] of Object.entries(plan.env)) args.push("--setenv", name, value);
  for (const op of plan.mounts) {
    const copy = op.op === "ro-bind" && op.copyable === true ? options.copies?.get(op.dest) : undefined;
    args.push(...(copy === undefined ? mountArgs(op) : ["--perms", (copy.perms & 0o555).toString(8).padStart(4, "0"), "--file", String(copy.fd), op.dest]));
  }
  // A seat with egress runs every command under its egress launcher (src/sandbox/plan-egress.ts).
  const argv = plan.egress === undefined ? command : [...plan.egress.argv, ...command];
  args.push("--chdir", plan.cwd, "--json-status-fd", String(options.statusFd ?? STATUS_FD));
  if (options.blockFd !== undefined) args.push("--block-fd", String(options.blockFd));
  if (options.seccompFd !== undefined) args.push("--seccomp", String(options.seccompFd));
  args.push("--", ...argv);
  return { ok: true, value: args };
}

export function mountArgs(op: MountOp): string[] {
  switch (op.op) {
    case "ro-bind":
      return ["--ro-bind", op.src, op.dest];
    case "bind":
      return ["--bind", op.src, op.dest];
    case "symlink":
      return ["--symlink", op.target, op.dest];
    case "tmpfs":
      return [...(op.size === undefined ? [] : ["--size", String(op.size)]), "--tmpfs", op.dest];
    case "proc":
      return ["--proc", op.dest];
    case "dev":
      return ["--dev", op.dest];
    case "mask":
      // A file: the host's /dev/null bound without device access (bwrap binds are nodev),
      // so opening it fails. A folder: an empty, unreadable, read-only tmpfs.
      return op.kind === "file" ? ["--ro-bind", "/dev/null", op.dest] : ["--perms", "0000", "--tmpfs", op.dest, "--remount-ro", op.dest];
    case "remount-ro":
      return ["--remount-ro", op.dest];
  }
}

function refuse(reason: string): { ok: false; refusal: ReturnType<typeof refuseContainment> } {
  return { ok: false, refusal: refuseContainment("containment.undecidable", reason, "give the seat a command to run") };
}
