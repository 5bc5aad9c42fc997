import { type CardinalityConstraint, type ConstraintProgram, DEFAULT_REVIEW, type ReviewMode, type Selector } from "./constraint-program.js";
import { isPlainObject } from "./records.js";
import { type InputPath, type PolicyProblem, problem } from "./policy-input.js";
import { OPERATIONAL_CAPABILITIES, type OperationalCapability } from "./vocabulary.js";

/**
 * Reading the constraint program and the review mode from the team file (§5):
 *
 * ```yaml
 * review: { mode: cross-lab, floor: 2 }
 * constraints:
 *   - { minimum: 2, of: gate, pauses: [gate, merge] }
 *   - { maximum: 1, of: "role:release-manager" }
 *   - { exclusive: [write, deploy] }
 *   - { author-inequality: deploy }
 * ```
 *
 * A selector is a capability name or `role:<name>`. Every value is checked; nothing unknown
 * is ignored. Role names are checked against the compiled roles by the caller.
 */
const DEFAULT_PAUSES: readonly OperationalCapability[] = Object.freeze(["gate", "merge"]);

function isCapability(value: string): value is OperationalCapability {
  return (OPERATIONAL_CAPABILITIES as readonly string[]).includes(value);
}

function readSelector(value: unknown, at: InputPath, problems: PolicyProblem[], roleExists: (name: string) => boolean): Selector | undefined {
  if (typeof value !== "string") {
    problems.push(problem("teamfile.schema", at, "a constraint counts holders of a capability or a role", "write a capability name (`gate`) or `role:<name>`"));
    return undefined;
  }
  if (value.startsWith("role:")) {
    const role = value.slice("role:".length);
    if (!roleExists(role)) {
      problems.push(problem("teamfile.schema", at, `role '${role}' is not defined`, "define it under roles, or name a built-in template"));
      return undefined;
    }
    return Object.freeze({ kind: "role", role });
  }
  if (!isCapability(value)) {
    problems.push(
      problem("vocab.unknown", at, `'${value}' is not an operational capability`, `use one of ${OPERATIONAL_CAPABILITIES.join(", ")}, or role:<name>`),
    );
    return undefined;
  }
  return Object.freeze({ kind: "capability", capability: value });
}

function readCount(value: unknown, at: InputPath, problems: PolicyProblem[]): number | undefined {
  if (typeof value === "number" && Number.isInteger(value) && value >= 0) return value;
  problems.push(problem("teamfile.schema", at, "a cardinality is a whole number ≥ 0", "write e.g. `minimum: 2`"));
  return undefined;
}

function readOne(raw: unknown, at: InputPath, problems: PolicyProblem[], roleExists: (name: string) => boolean): CardinalityConstraint | "deploy" | undefined {
  const fix = "write `{ minimum: N, of: X }`, `{ maximum: N, of: X }`, `{ exclusive: [X, Y] }` or `{ author-inequality: deploy }`";
  if (!isPlainObject(raw)) {
    problems.push(problem("teamfile.schema", at, "a constraint must be a map", fix));
    return undefined;
  }
  const kinds = ["minimum", "maximum", "exclusive", "author-inequality"].filter((k) => raw[k] !== undefined);
  if (kinds.length !== 1) {
    problems.push(
      problem("teamfile.schema", at, kinds.length === 0 ? "the constraint names no kind" : `the constraint names several kinds (${kinds.join(", ")})`, fix),
    );
    return undefined;
  }
  const kind = kinds[0] as string;
  const allowed = kind === "minimum" ? ["minimum", "of", "pauses"] : kind === "maximum" ? ["maximum", "of"] : [kind];
  for (const key of Object.keys(raw)) {
    if (!allowed.includes(key)) {
      problems.push(
        problem("teamfile.schema", [...at, key], `'${key}' does not belong in a ${kind} constraint`, `a ${kind} constraint takes ${allowed.join(", ")}`, "key"),
      );
      return undefined;
    }
  }
  if (kind === "author-inequality") {
    if (raw[kind] !== "deploy") {
      problems.push(
        problem(
          "teamfile.schema",
          [...at, kind],
          "author-inequality is extended by the owner to deploy only (gate and merge always carry it)",
          "write `author-inequality: deploy`",
        ),
      );
      return undefined;
    }
    return "deploy";
  }
  if (kind === "exclusive") {
    const list = raw[kind];
    if (!Array.isArray(list) || list.length < 2) {
      problems.push(problem("teamfile.schema", [...at, kind], "an exclusion names at least two capabilities or roles", "write `exclusive: [write, deploy]`"));
      return undefined;
    }
    const of = list.map((s, i) => readSelector(s, [...at, kind, i], problems, roleExists));
    if (of.some((s) => s === undefined)) return undefined;
    return Object.freeze({ kind: "exclusion", of: Object.freeze(of as Selector[]) });
  }
  const count = readCount(raw[kind], [...at, kind], problems);
  if (raw.of === undefined)
    problems.push(problem("teamfile.schema", at, `the ${kind} constraint names no \`of\``, "add `of: <capability>` or `of: role:<name>`", "key"));
  const of = raw.of === undefined ? undefined : readSelector(raw.of, [...at, "of"], problems, roleExists);
  if (count === undefined || of === undefined) return undefined;
  if (kind === "maximum") return Object.freeze({ kind: "maximum", of, count });
  let pauses = DEFAULT_PAUSES;
  if (raw.pauses !== undefined) {
    const list = raw.pauses;
    if (!Array.isArray(list) || list.length === 0 || list.some((c) => typeof c !== "string" || !isCapability(c))) {
      problems.push(
        problem(
          "teamfile.schema",
          [...at, "pauses"],
          "pauses lists the operational capabilities this minimum gates",
          "write e.g. `pauses: [gate, merge, deploy]`",
        ),
      );
      return undefined;
    }
    pauses = Object.freeze([...new Set(list as OperationalCapability[])].sort());
  }
  return Object.freeze({ kind: "minimum", of, count, pauses });
}

function readReview(raw: unknown, problems: PolicyProblem[]): ReviewMode {
  if (raw === undefined) return DEFAULT_REVIEW;
  const fix = "write `review: { mode: cross-lab, floor: 2 }` or `review: { mode: distinct-seat }`";
  if (!isPlainObject(raw)) {
    problems.push(problem("teamfile.schema", ["review"], "review must be a map with a mode", fix));
    return DEFAULT_REVIEW;
  }
  for (const key of Object.keys(raw))
    if (key !== "mode" && key !== "floor")
      problems.push(problem("teamfile.schema", ["review", key], `unknown key '${key}' in review`, "review takes mode and floor", "key"));
  if (raw.mode !== "cross-lab" && raw.mode !== "distinct-seat") {
    problems.push(problem("teamfile.schema", ["review", "mode"], "the review mode is cross-lab or distinct-seat", fix));
    return DEFAULT_REVIEW;
  }
  let floor = 0;
  if (raw.floor !== undefined) floor = readCount(raw.floor, ["review", "floor"], problems) ?? 0;
  return Object.freeze({ mode: raw.mode, floor });
}

/** The constraint program as written → data; problems are reported at their key paths. */
export function readConstraintProgram(
  constraints: unknown,
  review: unknown,
  problems: PolicyProblem[],
  roleExists: (name: string) => boolean,
): ConstraintProgram {
  const out: CardinalityConstraint[] = [];
  let deployAuthorInequality = false;
  if (constraints !== undefined && constraints !== null) {
    if (!Array.isArray(constraints))
      problems.push(problem("teamfile.schema", ["constraints"], "constraints must be a list", "write one `- { … }` per constraint"));
    else {
      constraints.forEach((raw: unknown, index) => {
        const c = readOne(raw, ["constraints", index], problems, roleExists);
        if (c === "deploy") deployAuthorInequality = true;
        else if (c !== undefined) out.push(c);
      });
    }
  }
  return Object.freeze({ constraints: Object.freeze(out), review: readReview(review, problems), deployAuthorInequality });
}
