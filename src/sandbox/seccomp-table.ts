import type { ArgCheck } from "./seccomp-bpf.js";

/**
 * What the seat's seccomp filter refuses, family by family, with the reason (issue 21;
 * docs/enforcement.md "The seccomp filter" prints this table). The filter applies to every
 * seat and every contained git; bwrap loads it just before it runs the seat's command, so
 * everything the seat runs inherits it and none can remove it.
 *
 * The starting point is what Docker's default profile and Flatpak's bubblewrap filter deny,
 * cut to what bubblewrap does not already take away (a seat has no capability and cannot make
 * a user namespace; many host-administration calls already fail there) — and kept anyway
 * where the kernel's own check is the only thing between a seat and the call, because a
 * kernel bug in that check is exactly what the filter is for.
 *
 * The errno is chosen per family:
 *   - EPERM where a program may try the call and must cope with a refusal (libuv falls back
 *     from io_uring, glibc reports the keyring unavailable), as the kernel's own sysctls do;
 *   - ENOSYS where the call should look absent: clone3, so glibc falls back to clone (whose
 *     flags the filter can read — clone3's are behind a pointer it cannot), the new mount API
 *     (tools fall back to mount(2), refused too), and the host-administration calls no program
 *     in a seat has a use for. ENOSYS is also what makes those rows provable: an unprivileged
 *     namespace already answers EPERM to loading a module or setting the clock, so only the
 *     filter answers ENOSYS (test/escape/seccomp.test.ts probes each row against a control).
 *
 * Numbers: x86_64's own table, and aarch64's (the generic one, asm-generic/unistd.h). A call
 * one architecture does not have (iopl, ioperm and uselib exist only on x86_64) has no number
 * there and no rule.
 */
export type SeccompArch = "x86_64" | "aarch64";

export interface SeccompFamily {
  readonly family: string;
  readonly errno: "EPERM" | "ENOSYS";
  readonly reason: string;
  readonly syscalls: readonly SeccompSyscall[];
}

export interface SeccompSyscall {
  readonly name: string;
  readonly nr: Readonly<Partial<Record<SeccompArch, number>>>;
  /** Only some arguments are refused (the rest of the call is allowed). */
  readonly args?: ArgCheck;
  /** How the arguments are judged, for the table in the docs. */
  readonly when?: string;
}

export const ERRNO = Object.freeze({ EPERM: 1, ENOSYS: 38 });

// The namespace flags of clone(2) and unshare(2): CLONE_NEWTIME, NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET.
export const CLONE_NAMESPACE_FLAGS = 0x80 | 0x0002_0000 | 0x0200_0000 | 0x0400_0000 | 0x0800_0000 | 0x1000_0000 | 0x2000_0000 | 0x4000_0000;
export const TIOCSTI = 0x5412;
export const TIOCLINUX = 0x541c;
// personality(2) values that change nothing a mitigation depends on: PER_LINUX, PER_LINUX32,
// UNAME26, UNAME26|PER_LINUX32, and 0xffffffff (the query). ADDR_NO_RANDOMIZE (ASLR off) and
// READ_IMPLIES_EXEC (every readable page executable) are refused.
export const PERSONALITY_ALLOWED = Object.freeze([0x0, 0x8, 0x0002_0000, 0x0002_0008, 0xffff_ffff]);

const both = (x86_64: number, aarch64: number) => ({ x86_64, aarch64 });
const same = (nr: number) => ({ x86_64: nr, aarch64: nr });
const sys = (name: string, nr: SeccompSyscall["nr"], extra: Partial<SeccompSyscall> = {}): SeccompSyscall => ({ name, nr, ...extra });

export const SECCOMP_TABLE: readonly SeccompFamily[] = Object.freeze([
  {
    family: "io_uring",
    errno: "EPERM",
    reason:
      "a second way into the kernel whose operations no seccomp filter can see (a ring of requests, not syscalls), and a long run of privilege escalations; libuv and others fall back to plain syscalls",
    syscalls: [sys("io_uring_setup", same(425)), sys("io_uring_enter", same(426)), sys("io_uring_register", same(427))],
  },
  {
    family: "userfaultfd",
    errno: "EPERM",
    reason: "lets a process stall the kernel in the middle of a copy from user memory, the usual way to win a kernel race",
    syscalls: [sys("userfaultfd", both(323, 282))],
  },
  {
    family: "keyring",
    errno: "EPERM",
    reason:
      "the kernel keyring is keyed by uid: seats of one uid would share keys and see each other's key descriptions, a channel between seats (and labs) that teamd does not record",
    syscalls: [sys("add_key", both(248, 217)), sys("keyctl", both(250, 219)), sys("request_key", both(249, 218))],
  },
  {
    family: "perf",
    errno: "EPERM",
    reason: "hardware counters and kernel tracing: side channels into other processes and a wide kernel surface",
    syscalls: [sys("perf_event_open", both(298, 241))],
  },
  {
    family: "bpf",
    errno: "EPERM",
    reason: "loading programs into the kernel (and a verifier with a history of escapes); no tool in a seat needs it",
    syscalls: [sys("bpf", both(321, 280))],
  },
  {
    family: "namespaces",
    errno: "EPERM",
    reason:
      "a seat's namespaces are bubblewrap's and stay so: no new ones (clone or unshare with a namespace flag), no joining others (setns) — what bubblewrap's --disable-userns does for user namespaces, the filter does for every kind",
    syscalls: [
      sys("unshare", both(272, 97), { args: { kind: "deny-bits", arg: 0, mask: CLONE_NAMESPACE_FLAGS }, when: "with a CLONE_NEW* flag" }),
      sys("clone", both(56, 220), { args: { kind: "deny-bits", arg: 0, mask: CLONE_NAMESPACE_FLAGS }, when: "with a CLONE_NEW* flag" }),
      sys("setns", both(308, 268)),
    ],
  },
  {
    family: "clone3",
    errno: "ENOSYS",
    reason: "its flags are behind a pointer the filter cannot read; answering ENOSYS makes glibc fall back to clone, whose flags it can",
    syscalls: [sys("clone3", same(435))],
  },
  {
    family: "mount",
    errno: "ENOSYS",
    reason: "a seat's view of the file system is the plan bubblewrap mounted; nothing in it mounts, unmounts, pivots or changes root",
    syscalls: [
      sys("mount", both(165, 40)),
      sys("umount2", both(166, 39)),
      sys("pivot_root", both(155, 41)),
      sys("chroot", both(161, 51)),
      sys("open_tree", same(428)),
      sys("move_mount", same(429)),
      sys("fsopen", same(430)),
      sys("fsconfig", same(431)),
      sys("fsmount", same(432)),
      sys("fspick", same(433)),
      sys("mount_setattr", same(442)),
      sys("open_tree_attr", same(467)),
    ],
  },
  {
    family: "host-admin",
    errno: "ENOSYS",
    reason:
      "the machine's own administration — kernel modules, kexec, reboot, swap, process accounting, quotas, the kernel log, the clock, raw port I/O, file handles that bypass path checks: none is a seat's to use",
    syscalls: [
      sys("init_module", both(175, 105)),
      sys("finit_module", both(313, 273)),
      sys("delete_module", both(176, 106)),
      sys("kexec_load", both(246, 104)),
      sys("kexec_file_load", both(320, 294)),
      sys("reboot", both(169, 142)),
      sys("swapon", both(167, 224)),
      sys("swapoff", both(168, 225)),
      sys("acct", both(163, 89)),
      sys("quotactl", both(179, 60)),
      sys("quotactl_fd", same(443)),
      sys("syslog", both(103, 116)),
      sys("settimeofday", both(164, 170)),
      sys("clock_settime", both(227, 112)),
      sys("clock_adjtime", both(305, 266)),
      sys("adjtimex", both(159, 171)),
      sys("open_by_handle_at", both(304, 265)),
      sys("lookup_dcookie", both(212, 18)),
      sys("nfsservctl", both(180, 42)),
      sys("uselib", { x86_64: 134 }),
      sys("iopl", { x86_64: 172 }),
      sys("ioperm", { x86_64: 173 }),
    ],
  },
  {
    family: "numa",
    errno: "EPERM",
    reason: "moving pages between memory nodes (move_pages and migrate_pages reach other processes' pages); reading the policy stays allowed",
    syscalls: [
      sys("mbind", both(237, 235)),
      sys("set_mempolicy", both(238, 237)),
      sys("migrate_pages", both(256, 238)),
      sys("move_pages", both(279, 239)),
      sys("set_mempolicy_home_node", same(450)),
    ],
  },
  {
    family: "personality",
    errno: "EPERM",
    reason: "ADDR_NO_RANDOMIZE turns off address randomization and READ_IMPLIES_EXEC makes data executable, for the process and all it runs",
    syscalls: [
      sys("personality", both(135, 92), {
        args: { kind: "allow-values", arg: 0, values: PERSONALITY_ALLOWED },
        when: "unless PER_LINUX, PER_LINUX32, UNAME26 or the query",
      }),
    ],
  },
  {
    family: "ldt",
    errno: "EPERM",
    reason:
      "custom segment descriptors for the process (the x86 LDT): a legacy interface with a history of kernel bugs that Docker's profile keeps off; no program of a seat needs it",
    syscalls: [sys("modify_ldt", { x86_64: 154 })],
  },
  {
    family: "fanotify",
    errno: "EPERM",
    reason: "watching a whole mount's file events (fanotify): a wider kernel surface than inotify, which a seat keeps for its own files",
    syscalls: [sys("fanotify_init", both(300, 262))],
  },
  {
    family: "tty",
    errno: "EPERM",
    reason:
      "TIOCSTI pushes bytes into a terminal's input as if typed (a seat in a pty would type into whatever reads that terminal next), TIOCLINUX reaches the console",
    syscalls: [sys("ioctl", both(16, 29), { args: { kind: "deny-values", arg: 1, values: [TIOCSTI, TIOCLINUX] }, when: "TIOCSTI and TIOCLINUX only" })],
  },
]);

/** AUDIT_ARCH_* of each architecture (linux/audit.h). */
export const AUDIT_ARCH: Readonly<Record<SeccompArch, number>> = Object.freeze({ x86_64: 0xc000_003e, aarch64: 0xc000_00b7 });

/** Node's name for the host's architecture → the table's, or undefined where teamd builds no filter. */
export function seccompArch(nodeArch: string): SeccompArch | undefined {
  return nodeArch === "x64" ? "x86_64" : nodeArch === "arm64" ? "aarch64" : undefined;
}
