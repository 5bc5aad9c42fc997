/**
 * The owner's commands an owner or a script runs most, each a client of the daemon's control
 * socket: `teamd status` and the seat commands (start, stop, freeze, thaw, exec, attach). One
 * module, so the bundled CLI (scripts/build-shim.ts) can load them from one file,
 * dist/bin/teamd-client.cjs, instead of the modules of the gRPC client, protobuf-es and the
 * generated messages through the module loader (issue 26); unbundled (dist/daemon/main.js) it is a re-export.
 */
export { status } from "./commands/status.js";
export { attachCommand, execCommand, freezeCommand, haltCommand, startCommand, stopCommand } from "./commands/seat.js";
