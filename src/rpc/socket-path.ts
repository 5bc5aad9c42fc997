import { isAbsolute } from "node:path";

/*
 * A unix socket's path, checked before anything is made or asked of it: on its own so the
 * clients (the CLI, the shim) load no node:fs/promises for it (issue 26; unix-socket.ts, the
 * server's, re-exports it).
 */

/**
 * The longest path a unix socket address can hold on Linux (sun_path is 108 bytes with the
 * terminating NUL); macOS allows 104. Refusing early beats a cryptic EINVAL from bind.
 */
export const MAX_SOCKET_PATH_BYTES = process.platform === "darwin" ? 103 : 107;

export function unixAddress(socketPath: string): string {
  return `unix:${socketPath}`;
}

export function checkSocketPath(socketPath: string): void {
  if (!isAbsolute(socketPath)) throw new Error(`socket path must be absolute: ${socketPath}`);
  const bytes = Buffer.byteLength(socketPath);
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    throw new Error(
      `socket path is ${bytes} bytes, longer than the ${MAX_SOCKET_PATH_BYTES} a unix socket allows: ${socketPath} ` +
        `(set TEAMD_HOME to a shorter directory)`,
    );
  }
}
