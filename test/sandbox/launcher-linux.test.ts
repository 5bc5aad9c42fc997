import { existsSync, readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdir, readdir, readFile, readlink, rm, chmod, chown, writeFile, mkdtemp, stat } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { createRealSeat, processesInNamespace, seatNamespace, SEAT_REPLY, type RealSeat } from "./fixture/real-seat.js";
import { createLinuxLauncher } from "../../src/sandbox/launcher-linux.js";
import { compilePlan } from "../../src/sandbox/plan.js";
import { buildReservedSet } from "../../src/objects/reserved-set.js";
import { describeRoot } from "../../src/sandbox/host-facts.js";

/**
 * The launcher against real bubblewrap. Each test starts real seats and the fixture kills
 * every one it started (by init pid) and removes its folders. These run as root (then the
 * seat runs as an unprivileged user, `teamd-seat` by default) and as an ordinary user.
 */
const isRoot = process.getuid?.() === 0;
let seat: RealSeat;

beforeEach(async () => {
  seat = await createRealSeat();
});
afterEach(async () => {
  await seat.cleanup();
});

const sh = (script: string) => ["/bin/sh", "-c", script];

describe.runIf(process.platform === "linux")("the Linux launcher runs a command inside a plan", () => {
  it("propagates the command's exit code, and a signal death as 128+N", async () => {
    expect((await seat.run(sh("exit 7"))).exit).toEqual({ kind: "exited", code: 7 });
    expect((await seat.run(sh("exit 0"))).exit).toEqual({ kind: "exited", code: 0 });
    expect((await seat.run(sh("kill -9 $$"))).exit).toEqual({ kind: "exited", code: 137 });
  });

  it("streams stdout and stderr, and starts in the seat repository", async () => {
    const out = await seat.run(sh("pwd; echo to-stderr >&2; cat README.md"));
    expect(out.stdout).toBe(`${seat.repo}\nseat repository\n`);
    expect(out.stderr).toBe("to-stderr\n");
  });

  it("gives the seat exactly the plan's environment: allowlisted, declared and teamd's own, nothing inherited", async () => {
    const plan = await seat.plan();
    const out = await seat.run(["/usr/bin/env"], { plan });
    const seen = Object.fromEntries(
      out.stdout
        .trim()
        .split("\n")
        .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
    );
    expect(seen).toEqual(plan.env);
    expect(seen.LANG).toBe("C.UTF-8");
    expect(seen.SEAT_ROLE).toBe("builder");
    expect(seen.HOME).toBe(seat.home);
    expect(seen.TEAMD_SOCKET).toBe("/run/teamd/shim.sock");
    expect(seen).not.toHaveProperty("SECRET_TOKEN");
    // The test runner's own environment (this process) reaches nothing.
    for (const name of Object.keys(process.env)) if (!(name in plan.env)) expect(seen).not.toHaveProperty(name);
  });

  it("hides /etc/shadow and its kin, and keeps what programs need", async () => {
    const out = await seat.run(
      sh(
        "for f in /etc/shadow /etc/gshadow /etc/sudoers /etc/shadow- /etc/ssl/private; do test -e $f && echo present $f; done; test -r /etc/passwd && echo passwd-ok; ls /etc/ssh 2>/dev/null",
      ),
    );
    expect(out.stdout).not.toMatch(/present/);
    expect(out.stdout).toMatch(/passwd-ok/);
    expect(out.stdout).not.toMatch(/key/);
  });

  it("shows nothing of the host that the plan does not name", async () => {
    const out = await seat.run(
      sh(`for p in ${seat.outside} ${seat.outside}/secret.txt /root /home /work /var /srv /opt /mnt /sys; do test -e $p && echo present $p; done; echo done`),
    );
    expect(out.stdout).toBe("done\n");
    // The sanity check that the probe can see a present file.
    expect((await seat.run(sh(`test -e ${seat.shared}/notes.txt && echo present`))).stdout).toBe("present\n");
  });

  it("masks a reserved file, its hard link and a reserved folder inside a read-only root", async () => {
    expect(await readFile(seat.reservedFile, "utf8")).toBe("OWNER-PRIVATE-KEY\n");
    const out = await seat.run(sh(`cd ${seat.shared}; cat notes.txt; cat owner.key; cat innocent.txt; ls -A hub.git; cat hub.git/HEAD; echo end`));
    expect(out.stdout).toBe("shared notes\nend\n");
    expect(out.stdout + out.stderr).not.toMatch(/OWNER-PRIVATE-KEY|refs\/heads/);
    expect(out.stderr).toMatch(/owner\.key: Permission denied/);
    expect(out.stderr).toMatch(/innocent\.txt: Permission denied/);
  });

  it("lets the seat write its writable roots and nothing else", async () => {
    const out = await seat.run(
      sh(
        `echo r > ${seat.repo}/new.txt && echo repo-ok; echo h > ${seat.home}/h.txt && echo home-ok; echo t > ${seat.tmp}/t.txt && echo tmp-ok; ` +
          `echo x > ${seat.shared}/x.txt || echo shared-refused; echo x > /x || echo root-refused; echo x > /usr/x || echo usr-refused; echo x > /etc/x || echo etc-refused; ` +
          `echo y > /tmp/y && echo scratch-tmp-ok`,
      ),
    );
    expect(out.stdout.split("\n").filter(Boolean)).toEqual([
      "repo-ok",
      "home-ok",
      "tmp-ok",
      "shared-refused",
      "root-refused",
      "usr-refused",
      "etc-refused",
      "scratch-tmp-ok",
    ]);
    expect(await readFile(join(seat.repo, "new.txt"), "utf8")).toBe("r\n");
    await expect(stat(join(seat.shared, "x.txt"))).rejects.toThrow(/ENOENT/);
  });

  it("exposes no host unix socket but the seat's own, which answers", async () => {
    // -xtype stats each name (find's -type trusts the directory entry, which still says
    // "socket" for a masked one); the second list shows the masked names are really there.
    // /dev/std{in,out,err} are left out: they lead to the seat's own stdio, which node wires
    // as anonymous socketpairs to the launcher — no name on the host's filesystem.
    const prune = "-path /proc -prune -o -path /dev/stdin -prune -o -path /dev/stdout -prune -o -path /dev/stderr -prune -o";
    const out = await seat.run(sh(`find / ${prune} -xtype s -print 2>/dev/null; echo ---; find / ${prune} -type s -print 2>/dev/null`), { timeoutMs: 30_000 });
    const [reachable, named] = out.stdout.split("---\n");
    expect(reachable?.trim().split("\n")).toEqual(["/run/teamd/shim.sock"]);
    // (The seat socket's name in /run is the file bwrap made as a mount point, so -type does not list it.)
    expect(named?.trim().split("\n")).toContain(seat.hostServiceSocket);
    const reply = await seat.run([
      process.execPath,
      "-e",
      `require("net").connect(process.env.TEAMD_SOCKET).on("data", (d) => process.stdout.write(d)).on("error", (e) => { console.log("error " + e.code); });`,
    ]);
    expect(reply.stdout).toBe(`${SEAT_REPLY}\n`);
  });

  it("kills the whole seat through its namespace init, including a process that left with setsid", async () => {
    const plan = await seat.plan();
    const launched = await seat.launch(plan, sh("setsid sh -c 'sleep 300' & sleep 300"));
    if (!launched.ok) throw new Error(launched.refusal.reason);
    const { seat: proc } = launched;
    const ns = await seatNamespace(proc.initPid);
    let members: number[] = [];
    let sessions = new Set<string | undefined>();
    const sessionOf = async (pid: number) => {
      try {
        return (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]?.split(" ")[3];
      } catch {
        return undefined; // gone between the listing and the read
      }
    };
    // A forked child shows in the namespace before it has called setsid(): wait for both.
    for (let i = 0; i < 100 && (members.length < 4 || sessions.size < 2); i++) {
      members = await processesInNamespace(ns);
      sessions = new Set((await Promise.all(members.map(sessionOf))).filter((s) => s !== undefined));
      if (members.length < 4 || sessions.size < 2) await new Promise((r) => setTimeout(r, 50));
    }
    // init, the shell, its sleep, and the setsid'd shell (and its sleep).
    expect(members.length).toBeGreaterThanOrEqual(4);
    expect(sessions.size).toBeGreaterThanOrEqual(2); // someone did leave the session
    proc.kill();
    expect(await proc.exit).toMatchObject({ kind: "killed" });
    let left = members;
    for (let i = 0; i < 100 && left.length > 0; i++) {
      left = await processesInNamespace(ns);
      if (left.length > 0) await new Promise((r) => setTimeout(r, 50));
    }
    expect(left).toEqual([]);
  });

  it("runs every process of the seat as the seat's unprivileged host user, never host root", async () => {
    const launched = await seat.launch(await seat.plan(), sh("sleep 300"));
    if (!launched.ok) throw new Error(launched.refusal.reason);
    const { seat: proc } = launched;
    const ns = await seatNamespace(proc.initPid);
    let members: number[] = [];
    for (let i = 0; i < 100 && members.length < 2; i++) {
      members = await processesInNamespace(ns);
      if (members.length < 2) await new Promise((r) => setTimeout(r, 50));
    }
    expect(members).toContain(proc.initPid);
    expect(members.length).toBeGreaterThanOrEqual(2);
    const hostUserNs = await readlink("/proc/self/ns/user");
    for (const pid of [proc.pid, ...members]) {
      const status = await readFile(`/proc/${pid}/status`, "utf8");
      const uids = /^Uid:\s+(.*)$/m.exec(status)?.[1]?.split(/\s+/).map(Number);
      const gids = /^Gid:\s+(.*)$/m.exec(status)?.[1]?.split(/\s+/).map(Number);
      expect(uids).toEqual([seat.user.uid, seat.user.uid, seat.user.uid, seat.user.uid]);
      expect(gids).toEqual([seat.user.gid, seat.user.gid, seat.user.gid, seat.user.gid]);
      expect(uids).not.toContain(0);
      const caps = /^CapEff:\s+(\w+)$/m.exec(status)?.[1];
      if (pid === proc.pid) {
        // bwrap itself, outside: the host's user namespace, no capabilities there.
        expect(await readlink(`/proc/${pid}/ns/user`)).toBe(hostUserNs);
        expect(caps).toBe("0000000000000000");
      } else {
        // Inside: the seat's own user namespace. Its init (bwrap's reaper) holds capabilities
        // only there; the seat's command holds none at all (--cap-drop ALL).
        expect(await readlink(`/proc/${pid}/ns/user`)).not.toBe(hostUserNs);
        if (pid !== proc.initPid) expect(caps).toBe("0000000000000000");
      }
    }
    proc.kill();
    await proc.exit;
  });

  it("applies the open-files limit (rlimit fallback); /tmp is the run's tmp folder, the same for every launch of the plan", async () => {
    const plan = await seat.plan((input) => ({ ...input, limits: { openFiles: 64, memoryBytes: 256 * 1024 * 1024 } }));
    const out = await seat.run(sh("ulimit -n; echo from-first > /tmp/tmp-probe"), { plan });
    expect(out.stdout.trim()).toBe("64");
    expect(readFileSync(join(seat.tmp, "tmp-probe"), "utf8")).toBe("from-first\n");
    expect((await seat.run(sh("cat /tmp/tmp-probe"), { plan })).stdout).toBe("from-first\n");
  });
});

describe.runIf(process.platform === "linux")("the Linux launcher fails closed", () => {
  it("refuses a plan whose bind source disappeared, naming it", async () => {
    const plan = await seat.plan();
    await rm(seat.shared, { recursive: true, force: true });
    const result = await seat.launch(plan, ["/bin/true"]);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.refusal.rule).toBe("containment.failed");
    expect(result.refusal.reason).toContain(seat.shared);
    expect(result.refusal.fix).toMatch(/plan the seat again/);
  });

  it("refuses a CPU quota without the seat's own cgroup (no rlimit expresses it), naming cause and fix", async () => {
    const plan = await seat.plan((input) => ({ ...input, limits: { cpus: 1 } }));
    const result = await seat.launch(plan, ["/bin/true"]);
    expect(result).toMatchObject({ ok: false, refusal: { rule: "containment.limit" } });
    if (result.ok) return;
    expect(result.refusal.reason).toMatch(/cpus .*no cgroup of its own/);
    expect(result.refusal.fix).toMatch(/root|Delegate=yes|limits: none/);
  });

  it("refuses the seat when its init cannot be placed in its cgroup (the command never runs)", async () => {
    const plan = await seat.plan((input) => ({ ...input, limits: { processes: 100 } }));
    const marker = `${seat.tmp}/ran`;
    const cgroup = {
      byCgroup: new Set(["processes"] as const),
      summary: "test",
      place: async () => Promise.reject(new Error("cannot move the seat's init into /nonexistent/cgroup.procs: ENOENT")),
    };
    const result = await seat.launch(plan, ["/bin/sh", "-c", `touch ${marker}`], undefined, cgroup);
    expect(result).toMatchObject({ ok: false, refusal: { rule: "containment.limit", reason: expect.stringMatching(/cannot move the seat's init/) } });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(existsSync(marker)).toBe(false);
    // Control: a placer that succeeds releases the init, and the command runs.
    const ok = { ...cgroup, place: async () => undefined };
    const launched = await seat.launch(plan, ["/bin/sh", "-c", `touch ${marker}`], undefined, ok);
    expect(launched.ok).toBe(true);
    if (launched.ok) await launched.seat.exit;
    expect(existsSync(marker)).toBe(true);
  });

  it("refuses when bubblewrap is missing, saying how to install it", async () => {
    const result = await seat.launch(await seat.plan(), ["/bin/true"], { bwrap: "/nonexistent/bwrap" });
    expect(result).toMatchObject({ ok: false, refusal: { rule: "containment.unavailable" } });
    if (!result.ok) expect(result.refusal.fix).toMatch(/install bubblewrap/);
  });

  it("runs a seat in a pty: a terminal inside, the exit code and the init pid out, no host group kept", async () => {
    const launcher = createLinuxLauncher();
    const result = await launcher.launch({
      plan: await seat.plan(),
      command: ["/bin/sh", "-c", "test -t 0 && test -t 1 && echo TTY-YES; echo groups=$(id -G); stty size; exit 7"],
      io: { kind: "pty", cols: 91, rows: 33 },
    });
    expect(result.ok).toBe(true);
    if (!result.ok || result.seat.io.kind !== "pty") return;
    let out = "";
    result.seat.io.onData((chunk) => (out += chunk.toString("utf8")));
    expect(result.seat.initPid).toBeGreaterThan(0);
    expect(result.seat.initPid).not.toBe(result.seat.pid);
    const exit = await result.seat.exit;
    expect(exit).toEqual({ kind: "exited", code: 7 });
    expect(out).toContain("TTY-YES");
    expect(out).toContain("33 91");
    // As root the switch to the seat user clears root's supplementary groups (setpriv).
    const groups = /groups=([\d ]+)/.exec(out)?.[1]?.trim().split(" ") ?? [];
    expect(groups.length).toBeGreaterThan(0);
    if (process.getuid?.() === 0) expect(groups).not.toContain("0");
  });

  it("holds what a pty seat prints before anyone listens, for the first listener", async () => {
    const result = await createLinuxLauncher().launch({
      plan: await seat.plan(),
      command: ["/bin/sh", "-c", "echo EARLY-LINE; read x; echo LATE-$x; exit 5"],
      io: { kind: "pty", cols: 80, rows: 24 },
    });
    expect(result.ok).toBe(true);
    if (!result.ok || result.seat.io.kind !== "pty") return;
    const pty = result.seat.io;
    // The command has printed its first line long before the caller listens (the control: a
    // listener that came late got nothing of it before this, under load, in a clean-clone run).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    let out = "";
    pty.onData((chunk) => (out += chunk.toString("utf8")));
    expect(out).toContain("EARLY-LINE");
    pty.write(Buffer.from("ok\r"));
    expect(await result.seat.exit).toEqual({ kind: "exited", code: 5 });
    expect(out).toContain("LATE-ok");
    expect(out.indexOf("EARLY-LINE")).toBeLessThan(out.indexOf("LATE-ok"));
  });

  it("delivers Ctrl-C to a pty seat's program as a byte instead of signalling bwrap (which ended the seat)", async () => {
    const result = await createLinuxLauncher().launch({
      plan: await seat.plan(),
      command: ["/bin/sh", "-c", "echo up; read x; echo got-$(printf %s \"$x\" | od -An -tx1 | tr -d ' '); exit 4"],
      io: { kind: "pty", cols: 80, rows: 24 },
    });
    expect(result.ok).toBe(true);
    if (!result.ok || result.seat.io.kind !== "pty") return;
    const pty = result.seat.io;
    let out = "";
    pty.onData((chunk) => (out += chunk.toString("utf8")));
    for (let i = 0; i < 100 && !out.includes("up"); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    pty.write(Buffer.from("\x03\r"));
    // The program read the byte and ended as it chose; with ISIG on, bwrap died of SIGINT (130).
    expect(await result.seat.exit).toEqual({ kind: "exited", code: 4 });
    expect(out).toContain("got-03");
  });

  it("kills a pty seat by its init: everything in its namespace ends, and no launch file is left from the moment it runs", async () => {
    const launcher = createLinuxLauncher();
    const launchDirs = async () => new Set((await readdir(tmpdir())).filter((n) => n.startsWith("teamd-launch-")));
    const before = await launchDirs();
    const result = await launcher.launch({
      plan: await seat.plan(),
      command: ["/bin/sh", "-c", "sleep 300 & setsid sleep 300 & echo started; wait"],
      io: { kind: "pty", cols: 80, rows: 24 },
    });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    // The status folder is gone once the init is known (the launcher reads through its own
    // handle), so a daemon killed while the seat runs leaves nothing in tmp.
    const during = [...(await launchDirs())].filter((n) => !before.has(n));
    expect(during).toEqual([]);
    expect(() => process.kill(result.seat.initPid, 0)).not.toThrow();
    result.seat.kill();
    expect(await result.seat.exit).toMatchObject({ kind: "killed" });
    expect(() => process.kill(result.seat.initPid, 0)).toThrow();
    expect([...(await launchDirs())].filter((n) => !before.has(n))).toEqual([]);
  });

  it("reports a pty seat whose command is missing as a setup failure with its cause", async () => {
    const result = await createLinuxLauncher().launch({ plan: await seat.plan(), command: ["/nonexistent/agent"], io: { kind: "pty", cols: 80, rows: 24 } });
    if (result.ok) {
      const exit = await result.seat.exit;
      expect(exit).toMatchObject({ kind: "setup-failed" });
    } else expect(result.refusal.reason).toContain("/nonexistent/agent");
  });

  it("refuses to run a seat as host root", async () => {
    const plan = await seat.plan();
    const result = await createLinuxLauncher().launch({ plan: { ...plan, uid: 0 }, command: ["/bin/true"] });
    expect(result).toMatchObject({ ok: false, refusal: { rule: "containment.host-root" } });
  });

  it("reports a command missing inside the seat as a setup failure with its cause", async () => {
    const out = await seat.run(["/nonexistent/agent"]);
    expect(out.exit).toMatchObject({ kind: "setup-failed", refusal: { rule: "containment.failed" } });
    if (out.exit.kind === "setup-failed") expect(out.exit.refusal.reason).toContain("/nonexistent/agent");
  });

  it("reports that user namespaces are unavailable, from a real kernel refusal (a launcher run inside a seat)", async () => {
    // Inside a seat, --disable-userns makes the kernel refuse any further user namespace:
    // a launcher there meets exactly what a host without user namespaces gives it.
    const dist = join(process.cwd(), "dist/src/sandbox");
    const plan = await seat.plan((input) => input);
    const set = await buildReservedSet([]);
    if (!set.ok) throw new Error(set.reason);
    const distRoot = await describeRoot(dist, set.set);
    if (!distRoot.ok) throw new Error(distRoot.refusal.reason);
    const withDist = compilePlan({ ...(await seat.input()), readOnly: [...(await seat.input()).readOnly, distRoot.value] });
    if (withDist.decision !== "plan") throw new Error(withDist.reason);
    expect(plan.mounts.length).toBeGreaterThan(0);
    const script = `import(${JSON.stringify(join(dist, "launcher-linux.js"))}).then((m) => m.createLinuxLauncher().probe()).then((r) => console.log(JSON.stringify(r)))`;
    const out = await seat.run([process.execPath, "-e", script], { plan: withDist.plan, timeoutMs: 20_000 });
    const probe = JSON.parse(out.stdout) as { ok: boolean; refusal?: { rule: string; reason: string; fix: string } };
    expect(probe.ok).toBe(false);
    expect(probe.refusal?.rule).toBe("containment.unavailable");
    expect(probe.refusal?.reason).toMatch(/namespace/);
    expect(probe.refusal?.fix).toMatch(/user namespaces/);
  });

  it.runIf(isRoot)("as root: a bind source the seat's user cannot reach fails closed with bubblewrap's cause", async () => {
    // teamd (root) can read it, so the plan builds; bwrap (the seat's user) cannot, so
    // containment fails after the namespace exists: the exit says why, and the command never ran.
    const hidden = await mkdtemp(join(tmpdir(), "teamd-hidden-"));
    try {
      await chmod(hidden, 0o700);
      const inner = join(hidden, "data");
      await mkdir(inner);
      await writeFile(join(inner, "f"), "x");
      await chown(inner, seat.user.uid, seat.user.gid);
      const set = await buildReservedSet([]);
      if (!set.ok) throw new Error(set.reason);
      const root = await describeRoot(inner, set.set);
      if (!root.ok) throw new Error(root.refusal.reason);
      const input = await seat.input();
      const planned = compilePlan({ ...input, readOnly: [...input.readOnly, root.value] });
      if (planned.decision !== "plan") throw new Error(planned.reason);
      const out = await seat.run(sh("echo the-command-ran"), { plan: planned.plan });
      expect(out.stdout).toBe("");
      expect(out.exit).toMatchObject({ kind: "setup-failed", refusal: { rule: "containment.failed" } });
      if (out.exit.kind === "setup-failed") {
        expect(out.exit.refusal.reason).toContain(inner);
        expect(out.exit.refusal.fix).toMatch(/reachable by the seat's user/);
      }
    } finally {
      await rm(hidden, { recursive: true, force: true });
    }
  });

  it("probes the host as the seat's user", async () => {
    const probe = await createLinuxLauncher().probe({ uid: seat.user.uid, gid: seat.user.gid });
    expect(probe).toMatchObject({ ok: true });
  });
});
