/**
 * The data the plan compiler takes and the data it returns (src/sandbox/plan.ts). Both are
 * plain data: the compiler is pure, the launcher and the host-facts reader are the only
 * parts that touch the machine. Every host path here is canonical (src/objects/canonical.ts);
 * the compiler checks the lexical form and refuses anything else rather than resolve it.
 */
import type { ObjectId } from "../objects/object-id.js";
import type { RootScan } from "../objects/scan.js";

export interface SeatName {
  readonly team: string;
  readonly seat: string;
}

/** A host folder bound into the seat at the same path, with its identity and what a scan found in it. */
export interface HostRoot {
  readonly path: string;
  readonly id: ObjectId;
  readonly scan: RootScan;
}

/** A root with the role it plays in the seat (the compiler's own view of PlanInput's roots). */
export interface SeatRoot {
  readonly role: string;
  readonly writable: boolean;
  readonly root: HostRoot;
}

/** A reserved object as data (src/objects/reserved-set.ts ReservedObject, minus nothing). */
export interface ReservedFact {
  readonly path: string;
  /** undefined: nothing exists there now; it stays reserved by name. */
  readonly id: ObjectId | undefined;
  readonly kind: "file" | "dir" | "symlink" | "socket" | "other" | "absent";
}

/** One of the top-level system paths programs need (/usr, /bin, /lib64, ...), as found on the host. */
export interface SystemEntry {
  readonly path: string;
  readonly kind: "dir" | "symlink" | "absent" | "other";
  /** The link text when kind is "symlink" (recreated as is inside, e.g. "usr/bin"). */
  readonly target?: string;
}

/** One entry of /etc, named relative to /etc ("passwd", "ssh/ssh_config"). */
export interface EtcEntry {
  readonly name: string;
  readonly kind: "file" | "dir" | "symlink" | "other";
  readonly target?: string;
}

export interface HostFacts {
  readonly system: readonly SystemEntry[];
  /** The top-level entries of /etc, plus the children of each folder named in `etcListed`. */
  readonly etc: readonly EtcEntry[];
  /** The /etc folders whose children are listed in `etc` (the compiler needs them where it filters inside). */
  readonly etcListed: readonly string[];
  /** Canonical path of the node binary seats run (the shim needs it). */
  readonly node: string;
  /** Canonical path of the shim's self-contained bundle (file or folder); undefined until it is built. */
  readonly shimBundle: string | undefined;
  /**
   * Canonical path of the shim's lazy part, the file beside the bundle (linux-base.ts
   * SHIM_LAZY_SUFFIX), bound read-only at inside.shimLazy; absent for a bundle that needs none.
   */
  readonly shimLazy?: string;
  /**
   * Canonical path of the remote helper's front, the file beside the bundle (linux-base.ts
   * SHIM_GIT_REMOTE_SUFFIX), bound read-only at inside.gitRemote; `git-remote-teamd` on the
   * seat's PATH is then a link to it, not to the bundle. Absent: the link is to the bundle.
   */
  readonly shimGitRemote?: string;
  /**
   * The name the bundle answers to on the seat's PATH (e.g. "teamd-shim"): a symlink to it
   * under /run/teamd/bin, which PATH then ends with. Absent: the bundle is at TEAMD_SHIM only.
   */
  readonly shimCommand?: string;
  /**
   * Canonical path of teamd's login profile for seats (seat-profile.ts), bound at /etc/profile
   * in place of the host's. Absent: the host's /etc/profile is bound like the rest of /etc.
   */
  readonly seatProfile?: string;
  /** The seat's own socket on the host, and its identity. */
  readonly seatSocket: { readonly path: string; readonly id: ObjectId };
  /**
   * The /proc files that list what the kernel keys by uid and this kernel has (/proc/keys,
   * /proc/key-users): masked in the seat's /proc, so a seat sharing the owner's uid (user mode)
   * does not read the descriptions of the owner's keys. Absent: none is masked.
   */
  readonly procKeyFiles?: readonly string[];
}

export interface EnvInput {
  /** Names passed through from `source` when present there (LANG, TERM, ...). */
  readonly allowlist: readonly string[];
  /** Where allowlisted values come from (the daemon's environment, given as data). */
  readonly source: Readonly<Record<string, string | undefined>>;
  /** What the seat's execution context declares (the team file), verbatim. */
  readonly declared: Readonly<Record<string, string>>;
}

/**
 * Resource limits a seat asks for (the team file's `start.limits`, src/kernel/start-limits.ts).
 * Applying them is the launcher's job (the seat's cgroup, src/sandbox/cgroup-plan.ts, else
 * rlimits); the plan carries them so that `teamd exec` runs under the same ones. "none" is
 * the team file's explicit `limits: none`.
 */
export type Limits =
  | "none"
  | {
      /** The whole tree's memory (cgroup), or RLIMIT_DATA per process as the partial fallback. */
      readonly memoryBytes?: number;
      /** Processes and threads at once (cgroup pids), or RLIMIT_NPROC per uid as the fallback. */
      readonly processes?: number;
      /** CPU quota in CPUs (cgroup cpu); no rlimit expresses it. */
      readonly cpus?: number;
      /** RLIMIT_NOFILE, per process (exactly what it says, with or without a cgroup). */
      readonly openFiles?: number;
    };

/**
 * A seat's egress (§12), as the plan takes it and as it returns it; plan-egress.ts builds the
 * one from the other. Here, with the rest of the plan's data, because PlanInput and
 * SandboxPlan carry them and plan-egress.ts needs MountOp and ReservedFact: beside the
 * builder, the two files imported each other.
 */
export interface EgressInput {
  /** The seat's egress socket on the host (canonical). */
  readonly socket: string;
  /** The egress launcher bundle on the host (canonical). */
  readonly launcher: string;
}

export interface PlanEgress {
  readonly socket: { readonly host: string; readonly inside: string };
  /** Prepended to every command run in the plan: node, the launcher, "--". */
  readonly argv: readonly string[];
  readonly proxy: string;
}

export interface PlanInput {
  readonly seat: SeatName;
  /**
   * The host user the seat runs as (never 0). Inside, the seat sees the same ids — or, when
   * `inside` is given, those (system mode: each seat has a host uid of its own, and inside
   * every seat is the one `teamd-seat` user /etc/passwd names, so programs find a name).
   */
  readonly user: { readonly uid: number; readonly gid: number; readonly inside?: { readonly uid: number; readonly gid: number } };
  readonly writable: { readonly repository: HostRoot; readonly home: HostRoot; readonly tmp: HostRoot };
  /** What the seat's read scope covers beyond its writable roots (other declared roots). */
  readonly readOnly: readonly HostRoot[];
  readonly reserved: readonly ReservedFact[];
  readonly host: HostFacts;
  readonly env: EnvInput;
  readonly limits: Limits;
  /** The seat's egress (src/sandbox/plan-egress.ts); absent: no network but loopback, no proxy. */
  readonly egress?: EgressInput;
  /**
   * The start's pinned files (§10): each a read-only copy of the pinned content (src, a file
   * teamd wrote) bound over its path in the seat's repository (dest), after the repository, so
   * the seat's command runs the content the owner applied whatever the seat's clone holds there.
   */
  readonly pins?: readonly { readonly src: string; readonly dest: string }[];
  /**
   * The seat's last handoff checkpoint (a file teamd wrote from its CHECKPOINT record), bound
   * read-only at /run/teamd/handoff.json and named by TEAMD_HANDOFF: what a halted run left its
   * next run (issue 27). Absent: the seat has none.
   */
  readonly handoff?: string;
}

/** One step of building the seat's root, in order; bwrap-args.ts turns each into flags. */
export type MountOp =
  /**
   * copyable: a file of /etc that the launcher may give as a read-only copy of its content
   * rather than a bind (src/sandbox/etc-copies.ts) — bubblewrap re-reads the whole mount table
   * after each bind, so a seat's ~140 binds of /etc were most of its launch (issue 26).
   */
  | { readonly op: "ro-bind"; readonly src: string; readonly dest: string; readonly copyable?: true }
  | { readonly op: "bind"; readonly src: string; readonly dest: string }
  | { readonly op: "symlink"; readonly target: string; readonly dest: string }
  /** size: bytes the tmpfs may hold (its memory is the host's); absent = the kernel's default. */
  | { readonly op: "tmpfs"; readonly dest: string; readonly size?: number }
  | { readonly op: "proc"; readonly dest: string }
  | { readonly op: "dev"; readonly dest: string }
  /** Hide what sits at dest: a file becomes unopenable, a folder empty and read-only. */
  | { readonly op: "mask"; readonly dest: string; readonly kind: "file" | "dir"; readonly why: string }
  | { readonly op: "remount-ro"; readonly dest: string };

export interface SandboxPlan {
  readonly version: 1;
  readonly seat: SeatName;
  readonly hostname: string;
  /** The host ids the seat runs as. */
  readonly uid: number;
  readonly gid: number;
  /** The ids the seat sees inside its user namespace, when not the host's (bwrap --uid/--gid). */
  readonly inside?: { readonly uid: number; readonly gid: number };
  /** Every namespace unshared; the network namespace holds loopback only. */
  readonly network: "loopback-only";
  readonly mounts: readonly MountOp[];
  /** Sorted by name; exactly this, nothing inherited. */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly limits: Limits;
  /** Every host path the plan binds, for the launcher's preflight (a missing one fails closed). */
  readonly sources: readonly string[];
  /** The seat socket: host path, and where the seat finds it. */
  readonly socket: { readonly host: string; readonly inside: string };
  /** The egress proxy and its byte stream, when the seat declares egress. */
  readonly egress?: PlanEgress;
}
