import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chownSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { type TeamdHarness } from "../support/teamd-harness.js";
import { connectCommand } from "../sandbox/fixture/real-seat.js";
import { sleeperTeamFile } from "../support/team-file.js";

/**
 * Proves (docs/enforcement.md), in seats started by `teamd start` from one applied team file
 * through a real daemon (not fixture seats):
 * - "Containment + fail-closed-on-break (§11)": a seat (`alpha`) reads and writes nothing of
 *   another seat of its team (`beta`: its repository, its home), by host path or relative path.
 * - "Reserved-object denylist: team file, ledger, verifier, .git (§3)": from inside a seat the
 *   ledger, the owner key, everything else under TEAMD_HOME, the hub, the owner's `.git` and
 *   `teamd.yaml` can be neither read nor written.
 * - "Caller placement: a seat's identity is the socket its call arrived on, never a field …"
 *   (§11 "a caller it cannot place"): `alpha` cannot reach `beta`'s socket or the control
 *   socket, and no environment field makes its shim speak as `beta`.
 * Each attack runs as `teamd exec alpha -- sh -c …` (the seat's exact containment); each has a
 * control showing the target exists on the host and, where it means something, that the same
 * act works from the host or from `beta` on its own files. Effects are checked from the host.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = sleeperTeamFile(["alpha", "beta"]);
const SECRET = "beta-secret-7f3a";
/** Planted in the daemon's environment: a seat must never see it. */
const DAEMON_CANARY = "daemon-env-canary-52c9";

/** Every file under `dir` (not following symlinks). */
function walk(dir: string, skip: (path: string) => boolean): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (skip(path)) continue;
    if (entry.isDirectory()) out.push(...walk(path, skip));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** From the host: connect to a unix socket; "connected" or the error code. */
function hostConnect(path: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.setTimeout(3000, () => {
      socket.destroy();
      resolve("timeout");
    });
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
  });
}

describe.runIf(process.platform === "linux")("escape: through a `teamd start`ed seat, at another seat and at teamd's own objects", () => {
  let h: TeamdHarness;
  let beta: { dir: string; repo: string; home: string; socket: string };
  let alphaDir: string;

  const alpha = (script: string) => h.sh("alpha", script);

  beforeAll(async () => {
    h = await appliedTeam("teamd-esc-", TEAM_FILE, undefined, { timeoutMs: 30_000, daemonEnv: { TEAMD_TEST_DAEMON_CANARY: DAEMON_CANARY } });
    await h.ok(["start", "--team", "proj", "--json"]);
    const dir = join(h.home, "seats/proj/beta");
    beta = { dir, repo: join(dir, "repo"), home: join(dir, "home"), socket: h.seatSocket("beta") };
    alphaDir = join(h.home, "seats/proj/alpha");
    // A secret in beta's home, as beta's user would have it.
    const secret = join(beta.home, "secret.txt");
    writeFileSync(secret, `${SECRET}\n`, { mode: 0o600 });
    const owner = statSync(beta.home);
    chownSync(secret, owner.uid, owner.gid);
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("as root, runs each seat as a host uid of its own, each owning its repository, and each sees teamd-seat inside; as an ordinary user, both as that user", async () => {
    const a = await alpha("id -u; id -un; pwd");
    const b = await h.sh("beta", "id -u; id -un; pwd");
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const [insideA, nameA, pwdA] = a.stdout.split("\n");
    const [insideB, nameB] = b.stdout.split("\n");
    // pwd is the seat's own repository at its host path: beta's sits beside it on the host.
    expect(pwdA).toBe(join(alphaDir, "repo"));
    const status = await h.json<{ seats: Array<{ seat: string; uid: number; initPid: number }> }>(["status", "--json"]);
    const seat = (name: string) => status.seats.find((s) => s.seat === name)!;
    // The host's view of each seat's init: the uid the kernel keys everything by.
    const hostUid = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
    const [uidA, uidB] = [hostUid(seat("alpha").initPid), hostUid(seat("beta").initPid)];
    expect([uidA, uidB]).toEqual([seat("alpha").uid, seat("beta").uid]);
    if (asRoot) {
      expect(uidA).not.toBe(uidB);
      for (const uid of [uidA, uidB]) expect(uid).toBeGreaterThanOrEqual(0x7000_0000);
      expect(statSync(join(alphaDir, "repo")).uid).toBe(uidA);
      expect(statSync(beta.repo).uid).toBe(uidB);
      expect(statSync(beta.home).uid).toBe(uidB);
      // Inside, both are the one named seat user.
      expect([nameA, nameB]).toEqual(["teamd-seat", "teamd-seat"]);
      expect(insideA).toBe(insideB);
    } else {
      expect(uidA).toBe(process.getuid?.());
      expect(uidB).toBe(uidA);
      expect(insideA).toBe(String(uidA));
    }
  });

  it("alpha cannot read the daemon's environment: not inherited, not through /proc, not from its seat's init", async () => {
    const pid = h.daemon?.child.pid as number;
    // Control: the canary is in the running daemon's environment, readable on the host.
    expect(readFileSync(`/proc/${pid}/environ`, "utf8")).toContain(DAEMON_CANARY);
    const attack = await alpha(
      `env; cat /proc/${pid}/environ; cat /proc/${pid}/cmdline; ls /proc/${pid}; ` +
        `for e in /proc/[0-9]*/environ; do cat "$e"; echo; done; ` +
        `cat /proc/1/environ; grep -rs ${DAEMON_CANARY} /run /tmp 2>/dev/null | head -3; echo done`,
    );
    expect(attack.stdout).toMatch(/done\n$/);
    expect(attack.stdout + attack.stderr).not.toContain(DAEMON_CANARY);
    expect(attack.stderr).toMatch(new RegExp(`/proc/${pid}/environ: No such file`));
  });

  it("alpha cannot read beta's repository or home, by host path or relative path", async () => {
    // Control: beta reads both; they exist on the host.
    expect(readFileSync(join(beta.repo, "README.md"), "utf8")).toBe("hello\n");
    const own = await h.sh("beta", `cat ${beta.repo}/README.md; cat ${beta.home}/secret.txt`);
    expect(own.stdout).toBe(`hello\n${SECRET}\n`);
    const attack = await alpha(
      `cat ${beta.home}/secret.txt; cat ${beta.repo}/README.md; ls -a ${beta.dir} ${beta.home}; ` +
        `cat ../../beta/home/secret.txt; cat $HOME/../../beta/home/secret.txt; ls -a ../..; ` +
        `find / -xdev -name secret.txt 2>/dev/null; grep -rs ${SECRET} /tmp /run /home /root /mnt /var ${h.home} 2>/dev/null | head -3; ` +
        `cat /proc/1/root${beta.home}/secret.txt; echo done`,
    );
    expect(attack.stdout).toMatch(/done\n$/);
    expect(attack.stdout + attack.stderr).not.toContain(SECRET);
    expect(attack.stdout).not.toContain("hello");
    expect(attack.stdout).not.toMatch(/\bbeta\b/);
  }, 30_000);

  it("alpha cannot write beta's repository or home (checked from the host)", async () => {
    // Control: beta writes its own repository and home, and the host sees it.
    const own = await h.sh("beta", `echo own > ${beta.repo}/own.txt && echo own > ${beta.home}/own.txt && echo ok`);
    expect(own.stdout).toBe("ok\n");
    expect(readFileSync(join(beta.repo, "own.txt"), "utf8")).toBe("own\n");
    rmSync(join(beta.repo, "own.txt"));
    rmSync(join(beta.home, "own.txt"));
    const attack = await alpha(
      `mkdir -p ${beta.repo} ${beta.home}; echo pwned > ${beta.repo}/PWNED; echo pwned > ${beta.home}/PWNED; ` +
        `echo pwned >> ${beta.repo}/README.md; echo pwned > ../../beta/home/PWNED2; echo pwned >> ${beta.home}/secret.txt; echo done`,
    );
    expect(attack.stdout).toMatch(/done\n$/);
    expect(existsSync(join(beta.repo, "PWNED"))).toBe(false);
    expect(existsSync(join(beta.home, "PWNED"))).toBe(false);
    expect(existsSync(join(beta.home, "PWNED2"))).toBe(false);
    expect(readFileSync(join(beta.repo, "README.md"), "utf8")).toBe("hello\n");
    expect(readFileSync(join(beta.home, "secret.txt"), "utf8")).toBe(`${SECRET}\n`);
    expect(readdirSync(beta.home).sort()).toEqual(["secret.txt"]);
  }, 30_000);

  it("alpha cannot connect to beta's socket or the control socket, and cannot speak as beta", async () => {
    const control = join(h.home, "run/control.sock");
    // Control: both sockets exist and accept from the host; beta's shim answers as beta.
    expect(await hostConnect(beta.socket)).toBe("connected");
    expect(await hostConnect(control)).toBe("connected");
    const asBeta = await h.sh("beta", "teamd-shim whoami --json");
    expect(JSON.parse(asBeta.stdout)).toMatchObject({ seat: "beta", team: "proj" });
    for (const target of [beta.socket, control, join(h.home, "run"), "/run/teamd/../../" + beta.socket]) {
      const [program, ...args] = connectCommand(target);
      const attack = await h.run(["exec", "alpha@proj", "--", program as string, ...args]);
      expect(attack.stdout, target).toMatch(/^error (ENOENT|ENOTDIR|EACCES|ECONNREFUSED)/);
    }
    const shim = await alpha(
      `TEAMD_SOCKET=${beta.socket} teamd-shim whoami --json; echo; TEAMD_SOCKET=${control} teamd-shim whoami --json; echo; ` +
        `TEAMD_SEAT=beta TEAMD_TEAM=proj teamd-shim whoami --json`,
    );
    expect(shim.stdout + shim.stderr).not.toMatch(/"seat"\s*:\s*"beta"/);
    expect(shim.stdout).toMatch(/"seat"\s*:\s*"alpha"/); // the one answer it gets is as itself
    const listing = await alpha(`ls -a /run/teamd ${join(h.home, "seat-sockets")} ${join(h.home, "run")} 2>/dev/null; echo done`);
    expect(listing.stdout).not.toMatch(/proj\.beta\.sock|control\.sock/);
    expect(listing.stdout).toMatch(/shim\.sock\ndone\n$/); // its own socket, and only that
  }, 30_000);

  it("alpha cannot read or write the ledger, the keys, or anything else under TEAMD_HOME", async () => {
    // Control: the host has them (the ledger db, the owner key, the hub, run/ …).
    const mine = (path: string) => path.startsWith(alphaDir) || path.startsWith(join(h.home, "shim"));
    const files = walk(h.home, (p) => p === beta.dir || mine(p)).concat(walk(join(h.dir, "keys"), () => false));
    expect(files.some((f) => f.includes("/ledger"))).toBe(true);
    expect(files.some((f) => f.endsWith("owner.key"))).toBe(true);
    expect(files.length).toBeGreaterThan(5);
    const attack = await alpha(
      `for f in ${files.map((f) => `'${f}'`).join(" ")}; do test -e "$f" && echo "VISIBLE $f"; c=$(head -c 64 "$f" 2>/dev/null) && [ -n "$c" ] && echo "READ $f"; done; ls -a ${h.home} ${join(h.dir, "keys")} 2>&1; echo done`,
    );
    expect(attack.stdout).toMatch(/done\n$/);
    expect(attack.stdout).not.toMatch(/VISIBLE|READ/);
    // Writes: a marker appended to each (the daemon itself appends to the ledger as it records
    // the exec, so the check is that no host file holds the marker, not that none changed; the
    // marker is assembled in the seat, so the recorded command line does not hold it either).
    const MARK = "pwned-by-alpha-91c2";
    const write = await alpha(
      `m=$(printf 'pwned-by-%s' alpha-91c2); for f in ${files.map((f) => `'${f}'`).join(" ")}; do echo "$m" >> "$f"; done; mkdir -p ${h.home}/ledger && echo x > ${h.home}/ledger/INJECTED; echo done`,
    );
    expect(write.stdout).toBe("done\n");
    expect(files.filter((f) => readFileSync(f).includes(MARK))).toEqual([]);
    // Control for the marker check: the same loop in alpha's own home does land.
    const own = await alpha(`m=$(printf 'pwned-by-%s' alpha-91c2); echo "$m" >> ${join(alphaDir, "home")}/mark; echo done`);
    expect(own.stdout).toBe("done\n");
    expect(readFileSync(join(alphaDir, "home/mark"), "utf8")).toBe(`${MARK}\n`);
    expect(existsSync(join(h.home, "ledger/INJECTED"))).toBe(false);
  }, 30_000);

  it("alpha cannot read or write the hub, the owner's .git or teamd.yaml", async () => {
    const hub = join(h.home, "hubs/proj.git");
    const teamFile = join(h.repo, "teamd.yaml");
    // Control: they exist on the host, and what alpha reads of its own clone is a clone.
    expect(readFileSync(join(hub, "HEAD"), "utf8")).toMatch(/ref: refs\/heads\//);
    expect(readFileSync(join(h.repo, ".git/HEAD"), "utf8")).toMatch(/ref: refs\/heads\/main/);
    expect(readFileSync(teamFile, "utf8")).toBe(TEAM_FILE);
    const ownClone = await alpha("git log --oneline | wc -l");
    expect(ownClone.stdout.trim()).toBe("1");
    const attack = await alpha(
      `cat ${hub}/HEAD ${hub}/config ${h.repo}/.git/HEAD ${h.repo}/.git/config ${teamFile}; git -C ${hub} log; git -C ${h.repo} log; ` +
        `git ls-remote ${hub}; git fetch ${hub}; git fetch ${h.repo}; ls -a ${h.repo} ${join(h.home, "hubs")}; echo done`,
    );
    expect(attack.stdout).toMatch(/done\n$/);
    expect(attack.stdout).not.toMatch(/ref: refs|\[core\]|team: proj|first/);
    const write = await alpha(
      `echo pwned > ${teamFile}; mkdir -p ${hub}/refs/heads && echo 0 > ${hub}/refs/heads/pwned; echo pwned > ${h.repo}/.git/hooks/pre-commit; ` +
        `git push ${hub} HEAD:refs/heads/pwned; echo done`,
    );
    expect(write.stdout).toMatch(/done\n$/);
    expect(readFileSync(teamFile, "utf8")).toBe(TEAM_FILE);
    expect(existsSync(join(hub, "refs/heads/pwned"))).toBe(false);
    expect(existsSync(join(h.repo, ".git/hooks/pre-commit"))).toBe(false);
  }, 30_000);
});
