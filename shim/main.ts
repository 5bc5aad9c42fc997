#!/usr/bin/env node
import { basename } from "node:path";
import { runCli } from "../src/rpc/index.js";
import { buildProgram, socketPath } from "./cli.js";
import { runGitRemote } from "./git-remote.js";

/**
 * `teamd-shim`, and `git-remote-teamd` when git runs the same bundle under that name (the
 * remote helper for `git fetch teamd` / `git push teamd`). The commands live in cli.ts.
 */
if (basename(process.argv[1] ?? "") === "git-remote-teamd") {
  // git calls `git-remote-teamd <remote> <url>`; failures go to stderr for git to show.
  // Exit explicitly: git waits on the helper's output, and an open stdin would keep it alive.
  try {
    await runGitRemote(socketPath());
    process.exit(0);
  } catch (error) {
    process.stderr.write(`git-remote-teamd: ${error instanceof Error ? error.message : String(error)}\n`, () => process.exit(128));
  }
} else {
  await runCli("teamd-shim", buildProgram(), process.argv);
}
