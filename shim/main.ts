#!/usr/bin/env node
import { Command } from "commander";
import { ShimService } from "../src/gen/teamd/v1/shim_pb.js";
import { createRpcClient, runCli, TEAMD_VERSION } from "../src/rpc/index.js";

/**
 * `teamd-shim`: the one program inside a seat that can reach the daemon. It holds no
 * policy, no keys and no ledger (it imports only src/gen and src/rpc); it asks, and
 * prints what the daemon answered.
 */
const DEFAULT_SOCKET = "/run/teamd/shim.sock";

function socketPath(): string {
  return process.env.TEAMD_SOCKET || DEFAULT_SOCKET;
}

async function whoami(opts: { json?: boolean }): Promise<void> {
  const client = createRpcClient(ShimService, socketPath(), { deadlineMs: 5000 });
  try {
    const reply = await client.whoAmI();
    if (opts.json) process.stdout.write(JSON.stringify({ seat: reply.seat, team: reply.team, daemonInstance: reply.daemonInstance }) + "\n");
    else process.stdout.write(`seat ${reply.seat} of team ${reply.team}\n`);
  } finally {
    client.close();
  }
}

function buildProgram(): Command {
  const program = new Command("teamd-shim")
    .description(`Talk to the teamd daemon from inside a seat (socket: $TEAMD_SOCKET, default ${DEFAULT_SOCKET}).`)
    .version(TEAMD_VERSION, "-V, --version")
    .showHelpAfterError("(run `teamd-shim --help` for the list of commands)")
    .showSuggestionAfterError(true)
    .exitOverride();
  program
    .command("whoami")
    .description("print the seat identity the daemon sees on this seat's socket")
    .option("--json", "print one JSON object (for scripts)")
    .action(whoami);
  return program;
}

await runCli("teamd-shim", buildProgram(), process.argv);
