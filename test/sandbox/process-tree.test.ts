import { afterEach, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { killProcessTree, processStartTime, processTree } from "../../src/sandbox/process-tree.js";
import { waitFor } from "../support/wait.js";

/**
 * The stop of an uncontained seat without a cgroup (process-tree.ts), on real processes: the
 * tree under a root is killed by pid, a child that called setsid included; a double-forked
 * orphan that left the tree escapes (what docs/enforcement.md says); a pid whose start time
 * is not the recorded one is never signalled.
 */
const started: ChildProcess[] = [];
const strays: string[] = [];

const alive = (pid: number, start?: string) => {
  const now = processStartTime(pid);
  if (now === undefined || (start !== undefined && now !== start)) return false;
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] ?? "");
};
const sessionOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3]);
};
/** A shell running `script`, its stdout lines collected. */
function shell(script: string): { child: ChildProcess; lines: string[] } {
  const child = spawn("/bin/sh", ["-c", script], { stdio: ["ignore", "pipe", "ignore"] });
  started.push(child);
  const lines: string[] = [];
  child.stdout?.setEncoding("utf8").on("data", (d: string) => lines.push(...d.split("\n").filter(Boolean)));
  return { child, lines };
}

afterEach(() => {
  for (const child of started.splice(0)) if (child.pid !== undefined && alive(child.pid)) child.kill("SIGKILL");
  for (const p of strays.splice(0)) {
    const [pid, start] = p.split("@");
    if (alive(Number(pid), start)) process.kill(Number(pid), "SIGKILL");
  }
});

describe.runIf(process.platform === "linux")("killing a process tree by pid", () => {
  it("kills the root and every descendant, one that called setsid included", async () => {
    // root sh -> (setsid sh -> sleep), and sh -> sleep; the setsid child prints its pid.
    const { child, lines } = shell("setsid sh -c 'echo $$; sleep 600 & wait' & sleep 600 & wait");
    const root = child.pid as number;
    expect(await waitFor(() => lines.length > 0 && processTree(root).length >= 4, 5000)).toBe(true);
    const setsidPid = Number(lines[0]);
    const tree = processTree(root);
    // The control: the setsid child is in the tree, in a session of its own.
    expect(tree).toContain(setsidPid);
    expect(sessionOf(setsidPid)).not.toBe(sessionOf(root));
    const named = tree.map((pid) => `${pid}@${processStartTime(pid)}`);
    strays.push(...named);
    const killed = killProcessTree(root, processStartTime(root));
    expect(killed.sort()).toEqual([...tree].sort());
    expect(await waitFor(() => named.every((p) => !alive(Number(p.split("@")[0]), p.split("@")[1])), 5000)).toBe(true);
  });

  it("cannot reach a double-forked orphan that left the tree before the stop (why a cgroup is the stop where there is one)", async () => {
    // The middle shell exits at once: its child (setsid) is reparented away from the root.
    const { child, lines } = shell("sh -c 'setsid sh -c \"echo \\$\\$; exec sleep 600\" &' ; sleep 600 & wait");
    const root = child.pid as number;
    expect(await waitFor(() => lines.length > 0, 5000)).toBe(true);
    const orphan = Number(lines[0]);
    strays.push(`${orphan}@${processStartTime(orphan)}`);
    expect(await waitFor(() => !processTree(root).includes(orphan), 5000)).toBe(true);
    killProcessTree(root, processStartTime(root));
    expect(await waitFor(() => !alive(root), 5000)).toBe(true);
    // What the docs say: it escapes. (The afterEach kills it, by pid and start time.)
    expect(alive(orphan)).toBe(true);
  });

  it("never signals a pid whose start time is not the recorded one", async () => {
    const { child } = shell("exec sleep 600");
    const root = child.pid as number;
    expect(await waitFor(() => processStartTime(root) !== undefined, 5000)).toBe(true);
    expect(killProcessTree(root, "1")).toEqual([]);
    expect(alive(root)).toBe(true);
    // The control: with its own start time it is killed.
    expect(killProcessTree(root, processStartTime(root))).toEqual([root]);
    expect(await waitFor(() => !alive(root), 5000)).toBe(true);
  });

  it("never walks from pid 1, its own pid or a pid that is not there", () => {
    expect(killProcessTree(1)).toEqual([]);
    expect(killProcessTree(process.pid)).toEqual([]);
    expect(killProcessTree(2 ** 22 + 12345)).toEqual([]);
  });
});
