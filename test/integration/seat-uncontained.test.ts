import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TEAMD, type DaemonProcess } from "../support/programs.js";
import { appliedTeam } from "../support/applied-team.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { type TeamdHarness } from "../support/teamd-harness.js";
import * as pty from "node-pty";
import { describeStored, openStore } from "../../src/ledger/index.js";
import { processStartTime, processTree } from "../../src/sandbox/process-tree.js";
import { waitFor } from "../support/wait.js";

/**
 * `containment: none` end to end (issue 7, "Fail closed"): a team file that asks for an
 * uncontained seat, applied and started through the real daemon and CLI. The seat really is
 * uncontained (it reads a canary no bwrap seat of the same team can), its shim and git remote
 * work over the socket's host path, its refusals are still decided and recorded, every record
 * and `teamd status` says none/M, `teamd start` warns, and a stop — and the sweep after a
 * daemon killed with -9 — leaves no process of it, a child that called setsid included.
 *
 * As root (system mode) the seat runs as `teamd-seat` and has its own cgroup, so the stop and
 * the sweep end it by `cgroup.kill` as well as by its process tree; the tree walk alone (an
 * ordinary user without a cgroup) is tested on real processes in
 * test/sandbox/launcher-none.test.ts and process-tree.test.ts.
 */
const asRoot = process.getuid?.() === 0;
const seatUser = asRoot ? ensureSeatUser() : { uid: process.getuid?.() ?? -1 };
const CANARY = "UNCONTAINED-CANARY-7f3a";

/** The uncontained seat's command: a child that leaves its session (setsid), then the init waits. */
const LOOSE_COMMAND = `[sh, -c, "setsid sleep 3601 & exec sleep 3600"]`;

const TEAM_FILE = (containment: string) => `version: 1
team: proj
declare:
  branches: [main]
  labs: [anthropic]
seats:
  loose:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: ${LOOSE_COMMAND}
${containment}  tight:
    lab: anthropic
    roles: [observer]
    start:
      command: [sleep, "3600"]
`;
const NONE = "      containment: none\n";

interface Json {
  [key: string]: unknown;
}
interface SeatJson extends Json {
  seat: string;
  state: string;
  initPid: number;
  containment: string;
  cgroup: string;
}

/** The live processes of `pids`, each named by pid and start time (a reused pid is another process). */
const live = (procs: readonly string[]) =>
  procs.filter((p) => {
    const [pid, start] = p.split("@");
    const now = processStartTime(Number(pid));
    if (now === undefined || now !== start) return false;
    const state = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^[ZX]$/.test(state.slice(state.lastIndexOf(")") + 2).split(" ")[0] ?? "");
  });
const named = (pids: readonly number[]) =>
  pids.flatMap((pid) => {
    const start = processStartTime(pid);
    return start === undefined ? [] : [`${pid}@${start}`];
  });
const sessionOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3]);
};

describe.runIf(process.platform === "linux")("seats: containment: none runs a seat uncontained, and says so everywhere", () => {
  let h: TeamdHarness;
  let daemon: DaemonProcess | undefined;
  let canary: string;
  /** Every process of the uncontained seat this test saw, to kill (by pid and start time) whatever a failed assertion leaves. */
  const seen = new Set<string>();

  const status = () => h.json<{ seats: SeatJson[] }>(["status", "--json"]);
  const seatOf = async (name: string) => (await status()).seats.find((s) => s.seat === name);
  /** The seat's tree now (init first), named; remembered for the cleanup. */
  const treeOf = (init: number) => {
    const procs = named(processTree(init));
    for (const p of procs) seen.add(p);
    return procs;
  };
  const payloads = (): Json[] => {
    const store = openStore(join(h.home, "ledger", "ledger.db"), { readonly: true });
    try {
      return store
        .records(0, 100_000)
        .map(
          (row) =>
            JSON.parse(
              JSON.stringify(describeStored(row), (_k, v: unknown) =>
                typeof v === "bigint" ? String(v) : v instanceof Uint8Array ? Buffer.from(v).toString("latin1") : v,
              ),
            ) as Json,
        );
    } finally {
      store.close();
    }
  };
  /** A record's payload fields as a map (key → value): every { key, value } pair of text in it. */
  const fieldsOf = (record: Json): Record<string, string> => {
    const out: Record<string, string> = {};
    const walk = (v: unknown) => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v !== null && typeof v === "object") {
        const o = v as Record<string, unknown>;
        if (typeof o.key === "string" && typeof o.value === "string") out[o.key] = o.value;
        Object.values(o).forEach(walk);
      }
    };
    walk(record);
    return out;
  };
  const recordsOf = (action: string, seat: string) =>
    payloads().filter((r) => JSON.stringify(r).includes(`"${action}"`) && JSON.stringify(r).includes(`"seat":"${seat}"`));

  beforeAll(async () => {
    h = await appliedTeam("teamd-uncontained-", TEAM_FILE(NONE), { "README.md": "hello\n", "src/a.txt": "a\n" });
    daemon = h.daemon;
    // A file outside every seat's plan, readable by the seat's host user.
    canary = join(h.dir, "canary.txt");
    writeFileSync(canary, `${CANARY}\n`, { mode: 0o644 });
    chmodSync(canary, 0o644);
  }, 60_000);
  afterAll(async () => {
    try {
      await daemon?.stop();
      for (const p of live([...seen])) {
        try {
          process.kill(Number(p.split("@")[0]), "SIGKILL");
        } catch {
          /* gone */
        }
      }
    } finally {
      await h?.cleanup();
    }
  }, 30_000);

  it("starts the seat with a loud warning; status says none (M), its records say none and M", async () => {
    const started = await h.run(["start", "loose", "--json"]);
    expect(started.code, started.stderr).toBe(0);
    expect(JSON.parse(started.stdout)).toMatchObject({ started: [{ seat: "loose", state: "running", containment: "none" }] });
    expect(started.stderr).toMatch(
      /^warning: seat loose runs UNCONTAINED \(containment: none in teamd\.yaml\): it can read and write everything .+ can; refusals hold against a mistake only$/m,
    );
    const tight = await h.run(["start", "tight"]);
    expect(tight.code, tight.stderr).toBe(0);
    // The control: a contained seat gets no warning.
    expect(tight.stderr).not.toMatch(/UNCONTAINED/);

    const loose = await seatOf("loose");
    expect(loose).toMatchObject({ state: "running", containment: "none" });
    // As root a host uid of the seat's own (daemon/host/seat-uids.ts); else the daemon's.
    if (asRoot) expect(loose?.uid).toBeGreaterThanOrEqual(0x7000_0000);
    else expect(loose?.uid).toBe(seatUser.uid);
    expect((await seatOf("tight"))?.containment).toBe("bwrap");
    const text = await h.run(["status"]);
    expect(text.stdout).toMatch(/loose@proj .*containment: none \(M\)/);
    expect(text.stdout).toMatch(/tight@proj .*containment: bwrap \(A: escape suite\)/);

    const start = recordsOf("seat.start", "loose");
    expect(start.length).toBe(1);
    expect(fieldsOf(start[0] as Json)).toMatchObject({ containment: "none", strength: "M" });
    expect(fieldsOf(recordsOf("seat.start", "tight")[0] as Json)).toMatchObject({ containment: "bwrap", strength: "A (escape suite)" });
  });

  it("teamd doctor notes the seat running uncontained (a warning, not a failure)", async () => {
    const doctor = await h.run(["doctor", "--json"]);
    const report = JSON.parse(doctor.stdout) as { checks: Array<{ name: string; verdict: string; detail: string }> };
    expect(report.checks.find((c) => c.name === "uncontained seats")).toMatchObject({ verdict: "warn", detail: expect.stringContaining("loose@proj") });
    // The contained seat is not named.
    expect(JSON.stringify(report.checks.find((c) => c.name === "uncontained seats"))).not.toContain("tight@proj");
  });

  it("an owner who attaches is told, and the seat.attach record says none and M", async () => {
    const term = pty.spawn(process.execPath, [TEAMD, "attach", "loose"], {
      cols: 100,
      rows: 30,
      cwd: h.repo,
      env: { ...process.env, ...h.env } as Record<string, string>,
    });
    let out = "";
    term.onData((d) => (out += d));
    const exited = new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
    try {
      expect(await waitFor(() => out.includes("detach with Ctrl-]"), 15_000), out).toBe(true);
      expect(out).toContain("attached to loose@proj (containment: none)");
      term.write("\x1d");
      expect(await exited).toBe(0);
    } finally {
      try {
        process.kill(term.pid, "SIGKILL");
      } catch {
        /* gone */
      }
    }
    expect(fieldsOf(recordsOf("seat.attach", "loose").at(-1) as Json)).toMatchObject({ containment: "none", strength: "M" });
  });

  it("really is uncontained: it reads a canary outside every plan that a bwrap seat of the same team cannot", async () => {
    const loose = await h.run(["exec", "loose", "--", "cat", canary]);
    expect(loose, loose.stderr).toMatchObject({ code: 0, stdout: `${CANARY}\n` });
    // The control: the same file, the same team, contained.
    const tight = await h.run(["exec", "tight", "--", "cat", canary]);
    expect(tight.code).not.toBe(0);
    expect(tight.stdout).not.toContain(CANARY);
    // It runs as the seat's user on the host, in its repository, with the plan's environment only.
    const who = await h.run(["exec", "loose", "--", "sh", "-c", "id -u; pwd; echo $HOME; env | sort | cut -d= -f1 | tr '\\n' ' '"]);
    expect(who.code, who.stderr).toBe(0);
    const [uid, cwd, seatHome, names] = who.stdout.split("\n");
    // No namespace: the seat's own host uid, as status says.
    expect(Number(uid)).toBe((await seatOf("loose"))?.uid);
    expect(cwd).toBe(join(h.home, "seats/proj/loose/repo"));
    expect(seatHome).toBe(join(h.home, "seats/proj/loose/home"));
    expect(names).not.toMatch(/TEAMD_HOME|TEAMD_OWNER_KEY/);
    // The exec was recorded as an owner act, saying none/M.
    expect(fieldsOf(recordsOf("seat.exec", "loose").at(-1) as Json)).toMatchObject({ containment: "none", strength: "M" });
  });

  it("answers teamd-shim whoami over the socket's host path, and still refuses (and records) a push outside the write scope", async () => {
    const socket = (await seatOf("loose"))?.socket as string;
    const where = await h.run(["exec", "loose", "--", "sh", "-c", "echo $TEAMD_SOCKET; command -v teamd-shim; command -v git-remote-teamd"]);
    expect(where.code, where.stderr).toBe(0);
    const [envSocket, shimPath, helperPath] = where.stdout.split("\n");
    expect(envSocket).toBe(socket);
    expect(envSocket).not.toBe("/run/teamd/shim.sock");
    expect(shimPath).toMatch(/\/teamd-shim$/);
    expect(helperPath).toMatch(/\/git-remote-teamd$/);
    const who = await h.run(["exec", "loose", "--", "teamd-shim", "whoami", "--json"]);
    expect(who.code, who.stderr).toBe(0);
    expect(JSON.parse(who.stdout)).toMatchObject({ seat: "loose", team: "proj", containment: "none" });
    const whoText = await h.run(["exec", "loose", "--", "teamd-shim", "whoami"]);
    expect(whoText.stdout).toMatch(/containment: none \(UNCONTAINED/);

    // Outside its write scope (src/): refused by the kernel, recorded as the seat's refusal.
    const refusalsBefore = payloads().filter((r) => r.type === "refusal" || JSON.stringify(r).includes('"refusal"')).length;
    const outside = await h.run([
      "exec",
      "loose",
      "--",
      "sh",
      "-c",
      "echo changed > README.md && git -c user.name=s -c user.email=s@x commit -qam readme && git push -q teamd HEAD 2>&1; echo exit=$?",
    ]);
    expect(outside.stdout).toMatch(/exit=[1-9]/);
    expect(outside.stdout).toMatch(/refused|write/i);
    const log = (await h.run(["log", "--json", "--type", "refusal"])).stdout
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Json);
    expect(log.some((r) => r.actor === "seat:proj/loose")).toBe(true);
    expect(payloads().filter((r) => r.type === "refusal" || JSON.stringify(r).includes('"refusal"')).length).toBeGreaterThan(refusalsBefore);
  });

  it("pushes through the teamd remote: the branch lands on seat/loose/… in the hub", async () => {
    const hub = join(h.home, "hubs/proj.git");
    const pushed = await h.run([
      "exec",
      "loose",
      "--",
      "sh",
      "-c",
      "git reset -q --hard HEAD~1 && echo b > src/b.txt && git add -A && git -c user.name=s -c user.email=s@x commit -qm b && git push -q teamd HEAD:refs/heads/seat/loose/feature && git rev-parse HEAD",
    ]);
    expect(pushed.code, pushed.stdout + pushed.stderr).toBe(0);
    const head = pushed.stdout.trim().split("\n").at(-1);
    expect(execFileSync("git", ["--git-dir", hub, "rev-parse", "refs/heads/seat/loose/feature"], { encoding: "utf8" }).trim()).toBe(head);
    // And fetch works the other way.
    const fetched = await h.run(["exec", "loose", "--", "git", "fetch", "-q", "teamd"]);
    expect(fetched.code, fetched.stderr).toBe(0);
  });

  it("stops with no process of the seat left, the child that called setsid included", async () => {
    const loose = await seatOf("loose");
    const init = loose?.initPid as number;
    const tree = await (async () => {
      let procs: string[] = [];
      await waitFor(() => (procs = treeOf(init)).length >= 2, 5000);
      return procs;
    })();
    // The control: the tree is there, and one of it has left the init's session.
    expect(tree.length).toBeGreaterThanOrEqual(2);
    const pids = tree.map((p) => Number(p.split("@")[0]));
    expect(pids.some((pid) => sessionOf(pid) !== sessionOf(init))).toBe(true);
    if (asRoot) expect(loose?.cgroup).not.toMatch(/^none/);
    const stopped = await h.run(["stop", "loose", "--json"]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(await waitFor(() => live(tree).length === 0, 5000)).toBe(true);
    expect(await seatOf("loose")).toBeUndefined();
    expect(existsSync(join(h.home, "run/seats.d/proj.loose.json"))).toBe(false);
    const stop = recordsOf("seat.stop", "loose");
    expect(stop.length).toBe(1);
  });

  it("after kill -9 of the daemon, the next start sweeps what is left of the uncontained seat", async () => {
    const started = await h.run(["start", "loose"]);
    expect(started.code, started.stderr).toBe(0);
    const seat = await seatOf("loose");
    const init = seat?.initPid as number;
    const hasCgroup = !(seat?.cgroup ?? "none").startsWith("none");
    let tree: string[] = [];
    await waitFor(() => (tree = treeOf(init)).length >= 2, 5000);
    expect(tree.length).toBeGreaterThanOrEqual(2);
    const registry = JSON.parse(readFileSync(join(h.home, "run/seats.d/proj.loose.json"), "utf8")) as Json;
    expect(registry).toMatchObject({ containment: "none", initPid: init, initStart: processStartTime(init), pidNamespace: "" });

    const d = daemon as DaemonProcess;
    d.child.kill("SIGKILL");
    await d.stop();
    daemon = undefined;
    // The pty's hangup may end the init; the child that left its session is not in it.
    await new Promise((r) => setTimeout(r, 500));
    const survivors = live(tree);
    // The control: the crash alone does not end the seat.
    expect(survivors.length).toBeGreaterThan(0);

    daemon = await h.startDaemon();
    expect(existsSync(join(h.home, "run/seats.d/proj.loose.json"))).toBe(false);
    if (hasCgroup) {
      // Its cgroup holds every process it ever made: the sweep's cgroup.kill ends them all.
      expect(await waitFor(() => live(tree).length === 0, 10_000)).toBe(true);
    } else {
      // Without a cgroup the sweep kills the tree under the recorded init while that init lives;
      // a child whose init the hangup ended was reparented and escapes (docs/enforcement.md says so).
      await new Promise((r) => setTimeout(r, 1000));
      expect(live(tree).length).toBeGreaterThan(0);
    }
    expect(readdirSync(join(h.home, "run/seats.d"))).toEqual([]);
  }, 60_000);

  it("changing containment is a policy change: on disk it is not in force; applied, it shows in the diff and the seat runs contained", async () => {
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE(""));
    // Not applied: the seat still starts as the policy in force says (uncontained).
    const before = await h.run(["start", "loose"]);
    expect(before.code, before.stderr).toBe(0);
    expect(before.stderr).toMatch(/UNCONTAINED/);
    expect((await seatOf("loose"))?.containment).toBe("none");
    for (const p of treeOf((await seatOf("loose"))?.initPid as number)) seen.add(p);
    expect((await h.run(["stop", "loose"])).code).toBe(0);

    const applied = await h.run(["apply", "--yes", "--json"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain("start containment: none -> bwrap");
    const after = await h.run(["start", "loose"]);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stderr).not.toMatch(/UNCONTAINED/);
    expect((await seatOf("loose"))?.containment).toBe("bwrap");
    const read = await h.run(["exec", "loose", "--", "cat", canary]);
    expect(read.code).not.toBe(0);
    expect((await h.run(["stop", "--team", "proj"])).code).toBe(0);
    // A team's stop holds (§9, §15) until the owner resumes it.
    await h.ok(["resume", "--team", "proj"]);
  }, 60_000);

  it("teamd stop --all with the daemon hung: the CLI kills the uncontained seat itself from the registry", async () => {
    writeFileSync(join(h.repo, "teamd.yaml"), TEAM_FILE(NONE));
    expect((await h.run(["apply", "--yes"])).code).toBe(0);
    expect((await h.run(["start", "loose"])).code).toBe(0);
    const init = (await seatOf("loose"))?.initPid as number;
    let tree: string[] = [];
    await waitFor(() => (tree = treeOf(init)).length >= 2, 5000);
    expect(tree.length).toBeGreaterThanOrEqual(2);
    const pid = daemon?.child.pid as number;
    process.kill(pid, "SIGSTOP");
    let stopped: { stopped: boolean; path: string; killedByCli: Array<{ seat: string }> };
    try {
      const result = await h.run(["stop", "--all", "--json"], { timeoutMs: 30_000 });
      expect(result.code, result.stderr).toBe(0);
      stopped = JSON.parse(result.stdout) as typeof stopped;
      // Before the daemon runs again: nothing of the seat is left, by the CLI's hand alone.
      expect(await waitFor(() => live(tree).length === 0, 5000)).toBe(true);
    } finally {
      process.kill(pid, "SIGCONT");
    }
    expect(stopped).toMatchObject({ stopped: true, path: "cli", killedByCli: [{ seat: "loose" }] });
    const resumed = await h.run(["resume", "--json"]);
    expect(resumed.code, resumed.stderr).toBe(0);
  }, 60_000);
});
