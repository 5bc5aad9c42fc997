import type { DescMessage, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";

/** A generated protobuf-es service (e.g. ShimService from src/gen/). */
export type AnyService = GenService<GenServiceMethods>;

type MethodsOf<S> = S extends GenService<infer M> ? M : never;

type InputOf<M> = M extends { input: infer I extends DescMessage } ? I : never;
type OutputOf<M> = M extends { output: infer O extends DescMessage } ? O : never;

/** What the server knows about a call beyond its message: only what the edge established. */
export interface CallContext {
  /** The daemon-side name of the socket the call arrived on (set at listen, never by the caller). */
  readonly channel: string;
}

/** Handlers for every method of a service, typed from its descriptor. */
export type ServiceImpl<S> = {
  [K in keyof MethodsOf<S>]: (
    request: MessageShape<InputOf<MethodsOf<S>[K]>>,
    context: CallContext,
  ) => Promise<MessageInitShape<OutputOf<MethodsOf<S>[K]>>>;
};

/** A client for every method of a service, typed from its descriptor. */
export type ServiceClient<S> = {
  [K in keyof MethodsOf<S>]: (
    request?: MessageInitShape<InputOf<MethodsOf<S>[K]>>,
  ) => Promise<MessageShape<OutputOf<MethodsOf<S>[K]>>>;
};
