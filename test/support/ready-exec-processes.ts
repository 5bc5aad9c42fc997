import { readdirSync, readFileSync } from "node:fs";

/**
 * The host's processes of one daemon's ready execs (daemon/lifecycle/ready-exec.ts): bwrap's
 * outer process and its namespace's init, whose argv carries the daemon's home (`home`) and the
 * trampoline's name (src/sandbox/exec-trampoline.ts). Read from /proc; a process gone meanwhile is skipped.
 */
export function readyExecProcesses(home: string): string[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      const argv = cmdline(pid);
      return argv.includes("teamd-exec") && argv.some((arg) => arg.includes(home));
    });
}

/** A process's argv, or none when it is gone or unreadable. */
export function cmdline(pid: string): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  } catch {
    return [];
  }
}
