import { globMatch } from "./glob.js";
import type { Dimension } from "./vocabulary.js";

/**
 * The declared sets (§6, §8): owner-sovereign lists every named dimension draws from. A name
 * outside its declared set is outside every scope, unconstrained or globbed, so a seat cannot
 * widen the world by creating a ref or naming a new environment. Branches may be declared as
 * `*`-globs (`release/*`); the others are plain names. Repository roots are not a declared set
 * yet: the team file's repository is the one root, and the loader refuses `roots`.
 */
export interface DeclaredSets {
  readonly branches: readonly string[];
  readonly envs: readonly string[];
  readonly accounts: readonly string[];
  readonly tasks: readonly string[];
  readonly labs: readonly string[];
}

export type NamedDimension = Exclude<Dimension, "path">;

/** Which declared set each named dimension draws from. */
export const DECLARED_SET_OF: Readonly<Record<NamedDimension, Exclude<keyof DeclaredSets, "labs">>> = Object.freeze({
  branch: "branches",
  env: "envs",
  account: "accounts",
  task: "tasks",
});

export const NO_DECLARED_SETS: DeclaredSets = Object.freeze({
  branches: Object.freeze([]),
  envs: Object.freeze([]),
  accounts: Object.freeze([]),
  tasks: Object.freeze([]),
  labs: Object.freeze([]),
});

/** Whether a canonical value is in the declared set of its dimension. */
export function isDeclared(declared: DeclaredSets, dimension: NamedDimension, value: string): boolean {
  const set = declared[DECLARED_SET_OF[dimension]];
  if (dimension !== "branch") return set.includes(value);
  for (const pattern of set) if (globMatch(pattern, value)) return true;
  return false;
}

/**
 * Declared names (envs, accounts, task resources, labs): they appear in records and messages,
 * so they keep to printable characters without spaces; `:` `/` `@` `.` allow tracker and
 * account spellings such as `linear:WEB` or `github:acme-bot`.
 */
const DECLARED_NAME = /^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,127}$/;

export function isDeclaredName(value: string): boolean {
  return DECLARED_NAME.test(value);
}
