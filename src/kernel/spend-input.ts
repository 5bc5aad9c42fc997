import type { SpendCeiling } from "./ceiling.js";
import { parseDuration } from "./duration.js";
import { problem } from "./policy-input.js";
import { isPlainObject } from "./records.js";
import type { ScopeContext } from "./scope-input.js";

/**
 * `ceiling.spend` in the team file (§8):
 *
 *   spend:
 *     currency: USD          # the provider's billing currency (three letters)
 *     period: 1d             # a fixed length (1h to 31d, aligned to UTC) or `month`
 *     total: 50.00           # the team's cap per period
 *     labs: { anthropic: 30 } # tighter caps per declared lab (optional)
 *     per-dispatch: 5.00     # reserved before each launch
 *     stale-after: 1h        # a meter report older than this counts as spent (default 1h)
 *
 * Amounts are written in the currency's major unit with at most two decimals (a number or a
 * string: `50`, `12.5`, "0.75") and held as integer minor units, so no float rounds a cap.
 */
const KEYS = ["currency", "period", "total", "labs", "per-dispatch", "stale-after"];
/** The largest amount read: a bound on what is parsed, far above any real budget (10 billion). */
const MAX_MINOR = 1e12;
const MIN_PERIOD_MS = 60 * 60 * 1000;
const MAX_PERIOD_MS = 31 * 24 * 60 * 60 * 1000;
const DEFAULT_STALE_AFTER_MS = 60 * 60 * 1000;

/** An amount in major units (at most two decimals) as integer minor units; undefined when it is not one. */
export function parseAmount(value: unknown): number | undefined {
  const text = typeof value === "number" && Number.isFinite(value) ? String(value) : typeof value === "string" ? value.trim() : undefined;
  if (text === undefined) return undefined;
  const m = /^([0-9]{1,10})(?:\.([0-9]{1,2}))?$/.exec(text);
  if (m === null) return undefined;
  const minor = Number(m[1]) * 100 + Number((m[2] ?? "").padEnd(2, "0"));
  return minor <= MAX_MINOR ? minor : undefined;
}

export function readSpend(value: unknown, ctx: ScopeContext): SpendCeiling | undefined {
  const at = (...path: string[]) => ["ceiling", "spend", ...path];
  const bad = (path: string[], message: string, fix: string, kind?: "key") => {
    ctx.problems.push(problem("teamfile.schema", path, message, fix, kind));
    return undefined;
  };
  if (!isPlainObject(value)) return bad(at(), "spend is a map", "write `spend: { currency: USD, period: 1d, total: 50, per-dispatch: 5 }`");
  let ok = true;
  for (const key of Object.keys(value))
    if (!KEYS.includes(key)) ok = bad(at(key), `unknown key '${key}' in spend`, `spend takes: ${KEYS.join(", ")}`, "key") ?? false;
  const currency = typeof value.currency === "string" && /^[A-Z]{3}$/.test(value.currency) ? value.currency : undefined;
  if (currency === undefined)
    ok = bad(at("currency"), `'${String(value.currency)}' is not a currency code`, "write the provider's billing currency, e.g. `currency: USD`") ?? false;
  let period: SpendCeiling["period"] | undefined;
  if (value.period === "month") period = { kind: "month" };
  else {
    const ms = typeof value.period === "string" ? parseDuration(value.period) : undefined;
    if (ms !== undefined && ms >= MIN_PERIOD_MS && ms <= MAX_PERIOD_MS) period = { kind: "fixed", ms };
    else ok = bad(at("period"), `'${String(value.period)}' is not a spend period`, "write `month`, or a length from 1h to 31d (e.g. 1d: the UTC day)") ?? false;
  }
  const amount = (key: string, raw: unknown, path: string[]) => {
    const minor = parseAmount(raw);
    if (minor === undefined)
      ok =
        bad(
          path,
          `'${String(raw)}' is not an amount`,
          `write ${key} in ${currency ?? "the currency"}'s major unit with at most two decimals, e.g. 50 or 12.50`,
        ) ?? false;
    return minor;
  };
  const total = amount("total", value.total, at("total"));
  const perDispatch = amount("per-dispatch", value["per-dispatch"], at("per-dispatch"));
  if (perDispatch !== undefined && perDispatch <= 0)
    ok = bad(at("per-dispatch"), "per-dispatch is 0", "write what one launch may spend before the next meter report, more than 0") ?? false;
  if (perDispatch !== undefined && total !== undefined && perDispatch > total)
    ok =
      bad(at("per-dispatch"), "per-dispatch is more than the total: no dispatch could ever be reserved", "write a per-dispatch maximum at most the total") ??
      false;
  const labs: Record<string, number> = {};
  if (value.labs !== undefined) {
    if (!isPlainObject(value.labs)) ok = bad(at("labs"), "labs is a map of lab to amount", "write e.g. `labs: { anthropic: 30, openai: 20 }`") ?? false;
    else {
      for (const [lab, raw] of Object.entries(value.labs)) {
        if (!ctx.declared.labs.includes(lab)) {
          ok =
            bad(
              at("labs", lab),
              `lab '${lab}' is not declared`,
              `declare it under declare.labs, or cap a declared lab (${ctx.declared.labs.join(", ")})`,
              "key",
            ) ?? false;
          continue;
        }
        const minor = amount(lab, raw, at("labs", lab));
        if (minor !== undefined) labs[lab] = minor;
      }
    }
  }
  let staleAfterMs = DEFAULT_STALE_AFTER_MS;
  if (value["stale-after"] !== undefined) {
    const ms = typeof value["stale-after"] === "string" ? parseDuration(value["stale-after"]) : undefined;
    if (ms === undefined)
      ok = bad(at("stale-after"), `'${String(value["stale-after"])}' is not a duration`, "write a whole number and a unit: 10m, 1h") ?? false;
    else staleAfterMs = ms;
  }
  if (!ok || currency === undefined || period === undefined || total === undefined || perDispatch === undefined) return undefined;
  return Object.freeze({ currency, period: Object.freeze(period), total, labs: Object.freeze(labs), perDispatch, staleAfterMs });
}
