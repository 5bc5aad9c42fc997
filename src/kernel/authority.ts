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
 * Where an authority comes from. Standing grants only in this release: the delegation issue
 * adds `{ kind: "lease", ... }` here, and `authorize` then reads leases through the same
 * candidate list (see authorities.ts).
 */
export type AuthoritySource =
  | { readonly kind: "role"; readonly role: string; readonly roleHash: string }
  | { readonly kind: "direct" };

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

export function authorityId(seat: string, source: AuthoritySource, capability: string, index: number): string {
  const from = source.kind === "role" ? `role:${source.role}` : "direct";
  return `${seat}/${from}/${capability}/${index}`;
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
