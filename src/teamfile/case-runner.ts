import { readFile } from "node:fs/promises";
import { type AuthorityChange, checkAuthorityChange } from "../kernel/authority-change.js";
import { authorize } from "../kernel/authorize.js";
import { revokeLease } from "../kernel/cascade.js";
import { type LeaseRequest, issueLease } from "../kernel/lease-issue.js";
import { readFacts } from "../kernel/facts.js";
import { isPlainObject } from "../kernel/records.js";
import type { KernelRequest } from "../kernel/request.js";
import type { RuleId } from "../kernel/rules.js";
import { createKernelView } from "../kernel/view.js";
import { type Expectation, type KernelCase, parseCaseFile } from "./case-format.js";
import type { TeamFileError } from "./errors.js";
import { type LoadOptions, type LoadResult, loadTeamFileData, loadTeamFileText } from "./load.js";

/**
 * Running kernel cases: load the case's policy through the real loader (the same code
 * `teamd apply` uses), decide its request with the real `authorize`, compare with what the
 * case expects. Used by `teamd kernel eval FILE...` and by the suite's own test.
 */
export interface CaseOutcome {
  readonly stage: "load" | "decide";
  readonly decision: "allow" | "refuse";
  readonly rule?: RuleId;
  readonly reason?: string;
  readonly authority?: string;
  readonly actAs?: string;
  readonly pass?: string;
  readonly reviewMode?: "cross-lab" | "distinct-seat";
  readonly paused?: number;
  readonly revokes?: readonly string[];
  /** For an issued lease: the record the daemon would append. */
  readonly lease?: unknown;
  readonly loadErrors?: readonly TeamFileError[];
}

export interface CaseResult {
  readonly description: string;
  readonly ok: boolean;
  readonly expected: Expectation;
  readonly actual?: CaseOutcome;
  /** Why a case did not match, or could not run, in one line. */
  readonly why?: string;
}

export interface CaseFileReport {
  readonly file: string;
  readonly topic?: string;
  /** Format errors: the file could not be read as cases at all. */
  readonly errors: readonly string[];
  readonly results: readonly CaseResult[];
}

function loadPolicy(c: KernelCase, policy: unknown = c.policy, proposal = false): LoadResult {
  const encoder = new TextEncoder();
  const options: LoadOptions = {
    proposal,
    readStartFile: (path) => (Object.prototype.hasOwnProperty.call(c.files, path) ? encoder.encode(c.files[path]) : undefined),
  };
  return typeof policy === "string" ? loadTeamFileText(policy, options) : loadTeamFileData(policy, options);
}

/** A case's change, read: the proposed policy loaded by the real loader. */
function readChange(c: KernelCase, raw: unknown): AuthorityChange | string {
  if (!isPlainObject(raw)) return "change must be an object";
  for (const k of Object.keys(raw)) if (!["kind", "principal", "seat", "after"].includes(k)) return `change has an unknown key '${k}'`;
  const { kind, principal, seat, after } = raw;
  if (kind !== "add-seat" && kind !== "remove-seat" && kind !== "edit") return "change.kind is add-seat, remove-seat or edit";
  if (typeof principal !== "string" || principal === "") return 'change.principal is "owner" or a seat name';
  if (seat !== undefined && typeof seat !== "string") return "change.seat is a seat name";
  const loaded = loadPolicy(c, after, true);
  if (!loaded.ok) return `change.after did not load: ${loaded.errors[0]?.rule}: ${loaded.errors[0]?.message}`;
  return {
    kind,
    principal: principal === "owner" ? { kind: "owner" } : { kind: "seat", seat: principal },
    ...(seat !== undefined ? { seat } : {}),
    after: loaded.policy,
  };
}

function compare(expected: Expectation, actual: CaseOutcome): string | undefined {
  if (actual.decision !== expected.decision) return `expected ${expected.decision}, got ${actual.decision}`;
  if (actual.stage === "load" && actual.loadErrors !== undefined) {
    const hits = actual.loadErrors.filter((e) => e.rule === expected.rule);
    if (hits.length === 0) return `expected the load to report ${expected.rule}, it reported ${[...new Set(actual.loadErrors.map((e) => e.rule))].join(", ")}`;
    if (expected.line !== undefined && !hits.some((e) => e.line === expected.line)) {
      return `expected ${expected.rule} at line ${expected.line}, got line ${hits.map((e) => e.line ?? "?").join(", ")}`;
    }
    return undefined;
  }
  if (expected.rule !== undefined && actual.rule !== expected.rule) return `expected rule ${expected.rule}, got ${actual.rule}`;
  if (expected.authority !== undefined && actual.authority !== expected.authority) return `expected authority ${expected.authority}, got ${actual.authority}`;
  if (expected.actAs !== undefined && actual.actAs !== expected.actAs) return `expected act-as authority ${expected.actAs}, got ${actual.actAs ?? "none"}`;
  if (expected.pass !== undefined && actual.pass !== expected.pass) return `expected the pass ${expected.pass}, got ${actual.pass ?? "none"}`;
  if (expected.reviewMode !== undefined && actual.reviewMode !== expected.reviewMode)
    return `expected review mode ${expected.reviewMode}, got ${actual.reviewMode ?? "none"}`;
  if (expected.paused !== undefined && actual.paused !== expected.paused)
    return `expected ${expected.paused} paused minimum(s), got ${actual.paused ?? "none"}`;
  if (expected.revokes !== undefined && JSON.stringify([...expected.revokes].sort()) !== JSON.stringify(actual.revokes ?? [])) {
    return `expected the cascade to revoke [${expected.revokes.join(", ")}], it revokes [${(actual.revokes ?? []).join(", ")}]`;
  }
  return undefined;
}

/** Run one case. Never throws: a case that cannot run is a failed result saying why. */
export function runCase(c: KernelCase): CaseResult {
  const base = { description: c.description, expected: c.expect };
  const facts = readFacts(c.facts);
  if (typeof facts === "string") return { ...base, ok: false, why: `${facts}; a case may not rely on a fact the decision ignores` };
  const loaded = loadPolicy(c);
  if (!loaded.ok) {
    const rule = loaded.errors.find((e) => e.rule === c.expect.rule)?.rule ?? loaded.errors[0]?.rule;
    const actual: CaseOutcome = { stage: "load", decision: "refuse", ...(rule !== undefined ? { rule } : {}), loadErrors: loaded.errors };
    if (c.request !== undefined || c.change !== undefined || c.lease !== undefined || c.revoke !== undefined) {
      const first = loaded.errors[0];
      return { ...base, ok: false, actual, why: `the policy did not load: ${first?.rule}: ${first?.message} (at ${first?.at})` };
    }
    const why = compare(c.expect, actual);
    return { ...base, ok: why === undefined, actual, ...(why !== undefined ? { why } : {}) };
  }
  if (c.change !== undefined) {
    const change = readChange(c, c.change);
    if (typeof change === "string") return { ...base, ok: false, why: change };
    const decided = checkAuthorityChange(createKernelView(loaded.policy, facts), change, c.now);
    const actual: CaseOutcome =
      decided.decision === "commit"
        ? { stage: "decide", decision: "allow", paused: decided.paused.length, revokes: decided.revocations.map((r) => r.lease).sort() }
        : { stage: "decide", decision: "refuse", rule: decided.rule, reason: decided.reason };
    const why = compare(c.expect, actual);
    return { ...base, ok: why === undefined, actual, ...(why !== undefined ? { why } : {}) };
  }
  if (c.lease !== undefined) {
    // The lease request is data from a file: issueLease reads anything it is given.
    const decided = issueLease(createKernelView(loaded.policy, facts), c.lease as LeaseRequest, c.now);
    const actual: CaseOutcome =
      decided.decision === "issue"
        ? { stage: "decide", decision: "allow", lease: decided.lease }
        : { stage: "decide", decision: "refuse", rule: decided.rule, reason: decided.reason };
    const why = compare(c.expect, actual);
    return { ...base, ok: why === undefined, actual, ...(why !== undefined ? { why } : {}) };
  }
  if (c.revoke !== undefined) {
    const raw = c.revoke;
    if (!isPlainObject(raw) || typeof raw.principal !== "string" || typeof raw.lease !== "string")
      return { ...base, ok: false, why: 'revoke is { principal: "owner" | seat, lease: id }' };
    const principal = raw.principal === "owner" ? ({ kind: "owner" } as const) : ({ kind: "seat", seat: raw.principal } as const);
    const decided = revokeLease(createKernelView(loaded.policy, facts), principal, raw.lease);
    const actual: CaseOutcome =
      decided.decision === "revoke"
        ? { stage: "decide", decision: "allow", revokes: decided.revocations.map((r) => r.lease).sort() }
        : { stage: "decide", decision: "refuse", rule: decided.rule, reason: decided.reason };
    const why = compare(c.expect, actual);
    return { ...base, ok: why === undefined, actual, ...(why !== undefined ? { why } : {}) };
  }
  if (c.request === undefined) {
    const actual: CaseOutcome = { stage: "load", decision: "allow" };
    const why = compare(c.expect, actual);
    return { ...base, ok: why === undefined, actual, ...(why !== undefined ? { why } : {}) };
  }
  // The case's request is data from a file: handed over as is, since authorize reads anything.
  const decision = authorize(createKernelView(loaded.policy, facts), c.request as KernelRequest, c.now);
  const actual: CaseOutcome =
    decision.decision === "allow"
      ? {
          stage: "decide",
          decision: "allow",
          authority: decision.authority.id,
          ...(decision.actAs !== undefined ? { actAs: decision.actAs.id } : {}),
          ...(decision.pass !== undefined ? { pass: decision.pass } : {}),
          ...(decision.reviewMode !== undefined ? { reviewMode: decision.reviewMode } : {}),
        }
      : { stage: "decide", decision: "refuse", rule: decision.rule, reason: decision.reason };
  const why = compare(c.expect, actual);
  return { ...base, ok: why === undefined, actual, ...(why !== undefined ? { why } : {}) };
}

/** Parse and run one case file's text. */
export function runCaseText(file: string, text: string): CaseFileReport {
  const parsed = parseCaseFile(text);
  if (!("cases" in parsed)) return { file, errors: parsed, results: [] };
  return { file, topic: parsed.topic, errors: [], results: parsed.cases.map(runCase) };
}

/** Read and run case files; an unreadable file is reported, never skipped. */
export async function runCaseFiles(files: readonly string[]): Promise<CaseFileReport[]> {
  const reports: CaseFileReport[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      reports.push({ file, errors: [`cannot read: ${error instanceof Error ? error.message : String(error)}`], results: [] });
      continue;
    }
    reports.push(runCaseText(file, text));
  }
  return reports;
}
