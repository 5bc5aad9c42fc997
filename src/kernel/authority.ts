import { type Scope, formatScope } from "./scope.js";
import type { OperationalCapability, Vocabulary } from "./vocabulary.js";

/**
 * A capability with its scope: one alternative a seat may act under. A role is a bundle of
 * grants; a seat's list resolves to one set of them (§4).
 */
export interface Grant {
  readonly capability: OperationalCapability;
  /** Every dimension the capability takes is present: unconstrained is written, not implied. */
  readonly scope: Scope;
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
 * Ids: `seat/role:name/capability/n`, `seat/direct/capability/n`, `leads:envelope/capability/n`
 * (the envelope's ids do not name the leads seat: reassigning leads is checked by who holds
 * the envelope, §7), `lease:<lease id>`. A seat name never holds `:`, so they cannot collide.
 */
export function authorityId(seat: string, source: AuthoritySource, capability: string, index: number): string {
  switch (source.kind) {
    case "role":
      return `${seat}/role:${source.role}/${capability}/${index}`;
    case "direct":
      return `${seat}/direct/${capability}/${index}`;
    case "envelope":
      return `leads:envelope/${capability}/${index}`;
    case "lease":
      return `lease:${source.lease}`;
  }
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
