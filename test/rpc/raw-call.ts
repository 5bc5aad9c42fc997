import * as grpc from "@grpc/grpc-js";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { WhoAmIRequestSchema, WhoAmIResponseSchema } from "../../src/gen/teamd/v1/whoami_pb.js";
import { PROTOCOL_METADATA_KEY, RULE_METADATA_KEY } from "../../src/rpc/protocol.js";

/**
 * A WhoAmI call in raw grpc-js with the protocol metadata a test chooses (undefined: none) —
 * what teamd's own client never sends. Kept in test/rpc/, the one test folder the lint lets
 * speak grpc-js; other tests (test/integration/seat-refusals.test.ts) call it from here.
 * Resolves with the gRPC status code and the rule the daemon named, if any.
 */
export function whoAmIWithProtocol(
  socketPath: string,
  version: string | undefined,
): Promise<{ code: grpc.status | undefined; rule: string | undefined; details: string }> {
  const raw = new grpc.Client(`unix:${socketPath}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (version !== undefined) metadata.set(PROTOCOL_METADATA_KEY, version);
  return new Promise((resolve) => {
    raw.makeUnaryRequest(
      "/teamd.v1.ShimService/WhoAmI",
      (m: unknown) => Buffer.from(toBinary(WhoAmIRequestSchema, m as never)),
      (b: Buffer) => fromBinary(WhoAmIResponseSchema, b),
      {} as never,
      metadata,
      { deadline: Date.now() + 30_000 },
      (error) => {
        raw.close();
        const rule = error?.metadata?.get(RULE_METADATA_KEY)[0];
        resolve({ code: error?.code, rule: typeof rule === "string" ? rule : undefined, details: error?.details ?? "" });
      },
    );
  });
}
