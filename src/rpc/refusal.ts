import * as grpc from "@grpc/grpc-js";
import { isRuleId } from "../kernel/rules.js";
import { DaemonUnavailableError, RefusalError, RpcError } from "./errors.js";
import { RULE_METADATA_KEY } from "./protocol.js";

export { DaemonUnavailableError, RefusalError, RpcError, UsageError } from "./errors.js";

/**
 * Turn whatever a handler threw into the status sent on the wire. Refusals keep their
 * rule and reason; anything else is an internal error whose details stay in the daemon's
 * log (an exception message may carry paths or payload content a caller must not see).
 */
export function toServiceError(error: unknown): Partial<grpc.ServiceError> {
  if (error instanceof RefusalError) {
    const metadata = new grpc.Metadata();
    metadata.set(RULE_METADATA_KEY, error.rule);
    return { code: grpc.status.PERMISSION_DENIED, details: error.reason, metadata };
  }
  return { code: grpc.status.INTERNAL, details: "internal error in the teamd daemon (see its log)" };
}

/** The inverse of toServiceError on the client side. */
export function fromServiceError(error: grpc.ServiceError, socketPath: string): Error {
  const rule = error.metadata?.get(RULE_METADATA_KEY)[0];
  if (typeof rule === "string" && isRuleId(rule)) return new RefusalError(rule, error.details);
  if (error.code === grpc.status.UNAVAILABLE || error.code === grpc.status.DEADLINE_EXCEEDED) {
    return new DaemonUnavailableError(socketPath, `${error.details || grpc.status[error.code]} (is \`teamd serve\` running?)`);
  }
  return new RpcError(error.code, error.details);
}
