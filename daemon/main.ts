#!/usr/bin/env node
import { runCli } from "../src/rpc/cli-outcome.js";
import { buildProgram } from "./cli.js";
import { terminalJson, terminalLines } from "./host/terminal-text.js";

/**
 * `teamd`: the owner's program; its commands live in cli.ts. Its errors can quote a seat: printed escaped.
 * No top-level await: npm's `teamd` runs this file bundled as CommonJS (dist/bin/teamd.cjs, scripts/build-shim.ts).
 */
// A reader that closes early (`teamd exec SEAT -- cmd | head`): what it did not read is not
// wanted, so the program ends quietly, as a shell's tools do on SIGPIPE — never an unhandled EPIPE.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
}

void runCli("teamd", buildProgram(), process.argv, { text: terminalLines, json: terminalJson });
