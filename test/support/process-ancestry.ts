import { execFileSync } from "node:child_process";

/**
 * One `ps` snapshot of the host: each process whose row `want` picks, with the command lines
 * of its ancestors, nearest first, up to pid 1 (joined by " <= "). A contained git's sandbox is
 * among them: its parent is bwrap for a run of its own, and a git session's bash (inside bwrap)
 * for a run in a push's session (src/effects/git-session.ts).
 */
export function rowsWithAncestors(want: (row: string) => boolean): Map<string, string> {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid=,cmd="], { encoding: "utf8" })
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  const byPid = new Map(rows.map((row) => [row.split(/\s+/)[0] ?? "", row]));
  const found = new Map<string, string>();
  for (const row of rows) {
    if (!want(row)) continue;
    const chain: string[] = [];
    let parent = row.split(/\s+/)[1];
    for (let depth = 0; parent !== undefined && parent !== "0" && depth < 64; depth++) {
      const up = byPid.get(parent);
      if (up === undefined) break;
      chain.push(up);
      parent = up.split(/\s+/)[1];
    }
    found.set(row, chain.length > 0 ? chain.join("  <=  ") : "?");
  }
  return found;
}
