import { create, toBinary } from "@bufbuild/protobuf";
import type { GenService } from "@bufbuild/protobuf/codegenv2";
import { WhoAmIRequestSchema, WhoAmIResponseSchema } from "../src/gen/teamd/v1/whoami_pb.js";
import type { SentCall } from "../src/rpc/client.js";

/**
 * The one method of the shim's service `teamd-shim whoami` calls, as the client reads a service
 * (its name, and each method's names, kind and messages), without shim.proto's descriptors:
 * protobuf-es builds every message of a generated file when the file is first used, and
 * shim.proto's 60 were ~3.5 ms of every whoami, which agents run in loops (issue 26). Its
 * messages are in whoami.proto for that. The same path, kind and messages as ShimService's
 * WhoAmI: test/shim/whoami-service.test.ts holds the two to each other.
 */
export const WhoAmIService = {
  typeName: "teamd.v1.ShimService",
  methods: [{ kind: "rpc", name: "WhoAmI", localName: "whoAmI", methodKind: "unary", input: WhoAmIRequestSchema, output: WhoAmIResponseSchema }],
} as unknown as GenService<{ whoAmI: { methodKind: "unary"; input: typeof WhoAmIRequestSchema; output: typeof WhoAmIResponseSchema } }>;

/** `teamd-shim whoami`'s first calls (as shim/first-calls.ts's for a push): its one call. */
export function whoAmICalls(): SentCall[] {
  return [whoAmICall()];
}

/** whoami's call, as its front writes it, and the push's second. */
export function whoAmICall(): SentCall {
  const method = WhoAmIService.methods[0];
  if (method === undefined) throw new Error("WhoAmIService has no method");
  return { path: `/${WhoAmIService.typeName}/${method.name}`, request: toBinary(WhoAmIRequestSchema, create(WhoAmIRequestSchema)) };
}
