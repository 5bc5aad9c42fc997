import type { RuleId } from "./rules.js";

/**
 * The team file as data: what the loader (src/teamfile/) hands the kernel after the YAML is
 * parsed and its structure checked. The kernel re-checks every value it relies on — the
 * capability vocabulary, the dimensions each capability takes, every scope value against the
 * declared sets and the reserved set — and reports each problem at its key path, which the
 * loader turns into a line number. The shapes below are the schema published in
 * docs/team-file.md.
 */

/** `*` (unconstrained), one value, or a list of values (`[]` is empty). */
export type DimensionInput = string | readonly string[];

/** A scope as written: dimension name → value(s); an omitted dimension is unconstrained. */
export type ScopeInput = Readonly<Record<string, DimensionInput>>;

/**
 * A capability as written: `~` or `{}` (unconstrained on every dimension it takes), one
 * scope, or a list of scopes — each a separate authority, never merged (§6).
 */
export type CapabilityInput = null | ScopeInput | readonly ScopeInput[];

export type CapabilitiesInput = Readonly<Record<string, CapabilityInput>>;

export interface RoleInput {
  /** A built-in template (observer … coordinator) this role starts from. */
  readonly template?: string;
  /** Narrows every capability of the template on the dimensions it takes. */
  readonly scope?: ScopeInput;
  readonly capabilities?: CapabilitiesInput;
}

export interface StartInput {
  /** The argv the seat starts with (no shell). */
  readonly command: readonly string[];
  /** The working root, repo-relative; `.` by default. */
  readonly workdir?: string;
  /** Environment bindings, name → value. */
  readonly env?: Readonly<Record<string, string>>;
  /** Start/instruction files, repo-relative; pinned by content hash and reserved (§3, §10). */
  readonly files?: readonly string[];
  /** Allowed egress (§12), checked by the kernel's readEgress (src/kernel/egress-context.ts). */
  readonly network?: unknown;
  /** Resource limits, or `none` (src/kernel/start-limits.ts). */
  readonly limits?: unknown;
  /** `bwrap` (the default) or `none`: uncontained (src/kernel/start-containment.ts). */
  readonly containment?: unknown;
  /** `never` (the default), `on-failure`, `always`, or `{ when, retries }` (src/kernel/start-restart.ts). */
  readonly restart?: unknown;
}

export interface SeatInput {
  /** The seat's lab: the owner's binding, by signing the team file (§5, §8). */
  readonly lab?: string;
  readonly roles?: readonly string[];
  readonly capabilities?: CapabilitiesInput;
  readonly start?: StartInput;
}

export interface DeclareInput {
  readonly branches?: readonly string[];
  readonly envs?: readonly string[];
  readonly accounts?: readonly string[];
  readonly tasks?: readonly string[];
  readonly labs?: readonly string[];
}

export interface PolicyInput {
  /** The capability vocabulary version the file pins (§3). */
  readonly version: unknown;
  readonly team: string;
  readonly declare?: DeclareInput;
  readonly roles?: Readonly<Record<string, RoleInput>>;
  readonly seats?: Readonly<Record<string, SeatInput>>;
  /** The owner-written constraint program (§5), as written; the kernel reads it. */
  readonly constraints?: unknown;
  /** The review mode (§5), as written. */
  readonly review?: unknown;
  /** leads (§9): a seat name, or `{ seat, envelope }`; as written, the kernel reads it. */
  readonly leads?: unknown;
  /** The ceiling (§8): `{ capabilities?, lease-ttl? }`, as written. */
  readonly ceiling?: unknown;
  /** The explicit deny (§8): a capability map, as written. */
  readonly deny?: unknown;
  /** The capabilities behind two-granter agreement (§10), as written (`two-granter` in the file). */
  readonly twoGranter?: unknown;
  /** The deploy command of each declared environment (§3, §10): env → a start-shaped map, as written. */
  readonly deploy?: unknown;
  /** Which owner-configured tracker serves each declared task resource (§11), as written. */
  readonly trackers?: unknown;
  /** What each declared account resolves to — its identity, never its secret (§3, §7): `accounts` in the file, as written. */
  readonly accountIdentities?: unknown;
  /**
   * Whether the seats are checked against the constraints at load (launch, §5) — the
   * default. A policy proposed by an authority change is not: `checkAuthorityChange`
   * decides it against the policy in force (a delegate's break refused, the owner's
   * narrowing committed with its floors paused).
   */
  readonly proposal?: boolean;
  /** Where the team file itself lives, repo-relative: a reserved path (§3). */
  readonly teamFilePath: string;
}

/** Where in the input a problem is: a key path, and whether the key or its value is wrong. */
export type InputPath = readonly (string | number)[];

/**
 * One thing wrong with a team file: the rule it breaks, where, what is wrong, and how to fix
 * it. Every problem is reported, not only the first.
 */
export interface PolicyProblem {
  readonly rule: RuleId;
  readonly at: InputPath;
  readonly part: "key" | "value";
  readonly message: string;
  readonly fix: string;
}

export function problem(rule: RuleId, at: InputPath, message: string, fix: string, part: "key" | "value" = "value"): PolicyProblem {
  return Object.freeze({ rule, at: Object.freeze([...at]), part, message, fix });
}
