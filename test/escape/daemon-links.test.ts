import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, lstatSync, mkdirSync, readlinkSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { makeTempHome, run, startDaemon, TEAMD, type DaemonProcess } from "../support/programs.js";
import { makeRepo } from "../support/repo.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { sleeperTeamFile } from "../support/team-file.js";

/**
 * Proves (docs/enforcement.md, "Containment", the daemon's own work on seat data): the root
 * daemon follows no link a seat controls when it hands a fresh seat repository to the seat
 * user (issue 20, finding 1). Symlinks in the trunk are data a seat wrote — a symlink is a
 * blob, and one pushed, reviewed, gated and merged lands in every later seat's clone. Here
 * the trunk carries the links from its first commit (the same bytes a merge would put there):
 * one at a root-only host file and one at a host folder. On the seat's first start system
 * mode walks the clone and changes its owner to the seat user; before the fix that `chown`
 * followed each link and gave the seat user the host file and folder.
 *
 * Control: the links themselves, inside the clone, do belong to the seat user afterwards (the
 * walk ran over them), and the targets are still root's.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

describe.runIf(process.platform === "linux" && asRoot)("escape: a trunk symlink at a host path, on a fresh seat's start (system mode)", () => {
  let tmp: { dir: string; remove(): Promise<void> };
  let daemon: DaemonProcess | undefined;
  let repo: string;
  let home: string;
  let env: NodeJS.ProcessEnv;
  let hostFile: string;
  let hostDir: string;
  const teamd = (args: string[]) => run(TEAMD, args, env, 60_000, { cwd: repo });

  beforeAll(async () => {
    tmp = await makeTempHome("teamd-esc-links-");
    chmodSync(tmp.dir, 0o711);
    // What the links point at: a root-only file and a root-only folder on the host.
    hostFile = join(tmp.dir, "root-only.txt");
    writeFileSync(hostFile, "root-only-canary-61d2\n", { mode: 0o600 });
    hostDir = join(tmp.dir, "root-only-dir");
    mkdirSync(hostDir, { mode: 0o700 });
    repo = makeRepo(tmp.dir, "proj", { "README.md": "hello\n" });
    mkdirSync(join(repo, "src"));
    symlinkSync(hostFile, join(repo, "src", "file-link"));
    symlinkSync(hostDir, join(repo, "src", "dir-link"));
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "add", "-A"], {
      cwd: repo,
      env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
    });
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "links"], {
      cwd: repo,
      env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
    });
    home = join(tmp.dir, "home");
    env = { TEAMD_HOME: home, TEAMD_OWNER_KEY: join(tmp.dir, "keys/owner.key"), HOME: tmp.dir };
    daemon = await startDaemon(home, [], 15_000, { HOME: tmp.dir });
    const init = await teamd(["init", "--yes", "--json"]);
    expect(init.code, init.stderr).toBe(0);
    writeFileSync(join(repo, "teamd.yaml"), sleeperTeamFile(["alpha"]));
    const applied = await teamd(["apply", "--yes"]);
    expect(applied.code, applied.stderr).toBe(0);
  }, 90_000);
  afterAll(async () => {
    await teamd(["stop", "--team", "proj"]).catch(() => undefined);
    await daemon?.stop();
    await tmp?.remove();
  });

  it("gives the seat user the links in its clone, never the host file or folder they point at", async () => {
    const started = await teamd(["start", "alpha@proj", "--json"]);
    expect(started.code, started.stderr).toBe(0);
    const clone = join(home, "seats/proj/alpha/repo");
    const seatUid = statSync(join(clone, "README.md")).uid;
    expect(seatUid).not.toBe(0);
    // Control: the walk reached the links and gave them (not their targets) to the seat user.
    for (const link of ["file-link", "dir-link"]) {
      const stats = lstatSync(join(clone, "src", link));
      expect(stats.isSymbolicLink()).toBe(true);
      expect(stats.uid).toBe(seatUid);
    }
    expect(readlinkSync(join(clone, "src", "file-link"))).toBe(hostFile);
    // The attack: the host file and folder are still root's, with their modes.
    expect(statSync(hostFile).uid).toBe(0);
    expect(statSync(hostFile).gid).toBe(0);
    expect(statSync(hostFile).mode & 0o777).toBe(0o600);
    expect(statSync(hostDir).uid).toBe(0);
    expect(statSync(hostDir).mode & 0o777).toBe(0o700);
  }, 90_000);
});
