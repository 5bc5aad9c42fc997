import * as grpc from "@grpc/grpc-js";
import { type RuleId, RULES, isRuleId } from "../kernel/rules.js";
import type { Refusal } from "../kernel/decision.js";
import { RULE_METADATA_KEY } from "./protocol.js";

/**
 * The one exception class for a refusal at the edges. Inside the kernel a refusal is a
 * value; here it is thrown by a handler, crosses the wire as a gRPC status carrying the
 * rule id, and is rebuilt on the client so the caller sees the same rule and reason.
 */
export class RefusalError extends Error {
  override readonly name = "RefusalError";
  constructor(
    readonly rule: RuleId,
    readonly reason: string,
  ) {
    super(`refused by ${rule} (${RULES[rule].section}): ${reason}`);
  }

  static from(refusal: Refusal): RefusalError {
    return new RefusalError(refusal.rule, refusal.reason);
  }
}

/** The daemon could not be reached at all: no socket, nobody listening, or a deadline. */
export class DaemonUnavailableError extends Error {
  override readonly name = "DaemonUnavailableError";
  constructor(
    readonly socketPath: string,
    detail: string,
  ) {
    super(`cannot reach the teamd daemon at ${socketPath}: ${detail}`);
  }
}

/** Any other failure reported by the daemon (a bug, never a policy decision). */
export class RpcError extends Error {
  override readonly name = "RpcError";
  constructor(
    readonly code: grpc.status,
    detail: string,
  ) {
    super(`teamd daemon error (${grpc.status[code] ?? code}): ${detail}`);
  }
}

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

/** The command line is wrong (a flag's value, a missing argument): exit 2, as commander's own parse errors, never 1. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}
