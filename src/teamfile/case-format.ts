import { isRuleId, type RuleId } from "../kernel/rules.js";
import { isPlainObject } from "../kernel/records.js";

/**
 * The kernel case format (docs/kernel-cases.md): a JSON file of table cases, each a policy (the
 * team file as YAML text or as data), facts, a time, a request, and the expected decision and
 * rule — cedar's authorizer tests are the model. A case without a request is a load case: it
 * expects the policy to load (allow) or to be refused at load (refuse, naming a rule the
 * loader reported, optionally its line). The file may set policy, files, facts and now once for
 * all its cases. A case file that does not match the format is itself an error, never skipped.
 */
export interface Expectation {
  readonly decision: "allow" | "refuse";
  readonly rule?: RuleId;
  /** For an allow: the id of the authority that must have covered the effect. */
  readonly authority?: string;
  /** For an allow under the owner's identity: the act-as authority's id. */
  readonly actAs?: string;
  /** For a load case written in YAML: the line the named rule must be reported at. */
  readonly line?: number;
  /** For an allowed merge or deploy: the id of the gate record it consumes or ships under. */
  readonly pass?: string;
  /** For an allowed review, gate or merge: the review mode it was decided under. */
  readonly reviewMode?: "cross-lab" | "distinct-seat";
  /** For a committed authority change: how many minimums it leaves unmet (paused). */
  readonly paused?: number;
  /** For a committed change or a revocation: the exact lease ids its cascade revokes, sorted. */
  readonly revokes?: readonly string[];
}

export interface KernelCase {
  readonly description: string;
  /** YAML text or data. */
  readonly policy: unknown;
  /** Start-file contents by repo-relative path, for policies that pin start files. */
  readonly files: Readonly<Record<string, string>>;
  readonly facts: Readonly<Record<string, unknown>>;
  /** Epoch milliseconds. */
  readonly now: number;
  /** Absent for a load case. */
  readonly request?: unknown;
  /**
   * An authority change instead of a request (§5, §9, §10): `{ kind, principal, seat?, after }`,
   * decided by `checkAuthorityChange`; `after` is the proposed team file. allow = it commits.
   */
  readonly change?: unknown;
  /** A lease issuance instead of a request (§7): decided by `issueLease`; allow = it issues. */
  readonly lease?: unknown;
  /** A direct lease revocation (§7): `{ principal, lease }`, decided by `revokeLease`. */
  readonly revoke?: unknown;
  readonly expect: Expectation;
}

export interface CaseFile {
  readonly topic: string;
  readonly cases: readonly KernelCase[];
}

const FILE_KEYS = ["topic", "policy", "files", "facts", "now", "cases"];
const CASE_KEYS = ["description", "policy", "files", "facts", "now", "request", "change", "lease", "revoke", "expect"];
const EXPECT_KEYS = ["decision", "rule", "authority", "actAs", "line", "pass", "reviewMode", "paused", "revokes"];

function readNow(value: unknown): number | string {
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value === "string") {
    const ms = Date.parse(value);
    if (!Number.isNaN(ms)) return ms;
  }
  return "now must be epoch milliseconds or an ISO-8601 time";
}

function readFiles(value: unknown): Record<string, string> | string {
  if (!isPlainObject(value)) return "files must be an object of path → contents";
  const out = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== "string") return `files.${k} must be text`;
    out[k] = v;
  }
  return out;
}

function readExpect(value: unknown, isLoadCase: boolean): Expectation | string {
  if (!isPlainObject(value)) return "expect must be an object";
  for (const key of Object.keys(value)) if (!EXPECT_KEYS.includes(key)) return `expect has an unknown key '${key}'`;
  const { decision, rule, authority, actAs, line, pass, reviewMode, paused, revokes } = value;
  if (decision !== "allow" && decision !== "refuse") return 'expect.decision must be "allow" or "refuse"';
  if (rule !== undefined && (typeof rule !== "string" || !isRuleId(rule))) return `expect.rule '${String(rule)}' is not a rule id (src/kernel/rules.ts)`;
  if (decision === "refuse" && rule === undefined) return "a refusal names its rule: add expect.rule";
  if (decision === "allow" && rule !== undefined) return "an allow names no rule";
  if (authority !== undefined && (decision !== "allow" || typeof authority !== "string")) return "expect.authority belongs to an allow and is an authority id";
  if (actAs !== undefined && (decision !== "allow" || typeof actAs !== "string")) return "expect.actAs belongs to an allow and is an authority id";
  if (line !== undefined && (!isLoadCase || decision !== "refuse" || typeof line !== "number"))
    return "expect.line belongs to a refused load case and is a line number";
  if (pass !== undefined && (decision !== "allow" || typeof pass !== "string")) return "expect.pass belongs to an allow and is a gate record id";
  if (reviewMode !== undefined && (decision !== "allow" || (reviewMode !== "cross-lab" && reviewMode !== "distinct-seat")))
    return "expect.reviewMode belongs to an allow and is cross-lab or distinct-seat";
  if (paused !== undefined && (decision !== "allow" || typeof paused !== "number")) return "expect.paused belongs to a committed change and is a count";
  if (revokes !== undefined && (decision !== "allow" || !Array.isArray(revokes) || revokes.some((r) => typeof r !== "string")))
    return "expect.revokes belongs to a committed change or revocation and is a list of lease ids";
  return {
    ...(revokes !== undefined ? { revokes: revokes as string[] } : {}),
    ...(pass !== undefined ? { pass: pass as string } : {}),
    ...(reviewMode !== undefined ? { reviewMode: reviewMode as "cross-lab" | "distinct-seat" } : {}),
    ...(paused !== undefined ? { paused: paused as number } : {}),
    decision,
    ...(rule !== undefined ? { rule: rule as RuleId } : {}),
    ...(authority !== undefined ? { authority: authority as string } : {}),
    ...(actAs !== undefined ? { actAs: actAs as string } : {}),
    ...(line !== undefined ? { line: line as number } : {}),
  };
}

/** Parse a case file's text; every format error is returned, with the case it is in. */
export function parseCaseFile(text: string): CaseFile | readonly string[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return [`not JSON: ${error instanceof Error ? error.message : String(error)}`];
  }
  if (!isPlainObject(json)) return ["a case file is a JSON object with `topic` and `cases`"];
  const errors: string[] = [];
  for (const key of Object.keys(json)) if (!FILE_KEYS.includes(key)) errors.push(`unknown top-level key '${key}'`);
  if (typeof json.topic !== "string" || json.topic === "") errors.push("`topic` must name what the file tests");
  if (!Array.isArray(json.cases) || json.cases.length === 0) errors.push("`cases` must be a non-empty list");
  const defaults = { policy: json.policy, files: json.files ?? {}, facts: json.facts ?? {}, now: json.now };
  const cases: KernelCase[] = [];
  (Array.isArray(json.cases) ? json.cases : []).forEach((raw: unknown, index) => {
    const where = `case ${index + 1}`;
    if (!isPlainObject(raw)) return void errors.push(`${where}: must be an object`);
    const label = typeof raw.description === "string" && raw.description !== "" ? `${where} (${raw.description})` : where;
    const fail = (message: string): void => void errors.push(`${label}: ${message}`);
    for (const key of Object.keys(raw)) if (!CASE_KEYS.includes(key)) return fail(`unknown key '${key}'`);
    if (typeof raw.description !== "string" || raw.description === "") return fail("every case has a description");
    const policy = raw.policy ?? defaults.policy;
    if (policy === undefined) return fail("no policy (set it on the case or on the file)");
    const files = readFiles(raw.files ?? defaults.files);
    if (typeof files === "string") return fail(files);
    const facts = raw.facts ?? defaults.facts;
    if (!isPlainObject(facts)) return fail("facts must be an object");
    const kinds = [raw.request, raw.change, raw.lease, raw.revoke].filter((k) => k !== undefined).length;
    if (kinds > 1) return fail("a case has one of request, change, lease or revoke, not several");
    const isLoadCase = kinds === 0;
    const nowRaw = raw.now ?? defaults.now ?? (isLoadCase ? 0 : undefined);
    if (nowRaw === undefined) return fail("no `now` (set it on the case or on the file)");
    const now = readNow(nowRaw);
    if (typeof now === "string") return fail(now);
    const expect = readExpect(raw.expect, isLoadCase);
    if (typeof expect === "string") return fail(expect);
    cases.push({
      description: raw.description,
      policy,
      files,
      facts,
      now,
      ...(raw.request !== undefined ? { request: raw.request } : {}),
      ...(raw.change !== undefined ? { change: raw.change } : {}),
      ...(raw.lease !== undefined ? { lease: raw.lease } : {}),
      ...(raw.revoke !== undefined ? { revoke: raw.revoke } : {}),
      expect,
    });
  });
  if (errors.length > 0) return errors;
  return { topic: json.topic as string, cases };
}
