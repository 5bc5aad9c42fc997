import { execFileSync } from "node:child_process";

/** git for test fixtures: no user or system config, a fixed identity, nothing inherited that could redirect it. */
export const GIT_TEST_ENV: NodeJS.ProcessEnv = Object.freeze({
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.invalid",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.invalid",
});

/** Run git in `cwd` for a fixture; its trimmed stdout, or a thrown error with git's stderr. */
export function sh(cwd: string, args: readonly string[], input?: string | Buffer): string {
  return execFileSync("git", args, { cwd, env: GIT_TEST_ENV, input, stdio: ["pipe", "pipe", "pipe"], encoding: "utf8", maxBuffer: 64 * 1024 * 1024 }).trim();
}
