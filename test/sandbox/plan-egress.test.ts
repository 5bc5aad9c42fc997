import { describe, expect, it } from "vitest";
import { bwrapArgs } from "../../src/sandbox/bwrap-args.js";
import { compilePlan } from "../../src/sandbox/plan.js";
import type { PlanInput, SandboxPlan } from "../../src/sandbox/plan-types.js";
import { baseInput } from "./support/plan-fixture.js";

/**
 * A seat's egress in its plan (pure, §12): bound in only where declared — the launcher and
 * the egress socket, the proxy env every client reads, every command wrapped by the launcher
 * — and refused where its paths overlap a reserved object or the env tries to override it.
 */
const EGRESS = { socket: "/var/lib/teamd/run/seats/alpha.builder.egress.sock", launcher: "/var/lib/teamd/shim/teamd-egress-0123456789abcdef.mjs" };

function plan(input: PlanInput): SandboxPlan {
  const result = compilePlan(input);
  if (result.decision !== "plan") throw new Error(`${result.rule}: ${result.reason}`);
  return result.plan;
}

describe("a seat's egress in its plan", () => {
  it("adds nothing to a seat without egress", () => {
    const without = plan(baseInput());
    expect(without.egress).toBeUndefined();
    expect(Object.keys(without.env).filter((name) => /proxy/i.test(name))).toEqual([]);
    expect(JSON.stringify(without.mounts)).not.toContain("egress");
    const args = bwrapArgs(without, ["sleep", "1"]);
    expect(args.ok && args.value.slice(-3)).toEqual(["--", "sleep", "1"]);
  });

  it("binds the launcher and the egress socket, sets the proxy env and wraps every command", () => {
    const withEgress = plan({ ...baseInput(), egress: EGRESS });
    expect(withEgress.mounts).toContainEqual({ op: "ro-bind", src: EGRESS.launcher, dest: "/run/teamd/egress.mjs" });
    expect(withEgress.mounts).toContainEqual({ op: "bind", src: EGRESS.socket, dest: "/run/teamd/egress.sock" });
    expect(withEgress.sources).toEqual(expect.arrayContaining([EGRESS.launcher, EGRESS.socket]));
    for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"])
      expect(withEgress.env[name]).toBe("http://127.0.0.1:3128");
    expect(withEgress.env.NO_PROXY).toBe("localhost,127.0.0.1,::1");
    const args = bwrapArgs(withEgress, ["claude", "--model", "opus"]);
    expect(args.ok && args.value.slice(-7)).toEqual(["--", "/usr/bin/node", "/run/teamd/egress.mjs", "--", "claude", "--model", "opus"]);
  });

  it("refuses a declared env that would point the seat's clients elsewhere", () => {
    const input = baseInput();
    const result = compilePlan({ ...input, egress: EGRESS, env: { ...input.env, declared: { HTTPS_PROXY: "http://evil.test:8080" } } });
    expect(result.decision === "refuse" && result.rule).toBe("containment.env");
  });

  it("refuses an egress socket or launcher inside a reserved object", () => {
    const result = compilePlan({ ...baseInput(), egress: { ...EGRESS, socket: "/var/lib/teamd/ledger/egress.sock" } });
    expect(result.decision === "refuse" && result.rule).toBe("reserved.object");
    const relative = compilePlan({ ...baseInput(), egress: { ...EGRESS, launcher: "shim/egress.mjs" } });
    expect(relative.decision === "refuse" && relative.rule).toBe("containment.undecidable");
  });
});
