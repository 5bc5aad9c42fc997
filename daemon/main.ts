#!/usr/bin/env node
import { runCli } from "../src/rpc/cli-outcome.js";
import { buildProgram } from "./cli.js";
import { terminalJson, terminalLines } from "./host/terminal-text.js";

/**
 * `teamd`: the owner's program; its commands live in cli.ts. Its errors can quote a seat: printed escaped.
 * No top-level await: npm's `teamd` runs this file bundled as CommonJS (dist/bin/teamd.cjs, scripts/build-shim.ts).
 */
void runCli("teamd", buildProgram(), process.argv, { text: terminalLines, json: terminalJson });
