import type { Grant } from "./authority.js";
import { type DeclaredSets, DECLARED_SET_OF, isDeclaredName } from "./declared.js";
import { globIntersects } from "./glob.js";
import { NAME_RULE, closest, isName } from "./names.js";
import { canonicalPath } from "./paths.js";
import { type InputPath, type PolicyProblem, problem } from "./policy-input.js";
import { normalizeBranch } from "./refs.js";
import { type ReservedSet, reservedReason } from "./reserved.js";
import type { RuleId } from "./rules.js";
import { type DimensionScope, type Scope, EMPTY, UNCONSTRAINED, boundedScope } from "./scope.js";
import {
  ADMINISTRATIVE_CAPABILITIES,
  ALL_WORD,
  DIMENSIONS,
  type Dimension,
  type OperationalCapability,
  type Vocabulary,
  capabilitySpec,
  isDimension,
} from "./vocabulary.js";

/**
 * Reading scopes and capability lists as the team file writes them (§3, §6) into canonical
 * grants. Every value is checked where it is written: a path is canonical and outside the
 * reserved set, a branch is a valid ref name or glob that matches some declared branch, an
 * env, account or task resource is in its declared set. Nothing is dropped quietly: a value
 * that cannot be read is a problem at its own key path.
 */
export interface ScopeContext {
  readonly vocabulary: Vocabulary;
  readonly declared: DeclaredSets;
  readonly reserved: ReservedSet;
  readonly problems: PolicyProblem[];
}

const SCOPE_RULE: Readonly<Record<Dimension, RuleId>> = {
  path: "scope.path",
  branch: "scope.branch",
  env: "scope.env",
  account: "scope.account",
  task: "scope.task",
};

/** PATH_MAX: no file has a longer path, so a longer scope value only grows the policy. */
const MAX_PATH_CHARS = 4096;

/** Where each not-yet-enforced capability word is lifted. */
const NOT_YET: Readonly<Record<string, string>> = {
  leads: "leads (§9) is not a capability in a list: it is written once at the top of the file (`leads: <seat>`), and never leased or copied",
  [ALL_WORD]:
    "the all-capabilities word (§10: the vocabulary as agreed, with agree and without grant, leads or create) is not built: write each capability, and `agree: ~` on the seat that should hold it",
};

/**
 * grant, agree and create (§3, §10): held by a seat, written in its own capabilities with no
 * scope. create's bounds are not in the team file at all: they are written on the machine
 * (`teamd create-bounds`), so a seat holding create with no bound creates nothing.
 */
const SEAT_ADMIN = ["grant", "agree", "create"] as const;
export type SeatAdministrative = (typeof SEAT_ADMIN)[number];

function isSeatAdmin(name: string): name is SeatAdministrative {
  return (SEAT_ADMIN as readonly string[]).includes(name);
}

/** An administrative capability has no project scope: `~`, `{}` or `*` (§3). */
function unscoped(value: unknown): boolean {
  return value === null || value === "*" || (typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 0);
}

function valueAt(at: InputPath, list: boolean, index: number): InputPath {
  return list ? [...at, index] : at;
}

/** One dimension as written → its canonical state, or undefined after reporting why not. */
export function readDimension(dimension: Dimension, input: unknown, at: InputPath, ctx: ScopeContext): DimensionScope | undefined {
  const report = (rule: RuleId, where: InputPath, message: string, fix: string): undefined => {
    ctx.problems.push(problem(rule, where, message, fix));
    return undefined;
  };
  if (input === "*") return UNCONSTRAINED;
  const list = Array.isArray(input);
  const raw: readonly unknown[] = list ? (input as readonly unknown[]) : [input];
  if (list && raw.length === 0) return EMPTY;
  const values: string[] = [];
  let bad = false;
  raw.forEach((value, index) => {
    const where = valueAt(at, list, index);
    if (typeof value !== "string") {
      bad = true;
      return report("teamfile.schema", where, `a ${dimension} value must be a string`, `write the ${dimension} as text, or \`*\` for unconstrained`);
    }
    if (value === "*") {
      bad = true;
      return report("teamfile.schema", where, "`*` inside a list", "write `*` alone (not in a list) for unconstrained, or list the values");
    }
    const canonical = readValue(dimension, value, where, ctx);
    if (canonical === undefined) bad = true;
    else values.push(canonical);
  });
  return bad ? undefined : boundedScope(dimension, values);
}

function readValue(dimension: Dimension, value: string, at: InputPath, ctx: ScopeContext): string | undefined {
  const rule = SCOPE_RULE[dimension];
  const report = (r: RuleId, message: string, fix: string): undefined => {
    ctx.problems.push(problem(r, at, message, fix));
    return undefined;
  };
  if (dimension === "path") {
    if (value.length > MAX_PATH_CHARS)
      return report(rule, `a path of ${value.length} characters: longer than any path a file system names (${MAX_PATH_CHARS})`, "name a shorter directory");
    if (value.includes("*"))
      return report(rule, `'${value}': paths are prefixes, not globs`, "name the directory instead (`docs/` covers everything under docs)");
    const canonical = canonicalPath(value);
    if (!canonical.ok)
      return report(
        canonical.undecidable ? "scope.undecidable" : rule,
        `'${value}': ${canonical.reason}`,
        "write a path relative to the repository root, with forward slashes",
      );
    const reserved = reservedReason(ctx.reserved, canonical.path);
    if (reserved !== undefined)
      return report(
        "reserved.object",
        `${reserved}; no scope opens a reserved object`,
        "remove this path: the team file, .git and the pinned start files are never in any scope",
      );
    return canonical.path;
  }
  if (dimension === "branch") {
    const branch = normalizeBranch(value, { pattern: true });
    if (!branch.ok) return report(rule, branch.reason, "write a branch name (`main` or `refs/heads/main`) or a glob such as `release/*`");
    const hits = globIntersects(branch.name, ctx.declared.branches);
    if (hits === "undecidable") return report("scope.undecidable", `cannot decide which declared branches '${value}' matches`, "use a simpler glob");
    if (!hits) return report(rule, `'${value}' matches no declared branch`, "add the branch to declare.branches, or correct the name");
    return branch.name;
  }
  const set = DECLARED_SET_OF[dimension];
  if (!isDeclaredName(value))
    return report(rule, `'${value}' is not a valid ${dimension} name`, "use letters, digits and . _ : @ / + -, starting with a letter or digit");
  if (!ctx.declared[set].includes(value))
    return report(rule, `${dimension} '${value}' is not declared`, `add '${value}' to declare.${set} (an owner act), or correct the name`);
  return value;
}

/**
 * A scope as written for one capability → a scope with every dimension the capability takes
 * (omitted ones written out as unconstrained). A dimension it does not take is rejected.
 */
export function readScope(capability: string, dimensions: readonly Dimension[], input: unknown, at: InputPath, ctx: ScopeContext): Scope | undefined {
  if (input === null || input === undefined) input = {};
  if (typeof input !== "object" || Array.isArray(input)) {
    ctx.problems.push(
      problem(
        "teamfile.schema",
        at,
        `the scope of ${capability} must be a map of dimensions`,
        `write e.g. \`${capability}: { ${dimensions[0] ?? "path"}: [...] }\`, or \`${capability}: ~\` for unconstrained`,
      ),
    );
    return undefined;
  }
  const written = input as Record<string, unknown>;
  const out: Partial<Record<Dimension, DimensionScope>> = {};
  let bad = false;
  for (const key of Object.keys(written)) {
    if (!isDimension(key)) {
      const guess = closest(key, DIMENSIONS);
      ctx.problems.push(
        problem(
          "vocab.dimension",
          [...at, key],
          `'${key}' is not a scope dimension`,
          guess !== undefined ? `did you mean '${guess}'? ${capability} takes ${dimensions.join(", ")}` : `${capability} takes ${dimensions.join(", ")}`,
          "key",
        ),
      );
      bad = true;
    } else if (!dimensions.includes(key)) {
      ctx.problems.push(
        problem(
          "vocab.dimension",
          [...at, key],
          `${capability} does not take the ${key} dimension`,
          `remove ${key}; ${capability} takes ${dimensions.join(", ")}`,
          "key",
        ),
      );
      bad = true;
    }
  }
  for (const d of dimensions) {
    if (!Object.prototype.hasOwnProperty.call(written, d)) {
      out[d] = UNCONSTRAINED;
      continue;
    }
    const scope = readDimension(d, written[d], [...at, d], ctx);
    if (scope === undefined) bad = true;
    else out[d] = scope;
  }
  return bad ? undefined : Object.freeze(out);
}

/**
 * A capability map as written → its grants. Each scope in a list is its own authority. An
 * unknown capability is refused (§3); a known one this release does not decide yet is refused
 * as "not supported yet", never accepted unenforced.
 */
export function readCapabilities(
  input: unknown,
  at: InputPath,
  ctx: ScopeContext,
  grants: "grants" | "bounds" = "grants",
  /** A seat's own list: grant and agree are collected here; anywhere else (a role, the envelope, a bound) they are refused. */
  admin?: SeatAdministrative[],
): Grant[] | undefined {
  if (input === undefined || input === null) return [];
  if (typeof input !== "object" || Array.isArray(input)) {
    ctx.problems.push(
      problem("teamfile.schema", at, "capabilities must be a map of capability → scope", "write e.g. `capabilities: { read: ~, write: { path: [docs/] } }`"),
    );
    return undefined;
  }
  const out: Grant[] = [];
  let bad = false;
  for (const [name, value] of Object.entries(input as Record<string, unknown>)) {
    const where = [...at, name];
    const spec = capabilitySpec(ctx.vocabulary, name);
    if (isSeatAdmin(name)) {
      if (admin === undefined) {
        ctx.problems.push(
          problem(
            "teamfile.schema",
            where,
            `${name} is administrative (§3, §10): a seat holds it only when the owner writes it in that seat's own capabilities — never through a role (a same copy copies roles, and ${name} is never copied), the leads envelope (never leased) or a bound`,
            `remove it here, and write \`${name}: ~\` under the holding seat's capabilities`,
            "key",
          ),
        );
        bad = true;
      } else if (!unscoped(value)) {
        ctx.problems.push(problem("teamfile.schema", where, `${name} has no project scope (§3)`, `write \`${name}: ~\``));
        bad = true;
      } else admin.push(name);
      continue;
    }
    if (Object.prototype.hasOwnProperty.call(NOT_YET, name)) {
      ctx.problems.push(
        problem(
          "teamfile.unsupported",
          where,
          `not supported yet: ${NOT_YET[name]}`,
          "remove it; a policy that reads stronger than teamd enforces would fail open",
          "key",
        ),
      );
      bad = true;
      continue;
    }
    if (spec === undefined || spec.kind !== "operational") {
      const known = Object.keys(ctx.vocabulary.capabilities).filter((c) => !(ADMINISTRATIVE_CAPABILITIES as readonly string[]).includes(c));
      const guess = closest(name, known);
      ctx.problems.push(
        problem(
          "vocab.unknown",
          where,
          `'${name}' is not a capability in vocabulary version ${ctx.vocabulary.version}`,
          guess !== undefined ? `did you mean '${guess}'?` : `use one of: ${known.join(", ")}`,
          "key",
        ),
      );
      bad = true;
      continue;
    }
    const scopes: readonly unknown[] = Array.isArray(value) ? value : [value];
    if (Array.isArray(value) && value.length === 0) {
      ctx.problems.push(
        problem(
          "teamfile.schema",
          where,
          `an empty list of scopes for ${name} grants nothing`,
          `remove ${name}, or write one scope (an empty dimension is written inside it: \`{ ${spec.dimensions[0] ?? "path"}: [] }\`)`,
        ),
      );
      bad = true;
      continue;
    }
    const names = new Set<string>();
    scopes.forEach((scopeInput, index) => {
      const scopeAt = Array.isArray(value) ? [...where, index] : where;
      const named = grantName(scopeInput, scopeAt, ctx, grants, names);
      if (named === null) {
        bad = true;
        return;
      }
      const scope = readScope(name, spec.dimensions, named.rest, scopeAt, ctx);
      if (scope === undefined) bad = true;
      else out.push(Object.freeze({ capability: name as OperationalCapability, scope, ...(named.name !== undefined ? { name: named.name } : {}) }));
    });
  }
  return bad ? undefined : out;
}

/**
 * A grant's `name:` (§7: what keeps its id, and its leases, across edits of its scope), taken
 * out of the scope as written; null when it is wrong (reported). The ceiling and the deny hold
 * bounds, not grants: a name there is refused rather than ignored.
 */
function grantName(input: unknown, at: InputPath, ctx: ScopeContext, grants: "grants" | "bounds", seen: Set<string>): { name?: string; rest: unknown } | null {
  if (input === null || typeof input !== "object" || Array.isArray(input) || !Object.prototype.hasOwnProperty.call(input, "name")) return { rest: input };
  const { name, ...rest } = input as Record<string, unknown>;
  if (grants === "bounds") {
    ctx.problems.push(
      problem("teamfile.schema", [...at, "name"], "a name identifies a grant; the ceiling and the deny hold bounds, not grants", "remove name", "key"),
    );
    return null;
  }
  if (typeof name !== "string" || !isName(name)) {
    ctx.problems.push(problem("teamfile.schema", [...at, "name"], `a grant's name is ${NAME_RULE}`, "write e.g. `name: docs`"));
    return null;
  }
  if (seen.has(name)) {
    ctx.problems.push(problem("teamfile.schema", [...at, "name"], `two grants of this capability are both named '${name}'`, "give each its own name"));
    return null;
  }
  seen.add(name);
  return { name, rest };
}
