import { create, toBinary } from "@bufbuild/protobuf";
import { ListRefsRequestSchema, ShimService, WhoAmIRequestSchema } from "../src/gen/teamd/v1/shim_pb.js";
import type { SentCall } from "../src/rpc/client.js";

/**
 * The calls a push's remote helper makes first, written by the shim's front as it connects, before
 * the rest of the helper loads (issue 26: ~10-15 ms of Node reading and compiling the lazy part,
 * in which the daemon could already be answering): the push's listing and whoAmI, exactly as the
 * helper asks them (git-remote.ts runGitRemote). The build turns them into bytes
 * (src/rpc/client.ts sentCalls) that the front holds as a constant (scripts/build-shim.ts); the
 * helper's client takes the socket only where those bytes are these calls'.
 */
export function pushCalls(): SentCall[] {
  return [
    {
      path: `/${ShimService.typeName}/${ShimService.method.listRefs.name}`,
      request: toBinary(ListRefsRequestSchema, create(ListRefsRequestSchema, { forPush: true })),
    },
    { path: `/${ShimService.typeName}/${ShimService.method.whoAmI.name}`, request: toBinary(WhoAmIRequestSchema, create(WhoAmIRequestSchema)) },
  ];
}
