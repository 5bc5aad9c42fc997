#!/usr/bin/env node
import { runCli } from "../src/rpc/cli-outcome.js";
import { terminalJson, terminalLines } from "./host/terminal-text.js";
import { REAL_AMBIENT } from "./host/ambient.js";

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

const argv = process.argv;
const render = { text: terminalLines, json: terminalJson };
// `status` (with or without --json), which a person and a script run most, straight to its act:
// the command tree (every command's definition, ~2 ms) is for anything else — another option,
// --help, a typo — which it parses, explains and refuses exactly as before (issue 26).
if (argv[2] === "status" && (argv.length === 3 || (argv.length === 4 && argv[3] === "--json"))) {
  const json = argv.length === 4;
  void runCli("teamd", { parseAsync: async () => (await import("./client-commands.js")).status({ json }, REAL_AMBIENT) }, argv, render);
} else if (plainExec(argv)) {
  // `exec SEAT -- CMD...` with no option of teamd's: the command is what follows the first `--`,
  // as the command tree gives it (test/daemon/cli-bundle.test.ts and test/integration/attach.test.ts
  // hold the two to the same).
  const [seat, command] = [argv[3] as string, argv.slice(5)];
  void runCli("teamd", { parseAsync: async () => (await import("./client-commands.js")).execCommand(seat, command, {}) }, argv, render);
} else {
  // The command tree (commander and every command's definition) is its own bundle, read with
  // V8's code cache (scripts/build-shim.ts): the two acts above never compile it.
  void runCli("teamd", { parseAsync: async (args: readonly string[]) => (await import("./cli.js")).buildProgram().parseAsync(args) }, argv, render);
}

/** `teamd exec SEAT -- CMD...`: a seat that cannot be an option, then `--`, then at least one word. */
function plainExec(args: readonly string[]): boolean {
  return args[2] === "exec" && args.length >= 6 && args[4] === "--" && !(args[3] ?? "-").startsWith("-");
}
