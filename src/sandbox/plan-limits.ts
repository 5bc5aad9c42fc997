import type { Refusal } from "../kernel/decision.js";
import type { Limits } from "./plan-types.js";
import { refuseContainment, type Checked } from "./refusal.js";

const KNOWN = ["memoryBytes", "processes", "cpus", "openFiles"] as const;

/**
 * Validate a seat's limits (pure). An unknown limit is refused rather than ignored (a limit
 * the owner wrote and nobody applies would be a promise nobody keeps); each value is a
 * positive whole number, but cpus (a positive number of CPUs, fractions allowed). Whether the host can apply them is the launcher's question.
 */
export function checkLimits(limits: Limits): Checked<Limits> {
  if (limits === "none") return { ok: true, value: "none" };
  if (limits === null || typeof limits !== "object") return refuse("the limits are neither `none` nor a set of limits");
  const out: Record<string, number> = {};
  for (const [name, value] of Object.entries(limits)) {
    if (!(KNOWN as readonly string[]).includes(name)) return refuse(`the limit '${name}' is not one teamd knows (${KNOWN.join(", ")})`);
    if (value === undefined) continue;
    if (name === "cpus") {
      if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) return refuse(`the limit cpus = ${String(value)} is not a positive number`);
    } else if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0)
      return refuse(`the limit ${name} = ${String(value)} is not a positive whole number`);
    out[name] = value;
  }
  return { ok: true, value: Object.freeze(out) as Limits };
}

function refuse(reason: string): { ok: false; refusal: Refusal } {
  return { ok: false, refusal: refuseContainment("containment.limit", reason, "fix the seat's limits in the team file") };
}
