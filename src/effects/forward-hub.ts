import type { Socket } from "node:net";

/**
 * `teamd forward`, the seat's side (issue 23: a login's callback on the seat's loopback): the
 * daemon cannot open a connection inside a seat's network namespace (entering it needs
 * CAP_SYS_ADMIN in both user namespaces), so the seat's launcher (shim/egress.ts), which runs
 * in that namespace, dials out to the daemon instead, over the seat's egress socket:
 *
 *   - `FORWARD-CONTROL`: the launcher's one standing connection. The daemon writes
 *     `OPEN <id> <port>` lines on it and reads nothing (what the seat sends on it is dropped,
 *     bounded). The first control of a run stands; another is closed while it lives.
 *   - `FORWARD-DATA <id>`: the launcher connected to 127.0.0.1:<port> inside the seat; the bytes
 *     after this line are that connection's, both ways.
 *   - `FORWARD-FAIL <id> <code>`: it could not (nothing listens there: ECONNREFUSED).
 *
 * Everything here is the seat's to send, so every wait is bounded (a pending open fails after
 * OPEN_TIMEOUT_MS; at most MAX_PENDING wait at once) and an id is matched only against opens
 * the daemon made (random, never reused). A seat that answers an open with its own program
 * instead of the launcher gains nothing: the forwarded connection is to the seat, by design.
 */
export interface ForwardHub {
  /** A connection whose header was FORWARD-*: taken over here. */
  accept(header: string, socket: Socket, rest: Buffer): void;
  /** A connection to `port` on the seat's loopback, through its launcher; its first bytes in `rest`; `headerBytes` of what it read were the launcher's header, not the seat's. */
  open(port: number): Promise<ForwardedConnection>;
  close(): void;
}

export interface ForwardedConnection {
  readonly socket: Socket;
  readonly rest: Buffer;
  readonly headerBytes: number;
}

export const FORWARD_HEADER = /^FORWARD-(CONTROL|DATA|FAIL)(?: ([0-9a-f-]{1,64}))?(?: ([A-Z0-9_]{1,32}))?$/;
const OPEN_TIMEOUT_MS = 10_000;
const MAX_PENDING = 8;
/** What a control connection may send before it is closed (the launcher sends nothing). */
const CONTROL_INPUT_CAP = 4096;

interface Pending {
  resolve(value: ForwardedConnection): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

export function createForwardHub(newId: () => string): ForwardHub {
  let control: Socket | undefined;
  const pending = new Map<string, Pending>();
  // Forwarded connections in use: ended with the seat (its stop closes this hub).
  const live = new Set<Socket>();
  const settle = (id: string): Pending | undefined => {
    const p = pending.get(id);
    if (p === undefined) return undefined;
    pending.delete(id);
    clearTimeout(p.timer);
    return p;
  };
  return {
    accept(header, socket, rest) {
      const match = FORWARD_HEADER.exec(header);
      if (match === null) return void socket.destroy();
      const [, kind, id, code] = match;
      if (kind === "CONTROL") {
        if (control !== undefined && !control.destroyed) return void socket.destroy();
        control = socket;
        let heard = rest.length;
        socket.on("data", (chunk: Buffer) => {
          heard += chunk.length;
          if (heard > CONTROL_INPUT_CAP) socket.destroy();
        });
        socket.once("close", () => {
          if (control === socket) control = undefined;
        });
        socket.on("error", () => undefined);
        socket.resume();
        return;
      }
      const waiting = id === undefined ? undefined : settle(id);
      if (waiting === undefined) return void socket.destroy();
      if (kind === "FAIL") {
        socket.destroy();
        return waiting.reject(new Error(`nothing answered on that port in the seat (${code ?? "failed"})`));
      }
      live.add(socket);
      socket.once("close", () => live.delete(socket));
      waiting.resolve({ socket, rest, headerBytes: Buffer.byteLength(header, "latin1") + 1 });
    },
    open(port) {
      if (control === undefined || control.destroyed)
        return Promise.reject(
          new Error("the seat's launcher is not connected (a seat forwards only when its start declares start.network, from its start on)"),
        );
      if (pending.size >= MAX_PENDING) return Promise.reject(new Error(`${MAX_PENDING} forwarded connections are already opening; wait for one`));
      const id = newId();
      const line = `OPEN ${id} ${port}\n`;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          settle(id);
          reject(new Error(`the seat's launcher did not open port ${port} within ${OPEN_TIMEOUT_MS / 1000} s`));
        }, OPEN_TIMEOUT_MS);
        pending.set(id, { resolve, reject, timer });
        control?.write(line);
      });
    },
    close() {
      control?.destroy();
      for (const socket of live) socket.destroy();
      for (const id of [...pending.keys()]) settle(id)?.reject(new Error("the seat stopped"));
    },
  };
}
