import { fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";

/**
 * grpc-js needs a Buffer from a serializer; a bare Uint8Array fails the call with INTERNAL
 * (notes/stack.md, pitfall 1). Wrap toBinary's bytes without copying.
 */
export function serializerFor<D extends DescMessage>(schema: D): (message: MessageShape<D>) => Buffer {
  return (message) => {
    const bytes = toBinary(schema, message);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

export function deserializerFor<D extends DescMessage>(schema: D): (bytes: Buffer) => MessageShape<D> {
  return (bytes) => fromBinary(schema, bytes);
}
