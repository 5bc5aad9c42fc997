import { spawn } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { namespaceEmptied, pidsInNamespace } from "../../../daemon/lifecycle/cgroup.js";

/**
 * A stop waits until nothing of the run is left in its pid namespace (daemon/lifecycle/manager.ts
 * teardown). Here a real namespace (bubblewrap) with two processes: not empty while they run, a
 * wait that ends with the answer false (also on a clock that stands still); empty once its
 * init is killed.
 */
function namespaceUnder(parent: number): string | undefined {
  const own = readlinkSync("/proc/self/ns/pid");
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const ns = readlinkSync(`/proc/${entry}/ns/pid`);
      if (ppid === parent && ns !== own) return ns;
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

describe.runIf(process.platform === "linux")("namespaceEmptied", () => {
  it("says no while a process lives in the namespace, yes once its init is killed", async () => {
    const child = spawn(
      "bwrap",
      ["--unshare-pid", "--unshare-user", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "sh", "-c", "sleep 600 & sleep 600"],
      {
        stdio: "ignore",
      },
    );
    try {
      let ns: string | undefined;
      for (let i = 0; i < 400 && ns === undefined; i++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        ns = namespaceUnder(child.pid as number);
      }
      expect(ns).toBeDefined();
      const namespace = ns as string;
      for (let i = 0; i < 400 && (await pidsInNamespace(namespace)).length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      expect((await pidsInNamespace(namespace)).length).toBeGreaterThanOrEqual(3);
      expect(await namespaceEmptied(namespace, 100, Date.now)).toBe(false);
      expect(await namespaceEmptied(namespace, 100, () => 0)).toBe(false);
      child.kill("SIGKILL");
      expect(await namespaceEmptied(namespace, 10_000, Date.now)).toBe(true);
    } finally {
      child.kill("SIGKILL");
    }
  });
});
