import { connect, type Server } from "node:net";
import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import { lstat, link, unlink, chmod, chown } from "node:fs/promises";
import { checkSocketPath, MAX_SOCKET_PATH_BYTES } from "./socket-path.js";

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
/** Which file a listener made: removeSocket with it leaves a socket another listener made at the same path since. */
export interface SocketIdentity {
  readonly dev: number;
  readonly ino: number;
}

export async function restrictSocket(socketPath: string, access: SocketAccess): Promise<SocketIdentity> {
  if (access.gid !== undefined) await chown(socketPath, process.getuid?.() ?? 0, access.gid);
  await chmod(socketPath, access.mode);
  const stat = await lstat(socketPath);
  return { dev: stat.dev, ino: stat.ino };
}

/** listenInPlace's `listenAt` for a node:net server: listen at the path, rejecting on the server's error. */
export function netListenAt(server: Server): (path: string) => Promise<void> {
  return (path) =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, () => {
        server.off("error", reject);
        resolve();
      });
    });
}

/**
 * Listen at `socketPath` (made free by clearStaleSocket first), as `listenAt` listens, through a
 * private name beside it: the socket is made there, given its owner and mode, then linked into
 * place (refused if anything is there by then) and the private name dropped. Node's listener
 * unlinks the name it listened at when it closes, whatever file that name then holds — so a
 * daemon stopped after its home was removed and made again unlinked the socket of the daemon
 * listening there since. Listening at a private name, its close unlinks only that (gone by
 * then), and removeSocket with the identity returned removes this listener's socket and no
 * other. The socket is never reachable at its path before its mode is set. Where the private
 * name would not fit a socket address, the listener listens at the path itself, as before.
 */
export async function listenInPlace(socketPath: string, access: SocketAccess, listenAt: (path: string) => Promise<void>): Promise<SocketIdentity> {
  const room = MAX_SOCKET_PATH_BYTES - Buffer.byteLength(join(dirname(socketPath), "."));
  const chars = Math.min(16, room - (room % 2));
  if (chars < 8) {
    await listenAt(socketPath);
    return restrictSocket(socketPath, access);
  }
  const privateName = join(dirname(socketPath), `.${randomBytes(chars / 2).toString("hex")}`);
  try {
    await listenAt(privateName);
    const made = await restrictSocket(privateName, access);
    await link(privateName, socketPath).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "EEXIST") throw new Error(`${socketPath} was made by another process while this one started (is another \`teamd serve\` running?)`);
      throw error;
    });
    return made;
  } finally {
    await unlink(privateName).catch(() => undefined);
  }
}

/**
 * Remove a socket file — with `made`, only the one this listener made: a daemon stopped after its
 * home was removed and made again (and a new daemon listening there) unlinked the new daemon's
 * socket, leaving it running and unreachable.
 */
export async function removeSocket(socketPath: string, made?: SocketIdentity): Promise<void> {
  try {
    const stat = await lstat(socketPath);
    if (!stat.isSocket()) return;
    if (made !== undefined && (stat.dev !== made.dev || stat.ino !== made.ino)) return;
    await unlink(socketPath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}
