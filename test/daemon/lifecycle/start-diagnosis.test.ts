import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hostPathOf, inSeatView } from "../../../daemon/lifecycle/start-diagnosis.js";
import { untraversable } from "../../../daemon/host/traversal.js";
import type { SandboxPlan } from "../../../src/sandbox/plan-types.js";
import { makeTempHome } from "../../support/programs.js";

/** Why a start failed, in the cause's words (issue 22): a folder the seat's uid cannot search; a command outside the seat's view. */
describe("start diagnosis", () => {
  let tmp: { dir: string; remove(): Promise<void> };
  beforeEach(async () => {
    tmp = await makeTempHome("teamd-diagnosis-");
  });
  afterEach(async () => {
    chmodSync(tmp.dir, 0o700);
    await tmp.remove();
  });

  it("names the first folder on the way the uid cannot search, from the mode bits", () => {
    const deep = join(tmp.dir, "a", "b", "repo");
    mkdirSync(deep, { recursive: true });
    const uid = (process.getuid?.() ?? 0) + 4242;
    const gid = (process.getgid?.() ?? 0) + 4242;
    chmodSync(tmp.dir, 0o700);
    expect(untraversable(deep, uid, gid)).toMatchObject({ folder: tmp.dir, mode: "0700" });
    chmodSync(tmp.dir, 0o711);
    chmodSync(join(tmp.dir, "a"), 0o750);
    expect(untraversable(deep, uid, gid)).toMatchObject({ folder: join(tmp.dir, "a"), mode: "0750" });
    chmodSync(join(tmp.dir, "a"), 0o755);
    expect(untraversable(deep, uid, gid)).toBeUndefined();
    // Its owner searches by the owner bit.
    chmodSync(tmp.dir, 0o700);
    expect(untraversable(deep, process.getuid?.() ?? 0, process.getgid?.() ?? 0)).toBeUndefined();
  });

  it("maps an inside path to the host through the deepest bind, and follows a recreated symlink", () => {
    const plan = {
      mounts: [
        { op: "ro-bind", src: "/usr", dest: "/usr" },
        { op: "symlink", target: "usr/bin", dest: "/bin" },
        { op: "bind", src: "/host/seats/a/home", dest: "/host/seats/a/home" },
        { op: "ro-bind", src: "/host/shim", dest: "/run/teamd/shim" },
      ],
    } as unknown as SandboxPlan;
    expect(hostPathOf(plan, "/usr/bin/git")).toBe("/usr/bin/git");
    expect(hostPathOf(plan, "/bin/sh")).toBe("/usr/bin/sh");
    expect(hostPathOf(plan, "/run/teamd/shim")).toBe("/host/shim");
    expect(hostPathOf(plan, "/opt/agent/bin/agent")).toBeUndefined();
    expect(hostPathOf(plan, "/usrx/bin")).toBeUndefined();
  });

  it("finds a command as execvp would inside: on the seat's PATH through the mounts, or not at all", () => {
    const bin = join(tmp.dir, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "agent"), "#!/bin/sh\n", { mode: 0o755 });
    writeFileSync(join(bin, "notes"), "text\n", { mode: 0o644 });
    const plan = {
      cwd: "/work",
      env: { PATH: "/seat/bin:/usr/bin" },
      mounts: [
        { op: "ro-bind", src: bin, dest: "/seat/bin" },
        { op: "ro-bind", src: "/usr", dest: "/usr" },
      ],
    } as unknown as SandboxPlan;
    expect(inSeatView(plan, "agent")).toBe("/seat/bin/agent");
    expect(inSeatView(plan, "notes")).toBeUndefined();
    expect(inSeatView(plan, "sh")).toBe("/usr/bin/sh");
    expect(inSeatView(plan, join(bin, "agent"))).toBeUndefined();
    expect(inSeatView(plan, "/seat/bin/agent")).toBe("/seat/bin/agent");
  });
});
