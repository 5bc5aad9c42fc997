import { connect as connectSocket, createServer, type Socket } from "node:net";

/**
 * A relay on `path` to the daemon's socket at `target` that passes the client's bytes on at once
 * and holds the daemon's until `asked()` says the calls a test waits for have reached the daemon
 * (or 5 s have passed). A client that waits for the daemon's SETTINGS before its first call asks
 * nothing while they are held: only calls written with the connection's start (src/rpc/client.ts
 * sentCalls) reach the daemon then. `askedWhileHeld`: whether `asked()` came true before any of
 * the daemon's bytes went through.
 */
export async function holdingRelay(
  path: string,
  target: string,
  asked: () => boolean,
): Promise<{ readonly askedWhileHeld: () => boolean; readonly close: () => Promise<void> }> {
  let whileHeld = false;
  const sockets: Socket[] = [];
  const timers: NodeJS.Timeout[] = [];
  const relay = createServer((client) => {
    const daemon = connectSocket(target);
    sockets.push(client, daemon);
    const heldBack: Buffer[] = [];
    let holding = true;
    const release = () => {
      if (!holding) return;
      holding = false;
      for (const chunk of heldBack.splice(0)) client.write(chunk);
    };
    const started = Date.now();
    const poll = setInterval(() => {
      if (asked()) {
        whileHeld ||= holding;
        release();
      }
      if (asked() || Date.now() - started > 5_000) {
        clearInterval(poll);
        release();
      }
    }, 5);
    timers.push(poll);
    client.on("data", (chunk: Buffer) => daemon.write(chunk));
    daemon.on("data", (chunk: Buffer) => (holding ? heldBack.push(chunk) : client.write(chunk)));
    client.on("error", () => daemon.destroy());
    daemon.on("error", () => client.destroy());
    client.on("close", () => daemon.destroy());
    daemon.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(path, resolve));
  return {
    askedWhileHeld: () => whileHeld,
    close: async () => {
      for (const timer of timers) clearInterval(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => relay.close(resolve));
    },
  };
}
