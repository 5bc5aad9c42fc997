import { connect, createServer, type Server, type Socket } from "node:net";
import { TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { refuse, type Refusal } from "../../src/kernel/index.js";
import { addressAllowed } from "../../src/effects/egress-address.js";
import { checkEgressHost, parseEgressTarget, type EgressTarget } from "../../src/kernel/egress-allowlist.js";
import { relay, relayNote } from "../../src/effects/egress-relay.js";
import { bigReads, type BigReads } from "../../src/rpc/big-reads.js";
import type { EgressResolver } from "../../src/effects/egress-resolve.js";
import { RefusalError } from "../../src/rpc/errors.js";
import { clearStaleSocket, listenInPlace, netListenAt, removeSocket, type SocketAccess } from "../../src/rpc/unix-socket.js";
import { requestBytes, type SeatContext, type SeatPipeline, type SeatIdentity } from "./pipeline.js";
import { createForwardHub, type ForwardHub } from "../../src/effects/forward-hub.js";

/**
 * A seat's egress (§12), daemon side: one unix socket per seat, bound into the seat at
 * /run/teamd/egress.sock beside its gRPC socket. The seat is the socket a connection arrived
 * on — never a field. The shim's proxy (shim/egress.ts) opens one stream per proxied
 * connection and writes one header line, the target `host:port` (from the CONNECT line or the
 * request URL, never a Host header); the daemon answers one line — `OK <address>` then raw
 * bytes both ways, or `NO <rule> <reason>` and the close.
 *
 * Per connection, through the pipeline: guards and the policy in force → the allowlist
 * (`egress.host`) → the daemon's own resolution (`egress.resolve`) → every resolved address
 * classified (`egress.address`: loopback, private, link-local, the host's own… unless
 * declared) → a durable intent (host, port, address) → connect to that address (no second
 * lookup) → relay → the outcome (bytes each way, duration; never content). A refusal is a
 * ledger record with its rule. The intent's target is unique per connection, so a daemon that
 * dies mid-connection leaves one `unknown` outcome that blocks nothing else.
 */
export interface EgressDeps {
  readonly pipeline: SeatPipeline;
  readonly resolve: EgressResolver;
  /** The host's own addresses, read when a connection is decided (interfaces change). */
  readonly hostAddresses: () => readonly string[];
  readonly log: (line: string) => void;
  /** A fresh unique id (the composition root's): each connection's intent target and request id. */
  readonly newId: () => string;
  readonly limits?: Partial<EgressLimits>;
}

export interface EgressLimits {
  /** Open connections per seat; one more is refused (`egress.limit`). */
  readonly maxConnections: number;
  readonly headerTimeoutMs: number;
  readonly connectTimeoutMs: number;
  /** A connection with no byte either way for this long is closed. */
  readonly idleMs: number;
}

export const DEFAULT_EGRESS_LIMITS: EgressLimits = Object.freeze({
  maxConnections: 64,
  headerTimeoutMs: 10_000,
  connectTimeoutMs: 10_000,
  idleMs: 15 * 60_000,
});

const MAX_HEADER = 512;
const ACTION = "egress.connect";
/**
 * Connections past maxConnections that have not sent their header yet: the header names the
 * target the `egress.limit` refusal records, so a few may wait for it; past these, a new
 * connection is closed at accept (net.Server maxConnections) and its refusal recorded without a
 * target — a seat's silent connections never hold more than maxConnections + this many of the
 * daemon's descriptors (found by an audit: the bound was checked only once a header came).
 */
const HEADERLESS_SLACK = 8;

export interface EgressServer {
  readonly socketPath: string;
  /** teamd forward's way into the seat's loopback, through its launcher. */
  readonly forward: ForwardHub;
  close(): Promise<void>;
}

export async function openEgressServer(identity: SeatIdentity, socketPath: string, access: SocketAccess, deps: EgressDeps): Promise<EgressServer> {
  const limits = { ...DEFAULT_EGRESS_LIMITS, ...deps.limits };
  const open = new Set<Socket>();
  const forward = createForwardHub(deps.newId);
  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    open.add(socket);
    socket.once("close", () => open.delete(socket));
    handle(socket).catch((error: unknown) => {
      deps.log(`egress ${identity.team}/${identity.seat}: ${error instanceof Error ? error.message : String(error)}`);
      socket.destroy();
    });
  });

  async function handle(socket: Socket): Promise<void> {
    socket.on("error", () => undefined);
    const header = await readHeader(socket, limits.headerTimeoutMs);
    // teamd forward's channel from the seat's launcher (src/effects/forward-hub.ts): not egress.
    // Not counted among the seat's egress connections: the hub bounds its own (one control, its own opens).
    if (header !== undefined && header.line.startsWith("FORWARD-")) {
      open.delete(socket);
      return forward.accept(header.line, socket, header.rest);
    }
    let ctx: SeatContext;
    try {
      ctx = await deps.pipeline.context(identity, ACTION);
    } catch (error) {
      return answerRefusal(socket, error);
    }
    const refused = async (refusal: Refusal, target?: EgressTarget) => {
      const name = target ? `${identity.seat}/egress/${target.host}:${target.port}` : `${identity.seat}/egress`;
      answerRefusal(socket, await deps.pipeline.refuse(ctx, refusal, ACTION, { kind: TargetKind.SEAT, name }));
    };
    if (header === undefined)
      return refused(refuse("request.malformed", `no egress header (one line host:port, at most ${MAX_HEADER} bytes, within ${limits.headerTimeoutMs} ms)`));
    const target = parseEgressTarget(header.line);
    if ("decision" in target) return refused(target);
    if (open.size > limits.maxConnections) {
      return refused(refuse("egress.limit", `this seat already has ${limits.maxConnections} open egress connections; close one first`), target);
    }
    const allowed = checkEgressHost(ctx.seat.start?.network, target);
    if ("decision" in allowed) return refused(allowed, target);
    let addresses: readonly string[];
    try {
      addresses = target.literal ? [target.host] : await deps.resolve(target.host);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "error";
      return refused(refuse("egress.resolve", `${target.host} did not resolve (${code}); check the name, or the machine's resolver`), target);
    }
    if (addresses.length === 0) return refused(refuse("egress.resolve", `${target.host} resolved to no address`), target);
    // Every address must pass: a name that also resolves into a private range is refused whole,
    // so which address the connection takes can never be steered into it.
    const own = deps.hostAddresses();
    const declared = ctx.seat.start?.network?.private ?? [];
    for (const address of addresses) {
      const verdict = addressAllowed(address, declared, own);
      if (!verdict.ok) {
        return refused(
          refuse(
            "egress.address",
            `${target.host} resolves to ${address}, a ${verdict.class} address; the owner declares the range in start.network.private (e.g. ${address.includes(":") ? `${address}/128` : `${address}/32`}) only where the seat must reach it`,
          ),
          target,
        );
      }
    }
    const address = addresses[0] as string;
    await connectAndRelay(ctx, socket, header.rest, target, address, allowed.allowedBy);
  }

  async function connectAndRelay(ctx: SeatContext, socket: Socket, rest: Buffer, target: EgressTarget, address: string, allowedBy: string): Promise<void> {
    const id = deps.newId();
    const fields = [
      { key: "host", value: target.host },
      { key: "port", value: String(target.port) },
      { key: "address", value: address },
      { key: "allowed_by", value: allowedBy },
    ];
    await deps.pipeline
      .act(
        ctx,
        undefined,
        {
          action: ACTION,
          target: { kind: TargetKind.SEAT, name: `${identity.seat}/egress/${target.host}:${target.port}/${id}` },
          requestId: `egress-${id}`,
          request: requestBytes([target.host, String(target.port), address]),
          payload: { fields },
        },
        async () => {
          let upstream: Socket;
          const download = bigReads();
          try {
            upstream = await connectTo(address, target.port, limits.connectTimeoutMs, download);
          } catch (error) {
            const why = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : "error");
            socket.end(`NO egress.connect ${target.host}:${target.port} (${address}) could not be reached: ${why}\n`);
            return { result: "refused", note: `connect to ${address}:${target.port} failed: ${why}` };
          }
          socket.write(`OK ${address}\n`);
          if (rest.length > 0) upstream.write(rest);
          const result = await relay(socket, upstream, { idleMs: limits.idleMs, download });
          return { result: "done", note: relayNote(result) };
        },
      )
      .catch((error: unknown) => answerRefusal(socket, error));
  }

  await clearStaleSocket(socketPath);
  server.maxConnections = limits.maxConnections + HEADERLESS_SLACK;
  server.on("drop", () => {
    void deps.pipeline
      .refuseCall(
        identity,
        refuse("egress.limit", `this seat already has ${server.maxConnections} egress connections open or opening; close one first`),
        ACTION,
        { kind: TargetKind.SEAT, name: `${identity.seat}/egress` },
      )
      .catch(() => undefined);
  });
  const made = await listenInPlace(socketPath, access, netListenAt(server)).catch((error: unknown) => {
    server.close();
    throw error;
  });
  return {
    socketPath,
    forward,
    async close() {
      forward.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of open) socket.destroy();
      await closed;
      await removeSocket(socketPath, made);
    },
  };
}

/** One line, at most MAX_HEADER bytes, within the timeout; what came after it is kept. */
function readHeader(socket: Socket, timeoutMs: number): Promise<{ line: string; rest: Buffer } | undefined> {
  return new Promise((resolve) => {
    let buffered: Buffer = Buffer.alloc(0);
    const finish = (value: { line: string; rest: Buffer } | undefined) => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.pause();
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const newline = buffered.indexOf(10);
      if (newline >= 0 && newline <= MAX_HEADER)
        finish({ line: buffered.subarray(0, newline).toString("latin1").replace(/\r$/, ""), rest: buffered.subarray(newline + 1) });
      else if (buffered.length > MAX_HEADER) finish(undefined);
    };
    const onEnd = () => finish(undefined);
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    socket.on("data", onData);
    socket.once("end", onEnd);
  });
}

function connectTo(address: string, port: number, timeoutMs: number, download: BigReads): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const upstream = connect({ host: address, port, allowHalfOpen: true, noDelay: true, onread: download.onread });
    const timer = setTimeout(() => {
      upstream.destroy();
      reject(Object.assign(new Error("timed out"), { code: "ETIMEDOUT" }));
    }, timeoutMs);
    upstream.once("connect", () => {
      clearTimeout(timer);
      upstream.removeAllListeners("error");
      // Never an unhandled error between here and the relay taking the socket over.
      upstream.on("error", () => undefined);
      resolve(upstream);
    });
    upstream.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

function answerRefusal(socket: Socket, error: unknown): void {
  if (socket.destroyed) return;
  if (error instanceof RefusalError) socket.end(`NO ${error.rule} ${error.reason.replace(/[\r\n]+/g, " ")}\n`);
  else socket.end(`NO egress.failed ${error instanceof Error ? error.message.replace(/[\r\n]+/g, " ") : "the daemon could not relay this connection"}\n`);
}
