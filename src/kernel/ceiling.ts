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
}

/** The most seats a lab's cap may name: a bound on what is read, far above any real team. */
export const MAX_SEATS_PER_LAB = 1000;

/** The tool maximum no lease may exceed, whatever the ceiling says (§7): 30 days. */
export const TOOL_MAX_LEASE_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** The lease-ttl when the owner writes none: one day. */
export const DEFAULT_LEASE_TTL_MS = 24 * 60 * 60 * 1000;
