#!/usr/bin/env node
import { connect, type Socket } from "node:net";
import { basename } from "node:path";
import { runCli } from "../src/rpc/cli-outcome.js";
import { TEAMD_VERSION } from "../src/rpc/protocol.js";
import { socketPath } from "./seat-socket.js";

/**
 * `teamd-shim`, and `git-remote-teamd` when git runs the same bundle under that name (the
 * remote helper for `git fetch teamd` / `git push teamd`). The commands live in cli.ts. Each
 * path imports only its own modules, when it runs (issue 26): the remote helper never loads
 * commander, and `teamd-shim --version` never loads gRPC. No top-level await: the bundle is
 * CommonJS (scripts/build-shim.ts), which Node starts faster than a module.
 */
async function main(argv: readonly string[]): Promise<void> {
  // git calls `git-remote-teamd <remote> <url>`: in a seat, the helper's front
  // (shim/git-remote-front.sh), which runs this as `teamd-shim --git-remote-helper <remote> <url>`;
  // where there is no front, this bundle under that name.
  const helperArgs = basename(argv[1] ?? "") === "git-remote-teamd" ? argv.slice(2) : argv[2] === GIT_REMOTE_FLAG ? argv.slice(3) : undefined;
  if (helperArgs !== undefined) {
    // Failures go to stderr for git to show.
    // Exit explicitly: git waits on the helper's output, and an open stdin would keep it alive.
    // The daemon's socket first, connected while the helper's code loads (~35 ms in a seat):
    // the daemon's settings are waiting when the listing's call starts (issue 26). Its error is
    // the client's to meet: it drops a failed socket and connects again, saying why as always.
    const socket = socketPath();
    const early = connect(socket);
    early.on("error", () => undefined);
    try {
      // A push's pack on its guess, started before the rest of the helper loads (push-pack.ts).
      const earlyPack = (await import("./push-pack.js")).startEarlyPack(helperArgs[0]);
      // And a push's first calls, its listing and whoAmI (first-calls.ts), written now: the daemon
      // answers them while the rest of the helper loads (~10-15 ms in a seat). The build holds
      // them as bytes; a front built without them (run by tsc's output) sends nothing early.
      const pushCalls = earlyPack !== undefined && typeof __TEAMD_PUSH_CALLS__ === "string" ? Buffer.from(__TEAMD_PUSH_CALLS__, "base64") : undefined;
      if (pushCalls !== undefined) await sendFirst(early, pushCalls);
      const { runGitRemote } = await import("./git-remote.js");
      await runGitRemote(socket, early, helperArgs[0], earlyPack, pushCalls);
      process.exit(0);
    } catch (error) {
      process.stderr.write(`git-remote-teamd: ${error instanceof Error ? error.message : String(error)}\n`, () => process.exit(128));
    }
    return;
  }
  // `--version` alone, as commander prints it (cli.ts), without loading commander: agents ask it in loops.
  if (argv.length === 3 && (argv[2] === "--version" || argv[2] === "-V")) {
    process.stdout.write(`${TEAMD_VERSION}\n`);
    return;
  }
  // `whoami` (with or without --json), which agents run in loops, straight to its act: the
  // command tree (commander and every command's definition, ~5 ms) is for anything else — another
  // option, --help, a typo — which it parses, explains and refuses exactly as before.
  // Each loads its code inside runCli: a lazy part that cannot be read (scripts/build-shim.ts) is
  // one line and exit 1, like any other failure, not a stack trace.
  if (argv[2] === "whoami" && (argv.length === 3 || (argv.length === 4 && argv[3] === "--json"))) {
    // Its call written as the socket connects (first-calls.ts): the daemon answers while the act's
    // code loads (issue 26). Its error is the client's to meet, as the helper's is.
    let first: { socket: Socket; sent: Buffer } | undefined;
    if (typeof __TEAMD_WHOAMI_CALLS__ === "string") {
      first = { socket: connect(socketPath()), sent: Buffer.from(__TEAMD_WHOAMI_CALLS__, "base64") };
      first.socket.on("error", () => undefined);
      await sendFirst(first.socket, first.sent);
    }
    await runCli("teamd-shim", { parseAsync: async () => (await import("./whoami.js")).whoami({ json: argv.length === 4 }, first) }, argv);
    return;
  }
  await runCli("teamd-shim", { parseAsync: async (args) => (await import("./cli.js")).buildProgram().parseAsync(args) }, argv);
}

/** The first calls of a push and of whoami as bytes, base64 (scripts/build-shim.ts defines them in the bundle; nothing defines them elsewhere). */
declare const __TEAMD_PUSH_CALLS__: string | undefined;
declare const __TEAMD_WHOAMI_CALLS__: string | undefined;

/**
 * Writes a program's first calls on `socket`, settled once it has connected (or failed): the
 * bytes are then on their way. Node holds a write made while a socket connects until its loop
 * runs again, and the lazy part's load holds the loop ~10-15 ms in a seat: the calls went out
 * after it (issue 26).
 */
function sendFirst(socket: Socket, calls: Buffer): Promise<void> {
  socket.write(calls);
  return new Promise((resolve) => {
    if (!socket.connecting) return resolve();
    socket.once("connect", resolve);
    socket.once("error", resolve);
    socket.once("close", resolve);
  });
}

/** How the remote helper's front runs this as the helper (shim/git-remote-front.sh). */
const GIT_REMOTE_FLAG = "--git-remote-helper";

void main(process.argv);
