import { readdirSync, readFileSync } from "node:fs";

/**
 * SIGKILL a process of ours and its direct children, none left behind: it is stopped first
 * (SIGSTOP: it can make no child after that, nor reap one, so every pid read from its
 * `/proc/PID/task/<tid>/children` stays that child's until it is killed), then its children are
 * killed, then it. For bubblewrap when it has not named its sandbox's init (contained-git.ts):
 * one that had cloned the init but not reported it left that init waiting forever when it was
 * killed alone (an attack showed a CPU-starved seat can hold bubblewrap in that window).
 *
 * The stop is awaited (state T in /proc/PID/stat) for at most `stopWaitMs`, checked every
 * `stepMs` — a process starved of CPU takes time to stop; past the wait the children are read
 * and killed all the same.
 */
export async function killWithChildren(pid: number, options: { readonly stopWaitMs?: number; readonly stepMs?: number } = {}): Promise<void> {
  if (!signal(pid, "SIGSTOP")) return;
  const deadline = Date.now() + (options.stopWaitMs ?? 5_000);
  while (!stoppedOrGone(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, options.stepMs ?? 20));
  for (const child of childrenOf(pid)) signal(child, "SIGKILL");
  signal(pid, "SIGKILL");
}

function signal(pid: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}

function stoppedOrGone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // The state follows the command's name in parentheses (which may itself hold ") ").
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state === "T" || state === "t" || state === "Z" || state === "X";
  } catch {
    return true;
  }
}

/** The direct children of `pid`, from every thread's `children` file (empty where it is gone). */
export function childrenOf(pid: number): number[] {
  const found = new Set<number>();
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  for (const task of tasks) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/task/${task}/children`, "latin1");
    } catch {
      continue;
    }
    for (const word of text.split(" ")) if (/^\d+$/.test(word)) found.add(Number(word));
  }
  return [...found];
}
