import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/**
 * What the host sees of a seat's processes, read from /proc (never from inside the seat): the
 * escape tests' proof that nothing of a stopped seat is left running.
 */

/** Every pid on the host whose real uid is `uid`. */
export function pidsOfUid(uid: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, "utf8");
      const line = /^Uid:\s+(\d+)/m.exec(status);
      if (line !== null && Number(line[1]) === uid) found.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** The pid namespace of a process ("pid:[4026532...]"), or undefined when it is gone. */
export function pidNamespace(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return undefined;
  }
}

/** Every pid on the host in the pid namespace `ns`. */
export function pidsInNamespace(ns: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    if (pidNamespace(Number(name)) === ns) found.push(Number(name));
  }
  return found;
}

/** The command line of a pid, for a failure's message. */
export function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim();
  } catch {
    return "(gone)";
  }
}

/** Every pid on the host running exactly `argv` (its /proc cmdline, argument by argument). */
export function pidsRunning(argv: readonly string[]): number[] {
  const wanted = argv.map((arg) => `${arg}\0`).join("");
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "latin1") === wanted) found.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}
