import { create, toBinary } from "@bufbuild/protobuf";
import { ListRefsRequestSchema, ShimService, WhoAmIRequestSchema } from "../src/gen/teamd/v1/shim_pb.js";
import type { SentCall } from "../src/rpc/client.js";

/**
 * The calls a program of the shim makes first, written by the shim's front as it connects, before
 * the rest of the shim loads (issue 26: ~10-15 ms of Node reading and compiling the lazy part, in
 * which the daemon could already be answering). The build turns each set into bytes
 * (src/rpc/client.ts sentCalls) that the front holds as a constant (scripts/build-shim.ts); the
 * lazy part's client takes the socket only where those bytes are these calls'. Each is exactly
 * the call its program then makes: a call made otherwise goes to the daemon as always.
 */

/** A push's remote helper: its listing and whoAmI (git-remote.ts runGitRemote). */
export function pushCalls(): SentCall[] {
  return [call(ShimService.method.listRefs.name, toBinary(ListRefsRequestSchema, create(ListRefsRequestSchema, { forPush: true }))), whoAmICall()];
}

/** `teamd-shim whoami` (commands.ts whoami), and the push's second call. */
export function whoAmICalls(): SentCall[] {
  return [whoAmICall()];
}

function whoAmICall(): SentCall {
  return call(ShimService.method.whoAmI.name, toBinary(WhoAmIRequestSchema, create(WhoAmIRequestSchema)));
}

function call(method: string, request: Uint8Array): SentCall {
  return { path: `/${ShimService.typeName}/${method}`, request };
}
