import type { DescMessage, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";

/** A generated protobuf-es service (e.g. ShimService from src/gen/). */
export type AnyService = GenService<GenServiceMethods>;

type MethodsOf<S> = S extends GenService<infer M> ? M : never;

type InputOf<M> = M extends { input: infer I extends DescMessage } ? I : never;
type OutputOf<M> = M extends { output: infer O extends DescMessage } ? O : never;
type KindOf<M> = M extends { methodKind: infer K } ? K : never;

/** What the server knows about a call beyond its message: only what the edge established. */
export interface CallContext {
  /** The daemon-side name of the socket the call arrived on (set at listen, never by the caller). */
  readonly channel: string;
  /** Aborted when the caller goes away (cancels, disconnects, or its deadline passes). */
  readonly signal: AbortSignal;
}

type In<M> = MessageShape<InputOf<M>>;
type OutInit<M> = MessageInitShape<OutputOf<M>>;

/**
 * A handler per method, typed from its descriptor and its kind: unary answers one message;
 * server streaming yields messages; client streaming reads messages and answers one;
 * bidirectional streaming reads messages and yields messages, each at its own pace.
 */
type Handler<M> =
  KindOf<M> extends "bidi_streaming"
    ? (requests: AsyncIterable<In<M>>, context: CallContext) => AsyncIterable<OutInit<M>>
    : KindOf<M> extends "server_streaming"
      ? (request: In<M>, context: CallContext) => AsyncIterable<OutInit<M>>
      : KindOf<M> extends "client_streaming"
        ? (requests: AsyncIterable<In<M>>, context: CallContext) => Promise<OutInit<M>>
        : (request: In<M>, context: CallContext) => Promise<OutInit<M>>;

/** Handlers for every method of a service, typed from its descriptor. */
export type ServiceImpl<S> = { [K in keyof MethodsOf<S>]: Handler<MethodsOf<S>[K]> };

type Call<M> =
  KindOf<M> extends "bidi_streaming"
    ? (requests: AsyncIterable<MessageInitShape<InputOf<M>>>) => AsyncIterable<MessageShape<OutputOf<M>>>
    : KindOf<M> extends "server_streaming"
      ? (request?: MessageInitShape<InputOf<M>>) => AsyncIterable<MessageShape<OutputOf<M>>>
      : KindOf<M> extends "client_streaming"
        ? (requests: AsyncIterable<MessageInitShape<InputOf<M>>>) => Promise<MessageShape<OutputOf<M>>>
        : (request?: MessageInitShape<InputOf<M>>) => Promise<MessageShape<OutputOf<M>>>;

/** A client for every method of a service, typed from its descriptor. */
export type ServiceClient<S> = { [K in keyof MethodsOf<S>]: Call<MethodsOf<S>[K]> };
