import { serveBareEcho } from "./bare-echo.js";

/** Child process for the baseline: serve the bare echo until SIGTERM. */
const socketPath = process.argv[2];
if (!socketPath) throw new Error("usage: bare-echo-server SOCKET");
const server = await serveBareEcho(socketPath);
process.stdout.write("ready\n");
process.on("SIGTERM", () => server.tryShutdown(() => process.exit(0)));
