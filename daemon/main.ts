#!/usr/bin/env node
import { runCli } from "../src/rpc/cli-outcome.js";
import { terminalJson, terminalLines } from "./host/terminal-text.js";
import { REAL_AMBIENT } from "./host/ambient.js";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { TEAMD_VERSION } from "../src/rpc/protocol.js";
import { COMMAND_NAMES_FILE, HELP_AFTER_ERROR, HELP_TEXT_FILE, SUGGEST_FILE } from "./help-text.js";

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
// `--version` alone, what scripts and package checks run, printed as the command tree prints it
// (commander's `.version(TEAMD_VERSION, "-V, --version")`: the version and a newline, exit 0)
// without compiling that tree (~5 ms; test/daemon/cli-bundle.test.ts holds the two to the same).
// `status` (with or without --json), which a person and a script run most, straight to its act:
// the command tree (every command's definition, ~2 ms) is for anything else — another option,
// --help, a typo — which it parses, explains and refuses exactly as before (issue 26).
const helpText = argv.length === 3 && (argv[2] === "--help" || argv[2] === "-h") ? renderedHelp() : undefined;
const unknown = helpText === undefined ? unknownCommand(argv) : undefined;
if (argv.length === 3 && (argv[2] === "--version" || argv[2] === "-V")) {
  process.stdout.write(`${TEAMD_VERSION}\n`);
} else if (helpText !== undefined) {
  process.stdout.write(helpText);
} else if (unknown !== undefined) {
  process.stderr.write(unknown);
  process.exitCode = 2;
} else if (argv[2] === "status" && (argv.length === 3 || (argv.length === 4 && argv[3] === "--json"))) {
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

/**
 * `teamd WORD`, WORD no command: the tree's words for it (commander's unknownCommand, its "Did you
 * mean" from commander's own suggestSimilar, which the build copies beside the front, over the
 * command names the build read from the tree: COMMAND_NAMES_FILE), exit 2, without compiling the tree (issue 26: a typo is
 * answered at Node's floor). Only a plain word alone (nothing to escape, no option after it), and
 * only where the tree would print the same: no colour variable, the names file there (the unbundled
 * dist/daemon/main.js has none: its tree answers). test/daemon/cli-bundle.test.ts holds the two to the same.
 */
function unknownCommand(args: readonly string[]): string | undefined {
  const word = args[2];
  if (args.length !== 3 || word === undefined || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(word)) return undefined;
  if (process.env.FORCE_COLOR !== undefined || process.env.CLICOLOR_FORCE !== undefined) return undefined;
  try {
    const names = readFileSync(new URL(`./${COMMAND_NAMES_FILE}`, import.meta.url), "utf8")
      .split("\n")
      .filter((name) => name !== "");
    if (names.length === 0 || names.includes(word)) return undefined;
    const { suggestSimilar } = createRequire(import.meta.url)(`./${SUGGEST_FILE}`) as { suggestSimilar(word: string, candidates: readonly string[]): string };
    return `error: unknown command '${word}'${suggestSimilar(word, names)}\n${HELP_AFTER_ERROR}\n`;
  } catch {
    return undefined;
  }
}

/**
 * `teamd --help` as the command tree prints it to a pipe, rendered by the build from that tree
 * (scripts/build-shim.ts: HELP_TEXT_RELATIVE, beside the front): what a script or a pager reads,
 * without compiling the tree (~8 ms). Only where the tree would print the same text: its
 * output not a terminal (commander wraps help to a terminal's width, 80 columns otherwise) and
 * no variable that turns colour on. Anywhere else, or with no such file (the unbundled
 * dist/daemon/main.js), the tree prints it (test/daemon/cli-bundle.test.ts holds the two to the same).
 */
function renderedHelp(): string | undefined {
  if (process.stdout.isTTY === true || process.env.FORCE_COLOR !== undefined || process.env.CLICOLOR_FORCE !== undefined) return undefined;
  try {
    return readFileSync(new URL(`./${HELP_TEXT_FILE}`, import.meta.url), "utf8");
  } catch {
    return undefined;
  }
}
