import { showBytes } from "../kernel/start-limits.js";
import type { Limits } from "./plan-types.js";
import type { CgroupLimit } from "./rlimit-args.js";

/**
 * The seat's own cgroups, planned as data (pure; src/sandbox/cgroup-host.ts does the I/O).
 *
 * - The v2 hierarchy (wherever it is mounted: /sys/fs/cgroup, or /sys/fs/cgroup/unified beside
 *   v1) gives every seat a cgroup for `cgroup.kill` (one write ends every process in it, those
 *   `teamd exec` added included) and for CPU metering (`cpu.stat` exists without controllers),
 *   and for limits through its controllers where they are enabled.
 * - A v1 hierarchy carries each controller v2 does not offer (memory, pids, cpu, cpuacct).
 *
 * Every seat cgroup sits under the daemon's own cgroup in that hierarchy (so a limit above
 * teamd still holds above its seats), at `teamd/<home>/<team>/<seat>-<run>`: `<home>` is a short
 * hash of TEAMD_HOME, so the sweep after a crash removes only what this home left and never
 * another daemon's seats on the same machine. The launcher moves the seat's pid-namespace init
 * into every `procs` file before the seat's command runs (bwrap's --block-fd holds it), so the
 * whole tree is born inside.
 */
export interface CgroupMount {
  readonly type: "cgroup" | "cgroup2";
  readonly path: string;
  /** v1: the controllers this hierarchy carries (from the mount options; name=... excluded). */
  readonly controllers: readonly string[];
}

export interface CgroupFacts {
  readonly mounts: readonly CgroupMount[];
  /** The daemon's own cgroup per hierarchy: "0" is v2, else the comma-joined v1 controllers. */
  readonly self: Readonly<Record<string, string>>;
  /** Controllers the v2 parent (the daemon's own v2 cgroup) offers (its cgroup.controllers). */
  readonly v2Controllers: readonly string[];
  /** Hierarchy mount paths where teamd may create cgroups under its own (root, or a delegated subtree). */
  readonly writable: readonly string[];
}

export interface SeatCgroupName {
  readonly home: string;
  readonly team: string;
  readonly seat: string;
  readonly run: string;
}

export interface CgroupWrite {
  readonly file: string;
  readonly value: string;
  /** Skip when the file does not exist (e.g. memory.memsw.* without swap accounting). */
  readonly optional?: boolean;
}

export interface CgroupPlan {
  /** Folders to create, parents first (existing parents are kept). */
  readonly mkdir: readonly string[];
  /** The seat's own folders (one per hierarchy used), removed at stop. */
  readonly leaves: readonly string[];
  /** Written in order after mkdir (subtree_control of parents, then limits). */
  readonly writes: readonly CgroupWrite[];
  /** Where the init's pid is written, each before the seat's command runs. */
  readonly procs: readonly string[];
  /** v2 cgroup.kill of the seat, when the seat has a v2 cgroup. */
  readonly kill?: string;
  /** v2 cgroup.freeze of the seat and the cgroup.events that says when it took hold (with kill). */
  readonly freeze?: { readonly file: string; readonly events: string };
  readonly meter: {
    readonly cpu?: { readonly file: string; readonly kind: "v2-cpu.stat" | "v1-cpuacct.usage" };
    readonly memory?: { readonly file: string; readonly kind: "bytes" };
    readonly processes?: { readonly file: string };
  };
  /** The limits these cgroups apply (the rest falls to rlimits, or cannot be applied). */
  readonly byCgroup: readonly CgroupLimit[];
  /** In words, for status and the seat_start record: "v2 (kill), v1 memory 512M, pids 256". */
  readonly summary: string;
}

export type CgroupDecision = { readonly kind: "cgroup"; readonly plan: CgroupPlan } | { readonly kind: "none"; readonly reason: string };

const CFS_PERIOD_US = 100_000;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** /proc/self/mounts → the cgroup mounts. */
export function parseCgroupMounts(text: string): CgroupMount[] {
  const out: CgroupMount[] = [];
  for (const line of text.split("\n")) {
    const [, path, type, options] = line.split(" ");
    if (path === undefined || options === undefined) continue;
    const decoded = path.replace(/\\(\d{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
    if (type === "cgroup2") out.push({ type, path: decoded, controllers: [] });
    else if (type === "cgroup") {
      const known = [
        "memory",
        "pids",
        "cpu",
        "cpuacct",
        "cpuset",
        "freezer",
        "devices",
        "blkio",
        "net_cls",
        "net_prio",
        "perf_event",
        "hugetlb",
        "rdma",
        "misc",
      ];
      out.push({ type, path: decoded, controllers: options.split(",").filter((o) => known.includes(o)) });
    }
  }
  return out;
}

/** /proc/self/cgroup → hierarchy key ("0" for v2, else sorted v1 controllers) → path. */
export function parseSelfCgroup(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (m === null) continue;
    const [, id, controllers, path] = m as unknown as [string, string, string, string];
    if (id === "0" && controllers === "") out["0"] = path;
    else if (controllers !== "" && !controllers.startsWith("name=")) out[controllers.split(",").sort().join(",")] = path;
  }
  return out;
}

/** The folder of this seat under `base` (the daemon's own cgroup folder in one hierarchy). */
function seatDirs(base: string, name: SeatCgroupName): { parents: string[]; leaf: string } {
  const teamd = join(base, "teamd");
  const home = join(teamd, name.home);
  const team = join(home, name.team);
  return { parents: [teamd, home, team], leaf: join(team, `${name.seat}-${name.run}`) };
}

/** The folder under which this home's seat cgroups live, in one hierarchy (for the sweep). */
export function homeCgroupRoots(facts: CgroupFacts, home: string): string[] {
  const roots: string[] = [];
  for (const mount of facts.mounts) {
    const own = ownPath(facts, mount);
    if (own === undefined || !facts.writable.includes(mount.path)) continue;
    if (mount.type === "cgroup" && !mount.controllers.some((c) => ["memory", "pids", "cpu", "cpuacct"].includes(c))) continue;
    roots.push(join(join(join(mount.path, own), "teamd"), home));
  }
  return roots;
}

function ownPath(facts: CgroupFacts, mount: CgroupMount): string | undefined {
  return mount.type === "cgroup2" ? facts.self["0"] : facts.self[[...mount.controllers].sort().join(",")];
}

function join(a: string, b: string): string {
  return `${a.replace(/\/+$/, "")}/${b.replace(/^\/+/, "")}`.replace(/\/+$/, "") || "/";
}

/**
 * Plan the seat's cgroups. "none" when the host gives teamd no cgroup it may write (no root,
 * no delegated subtree): then limits fall back to rlimits (partial) and the seat is killed by
 * its init alone. A limit no hierarchy here can carry is left out of byCgroup; the launcher
 * then applies the rlimit fallback or refuses the seat (rlimit-args.ts).
 */
export function planCgroups(facts: CgroupFacts, name: SeatCgroupName, limits: Limits): CgroupDecision {
  for (const part of [name.home, name.team, name.seat, name.run]) {
    if (!NAME.test(part)) return { kind: "none", reason: `'${part}' cannot name a cgroup folder` };
  }
  const asked = limits === "none" ? {} : limits;
  const mkdir: string[] = [];
  const leaves: string[] = [];
  const writes: CgroupWrite[] = [];
  const procs: string[] = [];
  const byCgroup: CgroupLimit[] = [];
  const summary: string[] = [];
  const meter: { cpu?: CgroupPlan["meter"]["cpu"]; memory?: CgroupPlan["meter"]["memory"]; processes?: CgroupPlan["meter"]["processes"] } = {};
  let kill: string | undefined;
  let freeze: CgroupPlan["freeze"];

  const v2 = facts.mounts.find((m) => m.type === "cgroup2");
  const v2Own = v2 === undefined ? undefined : facts.self["0"];
  const v2Usable = v2 !== undefined && v2Own !== undefined && facts.writable.includes(v2.path);
  /** Controllers served by v2: offered to teamd's cgroup, and (for memory/pids/cpu) needed. */
  const v2Serves = new Set<string>();
  if (v2Usable) {
    const base = join(v2.path, v2Own);
    const dirs = seatDirs(base, name);
    for (const c of ["memory", "pids", "cpu"]) if (facts.v2Controllers.includes(c)) v2Serves.add(c);
    mkdir.push(...dirs.parents, dirs.leaf);
    leaves.push(dirs.leaf);
    // Enable the served controllers down to the seat: teamd's own cgroup, then teamd/, home/, team/.
    const enable = [...v2Serves].map((c) => `+${c}`).join(" ");
    if (enable !== "") for (const dir of [base, ...dirs.parents]) writes.push({ file: join(dir, "cgroup.subtree_control"), value: enable });
    procs.push(join(dirs.leaf, "cgroup.procs"));
    kill = join(dirs.leaf, "cgroup.kill");
    // Like cgroup.kill, cgroup.freeze is core v2: it works on a hierarchy with no controllers.
    freeze = { file: join(dirs.leaf, "cgroup.freeze"), events: join(dirs.leaf, "cgroup.events") };
    meter.cpu = { file: join(dirs.leaf, "cpu.stat"), kind: "v2-cpu.stat" };
    const v2Limits: string[] = [];
    if (v2Serves.has("memory")) {
      meter.memory = { file: join(dirs.leaf, "memory.current"), kind: "bytes" };
      if (asked.memoryBytes !== undefined) {
        writes.push({ file: join(dirs.leaf, "memory.max"), value: String(asked.memoryBytes) });
        writes.push({ file: join(dirs.leaf, "memory.swap.max"), value: "0", optional: true });
        byCgroup.push("memoryBytes");
        v2Limits.push(`memory ${showBytes(asked.memoryBytes)}`);
      }
    }
    if (v2Serves.has("pids")) {
      meter.processes = { file: join(dirs.leaf, "pids.current") };
      if (asked.processes !== undefined) {
        writes.push({ file: join(dirs.leaf, "pids.max"), value: String(asked.processes) });
        byCgroup.push("processes");
        v2Limits.push(`pids ${asked.processes}`);
      }
    }
    if (v2Serves.has("cpu") && asked.cpus !== undefined) {
      writes.push({ file: join(dirs.leaf, "cpu.max"), value: `${Math.round(asked.cpus * CFS_PERIOD_US)} ${CFS_PERIOD_US}` });
      byCgroup.push("cpus");
      v2Limits.push(`cpus ${asked.cpus}`);
    }
    summary.push(`v2 (kill${v2Limits.length > 0 ? `, ${v2Limits.join(", ")}` : ""})`);
  }

  const v1Limits: string[] = [];
  for (const mount of facts.mounts) {
    if (mount.type !== "cgroup" || !facts.writable.includes(mount.path)) continue;
    const useful = mount.controllers.filter((c) => ["memory", "pids", "cpu", "cpuacct"].includes(c) && !v2Serves.has(c));
    // cpuacct only meters: skip it when v2's cpu.stat already does.
    if (useful.length === 0 || (useful.length === 1 && useful[0] === "cpuacct" && meter.cpu !== undefined)) continue;
    const own = ownPath(facts, mount);
    if (own === undefined) continue;
    const dirs = seatDirs(join(mount.path, own), name);
    mkdir.push(...dirs.parents, dirs.leaf);
    leaves.push(dirs.leaf);
    procs.push(join(dirs.leaf, "cgroup.procs"));
    if (useful.includes("memory")) {
      meter.memory ??= { file: join(dirs.leaf, "memory.usage_in_bytes"), kind: "bytes" };
      if (asked.memoryBytes !== undefined) {
        writes.push({ file: join(dirs.leaf, "memory.limit_in_bytes"), value: String(asked.memoryBytes) });
        // With swap accounting, memory+swap gets the same cap: swap is no way around the limit.
        writes.push({ file: join(dirs.leaf, "memory.memsw.limit_in_bytes"), value: String(asked.memoryBytes), optional: true });
        byCgroup.push("memoryBytes");
        v1Limits.push(`memory ${showBytes(asked.memoryBytes)}`);
      }
    }
    if (useful.includes("pids")) {
      meter.processes ??= { file: join(dirs.leaf, "pids.current") };
      if (asked.processes !== undefined) {
        writes.push({ file: join(dirs.leaf, "pids.max"), value: String(asked.processes) });
        byCgroup.push("processes");
        v1Limits.push(`pids ${asked.processes}`);
      }
    }
    if (useful.includes("cpu") && asked.cpus !== undefined) {
      writes.push({ file: join(dirs.leaf, "cpu.cfs_period_us"), value: String(CFS_PERIOD_US) });
      writes.push({ file: join(dirs.leaf, "cpu.cfs_quota_us"), value: String(Math.round(asked.cpus * CFS_PERIOD_US)) });
      byCgroup.push("cpus");
      v1Limits.push(`cpus ${asked.cpus}`);
    }
    if (useful.includes("cpuacct")) meter.cpu ??= { file: join(dirs.leaf, "cpuacct.usage"), kind: "v1-cpuacct.usage" };
  }
  if (leaves.length === 0) {
    return {
      kind: "none",
      reason: facts.mounts.length === 0 ? "no cgroup hierarchy is mounted" : "teamd may not create cgroups here (not root, and no delegated cgroup subtree)",
    };
  }
  if (v1Limits.length > 0) summary.push(`v1 (${v1Limits.join(", ")})`);
  else if (!v2Usable) summary.push("v1 (metering only)");
  return {
    kind: "cgroup",
    plan: {
      mkdir: [...new Set(mkdir)],
      leaves,
      writes,
      procs,
      ...(kill !== undefined ? { kill } : {}),
      ...(freeze !== undefined ? { freeze } : {}),
      meter,
      byCgroup: [...new Set(byCgroup)],
      summary: summary.join(", "),
    },
  };
}

/** cpu.stat (v2, usage_usec) or cpuacct.usage (v1, nanoseconds) → milliseconds. */
export function cpuMillis(kind: "v2-cpu.stat" | "v1-cpuacct.usage", text: string): number | undefined {
  if (kind === "v1-cpuacct.usage") {
    const ns = Number(text.trim());
    return Number.isFinite(ns) ? Math.floor(ns / 1e6) : undefined;
  }
  const m = /^usage_usec (\d+)$/m.exec(text);
  return m === null ? undefined : Math.floor(Number(m[1]) / 1000);
}
