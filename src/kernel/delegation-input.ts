import type { Grant } from "./authority.js";
import { type Ceiling, DEFAULT_LEASE_TTL_MS, MAX_SEATS_PER_LAB, TOOL_MAX_LEASE_TTL_MS } from "./ceiling.js";
import { problem } from "./policy-input.js";
import { isPlainObject } from "./records.js";
import type { DimensionScope, Scope } from "./scope.js";
import { type ScopeContext, readCapabilities } from "./scope-input.js";
import { type OperationalCapability, isOperational } from "./vocabulary.js";
import { readSpend } from "./spend-input.js";
import { parseDuration, showDuration } from "./duration.js";

export { parseDuration, showDuration } from "./duration.js";

/**
 * Reading the owner-sovereign delegation settings of the team file (§7–§10): `leads` (the
 * one seat holding the delegation envelope, and the envelope itself), `ceiling` (a capability
 * map bounding everything, and `lease-ttl`), `deny` (a capability map that wins over every
 * grant and lease) and `two-granter` (the capabilities leasable only by a co-signed lease).
 * Every value is checked like a seat's capabilities (scope-input.ts); the resource dimensions
 * of the ceiling stay refused as not supported yet.
 */
export interface LeadsInput {
  readonly seat: string;
  readonly envelope: readonly Grant[];
}

export interface Delegation {
  readonly leads?: LeadsInput;
  readonly ceiling?: Ceiling;
  readonly deny?: readonly Grant[];
  readonly twoGranter?: readonly OperationalCapability[];
  /** The owner asked for the two granters to come from different labs (§10). */
  readonly twoGranterLabs?: "distinct";
}

const CEILING_KEYS = ["capabilities", "lease-ttl", "seats", "visibility", "runtime", "spend"];

function readLeads(value: unknown, seats: readonly string[], ctx: ScopeContext): LeadsInput | undefined {
  const problems = ctx.problems;
  if (Array.isArray(value)) {
    if (value.length > 1)
      problems.push(
        problem(
          "leads.two",
          ["leads"],
          `the team file names ${value.length} leads (${value.map(String).join(", ")}); a team has zero or one`,
          "name one seat as leads; give a deputy the operational capabilities instead (§9)",
        ),
      );
    else
      problems.push(
        problem("teamfile.schema", ["leads"], "leads is one seat, not a list", "write `leads: <seat>` or `leads: { seat: <seat>, envelope: {...} }`"),
      );
    return undefined;
  }
  let seat: unknown = value;
  let envelope: Grant[] = [];
  if (isPlainObject(value)) {
    for (const key of Object.keys(value)) {
      if (key !== "seat" && key !== "envelope")
        problems.push(problem("teamfile.schema", ["leads", key], `unknown key '${key}' in leads`, "leads takes: seat, envelope", "key"));
    }
    seat = value.seat;
    const read = readCapabilities(value.envelope, ["leads", "envelope"], ctx);
    if (read === undefined) return undefined;
    envelope = read;
  }
  if (typeof seat !== "string") {
    problems.push(problem("teamfile.schema", ["leads"], "leads names no seat", "write `leads: <seat>` or `leads: { seat: <seat>, envelope: {...} }`"));
    return undefined;
  }
  if (!seats.includes(seat)) {
    problems.push(
      problem(
        "teamfile.schema",
        isPlainObject(value) ? ["leads", "seat"] : ["leads"],
        `leads names seat '${seat}', which is not a seat of this team`,
        "name a seat defined under seats",
      ),
    );
    return undefined;
  }
  return { seat, envelope };
}

function readCeiling(value: unknown, ctx: ScopeContext): Ceiling | undefined {
  const problems = ctx.problems;
  if (!isPlainObject(value)) {
    problems.push(problem("teamfile.schema", ["ceiling"], "ceiling must be a map", "write `ceiling: { capabilities: {...}, lease-ttl: 8h }`"));
    return undefined;
  }
  let bad = false;
  for (const key of Object.keys(value)) {
    if (!CEILING_KEYS.includes(key)) {
      problems.push(problem("teamfile.schema", ["ceiling", key], `unknown key '${key}' in ceiling`, `ceiling takes: ${CEILING_KEYS.join(", ")}`, "key"));
      bad = true;
    }
  }
  let leaseTtlMs = DEFAULT_LEASE_TTL_MS;
  const ttl = value["lease-ttl"];
  if (ttl !== undefined) {
    const ms = typeof ttl === "string" ? parseDuration(ttl) : undefined;
    if (ms === undefined) {
      problems.push(
        problem("teamfile.schema", ["ceiling", "lease-ttl"], `'${String(ttl)}' is not a duration`, "write a whole number and a unit: 90s, 30m, 8h, 7d"),
      );
      bad = true;
    } else if (ms > TOOL_MAX_LEASE_TTL_MS) {
      problems.push(
        problem(
          "lease.ttl",
          ["ceiling", "lease-ttl"],
          `lease-ttl ${ttl} is past the tool maximum of ${showDuration(TOOL_MAX_LEASE_TTL_MS)}`,
          `write at most ${showDuration(TOOL_MAX_LEASE_TTL_MS)}`,
        ),
      );
      bad = true;
    } else leaseTtlMs = ms;
  }
  let capabilities: Partial<Record<OperationalCapability, Scope[]>> | undefined;
  if (value.capabilities !== undefined) {
    const grants = readCapabilities(value.capabilities, ["ceiling", "capabilities"], ctx, "bounds");
    if (grants === undefined) bad = true;
    else {
      capabilities = {};
      for (const g of grants) (capabilities[g.capability] ??= []).push(g.scope);
    }
  }
  const seats = value.seats === undefined ? undefined : readSeatsCap(value.seats, ctx);
  if (seats === null) bad = true;
  const visibility = value.visibility === undefined ? undefined : readVisibilityCap(value.visibility, ctx);
  if (visibility === null) bad = true;
  let runtimeMs: number | undefined;
  if (value.runtime !== undefined) {
    runtimeMs = typeof value.runtime === "string" ? parseDuration(value.runtime) : undefined;
    if (runtimeMs === undefined) {
      problems.push(
        problem("teamfile.schema", ["ceiling", "runtime"], `'${String(value.runtime)}' is not a duration`, "write a whole number and a unit: 90s, 30m, 8h, 7d"),
      );
      bad = true;
    }
  }
  const spend = value.spend === undefined ? undefined : readSpend(value.spend, ctx);
  if (value.spend !== undefined && spend === undefined) bad = true;
  if (bad) return undefined;
  return Object.freeze({
    ...(capabilities !== undefined ? { capabilities: Object.freeze(capabilities) } : {}),
    leaseTtlMs,
    ...(seats ? { seats } : {}),
    ...(visibility ? { visibility } : {}),
    ...(runtimeMs !== undefined ? { runtimeMs } : {}),
    ...(spend !== undefined ? { spend } : {}),
  });
}

/**
 * A per-lab map of the ceiling's resource envelope (§8): every key a declared lab, every value
 * read by `readValue` (which reports its own problems and returns undefined when it cannot read
 * it); null when anything is wrong.
 */
function readPerLab<T>(
  value: unknown,
  key: "seats" | "visibility",
  ctx: ScopeContext,
  shape: { what: string; example: string },
  readValue: (lab: string, raw: unknown, at: (string | number)[]) => T | undefined,
): Readonly<Record<string, T>> | null {
  if (!isPlainObject(value)) {
    ctx.problems.push(problem("teamfile.schema", ["ceiling", key], `${key} is a map of lab to ${shape.what}`, `write e.g. \`${key}: ${shape.example}\``));
    return null;
  }
  const out: Record<string, T> = {};
  let bad = false;
  for (const [lab, raw] of Object.entries(value)) {
    const at = ["ceiling", key, lab];
    if (!ctx.declared.labs.includes(lab)) {
      ctx.problems.push(
        problem(
          "teamfile.schema",
          at,
          `lab '${lab}' is not declared`,
          `declare it under declare.labs, or cap a declared lab (${ctx.declared.labs.join(", ")})`,
          "key",
        ),
      );
      bad = true;
      continue;
    }
    const read = readValue(lab, raw, at);
    if (read === undefined) bad = true;
    else out[lab] = read;
  }
  return bad ? null : Object.freeze(out);
}

/** `visibility: { LAB: [PATH, ...] }` (§8): per declared lab, the paths its seats' reads may reach, read like a read grant's path scope. */
function readVisibilityCap(value: unknown, ctx: ScopeContext): Readonly<Record<string, DimensionScope>> | null {
  return readPerLab(value, "visibility", ctx, { what: "the paths its seats may read", example: "{ openai: [docs/, src/api/] }" }, (_lab, paths, at) => {
    if (!Array.isArray(paths)) {
      ctx.problems.push(problem("teamfile.schema", at, "a lab's visibility is a list of paths", "write e.g. `[docs/, src/api/]` ([] sees nothing)"));
      return undefined;
    }
    return readCapabilities({ read: { path: paths } }, at, ctx, "bounds")?.[0]?.scope.path;
  });
}

/** `seats: { LAB: N, ... }` (§8): each a declared lab and a whole number from 0; null when it is not. */
function readSeatsCap(value: unknown, ctx: ScopeContext): Readonly<Record<string, number>> | null {
  return readPerLab(value, "seats", ctx, { what: "a number of seats", example: "{ anthropic: 2, openai: 1 }" }, (_lab, cap, at) => {
    if (typeof cap === "number" && Number.isInteger(cap) && cap >= 0 && cap <= MAX_SEATS_PER_LAB) return cap;
    ctx.problems.push(problem("teamfile.schema", at, `'${String(cap)}' is not a number of seats`, `write a whole number from 0 to ${MAX_SEATS_PER_LAB}`));
    return undefined;
  });
}

/**
 * `two-granter: [deploy]`, or `two-granter: { capabilities: [deploy], labs: distinct }` when the
 * owner wants the two granters from different labs (§10).
 */
function readTwoGranter(input: unknown, ctx: ScopeContext): { capabilities: OperationalCapability[]; distinctLabs: boolean } | undefined {
  let value = input;
  let distinctLabs = false;
  if (isPlainObject(input)) {
    for (const key of Object.keys(input))
      if (key !== "capabilities" && key !== "labs")
        ctx.problems.push(
          problem("teamfile.schema", ["two-granter", key], `unknown key '${key}' in two-granter`, "two-granter takes: capabilities, labs", "key"),
        );
    if (input.labs !== undefined && input.labs !== "distinct" && input.labs !== "any") {
      ctx.problems.push(
        problem(
          "teamfile.schema",
          ["two-granter", "labs"],
          "two-granter's labs is `distinct` (the two granters from different labs) or `any`",
          "write `labs: distinct`",
        ),
      );
      return undefined;
    }
    distinctLabs = input.labs === "distinct";
    value = input.capabilities;
  }
  if (!Array.isArray(value)) {
    ctx.problems.push(
      problem(
        "teamfile.schema",
        ["two-granter"],
        "two-granter is a list of capabilities, or { capabilities: [...], labs: distinct }",
        "write e.g. `two-granter: [deploy]`",
      ),
    );
    return undefined;
  }
  const out: OperationalCapability[] = [];
  let bad = false;
  value.forEach((name, index) => {
    if (typeof name === "string" && isOperational(ctx.vocabulary, name)) {
      if (!out.includes(name)) out.push(name);
    } else {
      ctx.problems.push(
        problem(
          "vocab.unknown",
          ["two-granter", index],
          `'${String(name)}' is not an operational capability`,
          "name operational capabilities (write, read, review, gate, merge, deploy, use-broker, act-as)",
        ),
      );
      bad = true;
    }
  });
  return bad ? undefined : { capabilities: out.sort(), distinctLabs };
}

/** Read every delegation setting the input writes; each problem is reported at its key path. */
export function readDelegation(
  input: { readonly leads?: unknown; readonly ceiling?: unknown; readonly deny?: unknown; readonly twoGranter?: unknown },
  seats: readonly string[],
  ctx: ScopeContext,
): Delegation {
  const out: {
    leads?: LeadsInput;
    ceiling?: Ceiling;
    deny?: readonly Grant[];
    twoGranter?: readonly OperationalCapability[];
    twoGranterLabs?: "distinct";
  } = {};
  if (input.leads !== undefined && input.leads !== null) {
    const leads = readLeads(input.leads, seats, ctx);
    if (leads !== undefined) out.leads = leads;
  }
  if (input.ceiling !== undefined && input.ceiling !== null) {
    const ceiling = readCeiling(input.ceiling, ctx);
    if (ceiling !== undefined) out.ceiling = ceiling;
  }
  if (input.deny !== undefined && input.deny !== null) {
    const deny = readCapabilities(input.deny, ["deny"], ctx, "bounds");
    if (deny !== undefined) out.deny = deny;
  }
  if (input.twoGranter !== undefined && input.twoGranter !== null) {
    const two = readTwoGranter(input.twoGranter, ctx);
    if (two !== undefined) {
      out.twoGranter = two.capabilities;
      if (two.distinctLabs) out.twoGranterLabs = "distinct";
    }
  }
  return out;
}
