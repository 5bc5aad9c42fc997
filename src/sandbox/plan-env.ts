import type { Refusal } from "../kernel/decision.js";
import type { EnvInput } from "./plan-types.js";
import { refuseContainment, type Checked } from "./refusal.js";

/**
 * A seat's environment (pure): what teamd sets, the allowlisted names taken from the given
 * source, and what the execution context declares — nothing inherited. The daemon's and the
 * owner's environments carry tokens and sockets (SSH_AUTH_SOCK, cloud credentials); a seat
 * gets a name from them only when the owner allowlisted it.
 *
 * What teamd sets cannot be overridden, and names starting with TEAMD_ are teamd's: a
 * declared HOME or TEAMD_SOCKET would point the seat somewhere the plan did not decide.
 * A declared value wins over an allowlisted one (the execution context is pinned, §10).
 */
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function buildEnv(fixed: Readonly<Record<string, string>>, input: EnvInput): Checked<Readonly<Record<string, string>>> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(fixed)) env[name] = value;
  const check = (name: string, origin: string): Checked<never> | undefined => {
    if (!NAME.test(name)) return refuse(`${origin} names '${name}', which is not a valid environment variable name`);
    if (Object.prototype.hasOwnProperty.call(fixed, name) || name.startsWith("TEAMD_")) {
      return refuse(`${origin} names ${name}, which teamd sets itself for the seat`);
    }
    return undefined;
  };
  for (const name of input.allowlist) {
    const refused = check(name, "the environment allowlist");
    if (refused) return refused;
    const value = Object.prototype.hasOwnProperty.call(input.source, name) ? input.source[name] : undefined;
    if (value === undefined) continue;
    if (value.includes("\u0000")) return refuse(`the value of ${name} contains a NUL byte`);
    env[name] = value;
  }
  for (const [name, value] of Object.entries(input.declared)) {
    const refused = check(name, "the declared environment");
    if (refused) return refused;
    if (typeof value !== "string" || value.includes("\u0000")) return refuse(`the declared value of ${name} is not a string without NUL bytes`);
    env[name] = value;
  }
  const sorted: Record<string, string> = {};
  for (const name of Object.keys(env).sort()) sorted[name] = env[name] as string;
  return { ok: true, value: Object.freeze(sorted) };
}

function refuse(reason: string): { ok: false; refusal: Refusal } {
  return { ok: false, refusal: refuseContainment("containment.env", reason, "change the seat's env allowlist or declared env in the team file") };
}
