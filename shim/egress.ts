#!/usr/bin/env node
import { spawn } from "node:child_process";
import { constants } from "node:os";
import { createEgressProxy } from "./egress-proxy.js";
import { forwardControl } from "./forward.js";

/**
 * The egress launcher of a seat that declares egress (src/sandbox/plan-egress.ts): bwrap runs
 * `node /run/teamd/egress.mjs -- COMMAND...`. It binds the proxy on 127.0.0.1:3128 inside the
 * seat's network namespace — the bind is synchronous for a numeric address, so the port is
 * listening before the command exists — then spawns the command at once (never waiting on
 * anything else), passes signals on, and exits with the command's status (a signal death as
 * 128+N, the shell's convention). It also keeps teamd forward's control connection to the
 * daemon (shim/forward.ts): the one way into this network namespace. Its own bundle holds no gRPC: it adds one small Node
 * start to a seat's launch, measured by `npm run bench -- egress`.
 */
const PORT = 3128;
const dash = process.argv.indexOf("--", 2);
const command = dash < 0 ? [] : process.argv.slice(dash + 1);
if (command.length === 0 || command[0] === "") {
  process.stderr.write("teamd-egress: usage: teamd-egress -- COMMAND [ARG...]\n");
  process.exit(2);
}

const egressSocket = process.env.TEAMD_EGRESS_SOCKET || "/run/teamd/egress.sock";
const proxy = createEgressProxy({ egressSocket });
proxy.on("error", (error: NodeJS.ErrnoException) => {
  // The command runs on: without the proxy nothing leaves the seat (no route out), so this
  // fails closed; the message says why its connections fail.
  process.stderr.write(
    `teamd-egress: the egress proxy could not listen on 127.0.0.1:${PORT} (${error.code ?? error.message}); this seat has no egress in this run\n`,
  );
});
proxy.listen(PORT, "127.0.0.1");
proxy.unref();
forwardControl(egressSocket);

const child = spawn(command[0] as string, command.slice(1), { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH"] as const) {
  process.on(signal, () => child.kill(signal));
}
child.once("error", (error: NodeJS.ErrnoException) => {
  process.stderr.write(`teamd-egress: could not run ${command[0]}: ${error.code ?? error.message}\n`);
  process.exit(error.code === "ENOENT" ? 127 : 126);
});
child.once("exit", (code, signal) => {
  process.exit(signal ? 128 + (constants.signals[signal] ?? 0) : (code ?? 1));
});
