import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { bwrapArgs, missingFeatures, mountArgs } from "../../src/sandbox/bwrap-args.js";
import { classifyBwrapFailure } from "../../src/sandbox/bwrap-failure.js";
import { rlimitPrefix } from "../../src/sandbox/rlimit-args.js";
import { compilePlan } from "../../src/sandbox/plan.js";
import type { SandboxPlan } from "../../src/sandbox/plan-types.js";
import { baseInput } from "./support/plan-fixture.js";

function basePlan(): SandboxPlan {
  const result = compilePlan(baseInput());
  if (result.decision !== "plan") throw new Error(result.reason);
  return result.plan;
}

describe("bwrapArgs (pure)", () => {
  const plan = basePlan();
  const argv = (() => {
    const out = bwrapArgs(plan, ["/bin/sh", "-c", "echo hi"]);
    if (!out.ok) throw new Error(out.refusal.reason);
    return out.value;
  })();

  it("unshares every namespace, the user namespace explicitly, and then forbids new ones", () => {
    expect(argv.slice(0, 8)).toEqual([
      "--unshare-all",
      "--unshare-user",
      "--disable-userns",
      "--assert-userns-disabled",
      "--die-with-parent",
      "--new-session",
      "--cap-drop",
      "ALL",
    ]);
    expect(argv).not.toContain("--share-net");
  });

  it("clears the environment before setting exactly the plan's", () => {
    const clear = argv.indexOf("--clearenv");
    const sets = argv.flatMap((a, i) => (a === "--setenv" ? [i] : []));
    expect(sets.every((i) => i > clear)).toBe(true);
    expect(sets.map((i) => argv[i + 1])).toEqual(Object.keys(plan.env));
  });

  it("sets uid, gid, hostname and cwd, then the status fd, then -- and the command", () => {
    expect(argv.slice(argv.indexOf("--uid"), argv.indexOf("--uid") + 4)).toEqual(["--uid", "998", "--gid", "998"]);
    expect(argv.slice(-8)).toEqual(["--chdir", plan.cwd, "--json-status-fd", "3", "--", "/bin/sh", "-c", "echo hi"]);
  });

  it("never binds / and turns masks into unopenable files and empty read-only folders", () => {
    for (let i = 0; i < argv.length; i++) if (argv[i] === "--ro-bind" || argv[i] === "--bind") expect(argv[i + 1]).not.toBe("/");
    expect(mountArgs({ op: "mask", dest: "/a/f", kind: "file", why: "" })).toEqual(["--ro-bind", "/dev/null", "/a/f"]);
    expect(mountArgs({ op: "mask", dest: "/a/d", kind: "dir", why: "" })).toEqual(["--perms", "0000", "--tmpfs", "/a/d", "--remount-ro", "/a/d"]);
    expect(mountArgs({ op: "tmpfs", dest: "/tmp", size: 1024 })).toEqual(["--size", "1024", "--tmpfs", "/tmp"]);
  });

  it("refuses an empty command or a NUL in an argument", () => {
    expect(bwrapArgs(plan, [])).toMatchObject({ ok: false });
    expect(bwrapArgs(plan, [""])).toMatchObject({ ok: false });
    expect(bwrapArgs(plan, ["/bin/echo", "a\u0000b"])).toMatchObject({ ok: false });
  });
});

describe("bubblewrap features", () => {
  it("finds what an old bubblewrap lacks", () => {
    const old =
      "    --unshare-all                Unshare every namespace\n    --die-with-parent            Kills\n    --json-status-fd FD          x\n    --perms OCTAL x\n";
    expect(missingFeatures(old)).toEqual(["--disable-userns (bubblewrap 0.8.0)", "--assert-userns-disabled (bubblewrap 0.8.0)", "--size (bubblewrap 0.7.0)"]);
  });

  it.runIf(existsSync("/usr/bin/bwrap"))("finds nothing missing in the installed bubblewrap (0.8.0 here)", () => {
    const help = execFileSync("/usr/bin/bwrap", ["--help"], { encoding: "utf8" });
    expect(missingFeatures(help)).toEqual([]);
  });
});

describe("classifyBwrapFailure (messages captured from bubblewrap 0.8.0)", () => {
  it.each([
    ["bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)\n", "userns", "containment.unavailable"],
    [
      "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'.\n",
      "userns",
      "containment.unavailable",
    ],
    ["bwrap: setting up uid map: Permission denied\n", "userns", "containment.unavailable"],
    ["bwrap: Can't find source path /srv/data: No such file or directory\n", "bind-source", "containment.failed"],
    ["bwrap: execvp /nonexistent/agent: No such file or directory\n", "exec", "containment.failed"],
    ["bwrap: Can't mkdir /x: Read-only file system\n", "mount", "containment.failed"],
    ["something odd\n", "other", "containment.failed"],
  ])("%j", (stderr, kind, rule) => {
    const failure = classifyBwrapFailure(stderr);
    expect(failure.kind).toBe(kind);
    expect(failure.refusal.rule).toBe(rule);
    expect(failure.refusal.fix.length).toBeGreaterThan(10);
  });

  it("names the missing source and how to fix it", () => {
    const { refusal } = classifyBwrapFailure("bwrap: Can't find source path /srv/data: Permission denied\n");
    expect(refusal.reason).toContain("/srv/data");
    expect(refusal.fix).toMatch(/not under \/root/);
  });
});

describe("rlimitPrefix (pure)", () => {
  it("maps each limit to prlimit and says the result is partial", () => {
    const out = rlimitPrefix({ memoryBytes: 1000, processes: 100, openFiles: 256 }, "/usr/bin/prlimit");
    expect(out.argv).toEqual(["/usr/bin/prlimit", "--data=1000:1000", "--nproc=100:100", "--nofile=256:256", "--"]);
    expect(out.partial).toBe(true);
    expect(out.notes.join(" ")).toMatch(/per process/);
    expect(out.unapplicable).toEqual([]);
  });

  it("leaves to the cgroup what it applies, and names a cpu quota no rlimit can express", () => {
    const all = { memoryBytes: 1000, processes: 100, cpus: 1.5, openFiles: 256 };
    const cgroup = rlimitPrefix(all, "/usr/bin/prlimit", new Set(["memoryBytes", "processes", "cpus"] as const));
    expect(cgroup.argv).toEqual(["/usr/bin/prlimit", "--nofile=256:256", "--"]);
    expect(cgroup.partial).toBe(false);
    expect(cgroup.unapplicable).toEqual([]);
    const fallback = rlimitPrefix(all, "/usr/bin/prlimit");
    expect(fallback.unapplicable.join(" ")).toMatch(/cpus/);
  });

  it("adds nothing for `limits: none` or no limits", () => {
    expect(rlimitPrefix("none", "/usr/bin/prlimit").argv).toEqual([]);
    expect(rlimitPrefix({}, "/usr/bin/prlimit").argv).toEqual([]);
  });
});
