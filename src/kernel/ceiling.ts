import type { DimensionScope, Scope } from "./scope.js";
import type { OperationalCapability } from "./vocabulary.js";

/**
 * The ceiling of §8 as data: what the owner's team file bounds, and the lease lifetimes.
 * Its own file because the policy (policy.ts), the team-file reader (delegation-input.ts) and
 * the compiled policy carry it, while the checks against it (ceiling-deny.ts) take the whole
 * Policy: with the type beside the checks, policy.ts and ceiling-deny.ts imported each other.
 */
export interface Ceiling {
  /** Per capability, the alternative scopes it may reach; absent = no capability bound (only the lease-ttl). */
  readonly capabilities?: Readonly<Partial<Record<OperationalCapability, readonly Scope[]>>>;
  /** The hard maximum lifetime of any lease (§7), at most the tool maximum. */
  readonly leaseTtlMs: number;
  /**
   * The resource envelope's seats (§8): per lab, the most live seats (a seat is live from its
   * launch to its stop). Checked at apply (the seats declared) and at every launch (the seats live).
   */
  readonly seats?: Readonly<Record<string, number>>;
  /**
   * The resource envelope's visibility (§8): per lab, the paths the union of its seats' read
   * scopes may reach (envelope-visibility.ts). A lab not named is not bounded here.
   */
  readonly visibility?: Readonly<Record<string, DimensionScope>>;
  /**
   * The resource envelope's unattended runtime (§8): the longest the team runs since the last
   * owner-signed act that renews it (an apply of its file, `teamd renew`); past it the team is
   * paused (envelope-runtime.ts).
   */
  readonly runtimeMs?: number;
  /** The resource envelope's spend (§8): the team's budget per period, reserved before each dispatch (envelope-spend.ts). */
  readonly spend?: SpendCeiling;
}

/**
 * `ceiling.spend` (§8): in the provider's billing currency, in minor units (cents), per period —
 * a calendar month (UTC) or a fixed length aligned to the unix epoch (UTC: `1d` is the UTC day).
 */
export interface SpendCeiling {
  readonly currency: string;
  readonly period: { readonly kind: "month" } | { readonly kind: "fixed"; readonly ms: number };
  /** The team's aggregate cap per period. */
  readonly total: number;
  /** Per declared lab, a tighter cap (never replacing the aggregate). */
  readonly labs: Readonly<Record<string, number>>;
  /** What every dispatch (a seat's launch, a restart too) reserves against the remainder before it runs. */
  readonly perDispatch: number;
  /** A meter report older than this counts the lab's usage as spent (fail closed). */
  readonly staleAfterMs: number;
}

/** The most seats a lab's cap may name: a bound on what is read, far above any real team. */
export const MAX_SEATS_PER_LAB = 1000;

/** The tool maximum no lease may exceed, whatever the ceiling says (§7): 30 days. */
export const TOOL_MAX_LEASE_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** The lease-ttl when the owner writes none: one day. */
export const DEFAULT_LEASE_TTL_MS = 24 * 60 * 60 * 1000;
