import { createServer, type Server, type Socket } from "node:net";
import { ControlService } from "../../src/gen/teamd/v1/control_pb.js";
import { AsyncQueue } from "../../src/rpc/async-queue.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { UsageError } from "../../src/rpc/errors.js";
import { resolveHome } from "../host/home.js";
import { seatTarget } from "./seat.js";

/**
 * `teamd forward SEAT PORT [--local PORT]`: while it runs, 127.0.0.1:LOCAL on the host reaches
 * 127.0.0.1:PORT on the seat's own loopback — for a login's callback (an agent that signs in
 * through the owner's browser redirects to a port in the seat, where no browser on the host
 * can reach). One connection at a time (another is closed at once); each is its own Attach
 * stream to the daemon, which records it (seat.forward, and seat.forward-end with the bytes
 * each way), through the seat's launcher (src/effects/forward-hub.ts). It ends with Ctrl-C,
 * and the port closes with it. While it runs, any local user can connect to that port: the
 * docs say so; keep it open only for the login.
 */
/** What one connection may have queued for the daemon before it is read no further for a while. */
const HIGH_WATER = 1024 * 1024;
/** How long a client may keep its side open after ours ended. */
const LINGER_MS = 5_000;

export interface ForwardOptions {
  readonly team?: string;
  readonly local?: string;
}

export async function forwardCommand(spec: string, portText: string, options: ForwardOptions): Promise<void> {
  const target = seatTarget(spec, options.team);
  const port = portNumber(portText, "PORT");
  const local = options.local === undefined ? port : portNumber(options.local, "--local", true);
  const rpc = createRpcClient(ControlService, resolveHome().controlSocket, { deadlineMs: 30_000, streamDeadlineMs: 24 * 3600 * 1000 });
  let active: Socket | undefined;
  let served = 0;
  // Half-open: a client that ends its request still reads the seat's answer.
  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    if (active !== undefined) return void socket.destroy();
    active = socket;
    const n = ++served;
    void carry(socket)
      .then((how) => process.stderr.write(`teamd forward: connection ${n}: ${how} (${socket.bytesRead} bytes in, ${socket.bytesWritten} out)\n`))
      .catch((error: unknown) => {
        process.stderr.write(`teamd forward: connection ${n}: ${error instanceof Error ? error.message : String(error)}\n`);
        socket.destroy();
      })
      .finally(() => {
        if (active === socket) active = undefined;
      });
  });
  server.maxConnections = 2;

  async function carry(socket: Socket): Promise<string> {
    type In = Parameters<typeof rpc.attach>[0] extends AsyncIterable<infer I> ? I : never;
    const queue = new AsyncQueue<In>();
    queue.push({ input: { case: "open", value: { team: target.team, seat: target.seat, forwardPort: port } } });
    // Paced: past HIGH_WATER queued for the daemon, stop reading this connection until it drains.
    socket.on("data", (chunk: Buffer) => {
      queue.push({ input: { case: "keys", value: chunk } }, chunk.length);
      if (queue.bytes > HIGH_WATER) socket.pause();
    });
    const sizeOf = (item: In) => (item.input?.case === "keys" ? (item.input.value as Uint8Array).byteLength : 0);
    async function* paced(): AsyncGenerator<In> {
      for await (const item of queue.drain(sizeOf)) {
        yield item;
        if (queue.bytes < HIGH_WATER / 4 && socket.isPaused()) socket.resume();
      }
      // A failing source cancels the call (src/rpc/client.ts): the daemon sees the owner gone.
      if (broken) throw new Error("the connection on this machine closed before it ended");
    }
    // Its end is a half-close passed on; its close or an error before that ends the call.
    let finished = false;
    let broken = false;
    socket.once("end", () => {
      finished = true;
      queue.close();
    });
    const abort = () => {
      if (finished) return;
      broken = true;
      queue.close();
    };
    socket.once("close", abort);
    socket.on("error", abort);
    let how = "closed by this side";
    for await (const reply of rpc.attach(paced())) {
      const output = reply.output;
      if (output.case === "data") {
        if (!socket.write(output.value)) await new Promise((resolve) => socket.once("drain", resolve));
      } else if (output.case === "ended") how = output.value;
      else if (output.case === "detached") break;
    }
    // Cut (bytes were left behind): the client's connection is reset, never ended as if whole.
    if (how.startsWith("closed: ")) socket.destroy();
    else {
      // Our side done; what the client still sends is read and dropped, and a client that
      // never closes its side is let go after LINGER_MS.
      socket.end();
      socket.resume();
      setTimeout(() => socket.destroy(), LINGER_MS).unref();
    }
    return how;
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        error.code === "EADDRINUSE"
          ? new UsageError(`127.0.0.1:${local} is in use on this machine; choose another with --local PORT`)
          : new Error(`could not listen on 127.0.0.1:${local}: ${error.code ?? error.message}`),
      ),
    );
    server.listen(local, "127.0.0.1", () => resolve());
  });
  const bound = (server.address() as { port: number }).port;
  process.stdout.write(
    `forwarding 127.0.0.1:${bound} to port ${port} on seat ${target.seat}${target.team ? `@${target.team}` : ""}'s loopback; Ctrl-C to stop\n`,
  );
  process.stderr.write(`teamd forward: any local user can connect to 127.0.0.1:${bound} while this runs\n`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  server.close();
  active?.destroy();
  rpc.close();
  process.stderr.write(`teamd forward: stopped; 127.0.0.1:${bound} is closed (${served} connection${served === 1 ? "" : "s"})\n`);
}

function portNumber(text: string, what: string, zeroOk = false): number {
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) > 65535 || (Number(text) === 0 && !zeroOk))
    throw new UsageError(`${what} takes a port between 1 and 65535${zeroOk ? " (0: any free port)" : ""}, not '${text}'`);
  return Number(text);
}
