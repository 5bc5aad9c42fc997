import { readdirSync, readFileSync } from "node:fs";

/**
 * Stopping a seat that has no pid namespace (`containment: none`) and no cgroup: kill the
 * process tree under its recorded root, by pid — never by name or process group (a child
 * that called setsid has left the group, not the tree). Each process found is SIGSTOPped
 * before its children are looked for, so nothing in the tree can fork a new child or exit
 * and hand its children to init while the walk goes on; /proc is walked again until a pass
 * finds no new descendant, then every one is SIGKILLed.
 *
 * What it cannot do, and docs/enforcement.md says: a process that left the tree before the
 * stop (a double fork whose middle process exited, so the grandchild was reparented to
 * init or a subreaper) is not under the root any more and escapes. Only a cgroup (the
 * daemon as root) holds such a process; then the stop is `cgroup.kill` too.
 */

/** The kernel's start time of a process (clock ticks since boot, /proc/<pid>/stat field 22): with the pid, it names one process, not a reused pid. */
export function processStartTime(pid: number): string | undefined {
  const stat = readStat(pid);
  return stat?.start;
}

/**
 * Whether the process `pid` started at `start` still runs: a zombie (exited, not yet reaped
 * by its parent — e.g. the seat's init while a hung daemon cannot reap it) does not.
 */
export function processRunning(pid: number, start: string): boolean {
  const stat = readStat(pid);
  return stat !== undefined && stat.start === start && stat.state !== "Z" && stat.state !== "X";
}

interface Stat {
  readonly state: string;
  readonly ppid: number;
  readonly start: string;
}

function readStat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: the fields after the last ")".
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // fields[0] is the state (field 3), so field N is fields[N - 3].
  const ppid = Number(fields[1]);
  const start = fields[19];
  if (!Number.isInteger(ppid) || start === undefined) return undefined;
  return { state: fields[0] ?? "", ppid, start };
}

function table(): Map<number, Stat> {
  const out = new Map<number, Stat>();
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (stat !== undefined) out.set(Number(name), stat);
  }
  return out;
}

function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ESRCH") return false;
    throw error;
  }
}

/** The pids of the tree under `root` (the root first), each stopped. Empty when the root is not the process `rootStart` names. */
function stopTree(root: number, rootStart: string | undefined): Map<number, string> {
  const found = new Map<number, string>();
  if (!Number.isInteger(root) || root <= 1 || root === process.pid) return found;
  const start = processStartTime(root);
  if (start === undefined || (rootStart !== undefined && start !== rootStart)) return found;
  if (!signal(root, "SIGSTOP")) return found;
  found.set(root, start);
  // Bounded: a tree cannot grow once all of it is stopped; each pass stops what the last found.
  for (let pass = 0; pass < 1000; pass += 1) {
    let added = 0;
    for (const [pid, stat] of table()) {
      if (found.has(pid) || !found.has(stat.ppid) || pid === process.pid) continue;
      if (signal(pid, "SIGSTOP")) {
        found.set(pid, stat.start);
        added += 1;
      }
    }
    if (added === 0) break;
  }
  return found;
}

/**
 * SIGKILL the process tree under `root` (rootStart: the start time recorded with it, so a
 * reused pid is never hit). Returns the pids killed. Synchronous: nothing in the tree runs
 * between the walk and the kill.
 */
export function killProcessTree(root: number, rootStart?: string): number[] {
  const found = stopTree(root, rootStart);
  const killed: number[] = [];
  for (const [pid, start] of found) {
    // Stopped processes do not exit by themselves, but something else may have killed and
    // reaped one since: only the same process (pid and start time) is signalled.
    if (processStartTime(pid) !== start) continue;
    if (signal(pid, "SIGKILL")) killed.push(pid);
  }
  return killed;
}

/** The live pids of the tree under `root` now (the root first), without signalling any: for tests and status. */
export function processTree(root: number): number[] {
  if (processStartTime(root) === undefined) return [];
  const found = new Set([root]);
  for (let pass = 0; pass < 1000; pass += 1) {
    let added = 0;
    for (const [pid, stat] of table()) {
      if (!found.has(pid) && found.has(stat.ppid)) {
        found.add(pid);
        added += 1;
      }
    }
    if (added === 0) break;
  }
  return [...found];
}
