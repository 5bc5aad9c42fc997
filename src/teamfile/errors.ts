import type { InputPath } from "../kernel/policy-input.js";
import { RULES, type RuleId } from "../kernel/rules.js";

/**
 * One problem with a team file, as the owner reads it: where (file, line, column, key path),
 * what is wrong, the rule and its section, and the fix. `teamd apply` prints every one of them
 * and changes nothing.
 */
export interface TeamFileError {
  readonly rule: RuleId;
  /** The key path, e.g. `seats.alice.capabilities.write.path[1]`. */
  readonly at: string;
  /** 1-based; absent when the policy came as data rather than YAML text. */
  readonly line?: number;
  readonly column?: number;
  readonly message: string;
  readonly fix: string;
}

export function showInputPath(at: InputPath): string {
  let out = "";
  for (const segment of at) out += typeof segment === "number" ? `[${segment}]` : out === "" ? segment : `.${segment}`;
  return out === "" ? "(top)" : out;
}

/** Errors in file order (unplaced ones last), then by key path. */
export function sortErrors(errors: readonly TeamFileError[]): TeamFileError[] {
  return [...errors].sort(
    (a, b) => (a.line ?? Infinity) - (b.line ?? Infinity) || (a.column ?? 0) - (b.column ?? 0) || (a.at < b.at ? -1 : a.at > b.at ? 1 : 0),
  );
}

/** `teamd.yaml:12:7: message [rule §N] (at key.path)` then `  fix: …`, one error after another. */
export function formatTeamFileErrors(errors: readonly TeamFileError[], source: string): string {
  return errors
    .map((e) => {
      const where = e.line !== undefined ? `${source}:${e.line}:${e.column ?? 1}` : source;
      return `${where}: ${e.message} [${e.rule} ${RULES[e.rule].section}] (at ${e.at})\n  fix: ${e.fix}`;
    })
    .join("\n");
}
