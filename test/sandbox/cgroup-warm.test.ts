import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { warmCgroupMoves, warmTarget, writeOwnPid } from "../../src/sandbox/cgroup-warm.js";

/**
 * The warm-up of the kernel's cgroup move (src/sandbox/cgroup-warm.ts, issue 26): the daemon
 * writes its own pid into the cgroup it is already in. What it may write is decided from
 * /proc/self/mounts and /proc/self/cgroup (a table); the write never creates a file and never
 * follows a link; and done for real (as root, with cgroups), it leaves the process where it was.
 * What it saves is measured by `npm run bench` (startup.teamd-exec, startup.push-1mib), not here.
 */
const HYBRID_MOUNTS = `tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
`;
const V1_MOUNTS = HYBRID_MOUNTS.split("\n")
  .filter((line) => !line.startsWith("cgroup2"))
  .join("\n");
const V2_MOUNTS = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0\n";

describe("warmTarget: the daemon's own cgroup.procs, in one hierarchy", () => {
  it.each([
    ["hybrid: v2 first, where the daemon is at the root", HYBRID_MOUNTS, "8:pids:/\n4:memory:/a\n0::/\n", "/sys/fs/cgroup/unified/cgroup.procs"],
    [
      "hybrid, the daemon in a v2 service cgroup",
      HYBRID_MOUNTS,
      "0::/system.slice/teamd.service\n",
      "/sys/fs/cgroup/unified/system.slice/teamd.service/cgroup.procs",
    ],
    ["pure v2", V2_MOUNTS, "0::/user.slice/teamd\n", "/sys/fs/cgroup/user.slice/teamd/cgroup.procs"],
    [
      "v1 only: the first hierarchy with a controller that names the daemon",
      V1_MOUNTS,
      "9:name=systemd:/\n8:pids:/p\n4:memory:/m\n1:cpu:/c\n",
      "/sys/fs/cgroup/cpu/c/cgroup.procs",
    ],
    ["v1, the daemon's place unknown in the first: the next", V1_MOUNTS, "8:pids:/p\n", "/sys/fs/cgroup/pids/p/cgroup.procs"],
    ["no cgroup mounted", "proc /proc proc rw 0 0\n", "0::/\n", undefined],
    ["v2 mounted, the daemon outside this namespace's view", V2_MOUNTS, "0::/../../other\n", undefined],
    ["v2 mounted, the daemon's cgroup removed", V2_MOUNTS, "0::/gone (deleted)\n", undefined],
    ["v2 mounted, a path that is not absolute", V2_MOUNTS, "0::relative\n", undefined],
    ["nothing read", "", "", undefined],
  ])("%s", (_what, mounts, self, expected) => {
    expect(warmTarget(mounts, self)).toBe(expected);
  });
});

describe("writeOwnPid", () => {
  const dir = mkdtempSync(join(tmpdir(), "teamd-cgroup-warm-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("writes this process's pid into a file that is there, then calls done", async () => {
    const file = join(dir, "procs");
    writeFileSync(file, "");
    await new Promise<void>((resolve) => expect(writeOwnPid(file, resolve)).toBe(true));
    expect(readFileSync(file, "utf8")).toBe(String(process.pid));
  });

  it("never creates the file, and never follows a link to one (false, done never called)", () => {
    const missing = join(dir, "no-such-procs");
    let called = false;
    expect(writeOwnPid(missing, () => (called = true))).toBe(false);
    expect(existsSync(missing)).toBe(false);
    const real = join(dir, "real");
    writeFileSync(real, "untouched");
    symlinkSync(real, join(dir, "link"));
    expect(writeOwnPid(join(dir, "link"), () => (called = true))).toBe(false);
    expect(readFileSync(real, "utf8")).toBe("untouched");
    expect(called).toBe(false);
  });
});

const procsTarget = (): string | undefined => warmTarget(readFileSync("/proc/self/mounts", "utf8"), readFileSync("/proc/self/cgroup", "utf8"));

describe.runIf(process.platform === "linux" && process.getuid?.() === 0 && procsTarget() !== undefined)("warmCgroupMoves, for real (root, cgroups)", () => {
  it("moves the process into the cgroup it is in: every hierarchy's place is the same after, and the write went through", async () => {
    const before = readFileSync("/proc/self/cgroup", "utf8");
    const target = procsTarget() as string;
    // The write the warm makes, made the same way and waited for: it is accepted (the kernel took it).
    await new Promise<void>((resolve) => expect(writeOwnPid(target, resolve)).toBe(true));
    expect(readFileSync(target, "utf8").split("\n")).toContain(String(process.pid));
    warmCgroupMoves();
    // A second call while the first is in flight is a no-op; both leave the process where it was.
    warmCgroupMoves();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(readFileSync("/proc/self/cgroup", "utf8")).toBe(before);
  });
});
