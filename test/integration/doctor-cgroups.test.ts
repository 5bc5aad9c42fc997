import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { makeTempHome, run, TEAMD } from "../support/programs.js";
import { ensureSeatUser } from "../support/seat-user.js";

/**
 * `teamd doctor`'s cgroups check tells what a seat will get here, from a real probe: as root,
 * its own cgroups (a probe cgroup made and removed, cgroup.kill present); as an ordinary user
 * with no delegated subtree, rlimits — and it says which limits that weakens or refuses.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

describe.runIf(process.platform === "linux")("teamd doctor: cgroups", () => {
  let tmp: { dir: string; remove(): Promise<void> };
  beforeAll(async () => {
    tmp = await makeTempHome("teamd-doctor-");
  });
  afterAll(async () => {
    await tmp?.remove();
  });

  it("says what a seat's cgroups will be, and leaves no probe behind", async () => {
    const result = await run(TEAMD, ["doctor", "--json"], { TEAMD_HOME: join(tmp.dir, "home"), HOME: tmp.dir }, 60_000);
    const checks = (JSON.parse(result.stdout) as { checks: { name: string; verdict: string; detail: string; fix?: string }[] }).checks;
    const cgroups = checks.find((c) => c.name === "cgroups");
    if (asRoot) {
      expect(cgroups).toMatchObject({
        verdict: "ok",
        detail: expect.stringMatching(/Each seat gets its own cgroups: .*probe cgroup made and removed; cgroup.kill present/),
      });
      // The probe's folders are gone (only the shared teamd/ parents may stay).
      for (const h of ["pids", "cpu", "unified"]) {
        const dir = `/sys/fs/cgroup/${h}/teamd/doctor`;
        expect(existsSync(dir) ? readdirSync(dir).filter((f) => !f.includes(".")) : [], dir).toEqual([]);
      }
    } else {
      expect(cgroups).toMatchObject({
        verdict: "warn",
        detail: expect.stringMatching(/No per-seat cgroup: .*rlimits instead .*cpus does not start/),
        fix: expect.stringMatching(/Delegate=yes/),
      });
    }
  }, 90_000);

  it.runIf(asRoot)(
    "names a folder a seat's uid cannot traverse on the way to TEAMD_HOME (a 0700 mktemp -d), and passes once it can",
    async () => {
      const { chmodSync } = await import("node:fs");
      chmodSync(tmp.dir, 0o700);
      const folders = async () => {
        const result = await run(TEAMD, ["doctor", "--json"], { TEAMD_HOME: join(tmp.dir, "home"), HOME: tmp.dir }, 60_000);
        return (JSON.parse(result.stdout) as { checks: { name: string; verdict: string; detail: string; fix?: string }[] }).checks.find(
          (c) => c.name === "seat folders",
        );
      };
      expect(await folders()).toMatchObject({
        verdict: "fail",
        detail: expect.stringContaining(`cannot traverse ${tmp.dir} (mode 0700`),
        fix: expect.stringMatching(/chmod o\+x/),
      });
      chmodSync(tmp.dir, 0o711);
      expect(await folders()).toMatchObject({ verdict: "ok" });
    },
    90_000,
  );
});
