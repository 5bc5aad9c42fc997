import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, lstatSync } from "node:fs";
import { join } from "node:path";
import { makeTempHome, run, SHIM, startDaemon, TEAMD, type DaemonProcess } from "../support/programs.js";
import { lookupGroupId } from "../../daemon/host/home.js";

/**
 * First light, end to end with real processes: a real `teamd serve`, real `teamd-shim`
 * processes on two seat sockets, and the owner's CLI on the control socket.
 */
describe("daemon and shim over unix sockets", () => {
  let home: { dir: string; remove(): Promise<void> };
  let daemon: DaemonProcess;
  const seatSocket = (team: string, seat: string) => join(home.dir, "run/seats", `${team}.${seat}.sock`);

  beforeAll(async () => {
    home = await makeTempHome();
    daemon = await startDaemon(home.dir, ["--seat", "alice", "--seat", "bob@web"]);
  });

  afterAll(async () => {
    await daemon?.stop();
    await home?.remove();
  });

  it("tells each seat the identity of the socket it called on", async () => {
    const alice = await run(SHIM, ["whoami", "--json"], { TEAMD_SOCKET: seatSocket("debug", "alice") });
    expect(alice.code, alice.stderr).toBe(0);
    expect(JSON.parse(alice.stdout)).toMatchObject({ seat: "alice", team: "debug" });

    const bob = await run(SHIM, ["whoami"], { TEAMD_SOCKET: seatSocket("web", "bob") });
    expect(bob.code, bob.stderr).toBe(0);
    expect(bob.stdout.split("\n")[0]).toBe("seat bob of team web (no policy in force)");
  });

  it("refuses an owner call that arrives on a seat socket, naming the rule", async () => {
    const result = await run(TEAMD, ["status", "--json", "--socket", seatSocket("debug", "alice")]);
    expect(result.code).toBe(3);
    expect(JSON.parse(result.stdout)).toMatchObject({ error: "refused", rule: "channel.control-on-seat", section: "§11" });
  });

  it("refuses a seat call that arrives on the control socket, naming the rule", async () => {
    const result = await run(SHIM, ["whoami"], { TEAMD_SOCKET: join(home.dir, "run/control.sock") });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain("refused by channel.seat-on-control (§11)");
  });

  it("answers the owner on the control socket", async () => {
    const result = await run(TEAMD, ["status", "--json"], { TEAMD_HOME: home.dir });
    expect(result.code, result.stderr).toBe(0);
    const status = JSON.parse(result.stdout);
    expect(status.daemon.pid).toBe(daemon.child.pid);
    expect(status.seats.map((s: { seat: string }) => s.seat).sort()).toEqual(["alice", "bob"]);
  });

  it("keeps every socket owner-only (the control socket and run/ also group teamd's in system mode, where the machine has the group)", () => {
    const ownerGroup = process.getuid?.() === 0 && lookupGroupId("teamd") !== undefined;
    for (const path of [seatSocket("debug", "alice"), seatSocket("web", "bob")]) {
      const stat = lstatSync(path);
      expect(stat.isSocket()).toBe(true);
      expect(stat.mode & 0o777).toBe(0o600);
    }
    const control = lstatSync(join(home.dir, "run/control.sock"));
    expect(control.isSocket()).toBe(true);
    expect(control.mode & 0o777).toBe(ownerGroup ? 0o660 : 0o600);
    expect(lstatSync(join(home.dir, "run")).mode & 0o777).toBe(ownerGroup ? 0o750 : 0o700);
    if (ownerGroup) expect(control.gid).toBe(lookupGroupId("teamd"));
  });
});

describe("daemon lifecycle", () => {
  it("removes its sockets on SIGTERM and exits 0", async () => {
    const home = await makeTempHome();
    try {
      const daemon = await startDaemon(home.dir, ["--seat", "carol"]);
      expect(existsSync(join(home.dir, "run/control.sock"))).toBe(true);
      expect(await daemon.stop()).toBe(0);
      expect(existsSync(join(home.dir, "run/control.sock"))).toBe(false);
      expect(existsSync(join(home.dir, "run/seats/debug.carol.sock"))).toBe(false);
    } finally {
      await home.remove();
    }
  });

  it("replaces a stale socket left by a crash, and refuses to start over a live one", async () => {
    const home = await makeTempHome();
    try {
      const first = await startDaemon(home.dir);
      first.child.kill("SIGKILL");
      await first.stop();
      expect(existsSync(join(home.dir, "run/control.sock"))).toBe(true); // litter from the crash

      const second = await startDaemon(home.dir);
      await expect(startDaemon(home.dir)).rejects.toThrow(/in use by a running process/);
      expect(await second.stop()).toBe(0);
    } finally {
      await home.remove();
    }
  });

  it("reports an unreachable daemon with the socket and the fix", async () => {
    const home = await makeTempHome();
    try {
      const result = await run(SHIM, ["whoami"], { TEAMD_SOCKET: join(home.dir, "nothing.sock") });
      expect(result.code).toBe(4);
      expect(result.stderr).toContain("cannot reach the teamd daemon at");
      expect(result.stderr).toContain("teamd serve");
    } finally {
      await home.remove();
    }
  });
});

describe("command line", () => {
  it("lists subcommands in --help", async () => {
    const result = await run(TEAMD, ["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/serve/);
    expect(result.stdout).toMatch(/status/);
  });

  it("exits 2 naming the fix on an unknown command or flag", async () => {
    const unknown = await run(TEAMD, ["serv"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command 'serv'/);
    expect(unknown.stderr).toMatch(/Did you mean serve\?/);

    const badFlag = await run(SHIM, ["whoami", "--jsn"]);
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toMatch(/unknown option '--jsn'/);
  });

  it("refuses an invalid seat name before opening anything", async () => {
    const home = await makeTempHome();
    try {
      const result = await run(TEAMD, ["serve", "--seat", "../evil"], { TEAMD_HOME: home.dir });
      expect(result.code).toBe(2); // a usage error (issue 22)
      expect(result.stderr).toMatch(/invalid seat name/);
      expect(existsSync(join(home.dir, "run/control.sock"))).toBe(false);
    } finally {
      await home.remove();
    }
  });
});
