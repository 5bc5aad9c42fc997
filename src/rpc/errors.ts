import type { status } from "@grpc/grpc-js";
import { type RuleId, RULES } from "../kernel/rules.js";
import type { Refusal } from "../kernel/decision.js";

/*
 * The errors a command can end with, without gRPC: the owner's CLI and the shim decide an exit
 * code from these (cli-outcome.ts) and a usage error or `--version` must not load grpc-js to do
 * it (issue 26). refusal.ts turns them into gRPC statuses and back.
 */

/** grpc-js's `status` enum's names, by code (fixed by the gRPC spec), for a message; the type alone is imported. */
const GRPC_STATUS_NAMES: readonly string[] = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
];

/**
 * Two copies of this module can meet in one process: the owner's CLI starts from a bundle
 * (dist/bin/teamd.cjs, scripts/build-shim.ts) that holds its own copy, and imports each command
 * from dist/, whose modules import this file. An error thrown by one copy must still be an
 * instance of the other's class, or `teamd` would report a refusal (exit 3) as a failure (exit 1):
 * each class carries its kind under a registered symbol, and `instanceof` accepts an error of
 * either copy by it (or, as always, by its prototype chain).
 */
const KIND = Symbol.for("teamd.rpc.error-kind");

function isOfKind(self: object, kind: string, target: unknown, value: unknown): boolean {
  if (Function.prototype[Symbol.hasInstance].call(self, value)) return true;
  return self === target && typeof value === "object" && value !== null && (value as { [KIND]?: unknown })[KIND] === kind;
}

/**
 * The one exception class for a refusal at the edges. Inside the kernel a refusal is a
 * value; here it is thrown by a handler, crosses the wire as a gRPC status carrying the
 * rule id, and is rebuilt on the client so the caller sees the same rule and reason.
 */
export class RefusalError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isOfKind(this, "RefusalError", RefusalError, value);
  }
  readonly [KIND] = "RefusalError";
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
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isOfKind(this, "DaemonUnavailableError", DaemonUnavailableError, value);
  }
  readonly [KIND] = "DaemonUnavailableError";
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
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isOfKind(this, "RpcError", RpcError, value);
  }
  readonly [KIND] = "RpcError";
  override readonly name = "RpcError";
  constructor(
    readonly code: status,
    detail: string,
  ) {
    super(`teamd daemon error (${GRPC_STATUS_NAMES[code] ?? code}): ${detail}`);
  }
}

/** The command line is wrong (a flag's value, a missing argument): exit 2, as commander's own parse errors, never 1. */
export class UsageError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isOfKind(this, "UsageError", UsageError, value);
  }
  readonly [KIND] = "UsageError";
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}
