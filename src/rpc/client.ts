import * as grpc from "@grpc/grpc-js";
import { create, type DescMethod } from "@bufbuild/protobuf";
import type { AnyService, ServiceClient } from "./service-types.js";
import { deserializerFor, serializerFor } from "./codec.js";
import { DaemonUnavailableError, fromServiceError } from "./refusal.js";
import { PROTOCOL_METADATA_KEY, PROTOCOL_VERSION } from "./protocol.js";
import { checkSocketPath, unixAddress } from "./unix-socket.js";

export interface RpcClientOptions {
  /** Per-call deadline; a daemon that does not answer in time is reported unavailable. */
  readonly deadlineMs?: number;
}

export type RpcClient<S> = ServiceClient<S> & { close(): void };

/**
 * A typed client for one service over one unix socket. Errors come back as RefusalError
 * (with the daemon's rule id), DaemonUnavailableError, or RpcError.
 */
export function createRpcClient<S extends AnyService>(service: S, socketPath: string, options: RpcClientOptions = {}): RpcClient<S> {
  checkSocketPath(socketPath);
  const client = new grpc.Client(unixAddress(socketPath), grpc.credentials.createInsecure(), {
    "grpc.max_receive_message_length": 16 * 1024 * 1024,
  });
  const deadlineMs = options.deadlineMs ?? 10_000;
  const methods: Record<string, unknown> = {};

  for (const method of service.methods as readonly DescMethod[]) {
    if (method.methodKind !== "unary") continue;
    const path = `/${service.typeName}/${method.name}`;
    const serialize = serializerFor(method.input);
    const deserialize = deserializerFor(method.output);
    methods[method.localName] = (init?: unknown) =>
      new Promise((resolve, reject) => {
        const metadata = new grpc.Metadata();
        metadata.set(PROTOCOL_METADATA_KEY, String(PROTOCOL_VERSION));
        const request = create(method.input, (init ?? {}) as never);
        client.makeUnaryRequest(path, serialize, deserialize, request, metadata, { deadline: Date.now() + deadlineMs }, (error, reply) => {
          if (error) reject(fromServiceError(error, socketPath));
          else if (reply === undefined) reject(new DaemonUnavailableError(socketPath, "empty reply"));
          else resolve(reply);
        });
      });
  }
  methods.close = () => client.close();
  return methods as RpcClient<S>;
}
