import { type CanonicalValue, canonicalJson } from "./canonical.js";
import { type Scope, canonicalDimension, formatScope } from "./scope.js";
import type { OperationalCapability, Vocabulary } from "./vocabulary.js";

/**
 * A capability with its scope: one alternative a seat may act under. A role is a bundle of
 * grants; a seat's list resolves to one set of them (§4).
 */
export interface Grant {
  readonly capability: OperationalCapability;
  /** Every dimension the capability takes is present: unconstrained is written, not implied. */
  readonly scope: Scope;
  /**
   * The owner's name for this grant (`name:` in its scope), where one source holds several
   * grants of a capability: its id, so the grant keeps it — and its leases — across edits of
   * its scope (§7). Never a dimension: it widens and narrows nothing.
   */
  readonly name?: string;
}

/**
 * Where an authority comes from: a standing grant (a role's or a direct one), the leads
 * envelope the owner signed (§9: a source for root leases only, never acted under by leads
 * itself), or a live lease (§7), which `authorize` reads through the same candidate list
 * (authorities.ts) so the coverage rule is one rule.
 */
export type AuthoritySource =
  | { readonly kind: "role"; readonly role: string; readonly roleHash: string }
  | { readonly kind: "direct" }
  | { readonly kind: "envelope" }
  | { readonly kind: "lease"; readonly lease: string; readonly rootGrant: string; readonly issuer: string };

/**
 * One single authority (§6): authorities are alternatives and are never merged, so a
 * multi-path effect is covered whole by one of them or refused. An allow names the one that
 * covered the effect, by its stable id.
 */
export interface Authority extends Grant {
  /** Stable within a policy: `seat/role:name/capability/n` or `seat/direct/capability/n`. */
  readonly id: string;
  readonly seat: string;
  readonly source: AuthoritySource;
}

/**
 * Ids: `seat/role:name/capability/KEY`, `seat/direct/capability/KEY`,
 * `leads:envelope/capability/KEY` (the envelope's ids do not name the leads seat: reassigning
 * leads is checked by who holds the envelope, §7), `lease:<lease id>`. A seat name never holds
 * `:`, so they cannot collide. KEY (grantKeys) never depends on the grant's position, so
 * removing one grant never hands its id — and the leases rooted in it — to another (§7).
 */
export function authorityId(seat: string, source: AuthoritySource, capability: string, key: string): string {
  switch (source.kind) {
    case "role":
      return `${seat}/role:${source.role}/${capability}/${key}`;
    case "direct":
      return `${seat}/direct/${capability}/${key}`;
    case "envelope":
      return `leads:envelope/${capability}/${key}`;
    case "lease":
      return `lease:${source.lease}`;
  }
}

/**
 * Each grant's key within one source (a role, a seat's direct grants, the envelope), stable
 * across every edit that keeps the grant: `0` for the one grant of its capability there (so a
 * widening keeps it); the owner's `name` where it gives one; and for an unnamed grant beside
 * others of its capability, `#` and a digest of its scope — stable while the scope is, and a
 * fresh id when it changes (its leases are then cascaded: fail closed, §7).
 */
export function grantKeys(grants: readonly Grant[]): string[] {
  const count = new Map<string, number>();
  for (const g of grants) count.set(g.capability, (count.get(g.capability) ?? 0) + 1);
  return grants.map((g) => {
    if (g.name !== undefined) return g.name;
    if (count.get(g.capability) === 1) return "0";
    return `#${scopeDigest(g.scope)}`;
  });
}

/** FNV-1a (64 bits) over the scope's canonical text: a short, deterministic key, no secret in it (the owner's file chooses every scope). */
function scopeDigest(scope: Scope): string {
  const text = canonicalJson(
    Object.fromEntries(
      (Object.keys(scope) as (keyof Scope)[]).sort().map((d) => [d, canonicalDimension(scope[d] as NonNullable<Scope[keyof Scope]>) as CanonicalValue]),
    ),
  );
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(text)) hash = ((hash ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return hash.toString(16).padStart(16, "0");
}

/**
 * An authority as a person reads it in a decision: the grant with every dimension printed
 * (unconstrained as `*`) and its id. The role's content hash stays in the data, not the
 * sentence.
 */
export function describeAuthority(authority: Authority, vocabulary: Vocabulary): string {
  const spec = vocabulary.capabilities[authority.capability];
  return `${authority.capability}${formatScope(authority.scope, spec.dimensions)} (${authority.id})`;
}
