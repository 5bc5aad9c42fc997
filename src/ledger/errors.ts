import { refuse, type Refusal } from "../kernel/decision.js";
import { RULES, type RuleId } from "../kernel/rules.js";

/**
 * A refusal by the ledger, thrown from its async API (append, submit, reconcile). It carries
 * the same value the kernel would return — a rule id and a reason — so the daemon turns it
 * into its edge RefusalError without guessing (`RefusalError.from(error.refusal)`).
 * Messages never carry key material or payload bytes: a reason names state, not secrets.
 */
export class LedgerRefusal extends Error {
  override readonly name = "LedgerRefusal";
  readonly refusal: Refusal;
  constructor(rule: RuleId, reason: string) {
    super(`refused by ${rule} (${RULES[rule].section}): ${reason}`);
    this.refusal = refuse(rule, reason);
  }

  get rule(): RuleId {
    return this.refusal.rule;
  }

  get reason(): string {
    return this.refusal.reason;
  }

  static of(refusal: Refusal): LedgerRefusal {
    return new LedgerRefusal(refusal.rule, refusal.reason);
  }
}

/** A stored byte string that does not decode as what it claims to be. */
export class CodecError extends Error {
  override readonly name = "CodecError";
}

/** The message of an unknown thrown value, for reasons and logs. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
