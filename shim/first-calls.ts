import { create, toBinary } from "@bufbuild/protobuf";
import { ListRefsRequestSchema, ShimService } from "../src/gen/teamd/v1/shim_pb.js";
import type { SentCall } from "../src/rpc/client.js";
import { whoAmICall } from "./whoami-service.js";

/**
 * The calls a program of the shim makes first, written by the shim's front as it connects, before
 * the rest of the shim loads (issue 26: ~10-15 ms of Node reading and compiling the lazy part, in
 * which the daemon could already be answering). The build turns each set into bytes
 * (src/rpc/client.ts sentCalls) that the front holds as a constant (scripts/build-shim.ts); the
 * lazy part's client takes the socket only where those bytes are these calls'. Each is exactly
 * the call its program then makes: a call made otherwise goes to the daemon as always. Those of
 * `teamd-shim whoami` are in whoami-service.ts, which holds no more of the shim's service.
 */

/** A push's remote helper: its listing and whoAmI (git-remote.ts runGitRemote). */
export function pushCalls(): SentCall[] {
  const listing = toBinary(ListRefsRequestSchema, create(ListRefsRequestSchema, { forPush: true }));
  return [{ path: `/${ShimService.typeName}/${ShimService.method.listRefs.name}`, request: listing }, whoAmICall()];
}
