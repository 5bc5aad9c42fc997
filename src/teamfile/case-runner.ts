import { readFile } from "node:fs/promises";
import { authorize } from "../kernel/authorize.js";
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

function loadPolicy(c: KernelCase): LoadResult {
  const encoder = new TextEncoder();
  const options: LoadOptions = {
    readStartFile: (path) => (Object.prototype.hasOwnProperty.call(c.files, path) ? encoder.encode(c.files[path]) : undefined),
  };
  return typeof c.policy === "string" ? loadTeamFileText(c.policy, options) : loadTeamFileData(c.policy, options);
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
  return undefined;
}

/** Run one case. Never throws: a case that cannot run is a failed result saying why. */
export function runCase(c: KernelCase): CaseResult {
  const base = { description: c.description, expected: c.expect };
  const unread = Object.keys(c.facts);
  if (unread.length > 0) return { ...base, ok: false, why: `facts.${unread[0]} is not a fact this kernel reads; a case may not rely on a fact the decision ignores` };
  const loaded = loadPolicy(c);
  if (!loaded.ok) {
    const rule = loaded.errors.find((e) => e.rule === c.expect.rule)?.rule ?? loaded.errors[0]?.rule;
    const actual: CaseOutcome = { stage: "load", decision: "refuse", ...(rule !== undefined ? { rule } : {}), loadErrors: loaded.errors };
    if (c.request !== undefined) {
      const first = loaded.errors[0];
      return { ...base, ok: false, actual, why: `the policy did not load: ${first?.rule}: ${first?.message} (at ${first?.at})` };
    }
    const why = compare(c.expect, actual);
    return { ...base, ok: why === undefined, actual, ...(why !== undefined ? { why } : {}) };
  }
  if (c.request === undefined) {
    const actual: CaseOutcome = { stage: "load", decision: "allow" };
    const why = compare(c.expect, actual);
    return { ...base, ok: why === undefined, actual, ...(why !== undefined ? { why } : {}) };
  }
  // The case's request is data from a file: handed over as is, since authorize reads anything.
  const decision = authorize(createKernelView(loaded.policy), c.request as KernelRequest, c.now);
  const actual: CaseOutcome =
    decision.decision === "allow"
      ? { stage: "decide", decision: "allow", authority: decision.authority.id, ...(decision.actAs !== undefined ? { actAs: decision.actAs.id } : {}) }
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
