import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../support/programs.js";

/**
 * scripts/install-service --print: the systemd unit teamd installs, checked by systemd's own
 * verifier where systemd is available (skipped, with the reason, where it is not). Installing
 * for real needs a running systemd as PID 1, which a test machine may not have.
 */
const SCRIPT = join(ROOT, "scripts/install-service");
const analyze = spawnSync("systemd-analyze", ["--version"], { encoding: "utf8" });
const haveAnalyze = analyze.status === 0;
if (!haveAnalyze) console.log("install-service: systemd-analyze is not available here; the unit is not verified by systemd");

function unit(...args: string[]): string {
  return execFileSync(SCRIPT, ["--print", ...args], { encoding: "utf8" });
}

describe.runIf(process.platform === "linux")("install-service: the systemd unit", () => {
  it.each([[[]], [["--user"]]])("%j runs teamd serve from this checkout, reloads on HUP, stops by SIGTERM then kills what is left", (args) => {
    const text = unit(...args);
    expect(text).toMatch(new RegExp(`^ExecStart=\\S+/node ${join(ROOT, "dist/bin/teamd.cjs").replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} serve$`, "m"));
    expect(text).toMatch(/^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
    expect(text).toMatch(/^KillMode=mixed$/m);
    expect(text).toMatch(/^KillSignal=SIGTERM$/m);
    expect(text).toMatch(/^Restart=on-failure$/m);
    // Nothing that would stop bwrap from making namespaces or stop-all from writing cgroup.kill.
    expect(text).not.toMatch(/^(RestrictNamespaces|ProtectHostname|ProtectControlGroups|NoNewPrivileges|PrivateUsers)=/m);
    expect(text).toMatch(args.length === 0 ? /^WantedBy=multi-user.target$/m : /^WantedBy=default.target$/m);
  });

  it.runIf(haveAnalyze)("passes systemd-analyze verify", () => {
    const dir = mkdtempSync(join(tmpdir(), "teamd-unit-"));
    try {
      const path = join(dir, "teamd.service");
      writeFileSync(path, unit());
      const r = spawnSync("systemd-analyze", ["verify", path], { encoding: "utf8" });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).not.toMatch(/teamd\.service.*(Unknown|invalid|Failed)/i);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses an unknown option, naming the ones it takes", () => {
    const r = spawnSync(SCRIPT, ["--frobnicate"], { encoding: "utf8" });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/unknown option '--frobnicate' \(choose from --user, --print, --uninstall\)/);
  });
});

/**
 * A machine with systemctl but without systemd as its init (a container, WSL): the script says so
 * and writes nothing (issue 22: it wrote the unit, then failed). Runs only where that is true of
 * this machine, so it can never install a service for real.
 */
const systemdRuns = spawnSync("test", ["-d", "/run/systemd/system"]).status === 0;
const haveSystemctl = spawnSync("sh", ["-c", "command -v systemctl"]).status === 0;
describe.runIf(process.platform === "linux" && !systemdRuns && haveSystemctl && process.getuid?.() === 0)("install-service without systemd as init", () => {
  it("refuses before it writes the unit", () => {
    const unitPath = "/etc/systemd/system/teamd.service";
    const before = spawnSync("test", ["-e", unitPath]).status === 0;
    const r = spawnSync(SCRIPT, [], { encoding: "utf8" });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/systemd is not running as this machine's init .* nothing was written/);
    expect(spawnSync("test", ["-e", unitPath]).status === 0).toBe(before);
  });
});
