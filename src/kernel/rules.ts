/**
 * The closed set of rule ids a refusal can name. Every refusal teamd makes names one of
 * these, and each points at the section of the Kernel RFC (spec/002) that it enforces.
 * Adding a rule means adding it here, which breaks every non-exhaustive switch over
 * RuleId: a new rule can not slip through a handler that does not know it.
 */
export const RULES = {
  "channel.control-on-seat": {
    section: "§11",
    summary: "an owner (control) call arrived on a seat socket; the owner speaks only on the control socket",
  },
  "channel.seat-on-control": {
    section: "§11",
    summary: "a seat (shim) call arrived on the control socket; a seat speaks only on its own socket",
  },
  "rpc.version": {
    section: "§11",
    summary: "the caller speaks another wire protocol version; a caller the daemon cannot place is refused",
  },
  "rpc.malformed": {
    section: "§11",
    summary: "the request could not be decoded; what cannot be read is refused, never guessed",
  },
} as const satisfies Record<string, { section: string; summary: string }>;

export type RuleId = keyof typeof RULES;

export function isRuleId(value: string): value is RuleId {
  return Object.prototype.hasOwnProperty.call(RULES, value);
}
