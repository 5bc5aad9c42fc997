import * as grpc from "@grpc/grpc-js";
import { CLIENT_CHANNEL_OPTIONS } from "./channel-options.js";
import { once } from "node:events";
import { create, type DescMethod } from "@bufbuild/protobuf";
import type { AnyService, ServiceClient } from "./service-types.js";
import { deserializerFor, serializerFor } from "./codec.js";
import { DaemonUnavailableError, fromServiceError } from "./refusal.js";
import { PROTOCOL_METADATA_KEY, PROTOCOL_VERSION } from "./protocol.js";
import { checkSocketPath, unixAddress } from "./unix-socket.js";

export interface RpcClientOptions {
  /** Per-call deadline; a daemon that does not answer in time is reported unavailable. */
  readonly deadlineMs?: number;
  /** Deadline of a whole streaming call (a pack can be large). Default 10 minutes. */
  readonly streamDeadlineMs?: number;
}

export type RpcClient<S> = ServiceClient<S> & { close(): void };

/**
 * A typed client for one service over one unix socket. Errors come back as RefusalError
 * (with the daemon's rule id), DaemonUnavailableError, or RpcError.
 */
export function createRpcClient<S extends AnyService>(service: S, socketPath: string, options: RpcClientOptions = {}): RpcClient<S> {
  checkSocketPath(socketPath);
  const client = new grpc.Client(unixAddress(socketPath), grpc.credentials.createInsecure(), CLIENT_CHANNEL_OPTIONS);
  const deadlineMs = options.deadlineMs ?? 10_000;
  const streamDeadlineMs = options.streamDeadlineMs ?? 600_000;
  const methods: Record<string, unknown> = {};
  const metadata = () => {
    const sent = new grpc.Metadata();
    sent.set(PROTOCOL_METADATA_KEY, String(PROTOCOL_VERSION));
    return sent;
  };

  for (const method of service.methods as readonly DescMethod[]) {
    const path = `/${service.typeName}/${method.name}`;
    const serialize = serializerFor(method.input);
    const deserialize = deserializerFor(method.output);
    if (method.methodKind === "server_streaming") {
      methods[method.localName] = async function* (init?: unknown) {
        const request = create(method.input, (init ?? {}) as never);
        const stream = client.makeServerStreamRequest(path, serialize, deserialize, request, metadata(), { deadline: Date.now() + streamDeadlineMs });
        try {
          for await (const reply of stream as AsyncIterable<unknown>) yield reply;
        } catch (error) {
          throw fromServiceError(error as grpc.ServiceError, socketPath);
        } finally {
          stream.cancel();
        }
      };
      continue;
    }
    if (method.methodKind === "client_streaming") {
      methods[method.localName] = (inits: AsyncIterable<unknown>) =>
        new Promise((resolve, reject) => {
          const stream = client.makeClientStreamRequest(
            path,
            serialize,
            deserialize,
            metadata(),
            { deadline: Date.now() + streamDeadlineMs },
            (error, reply) => {
              if (error) reject(fromServiceError(error, socketPath));
              else if (reply === undefined) reject(new DaemonUnavailableError(socketPath, "empty reply"));
              else resolve(reply);
            },
          );
          const send = async () => {
            for await (const init of inits) {
              if (!stream.write(create(method.input, init as never))) await once(stream, "drain");
            }
            stream.end();
          };
          // A failing source cancels the call; the callback then reports the cancellation.
          send().catch((error: unknown) => {
            stream.cancel();
            reject(error instanceof Error ? error : new Error(String(error)));
          });
        });
      continue;
    }
    if (method.methodKind === "bidi_streaming") {
      // The caller's messages are sent as its iterable yields them (with backpressure), while
      // the replies are read; leaving the loop (or a failing source) cancels the call.
      methods[method.localName] = async function* (inits: AsyncIterable<unknown>) {
        const stream = client.makeBidiStreamRequest(path, serialize, deserialize, metadata(), { deadline: Date.now() + streamDeadlineMs });
        let sendError: unknown;
        const send = async () => {
          for await (const init of inits) {
            if (!stream.write(create(method.input, init as never))) await once(stream, "drain");
          }
          stream.end();
        };
        send().catch((error: unknown) => {
          sendError = error;
          stream.cancel();
        });
        try {
          for await (const reply of stream as AsyncIterable<unknown>) yield reply;
        } catch (error) {
          if (sendError !== undefined) throw sendError instanceof Error ? sendError : new Error(String(sendError));
          throw fromServiceError(error as grpc.ServiceError, socketPath);
        } finally {
          stream.cancel();
        }
      };
      continue;
    }
    if (method.methodKind !== "unary") continue;
    methods[method.localName] = (init?: unknown) =>
      new Promise((resolve, reject) => {
        const request = create(method.input, (init ?? {}) as never);
        client.makeUnaryRequest(path, serialize, deserialize, request, metadata(), { deadline: Date.now() + deadlineMs }, (error, reply) => {
          if (error) reject(fromServiceError(error, socketPath));
          else if (reply === undefined) reject(new DaemonUnavailableError(socketPath, "empty reply"));
          else resolve(reply);
        });
      });
  }
  methods.close = () => client.close();
  return methods as RpcClient<S>;
}
