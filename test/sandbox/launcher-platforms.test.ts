import { describe, expect, it } from "vitest";
import { createLauncher } from "../../src/sandbox/launcher.js";
import { compilePlan } from "../../src/sandbox/plan.js";
import { baseInput } from "./support/plan-fixture.js";

describe("launchers on platforms not supported yet", () => {
  const result = compilePlan(baseInput());
  if (result.decision !== "plan") throw new Error(result.reason);
  const plan = result.plan;

  it.each([
    ["darwin", /macOS .* not supported yet/],
    ["win32", /Windows .* not supported yet/],
    ["freebsd", /freebsd is not supported/],
  ] as const)("%s refuses to launch and to probe, saying so", async (platform, reason) => {
    const launcher = createLauncher(platform);
    const launched = await launcher.launch({ plan, command: ["/bin/true"] });
    expect(launched).toMatchObject({ ok: false, refusal: { rule: "containment.unavailable" } });
    if (!launched.ok) {
      expect(launched.refusal.reason).toMatch(reason);
      expect(launched.refusal.fix).toMatch(/containment: none/);
    }
    expect(await launcher.probe()).toMatchObject({ ok: false, refusal: { rule: "containment.unavailable" } });
  });

  it("gives Linux the bubblewrap launcher", () => {
    expect(createLauncher("linux").platform).toBe("linux");
  });
});
