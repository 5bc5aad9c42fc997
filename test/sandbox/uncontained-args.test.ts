import { describe, expect, it } from "vitest";
import { compilePlan } from "../../src/sandbox/plan.js";
import { selfReportingWrapper, shimBinDir, shimBundleOf, uncontainedArgv, uncontainedRun } from "../../src/sandbox/uncontained-args.js";
import { baseInput, facts } from "./support/plan-fixture.js";

/** What an uncontained seat runs with (pure): the plan's environment at host paths, nothing of the daemon's. */
describe("the uncontained seat's environment and argv", () => {
  const compiled = compilePlan({ ...baseInput(), host: facts({ shimCommand: "teamd-shim" }) });
  if (compiled.decision !== "plan") throw new Error(compiled.reason);
  const plan = compiled.plan;

  it("names the seat socket and the shim by their host paths, and puts the shim's names first on PATH", () => {
    const run = uncontainedRun(plan);
    expect(run.env.TEAMD_SOCKET).toBe(plan.socket.host);
    // The control: the plan (a bwrap seat) names the inside path.
    expect(plan.env.TEAMD_SOCKET).toBe("/run/teamd/shim.sock");
    const bundle = shimBundleOf(plan) as string;
    expect(bundle).toBe("/usr/lib/teamd-shim/shim.mjs");
    expect(run.env.TEAMD_SHIM).toBe(bundle);
    expect(run.shimBin).toEqual({
      dir: shimBinDir(bundle),
      bundle,
      links: [
        { name: "teamd-shim", target: bundle },
        { name: "git-remote-teamd", target: bundle },
      ],
    });
    const path = run.env.PATH?.split(":") ?? [];
    expect(path[0]).toBe("/usr/lib/teamd-shim/bin-shim");
    expect(path).not.toContain("/run/teamd/bin");
    expect(plan.env.PATH?.split(":")).toContain("/run/teamd/bin");
    expect(path.slice(1)).toEqual(plan.env.PATH?.split(":").filter((p) => p !== "/run/teamd/bin"));
  });

  it("links git-remote-teamd to the remote helper's front where the plan binds one", () => {
    const front = "/usr/lib/teamd-shim/shim.mjs.git-remote";
    const withFront = compilePlan({ ...baseInput(), host: facts({ shimCommand: "teamd-shim", shimGitRemote: front }) });
    if (withFront.decision !== "plan") throw new Error(withFront.reason);
    expect(uncontainedRun(withFront.plan).shimBin?.links).toEqual([
      { name: "teamd-shim", target: "/usr/lib/teamd-shim/shim.mjs" },
      { name: "git-remote-teamd", target: front },
    ]);
  });

  it("keeps the rest of the plan's environment as it is, and its working folder", () => {
    const run = uncontainedRun(plan);
    for (const [name, value] of Object.entries(plan.env)) if (!["TEAMD_SOCKET", "TEAMD_SHIM", "PATH"].includes(name)) expect(run.env[name], name).toBe(value);
    expect(Object.keys(run.env).sort()).toEqual(Object.keys(plan.env).sort());
    expect(run.cwd).toBe(plan.cwd);
    expect(run.env.HOME).toBe(plan.env.HOME);
  });

  it("has no shim folder when the plan binds no shim", () => {
    const bare = compilePlan({ ...baseInput(), host: facts({ shimBundle: undefined }) });
    if (bare.decision !== "plan") throw new Error(bare.reason);
    const run = uncontainedRun(bare.plan);
    expect(run.shimBin).toBeUndefined();
    expect(run.env.TEAMD_SHIM).toBeUndefined();
  });

  it("chains setpriv, prlimit and the command, each exec'd in place", () => {
    expect(uncontainedArgv(["claude", "--x"], ["/usr/bin/setpriv", "--reuid=5", "--"], ["/usr/bin/prlimit", "--nofile=8:8", "--"])).toEqual([
      "/usr/bin/setpriv",
      "--reuid=5",
      "--",
      "/usr/bin/prlimit",
      "--nofile=8:8",
      "--",
      "claude",
      "--x",
    ]);
    expect(uncontainedArgv(["claude"], [], [])).toEqual(["claude"]);
  });

  it("reports its own pid before it runs anything, and waits for the cgroup placement only when told", () => {
    const pipes = selfReportingWrapper("fd", false);
    expect(pipes).toMatch(/"child-pid": %d.*"\$\$" >&3/);
    expect(pipes).not.toContain("read");
    expect(pipes.endsWith('exec "$@"')).toBe(true);
    const blocked = selfReportingWrapper("fd", true);
    expect(blocked.indexOf("child-pid")).toBeLessThan(blocked.indexOf("read -r -n 1 _ <&4"));
    // In a pty the FIFO is opened before the report, so the daemon's byte cannot be lost.
    const pty = selfReportingWrapper("file", true);
    expect(pty.indexOf('exec 4<"$0.block"')).toBeLessThan(pty.indexOf("child-pid"));
    expect(pty).toContain('>>"$0"');
  });
});
