import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { join } from "node:path";
import { createLauncher } from "../../src/sandbox/launcher.js";
import { createUncontainedLauncher } from "../../src/sandbox/launcher-none.js";
import type { LaunchResult, SeatProcess } from "../../src/sandbox/launcher.js";
import { processStartTime, processTree } from "../../src/sandbox/process-tree.js";
import { connectCommand, createRealSeat, SEAT_REPLY, type RealSeat } from "./fixture/real-seat.js";
import { waitFor } from "../support/wait.js";

/**
 * The uncontained launcher (`containment: none`) on a real host: the command runs on the
 * host as the seat's user, in its repository, with the plan's environment only and the seat
 * socket at its host path; its exit code is the command's; kill() ends its process tree, a
 * setsid child included (no cgroup here: the tree walk). Each claim has its control — the
 * same plan under bubblewrap.
 */
const seats: SeatProcess[] = [];
const named: string[] = [];

async function collect(result: LaunchResult): Promise<{ code: number; kind: string; stdout: string; stderr: string }> {
  if (!result.ok) throw new Error(`refused: ${result.refusal.rule}: ${result.refusal.reason}`);
  const { seat } = result;
  seats.push(seat);
  if (seat.io.kind !== "pipes") throw new Error("pipes expected");
  seat.io.stdin.end();
  let stdout = "";
  let stderr = "";
  seat.io.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  seat.io.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const timer = setTimeout(() => seat.kill(), 15_000);
  const exit = await seat.exit;
  clearTimeout(timer);
  await new Promise((r) => setTimeout(r, 50));
  return { code: exit.code, kind: exit.kind, stdout, stderr };
}
const alive = (p: string) => {
  const [pid, start] = p.split("@");
  if (processStartTime(Number(pid)) !== start) return false;
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] ?? "");
};

describe.runIf(process.platform === "linux")("the uncontained launcher (containment: none)", () => {
  let seat: RealSeat;
  const launcher = createUncontainedLauncher();

  beforeAll(async () => {
    seat = await createRealSeat();
  }, 30_000);
  afterAll(async () => {
    for (const s of seats) s.kill();
    for (const p of named) if (alive(p)) process.kill(Number(p.split("@")[0]), "SIGKILL");
    await seat?.cleanup();
  });

  it("runs on the host: it reads a file outside the plan that the same plan under bubblewrap cannot", async () => {
    const secret = `${seat.outside}/secret.txt`;
    const loose = await collect(await launcher.launch({ plan: await seat.plan(), command: ["cat", secret] }));
    expect(loose).toMatchObject({ kind: "exited", code: 0, stdout: "OUTSIDE-SECRET\n" });
    // The control: contained, the same read fails.
    const tight = await seat.run(["cat", secret]);
    expect(tight.exit.code).not.toBe(0);
    expect(tight.stdout).not.toContain("OUTSIDE-SECRET");
  });

  it("runs as the seat's user in its repository, with the plan's environment only and the socket at its host path", async () => {
    const out = await collect(await launcher.launch({ plan: await seat.plan(), command: ["sh", "-c", "id -u; id -G; pwd; env | sort"] }));
    expect(out.code, out.stderr).toBe(0);
    const [uid, groups, cwd, ...env] = out.stdout.trim().split("\n");
    expect(Number(uid)).toBe(seat.user.uid);
    expect(uid).not.toBe("0");
    // As root, root's supplementary groups are dropped.
    expect(groups?.split(" ")).not.toContain("0");
    expect(cwd).toBe(seat.repo);
    expect(env).toContain(`TEAMD_SOCKET=${seat.socketPath}`);
    expect(env).toContain("SEAT_ROLE=builder");
    expect(env).toContain(`HOME=${seat.home}`);
    expect(env.join("\n")).not.toMatch(/SECRET_TOKEN|do-not-pass/);
    // Nothing of this process's environment (the daemon's, in teamd) reaches it.
    const plan = await seat.plan();
    for (const name of Object.keys(process.env).filter(
      (n) => !Object.prototype.hasOwnProperty.call(plan.env, n) && !["PWD", "SHLVL", "_", "OLDPWD"].includes(n),
    )) {
      expect(
        env.some((line) => line.startsWith(`${name}=`)),
        name,
      ).toBe(false);
    }
    const reached = await collect(await launcher.launch({ plan: await seat.plan(), command: connectCommand(seat.socketPath) }));
    expect(reached.stdout).toContain(SEAT_REPLY);
  });

  it("puts teamd-shim and git-remote-teamd first on PATH, reachable by the seat's user whatever the daemon's umask", async () => {
    const dir = join(seat.base, "shim");
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o755);
    const bundle = join(dir, "teamd-shim-test.cjs");
    copyFileSync(join(process.cwd(), "dist/shim-bundle/teamd-shim.cjs"), bundle);
    chmodSync(bundle, 0o755);
    const front = `${bundle}.git-remote`;
    copyFileSync(join(process.cwd(), "dist/shim-bundle/teamd-shim.cjs.git-remote"), front);
    chmodSync(front, 0o755);
    const plan = await seat.plan((input) => ({ ...input, host: { ...input.host, shimBundle: bundle, shimGitRemote: front, shimCommand: "teamd-shim" } }));
    // A system service runs with UMask=0077: the folder of names must still be the seat user's to reach.
    const old = process.umask(0o077);
    let launched: LaunchResult;
    try {
      launched = await launcher.launch({ plan, command: ["sh", "-c", "command -v teamd-shim; command -v git-remote-teamd; teamd-shim --version"] });
    } finally {
      process.umask(old);
    }
    const out = await collect(launched);
    expect(out.code, out.stderr).toBe(0);
    const bin = join(dir, "bin-teamd-shim-test");
    expect(out.stdout).toBe(`${bin}/teamd-shim\n${bin}/git-remote-teamd\n0.1.0\n`);
    expect(statSync(bin).mode & 0o777).toBe(0o755);
    expect(readlinkSync(join(bin, "teamd-shim"))).toBe(bundle);
    expect(readlinkSync(join(bin, "git-remote-teamd"))).toBe(front);
  });

  it("hands back the command's own exit code", async () => {
    expect(await collect(await launcher.launch({ plan: await seat.plan(), command: ["sh", "-c", "echo err >&2; exit 7"] }))).toMatchObject({
      kind: "exited",
      code: 7,
      stderr: "err\n",
    });
    const missing = await collect(await launcher.launch({ plan: await seat.plan(), command: ["/nonexistent/agent"] }));
    expect(missing.code).toBe(127);
  });

  it.each(["pipes", "pty"] as const)("kill() ends its whole process tree, a child that called setsid included (%s)", async (io) => {
    const launched = await launcher.launch({
      plan: await seat.plan(),
      command: ["sh", "-c", "setsid sleep 3601 & exec sleep 3600"],
      ...(io === "pty" ? { io: { kind: "pty", cols: 80, rows: 24 } } : {}),
    });
    if (!launched.ok) throw new Error(launched.refusal.reason);
    seats.push(launched.seat);
    const init = launched.seat.initPid;
    expect(await waitFor(() => processTree(init).length >= 2, 5000)).toBe(true);
    const tree = processTree(init).map((pid) => `${pid}@${processStartTime(pid)}`);
    named.push(...tree);
    // The control: it runs, and not in a pid namespace of its own.
    expect(readFileSync(`/proc/${init}/status`, "utf8")).toMatch(/^NSpid:\s+\d+$/m);
    launched.seat.kill();
    expect((await launched.seat.exit).kind).toBe("killed");
    expect(await waitFor(() => tree.every((p) => !alive(p)), 5000)).toBe(true);
  });

  it("refuses a seat with egress: its proxy lives in a network namespace it does not have", async () => {
    const plan = await seat.plan();
    const result = await launcher.launch({ plan: { ...plan, egress: { proxy: "x" } as never }, command: ["true"] });
    expect(result).toMatchObject({ ok: false, refusal: { rule: "containment.unavailable" } });
    if (!result.ok) expect(result.refusal.reason).toMatch(/start\.network is not supported yet for an uncontained seat/);
  });

  it("fail closed stays: without bubblewrap a seat is refused unless the team file says containment: none", async () => {
    const linux = createLauncher("linux", { linux: { bwrap: "/nonexistent/bwrap" } });
    const plan = await seat.plan();
    const contained = await linux.launch({ plan, command: ["true"] });
    expect(contained).toMatchObject({ ok: false, refusal: { rule: "containment.unavailable" } });
    if (!contained.ok) expect(contained.refusal.reason).toMatch(/bubblewrap is not installed/);
    expect(await linux.launch({ plan, command: ["true"], containment: "bwrap" })).toMatchObject({ ok: false });
    const uncontained = await collect(await linux.launch({ plan, command: ["true"], containment: "none" }));
    expect(uncontained).toMatchObject({ kind: "exited", code: 0 });
  });

  it.each([
    ["darwin", /uncontained .* on macOS is not supported yet/],
    ["win32", /uncontained .* on Windows is not supported yet/],
    ["freebsd", /freebsd is not supported/],
  ] as const)("refuses containment: none on %s (the launcher is Linux's)", async (platform, reason) => {
    const result = await createLauncher(platform).launch({ plan: await seat.plan(), command: ["true"], containment: "none" });
    expect(result).toMatchObject({ ok: false, refusal: { rule: "containment.unavailable" } });
    if (!result.ok) expect(result.refusal.reason).toMatch(reason);
  });
});
