import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The benches' team: one seat that reads and writes everything, waiting (`sleep 3600`). */
export const BENCH_TEAM_FILE = `version: 1
team: bench
declare:
  branches: [main]
  labs: [anthropic]
review: { mode: distinct-seat }
seats:
  bench:
    lab: anthropic
    capabilities:
      read: ~
      write: ~
    start:
      command: [sleep, "3600"]
`;

/** A bench's repository: made at `repo`, one commit of README.md on main, outside the user's git config. */
export function makeBenchRepo(repo: string): void {
  mkdirSync(repo);
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=b", "-c", "user.email=b@bench.invalid", ...args], {
      cwd: repo,
      env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" },
    });
  git("init", "-q", "-b", "main");
  writeFileSync(join(repo, "README.md"), "bench\n");
  git("add", "-A");
  git("commit", "-qm", "first");
}
