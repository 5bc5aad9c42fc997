import { refuse, type Refusal } from "./decision.js";

/**
 * A lease's scope as the command line writes it: `*` (or nothing) for unconstrained, else
 * `dimension=value` pairs joined by commas, a dimension named again adding a value —
 * `branch=main,path=src/,path=docs/`. Read into the team file's form (dimension → values),
 * which the kernel reads against the declared sets in force; syntax only, no policy here.
 * A malformed part is a refusal value (`request.malformed`), never an exception.
 */
export type LeaseScopeText = { readonly ok: true; readonly scope: Record<string, string[]> } | Refusal;

export function parseLeaseScope(text: string): LeaseScopeText {
  const trimmed = text.trim();
  const out: Record<string, string[]> = {};
  if (trimmed === "" || trimmed === "*") return { ok: true, scope: out };
  for (const part of trimmed.split(",")) {
    const eq = part.indexOf("=");
    const dimension = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (eq <= 0 || value === "")
      return refuse("request.malformed", `scope part '${part}' is not dimension=value (e.g. branch=main,path=src/), or '*' for unconstrained`);
    (out[dimension] ??= []).push(value);
  }
  return { ok: true, scope: out };
}
