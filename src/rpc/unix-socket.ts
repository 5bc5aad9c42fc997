import { connect } from "node:net";
import { lstat, unlink, chmod, chown } from "node:fs/promises";
import { checkSocketPath } from "./socket-path.js";

export { checkSocketPath, unixAddress } from "./socket-path.js";

/** True when something accepts connections on the socket. */
function isListening(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(socketPath);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
  });
}

/**
 * Make the path free for bind. A socket file nobody listens on is stale (a crash left it)
 * and is removed (notes/stack.md, pitfall 5). A live socket means another daemon holds it:
 * refuse rather than steal it. Anything that is not a socket is never removed.
 */
export async function clearStaleSocket(socketPath: string): Promise<void> {
  checkSocketPath(socketPath);
  let stat;
  try {
    stat = await lstat(socketPath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if (!stat.isSocket()) {
    throw new Error(`${socketPath} exists and is not a socket; refusing to replace it (move it away)`);
  }
  if (await isListening(socketPath)) {
    throw new Error(`${socketPath} is in use by a running process (is another \`teamd serve\` running?)`);
  }
  await unlink(socketPath);
}

export interface SocketAccess {
  /** File mode, e.g. 0o600 (owner only) or 0o660 (owner and group). */
  readonly mode: number;
  /** Group id to hand the socket to (system mode: group `teamd`). */
  readonly gid?: number;
}

/**
 * Narrow a freshly bound socket to its access mode. The socket is created inside a
 * directory only the daemon (and in system mode its group) can enter, so the moment
 * between bind and chmod is not a window for anyone else.
 */
export async function restrictSocket(socketPath: string, access: SocketAccess): Promise<void> {
  if (access.gid !== undefined) await chown(socketPath, process.getuid?.() ?? 0, access.gid);
  await chmod(socketPath, access.mode);
}

export async function removeSocket(socketPath: string): Promise<void> {
  try {
    const stat = await lstat(socketPath);
    if (stat.isSocket()) await unlink(socketPath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}
