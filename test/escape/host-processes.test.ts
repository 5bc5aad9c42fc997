import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { createRealSeat, type RealSeat } from "../sandbox/fixture/real-seat.js";

/**
 * Proves (docs/enforcement.md): "Containment (§11): a seat cannot see or signal host
 * processes, and cannot make user namespaces or mounts". The victim is a real host process
 * this test starts (and stops, by pid); the daemon would be one like it.
 */
let seat: RealSeat;
let victim: ChildProcess | undefined;
beforeEach(async () => {
  seat = await createRealSeat();
});
afterEach(async () => {
  if (victim?.pid !== undefined && victim.exitCode === null) {
    const gone = new Promise((resolve) => victim?.once("exit", resolve));
    process.kill(victim.pid, "SIGKILL");
    await gone;
  }
  victim = undefined;
  await seat.cleanup();
});

const sh = (script: string) => ["/bin/sh", "-c", script];

describe.runIf(process.platform === "linux")("escape: host processes, namespaces and mounts", () => {
  it("cannot see or signal a host process, nor read its environment", async () => {
    victim = spawn("/bin/sleep", ["300"], { env: { TEAMD_VICTIM_SECRET: "victim-env-secret" }, stdio: "ignore" });
    const pid = victim.pid as number;
    const out = await seat.run(
      sh(
        `kill -9 ${pid}; kill -9 ${process.pid}; cat /proc/${pid}/environ; cat /proc/${process.pid}/environ; ls /proc | grep -E '^[0-9]+$' | wc -l; echo done`,
      ),
    );
    expect(out.stdout).not.toContain("victim-env-secret");
    expect(out.stderr).toMatch(/No such process/);
    const visible = Number(out.stdout.trim().split("\n").at(-2));
    expect(visible).toBeLessThan(10); // the seat's own few processes, not the host's
    expect(victim.exitCode).toBeNull(); // control: still alive, and killable from the host (afterEach)
    expect(() => process.kill(pid, 0)).not.toThrow();
  });

  it("cannot make a user namespace, a mount namespace or a mount", async () => {
    const out = await seat.run(
      sh(
        `unshare -U true; echo userns=$?; unshare -m true; echo mntns=$?; unshare -r true; echo root=$?; mount -t tmpfs none ${seat.tmp}; echo mount=$?; umount /proc; echo umount=$?`,
      ),
    );
    for (const attempt of ["userns", "mntns", "root", "mount", "umount"]) expect(out.stdout).toMatch(new RegExp(`^${attempt}=[1-9]`, "m"));
  });
});
