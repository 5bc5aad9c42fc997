#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { EXIT, reportError, TEAMD_VERSION } from "../src/rpc/index.js";
import { serve } from "./serve.js";
import { status } from "./status.js";
import { kernelEval } from "./kernel-eval.js";

/**
 * `teamd`: the owner's program. Thin: each subcommand parses its flags and calls one
 * function; policy lives in src/.
 */
function buildProgram(): Command {
  const program = new Command("teamd")
    .description("Supervise a team of AI coding agents, each in an OS-contained seat, deciding every gated act.")
    .version(TEAMD_VERSION, "-V, --version")
    .showHelpAfterError("(run `teamd --help` for the list of commands)")
    .showSuggestionAfterError(true)
    .exitOverride();

  program
    .command("serve")
    .description("run the daemon in the foreground (state in TEAMD_HOME); SIGTERM or SIGINT stops it and removes its sockets")
    .option("--seat <SEAT[@TEAM]>", "debug: open a socket for this seat (repeatable; team defaults to 'debug')", (v: string, acc: string[]) => [...acc, v], [] as string[])
    .action((opts: { seat: string[] }) => serve(opts));

  program
    .command("status")
    .description("show the daemon and the seats it serves")
    .option("--json", "print one JSON object (for scripts)")
    .option("--socket <PATH>", "the control socket (default: TEAMD_HOME/run/control.sock)")
    .action((opts: { json?: boolean; socket?: string }) => status(opts));

  const kernel = program.command("kernel").description("the decision kernel, offline");
  kernel
    .command("eval")
    .description("run kernel case files (docs/kernel-cases.md): print each mismatch, exit 1 on any")
    .argument("<FILE...>", "case files (JSON)")
    .option("--json", "print one JSON summary (for scripts)")
    .action(async (files: string[], opts: { json?: boolean }) => {
      process.exitCode = await kernelEval(files, opts);
    });

  return program;
}

async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  const json = argv.includes("--json");
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and --version exit 0; every other parse error is a usage error.
      process.exitCode = error.exitCode === 0 ? EXIT.ok : EXIT.usage;
      return;
    }
    const report = reportError(error);
    if (json) process.stdout.write(JSON.stringify(report.json) + "\n");
    else process.stderr.write(`teamd: ${report.message}\n`);
    process.exitCode = report.exitCode;
  }
}

await main(process.argv);
