import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { RowId } from "./rows.js";
import { HOST_REPLY, SEAT_REPLY, type WorldPaths } from "./world.js";

/**
 * The attacks, defined once: run by `teamd selftest` on the owner's machine and by the escape suite
 * (test/escape/selftest-corpus.test.ts), so the map the owner sees and the one the suite proves
 * are the same attacks. Each names the docs/enforcement.md row(s) it proves, what it tries, its
 * control — the same probe where it must succeed (in the seat itself, in the control seat with the
 * one defence removed, or on the host), so a broken probe can never pass as "blocked" — and a judge.
 *
 * Batch attacks are shell fragments: every fragment of the `main` seat (the real plan, the real
 * filter) runs in one seat process, every `control` fragment in one control seat (no seccomp filter,
 * no socket or /proc key masks), printing `@ATTACK KEY=VALUE` lines. The keyring and the limits
 * need seats of their own (runner.ts orchestrates them); their judges are here all the same.
 */
export interface Facts extends WorldPaths {
  /** The selftest's (or the test runner's) own pid: the daemon's stand-in. */
  readonly selftestPid: number;
  /** The node runtime, at the same path inside every seat. */
  readonly node: string;
}

export type Probe = Readonly<Record<string, string>>;

export interface Evidence {
  readonly facts: Facts;
  /** This attack's lines from the main seat. */
  readonly main: Probe;
  /** This attack's lines from the control seat (or the keyring's peer, the limits' unlimited seat). */
  readonly control: Probe;
  /** What the host itself reached (the controls that run outside any seat). */
  readonly host: Probe;
}

export interface Judgement {
  /** The attack failed: the defence held. */
  readonly held: boolean;
  /** The control succeeded: the probe can tell (without it, `held` proves nothing). */
  readonly controlOk: boolean;
  readonly detail: string;
}

export type Requirement = "python3-x86_64" | "python3" | "seat-cgroups";

export interface Attack {
  readonly id: string;
  readonly rows: readonly RowId[];
  readonly claim: string;
  readonly tried: string;
  readonly control: string;
  readonly requires?: Requirement;
  /** "batch": main/control fragments; "keyring" and "limits": seats of their own (runner.ts). */
  readonly kind: "batch" | "keyring" | "limits";
  readonly main?: (f: Facts) => string;
  readonly controlScript?: (f: Facts) => string;
  judge(e: Evidence): Judgement;
}

const kv = (attack: string, key: string, value: string) => `printf '@%s %s=%s\\n' ${attack} ${key} "${value}"`;
const nonzero = (p: Probe, ...keys: string[]) => keys.every((k) => p[k] !== undefined && p[k] !== "0");
const show = (p: Probe, keys: readonly string[]) => keys.map((k) => `${k}=${p[k] ?? "?"}`).join(" ");

/** Where the corpus's helper programs are written in the seat's tmp. */
export const HELPERS = { net: "selftest-net.js", ptrace: "selftest-ptrace.py", keyring: "selftest-keyring.py", seccomp: "selftest-seccomp.py" };
const helper = (f: Facts, name: keyof typeof HELPERS) => join(f.tmp, HELPERS[name]);

/** What the filter answers to each probe of SECCOMP_PROBE (the table's family errno). */
export const SECCOMP_FILTERED: Readonly<Record<string, string>> = {
  io_uring_setup: "EPERM",
  userfaultfd: "EPERM",
  add_key: "EPERM",
  keyctl: "EPERM",
  request_key: "EPERM",
  perf_event_open: "EPERM",
  bpf: "EPERM",
  unshare_newuser: "EPERM",
  unshare_newns: "EPERM",
  clone_newuser: "EPERM",
  setns: "EPERM",
  clone3: "ENOSYS",
  mount: "ENOSYS",
  umount2: "ENOSYS",
  chroot: "ENOSYS",
  pivot_root: "ENOSYS",
  fsopen: "ENOSYS",
  open_tree: "ENOSYS",
  init_module: "ENOSYS",
  finit_module: "ENOSYS",
  kexec_load: "ENOSYS",
  reboot: "ENOSYS",
  swapon: "ENOSYS",
  acct: "ENOSYS",
  syslog: "ENOSYS",
  clock_settime: "ENOSYS",
  settimeofday: "ENOSYS",
  adjtimex: "ENOSYS",
  open_by_handle_at: "ENOSYS",
  iopl: "ENOSYS",
  set_mempolicy: "EPERM",
  move_pages: "EPERM",
  mbind: "EPERM",
  personality_norandom: "EPERM",
  x32_getpid: "EPERM",
  modify_ldt: "EPERM",
  fanotify_init: "EPERM",
  ioctl_tiocsti: "EPERM",
  ioctl_tioclinux: "EPERM",
  // SIGSYS: a syscall under another ABI kills the process.
  i386_getpid: "killed:31",
};

/**
 * Answers that mean a probe's call never reached the kernel's syscall entry, where no filter
 * sees it: on a host whose CPU or hypervisor faults a 64-bit process's `int 0x80` (a PVM guest
 * did, kernel 6.18 with IA32 emulation built in), the i386 probe dies of SIGSEGV with the filter
 * and without it. Where the control dies the same way, the host holds that probe, and the
 * filter's own answer to it cannot be seen here: it counts as held, never as proving its family.
 */
export const HOST_REFUSED: Readonly<Record<string, string>> = { i386_getpid: "killed:11" };

/** Whether a probe got the filter's answer, or (HOST_REFUSED) the host refused it with the filter and without. */
export function seccompProbeHeld(name: string, inside: Readonly<Record<string, string>>, control: Readonly<Record<string, string>>): boolean {
  const host = HOST_REFUSED[name];
  return inside[name] === SECCOMP_FILTERED[name] || (host !== undefined && inside[name] === host && control[name] === host);
}

/**
 * Whether a probe's control tells the filter from this kernel: without the filter the kernel
 * answered otherwise — and not by the host's refusal before its syscall entry (HOST_REFUSED),
 * which the filter never sees.
 */
export function seccompProbeProves(name: string, control: Readonly<Record<string, string>>): boolean {
  return control[name] !== SECCOMP_FILTERED[name] && (HOST_REFUSED[name] === undefined || control[name] !== HOST_REFUSED[name]);
}

/** The probes of each family of src/sandbox/seccomp-table.ts (and the ABI checks). */
export const SECCOMP_FAMILIES: Readonly<Record<string, readonly string[]>> = {
  io_uring: ["io_uring_setup"],
  userfaultfd: ["userfaultfd"],
  keyring: ["add_key", "keyctl", "request_key"],
  perf: ["perf_event_open"],
  bpf: ["bpf"],
  namespaces: ["unshare_newuser", "unshare_newns", "clone_newuser", "setns"],
  clone3: ["clone3"],
  mount: ["mount", "umount2", "chroot", "pivot_root", "fsopen", "open_tree"],
  "host-admin": [
    "init_module",
    "finit_module",
    "kexec_load",
    "reboot",
    "swapon",
    "acct",
    "syslog",
    "clock_settime",
    "settimeofday",
    "adjtimex",
    "open_by_handle_at",
    "iopl",
  ],
  numa: ["set_mempolicy", "move_pages", "mbind"],
  personality: ["personality_norandom"],
  tty: ["ioctl_tiocsti", "ioctl_tioclinux"],
  ldt: ["modify_ldt"],
  fanotify: ["fanotify_init"],
  abi: ["x32_getpid", "i386_getpid"],
};

function parseJson(text: string | undefined): Record<string, string> | undefined {
  try {
    const parsed = JSON.parse(text ?? "") as unknown;
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, string>) : undefined;
  } catch {
    return undefined;
  }
}

/** Judge the seccomp probe: the filtered answers, and a control that tells each family apart. */
export function judgeSeccomp(insideText: string | undefined, controlText: string | undefined): Judgement {
  const inside = parseJson(insideText);
  const control = parseJson(controlText);
  if (inside === undefined || control === undefined) return { held: false, controlOk: false, detail: "the probe printed no result" };
  const wrong = Object.entries(SECCOMP_FILTERED)
    .filter(([name]) => !seccompProbeHeld(name, inside, control))
    .map(([name, answer]) => `${name}: ${inside[name] ?? "?"} (filter: ${answer})`);
  const byHost = Object.keys(HOST_REFUSED).filter((name) => inside[name] !== SECCOMP_FILTERED[name] && seccompProbeHeld(name, inside, control));
  const loaded = inside.status_seccomp === "2" && inside.pid1_seccomp === "2";
  const unproven = Object.entries(SECCOMP_FAMILIES)
    .filter(([, names]) => !names.some((name) => seccompProbeProves(name, control)))
    .map(([family]) => family);
  const works = ["fork", "thread", "personality_query"].every((n) => inside[n] === "ok" && control[n] === "ok");
  const held = loaded && wrong.length === 0;
  const controlOk = control.status_seccomp === "0" && unproven.length === 0 && works;
  return {
    held,
    controlOk,
    detail: held
      ? `every probe got the filter's answer (Seccomp: ${inside.status_seccomp}, pid 1: ${inside.pid1_seccomp})${byHost.length ? `, but ${byHost.map((n) => `${n} (${inside[n]}) is refused by this host before the kernel's syscall entry, filter or not`).join(", ")}` : ""}${unproven.length ? `; no probe tells the filter from this kernel for ${unproven.join(", ")}` : "; without the filter, the kernel answered otherwise in every family"}`
      : `${loaded ? "" : `the filter is not loaded (Seccomp: ${inside.status_seccomp ?? "?"}, pid 1: ${inside.pid1_seccomp ?? "?"}); `}${wrong.slice(0, 8).join("; ")}${wrong.length > 8 ? `; ${wrong.length - 8} more` : ""}`,
  };
}

export const CORPUS: readonly Attack[] = [
  {
    id: "inherited-fds",
    rows: ["containment"],
    claim: "no fd beyond stdin, stdout and stderr",
    tried: "list the seat shell's own open fds before it opens any",
    control: "the same listing after opening fd 7 shows it",
    kind: "batch",
    // ls writes straight to the seat's stdout: a redirection would make the shell save an fd of its own (dash keeps it at 10).
    main: () => `printf '@inherited-fds open='; ls -m -w 0 /proc/$$/fd`,
    controlScript: () => `exec 7</dev/null; printf '@inherited-fds open='; ls -m -w 0 /proc/$$/fd; exec 7<&-`,
    judge: ({ main, control }) => ({
      held: main.open?.trim() === "0, 1, 2",
      controlOk: (control.open ?? "").split(", ").includes("7"),
      detail: `open: ${main.open?.trim() ?? "?"}`,
    }),
  },
  {
    id: "read-outside",
    rows: ["containment"],
    claim: "no reading outside the plan",
    tried: "read a secret in a folder outside the plan, and /etc/shadow",
    control: "the host reads the secret; the seat reads its own repository",
    kind: "batch",
    main: (f) =>
      [
        kv("read-outside", "secret", `$(cat ${f.secretFile} 2>/dev/null | grep -c ${f.canary})`),
        kv("read-outside", "shadow", "$(head -c 1 /etc/shadow >/dev/null 2>&1; echo $?)"),
        kv("read-outside", "repo", `$(grep -c 'selftest repository' ${f.repo}/README.md 2>/dev/null)`),
      ].join("; "),
    judge: ({ facts, main }) => ({
      held: main.secret === "0" && nonzero(main, "shadow"),
      controlOk: main.repo === "1" && readFileSync(facts.secretFile, "utf8").includes(facts.canary),
      detail: show(main, ["secret", "shadow", "repo"]),
    }),
  },
  {
    id: "reserved-objects",
    rows: ["reserved-objects"],
    claim: "reserved objects masked, hard links included",
    tried: "read a reserved file, a hard link to it and a reserved folder inside a folder the seat may read",
    control: "the same read-only folder's other file is readable in the seat",
    kind: "batch",
    main: (f) =>
      [
        kv("reserved-objects", "file", `$(cat ${f.reservedFile} 2>/dev/null | grep -c ${f.canary})`),
        kv("reserved-objects", "link", `$(cat ${f.hardLink} 2>/dev/null | grep -c ${f.canary})`),
        kv("reserved-objects", "dir", `$(cat ${f.reservedDir}/HEAD 2>/dev/null | grep -c ${f.canary})`),
        kv("reserved-objects", "notes", `$(grep -c 'shared notes' ${f.shared}/notes.txt 2>/dev/null)`),
      ].join("; "),
    judge: ({ facts, main }) => ({
      held: main.file === "0" && main.link === "0" && main.dir === "0",
      controlOk: main.notes === "1" && readFileSync(facts.hardLink, "utf8").includes(facts.canary),
      detail: show(main, ["file", "link", "dir", "notes"]),
    }),
  },
  {
    id: "write-outside",
    rows: ["containment"],
    claim: "no write outside its repository, home and tmp",
    tried: "write into a folder outside the plan, into a read-only root and beside its own folders (all owned by the seat's uid)",
    control: "a write into its own tmp lands on the host",
    kind: "batch",
    main: (f) =>
      `for t in ${f.outside}/w ${f.shared}/w ${f.base}/w; do (echo x > $t) 2>/dev/null; done; echo x > ${f.tmp}/w-ok; ${kv("write-outside", "own", "$?")}`,
    judge: ({ facts, main }) => {
      const landed = [join(facts.outside, "w"), join(facts.shared, "w"), join(facts.base, "w")].filter((p) => existsSync(p));
      return {
        held: landed.length === 0,
        controlOk: main.own === "0" && existsSync(join(facts.tmp, "w-ok")),
        detail: landed.length ? `landed on the host: ${landed.join(", ")}` : "nothing landed outside",
      };
    },
  },
  {
    id: "host-sockets",
    rows: ["containment", "caller-placement"],
    claim: "no host unix socket (filesystem or abstract) but the seat's own",
    tried: "connect to a live host socket in a readable folder, one outside the plan, and a host abstract socket",
    control: "the host reaches all three; the control seat (masks off) reaches the first; the seat reaches its own socket",
    kind: "batch",
    main: (f) =>
      `${f.node} ${helper(f, "net")} host-sockets shared=${f.sharedSocket} outside=${f.outsideSocket} abstract=@${f.abstractName} own=/run/teamd/shim.sock`,
    controlScript: (f) => `${f.node} ${helper(f, "net")} host-sockets shared=${f.sharedSocket}`,
    judge: ({ main, control, host }) => ({
      held: ["shared", "outside", "abstract"].every((k) => main[k] !== undefined && main[k] !== HOST_REPLY),
      controlOk: main.own === SEAT_REPLY && control.shared === HOST_REPLY && ["shared", "outside", "abstract"].every((k) => host[k] === HOST_REPLY),
      detail: show(main, ["shared", "outside", "abstract", "own"]),
    }),
  },
  {
    id: "host-loopback",
    rows: ["containment"],
    claim: "no host loopback service",
    tried: "connect to a service on the host's 127.0.0.1",
    control: "the host reaches it",
    kind: "batch",
    main: (f) => `${f.node} ${helper(f, "net")} host-loopback service=tcp:127.0.0.1:${f.loopbackPort}`,
    judge: ({ main, host }) => ({
      held: main.service !== undefined && main.service !== HOST_REPLY,
      controlOk: host.loopback === HOST_REPLY,
      detail: show(main, ["service"]),
    }),
  },
  {
    id: "egress-no-route",
    rows: ["egress"],
    claim: "a connection that ignores the proxy finds no route out",
    tried: "connect straight to an outside address (192.0.2.1:80), and list the seat's network interfaces",
    control: "the seat connects to a listener on its own loopback",
    kind: "batch",
    main: (f) =>
      `${f.node} ${helper(f, "net")} egress-no-route out=tcp:192.0.2.1:80 self=self; ${kv("egress-no-route", "ifaces", "$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | grep -vx lo | wc -l)")}`,
    judge: ({ main }) => ({
      held: main.out !== undefined && main.out.startsWith("error ") && main.out !== "error TIMEOUT" && main.ifaces === "0",
      controlOk: main.self === "self",
      detail: show(main, ["out", "ifaces", "self"]),
    }),
  },
  {
    id: "host-processes",
    rows: ["containment"],
    claim: "no seeing or signalling host processes, nor reading the daemon's environment",
    tried: "SIGKILL a host process and the selftest, read every /proc/*/environ and its own environment for a canary, count the visible processes",
    control: "the seat kills a process of its own; the victim's environment on the host holds the canary",
    kind: "batch",
    main: (f) =>
      [
        `kill -9 ${f.victimPid} 2>/dev/null; ${kv("host-processes", "kill", "$?")}`,
        `kill -0 ${f.selftestPid} 2>/dev/null; ${kv("host-processes", "selftest", "$?")}`,
        kv("host-processes", "environ", `$(cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c ${f.canary})`),
        kv("host-processes", "env", `$(env | grep -c ${f.canary})`),
        kv("host-processes", "visible", "$(ls /proc | grep -cE '^[0-9]+$')"),
        `sleep 30 & own=$!; kill -9 $own; ${kv("host-processes", "own", "$?")}`,
      ].join("; "),
    judge: ({ facts, main }) => {
      let alive = true;
      try {
        process.kill(facts.victimPid, 0);
      } catch {
        alive = false;
      }
      let victimEnv = "";
      try {
        victimEnv = readFileSync(`/proc/${facts.victimPid}/environ`, "utf8");
      } catch {
        victimEnv = "";
      }
      return {
        held: alive && nonzero(main, "kill", "selftest") && main.environ === "0" && main.env === "0" && Number(main.visible ?? 99) < 10,
        controlOk: main.own === "0" && victimEnv.includes(facts.canary),
        detail: `${show(main, ["kill", "selftest", "environ", "env", "visible", "own"])}; victim ${alive ? "alive" : "gone"}`,
      };
    },
  },
  {
    id: "namespaces",
    rows: ["containment"],
    claim: "no namespace of any kind, no nsenter into a host namespace",
    tried: "unshare user, mount, net, pid, ipc, uts, cgroup (and user+mount as root); nsenter a host process's namespaces",
    control: "unshare and nsenter run in the seat (the failures are refusals, not a missing tool)",
    kind: "batch",
    main: (f) =>
      [
        ...["-U", "-m", "-n", "-p -f", "-i", "-u", "-C", "-U -r -m"].map((flags, i) => `unshare ${flags} true 2>/dev/null; ${kv("namespaces", `u${i}`, "$?")}`),
        `nsenter -t ${f.victimPid} -m -u -n true 2>/dev/null; ${kv("namespaces", "nsenter", "$?")}`,
        `unshare --version >/dev/null 2>&1 && nsenter --version >/dev/null 2>&1; ${kv("namespaces", "tools", "$?")}`,
      ].join("; "),
    judge: ({ main }) => {
      const keys = ["u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7", "nsenter"];
      return { held: nonzero(main, ...keys), controlOk: main.tools === "0", detail: show(main, keys) };
    },
  },
  {
    id: "mount",
    rows: ["containment"],
    claim: "no mount",
    tried: "mount a tmpfs, a bind, a proc over its own folder; remount / read-write",
    control: "the folder the mounts aim at is its own and writable; mount runs",
    kind: "batch",
    main: (f) =>
      [
        `mkdir -p ${f.tmp}/m`,
        `mount -t tmpfs none ${f.tmp}/m 2>/dev/null; ${kv("mount", "tmpfs", "$?")}`,
        `mount --bind ${f.tmp} ${f.tmp}/m 2>/dev/null; ${kv("mount", "bind", "$?")}`,
        `mount -t proc proc ${f.tmp}/m 2>/dev/null; ${kv("mount", "proc", "$?")}`,
        `mount -o remount,rw / 2>/dev/null; ${kv("mount", "remount", "$?")}`,
        `touch ${f.tmp}/m/ok; ${kv("mount", "own", "$?")}`,
        `mount --version >/dev/null 2>&1; ${kv("mount", "tool", "$?")}`,
      ].join("; "),
    judge: ({ main }) => ({
      held: nonzero(main, "tmpfs", "bind", "proc", "remount"),
      controlOk: main.own === "0" && main.tool === "0",
      detail: show(main, ["tmpfs", "bind", "proc", "remount"]),
    }),
  },
  {
    id: "ptrace",
    rows: ["containment"],
    claim: "no ptrace of a host process or the daemon",
    tried: "PTRACE_ATTACH a host process and the selftest",
    control: "the same call attaches to a process of the seat's own",
    kind: "batch",
    requires: "python3",
    main: (f) => `sleep 30 & own=$!; python3 ${helper(f, "ptrace")} own=$own victim=${f.victimPid} selftest=${f.selftestPid}; kill -9 $own`,
    judge: ({ facts, main }) => {
      let tracer = "?";
      try {
        tracer = /^TracerPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${facts.victimPid}/status`, "utf8"))?.[1] ?? "?";
      } catch {
        tracer = "gone";
      }
      return {
        held: nonzero(main, "victim", "selftest") && tracer === "0",
        controlOk: main.own === "0",
        detail: `${show(main, ["own", "victim", "selftest"])}; victim's TracerPid ${tracer}`,
      };
    },
  },
  {
    id: "proc-sys",
    rows: ["containment"],
    claim: "no write to /proc/sys or /proc/sysrq-trigger",
    tried: "write kernel.domainname, kernel.hostname, kernel.sysrq and /proc/sysrq-trigger",
    control: "the seat reads /proc/sys/kernel/ostype",
    kind: "batch",
    main: () =>
      [
        `(echo teamd-selftest > /proc/sys/kernel/domainname) 2>/dev/null; ${kv("proc-sys", "domainname", "$?")}`,
        `(echo teamd-selftest > /proc/sys/kernel/hostname) 2>/dev/null; ${kv("proc-sys", "hostname", "$?")}`,
        `(echo 0 > /proc/sys/kernel/sysrq) 2>/dev/null; ${kv("proc-sys", "sysrq", "$?")}`,
        `(echo h > /proc/sysrq-trigger) 2>/dev/null; ${kv("proc-sys", "trigger", "$?")}`,
        kv("proc-sys", "ostype", "$(cat /proc/sys/kernel/ostype)"),
      ].join("; "),
    judge: ({ main }) => {
      const domain = (() => {
        try {
          return readFileSync("/proc/sys/kernel/domainname", "utf8").trim();
        } catch {
          return "?";
        }
      })();
      return {
        held: nonzero(main, "domainname", "hostname", "sysrq", "trigger") && domain !== "teamd-selftest",
        controlOk: main.ostype === "Linux",
        detail: show(main, ["domainname", "hostname", "sysrq", "trigger"]),
      };
    },
  },
  {
    id: "sys",
    rows: ["containment"],
    claim: "no /sys, nor a sysfs mount",
    tried: "list /sys/kernel, mount a sysfs",
    control: "the host has /sys/kernel",
    kind: "batch",
    main: (f) =>
      `ls /sys/kernel >/dev/null 2>&1; ${kv("sys", "ls", "$?")}; mkdir -p ${f.tmp}/s; mount -t sysfs sysfs ${f.tmp}/s 2>/dev/null; ${kv("sys", "mount", "$?")}`,
    judge: ({ main }) => ({ held: nonzero(main, "ls", "mount"), controlOk: existsSync("/sys/kernel"), detail: show(main, ["ls", "mount"]) }),
  },
  {
    id: "devices",
    rows: ["containment"],
    claim: "a minimal /dev and no device node",
    tried: "mknod a character and a block device; look for kmsg, mem, disks, kvm in /dev",
    control: "mknod of a fifo in the same folder works",
    kind: "batch",
    main: (f) =>
      [
        `mknod ${f.home}/mem c 1 1 2>/dev/null; ${kv("devices", "char", "$?")}`,
        `mknod ${f.tmp}/sda b 8 0 2>/dev/null; ${kv("devices", "block", "$?")}`,
        `mknod ${f.home}/fifo p 2>/dev/null; ${kv("devices", "fifo", "$?")}`,
        kv("devices", "listed", "$(ls /dev | grep -cE '^(kmsg|mem|kmem|port|sda|vda|nvme0|kvm)$')"),
      ].join("; "),
    judge: ({ facts, main }) => ({
      held: nonzero(main, "char", "block") && main.listed === "0" && !existsSync(join(facts.home, "mem")),
      controlOk: main.fifo === "0",
      detail: show(main, ["char", "block", "listed"]),
    }),
  },
  {
    id: "seccomp-families",
    rows: ["seccomp"],
    claim: "every family of the seccomp table gets the filter's answer",
    tried:
      "raw syscalls of every family (io_uring, userfaultfd, keyring, perf, bpf, namespaces, clone3, mount, host-admin, numa, personality, tty, ldt, fanotify, other ABIs)",
    control: "the same probe in the same seat without the filter gets the kernel's own, different answer in each family",
    kind: "batch",
    requires: "python3-x86_64",
    main: (f) => kv("seccomp-families", "json", `$(python3 ${helper(f, "seccomp")} 2>/dev/null)`),
    controlScript: (f) => kv("seccomp-families", "json", `$(python3 ${helper(f, "seccomp")} 2>/dev/null)`),
    judge: ({ main, control }) => judgeSeccomp(main.json, control.json),
  },
  {
    id: "keyring-between-seats",
    rows: ["seccomp"],
    claim: "the keyring between seats: no key added, found or read",
    tried: "leave a key in the uid's user keyring and look for one in /proc/keys",
    control:
      "two seats of one uid without the filter and masks pass a canary through the keyring (a key's name, and its payload where the kernel lets the uid read it)",
    kind: "keyring",
    requires: "python3",
    judge: ({ facts, main, control }) => ({
      held: main.put !== "ok" && main.seen === "0",
      // The name a key carries is a channel of its own (/proc/keys lists it to the uid); its payload too where the uid may read it.
      controlOk: control.put === "ok" && (control.got ?? "").split(",").includes(`${facts.canary}-key`),
      detail: `${show(main, ["put", "list", "seen"])}; control: ${show(control, ["put", "seen", "got", "read"])}`,
    }),
  },
  {
    id: "limits-processes",
    rows: ["containment"],
    claim: "processes held at the seat's pids limit",
    tried: "fork 96 processes in a seat limited to 32 (bounded: not a real fork bomb, so a broken limit harms nothing)",
    control: "the same fan-out in a seat of its own cgroup without the limit holds more than 32",
    kind: "limits",
    requires: "seat-cgroups",
    judge: ({ main, control }) => ({
      held: Number(main.peak ?? 999) <= 32 && Number(main.refused ?? 0) > 0,
      controlOk: Number(control.peak ?? 0) > 32,
      detail: `peak ${main.peak ?? "?"} of 32, forks refused ${main.refused ?? "?"}; without the limit: ${control.peak ?? "?"}`,
    }),
  },
  {
    id: "limits-memory",
    rows: ["containment"],
    claim: "memory held at the seat's limit (OOM-killed inside the seat)",
    tried: "allocate 256 MiB in 16 MiB chunks in a seat limited to 96 MiB",
    control: "the same balloon in a seat of its own cgroup without the limit completes",
    kind: "limits",
    requires: "seat-cgroups",
    judge: ({ main, control }) => ({
      held: main.status === "137" && Number(main.chunks ?? 99) < 6,
      controlOk: control.status === "0" && control.chunks === "16",
      detail: `balloon status ${main.status ?? "?"} after ${main.chunks ?? "?"} chunks; without the limit: status ${control.status ?? "?"}, ${control.chunks ?? "?"} chunks`,
    }),
  },
];

/** The balloon (limits-memory), for both limits seats: prints how far it got and how it ended. */
export function balloonScript(node: string): string {
  return (
    `${node} -e 'const a=[]; for (let i=0;i<16;i++){ a.push(Buffer.alloc(16<<20, 1)); console.log("@limits-memory chunk=" + i); }'; ` +
    `${kv("limits-memory", "status", "$?")}`
  );
}

/** The bounded fan-out (limits-processes): 96 sleepers at most; the host reads the cgroup's count. */
export function fanOutScript(): string {
  return `i=0; while [ $i -lt 96 ]; do (sleep 20 &) 2>/dev/null; i=$((i+1)); done; ${kv("limits-processes", "spawned", "done")}`;
}

/** The main seat's (`main`) or control seat's (`control`) whole script for the batch attacks that apply. */
export function batchScript(attacks: readonly Attack[], facts: Facts, seat: "main" | "control"): string {
  const parts = attacks
    .filter((a) => a.kind === "batch")
    .map((a) => (seat === "main" ? a.main : a.controlScript)?.(facts))
    .filter((s): s is string => s !== undefined);
  // inherited-fds lists the shell's fds first: nothing before it opens one.
  return parts.map((p) => `{ ${p}; }`).join("\n") + `\n${kv("end", "seat", seat)}\n`;
}

const LINE = /^@([a-z0-9-]+) ([a-z0-9_]+)=(.*)$/;
/** A value longer than this is cut (the seccomp probe's JSON is ~1.5 KB). */
const VALUE_CAP = 8 * 1024;

/** `@ATTACK KEY=VALUE` lines -> attack -> key -> value (the first value of a key wins; anything else is ignored). */
export function parseProbeLines(stdout: string): Map<string, Record<string, string>> {
  const out = new Map<string, Record<string, string>>();
  for (const line of stdout.split("\n")) {
    const m = LINE.exec(line);
    if (m === null) continue;
    const [, attack, key, value] = m as unknown as [string, string, string, string];
    const entry = out.get(attack) ?? {};
    if (!Object.prototype.hasOwnProperty.call(entry, key)) entry[key] = value.slice(0, VALUE_CAP);
    out.set(attack, entry);
  }
  return out;
}
