import { EXIT } from "../src/rpc/cli-outcome.js";

/** The seat's socket to the daemon, and a usage error: what the command tree and the acts both need, without gRPC. */
export const DEFAULT_SOCKET = "/run/teamd/shim.sock";

export function socketPath(): string {
  return process.env.TEAMD_SOCKET || DEFAULT_SOCKET;
}

/** A usage error the parser cannot see (two flags that exclude each other): exit 2, like commander's own. */
export function usage(message: string): never {
  process.stderr.write(`teamd-shim: ${message}\n`);
  process.exit(EXIT.usage);
}
