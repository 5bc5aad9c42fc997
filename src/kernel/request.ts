import { refuse, type Refusal } from "./decision.js";
import { isPlainObject } from "./records.js";
import type { Dimension } from "./vocabulary.js";

/**
 * A request as the kernel receives it: which seat (from the socket the call arrived on, never
 * a field the seat chose), which capability, and the effect the act resolves to — the full
 * set of paths it touches (renames and copy-from included), the real destination ref, the
 * environment, the account, the task resource (§6). The edge builds it once and freezes it;
 * the kernel still reads it defensively, because `authorize` must answer anything it is given.
 */
export interface KernelRequest {
  readonly seat: string;
  readonly capability: string;
  readonly effect: Effect;
  /**
   * The owner's external identity the effect runs under (a push, publish or comment
   * account). act-as over it is required in addition to — never instead of — the
   * operational capability (§3).
   */
  readonly asAccount?: string;
  /** For use-broker: pull, claim, read (§11), or comment (under asAccount, §3). */
  readonly brokerOperation?: string;
}

/**
 * The effect, one field per dimension, and for review, gate, merge and deploy the effect id
 * (§15): a hash over the changed-path set (renames and copies included), the destination
 * tree, the destination ref, the base and the policy hash — computed outside the kernel, never
 * over the environment or the account. Any other field is refused, not ignored.
 */
export interface Effect {
  readonly paths?: readonly string[];
  readonly branch?: string;
  readonly env?: string;
  readonly account?: string;
  readonly task?: string;
  readonly effectId?: string;
}

/** Which dimension each effect field fills (the effect id is no dimension). */
export const EFFECT_FIELDS: Readonly<Record<Exclude<keyof Effect, "effectId">, Dimension>> = Object.freeze({
  paths: "path",
  branch: "branch",
  env: "env",
  account: "account",
  task: "task",
});

/**
 * The request's fields, type-checked; the values are not yet canonical. Every dimension is
 * present (undefined when the effect does not name it): one object shape for every request.
 */
export interface ReadRequest {
  readonly seat: string;
  readonly capability: string;
  readonly values: { readonly [D in Dimension]: D extends "path" ? readonly string[] | undefined : string | undefined };
  readonly asAccount: string | undefined;
  readonly brokerOperation: string | undefined;
  readonly effectId: string | undefined;
}

function malformed(reason: string): Refusal {
  return refuse("request.malformed", reason);
}

function isStringList(value: unknown): value is readonly string[] {
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const item of value) if (typeof item !== "string") return false;
  return true;
}

/** Read a request's shape: every field present is of its type, no field is unknown. */
export function readRequest(request: unknown): ReadRequest | Refusal {
  if (!isPlainObject(request)) return malformed("the request is not an object");
  for (const key in request) {
    if (!Object.prototype.hasOwnProperty.call(request, key)) continue;
    if (key !== "seat" && key !== "capability" && key !== "effect" && key !== "asAccount" && key !== "brokerOperation") {
      return malformed(`the request has an unknown field '${key}'`);
    }
  }
  const { seat, capability, effect, asAccount, brokerOperation } = request;
  if (typeof seat !== "string" || seat === "") return malformed("the request names no seat");
  if (typeof capability !== "string" || capability === "") return malformed("the request names no capability");
  if (asAccount !== undefined && (typeof asAccount !== "string" || asAccount === "")) return malformed("asAccount must be a non-empty string");
  if (brokerOperation !== undefined && typeof brokerOperation !== "string") return malformed("brokerOperation must be a string");
  if (!isPlainObject(effect)) return malformed("the request has no effect object");
  let paths: readonly string[] | undefined;
  const named: { branch?: string; env?: string; account?: string; task?: string; effectId?: string } = {};
  for (const key in effect) {
    if (!Object.prototype.hasOwnProperty.call(effect, key)) continue;
    const value = effect[key];
    if (key === "paths") {
      if (!isStringList(value)) return malformed("effect.paths must be a non-empty list of paths (every path the change touches)");
      paths = value;
    } else if (key === "branch" || key === "env" || key === "account" || key === "task" || key === "effectId") {
      if (typeof value !== "string" || value === "") return malformed(`effect.${key} must be a non-empty string`);
      named[key] = value;
    } else return malformed(`the effect has an unknown field '${key}'`);
  }
  return {
    seat,
    capability,
    values: { path: paths, branch: named.branch, env: named.env, account: named.account, task: named.task },
    asAccount: asAccount as string | undefined,
    brokerOperation: brokerOperation as string | undefined,
    effectId: named.effectId,
  };
}
