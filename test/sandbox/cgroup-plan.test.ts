import { describe, expect, it } from "vitest";
import { cpuMillis, homeCgroupRoots, parseCgroupMounts, parseSelfCgroup, planCgroups, type CgroupFacts } from "../../src/sandbox/cgroup-plan.js";

/**
 * The seat's cgroups as data (pure): which folders, which limit files, where the init goes,
 * what kills and meters it — on this machine's layout (v1 controllers beside an empty v2 at
 * /sys/fs/cgroup/unified), on a pure v2 host with controllers, and where nothing is writable.
 */
const HYBRID_MOUNTS = `tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
`;
const HYBRID_SELF = `9:name=systemd:/
8:pids:/
4:memory:/process_api/abc
2:cpuacct:/
1:cpu:/
0::/
`;
const hybrid = (writable = true): CgroupFacts => {
  const mounts = parseCgroupMounts(HYBRID_MOUNTS);
  return { mounts, self: parseSelfCgroup(HYBRID_SELF), v2Controllers: [], writable: writable ? mounts.map((m) => m.path) : [] };
};
const name = { home: "h1", team: "web", seat: "a", run: "r1" };

describe("planCgroups (pure)", () => {
  it("parses the mounts and the daemon's own cgroups", () => {
    const facts = hybrid();
    expect(facts.mounts.map((m) => `${m.type}:${m.path}:${m.controllers.join(",")}`)).toEqual([
      "cgroup:/sys/fs/cgroup/cpu:cpu",
      "cgroup:/sys/fs/cgroup/cpuacct:cpuacct",
      "cgroup:/sys/fs/cgroup/memory:memory",
      "cgroup:/sys/fs/cgroup/pids:pids",
      "cgroup:/sys/fs/cgroup/systemd:",
      "cgroup2:/sys/fs/cgroup/unified:",
    ]);
    expect(facts.self).toEqual({ "0": "/", pids: "/", memory: "/process_api/abc", cpuacct: "/", cpu: "/" });
  });

  it("hybrid host: v2 for kill and CPU metering, v1 for the limits, under the daemon's own cgroup", () => {
    const decision = planCgroups(hybrid(), name, { memoryBytes: 512 * 1024 ** 2, processes: 64, cpus: 1.5 });
    if (decision.kind !== "cgroup") throw new Error(decision.reason);
    const { plan } = decision;
    expect(plan.leaves).toEqual([
      "/sys/fs/cgroup/unified/teamd/h1/web/a-r1",
      "/sys/fs/cgroup/cpu/teamd/h1/web/a-r1",
      "/sys/fs/cgroup/memory/process_api/abc/teamd/h1/web/a-r1",
      "/sys/fs/cgroup/pids/teamd/h1/web/a-r1",
    ]);
    expect(plan.mkdir.slice(0, 4)).toEqual([
      "/sys/fs/cgroup/unified/teamd",
      "/sys/fs/cgroup/unified/teamd/h1",
      "/sys/fs/cgroup/unified/teamd/h1/web",
      "/sys/fs/cgroup/unified/teamd/h1/web/a-r1",
    ]);
    expect(plan.writes).toEqual([
      { file: "/sys/fs/cgroup/cpu/teamd/h1/web/a-r1/cpu.cfs_period_us", value: "100000" },
      { file: "/sys/fs/cgroup/cpu/teamd/h1/web/a-r1/cpu.cfs_quota_us", value: "150000" },
      { file: "/sys/fs/cgroup/memory/process_api/abc/teamd/h1/web/a-r1/memory.limit_in_bytes", value: "536870912" },
      { file: "/sys/fs/cgroup/memory/process_api/abc/teamd/h1/web/a-r1/memory.memsw.limit_in_bytes", value: "536870912", optional: true },
      { file: "/sys/fs/cgroup/pids/teamd/h1/web/a-r1/pids.max", value: "64" },
    ]);
    expect(plan.procs).toEqual(plan.leaves.map((l) => `${l}/cgroup.procs`));
    expect(plan.kill).toBe("/sys/fs/cgroup/unified/teamd/h1/web/a-r1/cgroup.kill");
    expect(plan.freeze).toEqual({
      file: "/sys/fs/cgroup/unified/teamd/h1/web/a-r1/cgroup.freeze",
      events: "/sys/fs/cgroup/unified/teamd/h1/web/a-r1/cgroup.events",
    });
    expect(plan.meter).toEqual({
      cpu: { file: "/sys/fs/cgroup/unified/teamd/h1/web/a-r1/cpu.stat", kind: "v2-cpu.stat" },
      memory: { file: "/sys/fs/cgroup/memory/process_api/abc/teamd/h1/web/a-r1/memory.usage_in_bytes", kind: "bytes" },
      processes: { file: "/sys/fs/cgroup/pids/teamd/h1/web/a-r1/pids.current" },
    });
    expect([...plan.byCgroup].sort()).toEqual(["cpus", "memoryBytes", "processes"]);
    expect(plan.summary).toBe("v2 (kill), v1 (cpus 1.5, memory 512M, pids 64)");
  });

  it("no limits asked: the cgroups still exist, for kill and metering, and write no limit", () => {
    const decision = planCgroups(hybrid(), name, "none");
    if (decision.kind !== "cgroup") throw new Error(decision.reason);
    expect(decision.plan.writes).toEqual([]);
    expect(decision.plan.byCgroup).toEqual([]);
    expect(decision.plan.kill).toBeDefined();
  });

  it("pure v2 with controllers: enables them down to the seat and writes the v2 limit files", () => {
    const mounts = parseCgroupMounts("cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n");
    const facts: CgroupFacts = {
      mounts,
      self: parseSelfCgroup("0::/system.slice/teamd.service\n"),
      v2Controllers: ["cpu", "memory", "pids", "io"],
      writable: ["/sys/fs/cgroup"],
    };
    const decision = planCgroups(facts, name, { memoryBytes: 256 * 1024 ** 2, processes: 100, cpus: 0.5 });
    if (decision.kind !== "cgroup") throw new Error(decision.reason);
    const base = "/sys/fs/cgroup/system.slice/teamd.service";
    const leaf = `${base}/teamd/h1/web/a-r1`;
    expect(decision.plan.leaves).toEqual([leaf]);
    expect(decision.plan.writes).toEqual([
      { file: `${base}/cgroup.subtree_control`, value: "+memory +pids +cpu" },
      { file: `${base}/teamd/cgroup.subtree_control`, value: "+memory +pids +cpu" },
      { file: `${base}/teamd/h1/cgroup.subtree_control`, value: "+memory +pids +cpu" },
      { file: `${base}/teamd/h1/web/cgroup.subtree_control`, value: "+memory +pids +cpu" },
      { file: `${leaf}/memory.max`, value: "268435456" },
      { file: `${leaf}/memory.swap.max`, value: "0", optional: true },
      { file: `${leaf}/pids.max`, value: "100" },
      { file: `${leaf}/cpu.max`, value: "50000 100000" },
    ]);
    expect(decision.plan.meter.memory?.file).toBe(`${leaf}/memory.current`);
    expect(decision.plan.summary).toBe("v2 (kill, memory 256M, pids 100, cpus 0.5)");
  });

  it("nothing writable (an ordinary user, no delegated subtree): no cgroup, with the reason", () => {
    const decision = planCgroups(hybrid(false), name, { processes: 10 });
    expect(decision).toEqual({ kind: "none", reason: expect.stringMatching(/not root, and no delegated cgroup subtree/) });
  });

  it("a controller the host lacks is not claimed (the launcher falls back or refuses)", () => {
    const facts = hybrid();
    const noPids: CgroupFacts = { ...facts, mounts: facts.mounts.filter((m) => !m.controllers.includes("pids")) };
    const decision = planCgroups(noPids, name, { processes: 10, memoryBytes: 64 * 1024 ** 2 });
    if (decision.kind !== "cgroup") throw new Error(decision.reason);
    expect(decision.plan.byCgroup).toEqual(["memoryBytes"]);
  });

  it("refuses names that cannot be a cgroup folder", () => {
    expect(planCgroups(hybrid(), { ...name, seat: "../x" }, "none").kind).toBe("none");
  });

  it("finds this home's roots for the sweep, and reads the CPU counters", () => {
    expect(homeCgroupRoots(hybrid(), "h1")).toEqual([
      "/sys/fs/cgroup/cpu/teamd/h1",
      "/sys/fs/cgroup/cpuacct/teamd/h1",
      "/sys/fs/cgroup/memory/process_api/abc/teamd/h1",
      "/sys/fs/cgroup/pids/teamd/h1",
      "/sys/fs/cgroup/unified/teamd/h1",
    ]);
    expect(cpuMillis("v2-cpu.stat", "usage_usec 1234567\nuser_usec 1\n")).toBe(1234);
    expect(cpuMillis("v1-cpuacct.usage", "2500000000\n")).toBe(2500);
  });
});
