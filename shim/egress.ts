#!/usr/bin/env node
import { spawn, type ChildProcess } from "node:child_process";
import { constants } from "node:os";
import { createEgressProxy } from "./egress-proxy.js";
import { forwardControl } from "./forward.js";

/**
 * The egress launcher of a seat that declares egress (src/sandbox/plan-egress.ts): bwrap runs
 * `node /run/teamd/egress.mjs -- COMMAND...`. It binds the proxy on 127.0.0.1:3128 inside the
 * seat's network namespace and spawns the command once the port listens (or could not: then
 * with the reason on stderr), never waiting on anything else; passes signals on, and exits with
 * the command's status (a signal death as 128+N, the shell's convention). Once it listens, not
 * at once: Node binds even a numeric address a tick after listen(), so a command spawned at once
 * could connect before the bind — a clean-clone run's `curl` through the proxy was refused
 * "after 0 ms" under load. TEAMD_TEST_EGRESS_LISTEN_DELAY_MS (tests only) puts the bind off that
 * long, to show it: the command still finds the port listening. It also keeps teamd forward's control connection to the
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
let child: ChildProcess | undefined;
const run = () => {
  if (child !== undefined) return;
  child = spawn(command[0] as string, command.slice(1), { stdio: "inherit" });
  child.once("error", (error: NodeJS.ErrnoException) => {
    process.stderr.write(`teamd-egress: could not run ${command[0]}: ${error.code ?? error.message}\n`);
    process.exit(error.code === "ENOENT" ? 127 : 126);
  });
  child.once("exit", (code, signal) => {
    process.exit(signal ? 128 + (constants.signals[signal] ?? 0) : (code ?? 1));
  });
};
proxy.once("listening", run);
proxy.on("error", (error: NodeJS.ErrnoException) => {
  // The command runs on: without the proxy nothing leaves the seat (no route out), so this
  // fails closed; the message says why its connections fail.
  process.stderr.write(
    `teamd-egress: the egress proxy could not listen on 127.0.0.1:${PORT} (${error.code ?? error.message}); this seat has no egress in this run\n`,
  );
  run();
});
const delay = Number(process.env.TEAMD_TEST_EGRESS_LISTEN_DELAY_MS ?? 0);
if (Number.isSafeInteger(delay) && delay > 0) setTimeout(() => proxy.listen(PORT, "127.0.0.1"), Math.min(delay, 5_000));
else proxy.listen(PORT, "127.0.0.1");
proxy.unref();
forwardControl(egressSocket);

// A signal before the command exists ends the launcher as the command would have ended.
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH"] as const) {
  process.on(signal, () => {
    if (child !== undefined) child.kill(signal);
    else if (signal !== "SIGWINCH") process.exit(128 + (constants.signals[signal] ?? 0));
  });
}
