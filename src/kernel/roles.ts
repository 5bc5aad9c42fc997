import type { Grant } from "./authority.js";
import { UNCONSTRAINED, type DimensionScope, type Scope } from "./scope.js";
import type { Dimension, OperationalCapability, Vocabulary } from "./vocabulary.js";

/**
 * The built-in role templates: the seven roles of the ownership protocol (O) mapped onto §3
 * capabilities, each unconstrained on every dimension it takes (a team file narrows a
 * template with `scope`). The protocol's first invariant is built in: observer, diagnostician
 * and verifier write nothing — a verifier that can write is an actor. act-as is in no
 * template: acting under the owner's identity is always written out by the owner.
 */
export const ROLE_TEMPLATES = Object.freeze({
  observer: Object.freeze(["read"]),
  diagnostician: Object.freeze(["read"]),
  planner: Object.freeze(["read", "use-broker"]),
  executor: Object.freeze(["read", "write"]),
  verifier: Object.freeze(["read", "review", "gate"]),
  operator: Object.freeze(["read", "merge", "deploy"]),
  coordinator: Object.freeze(["read", "review", "use-broker"]),
} satisfies Record<string, readonly OperationalCapability[]>);

export type RoleTemplate = keyof typeof ROLE_TEMPLATES;

/** Templates that may never hold write (O, invariant 1). */
export const NO_WRITE_TEMPLATES: readonly RoleTemplate[] = Object.freeze(["observer", "diagnostician", "verifier"]);

export function isRoleTemplate(name: string): name is RoleTemplate {
  return Object.prototype.hasOwnProperty.call(ROLE_TEMPLATES, name);
}

/** A scope that is unconstrained on every dimension a capability takes, written out. */
export function unconstrainedScope(dimensions: readonly Dimension[]): Scope {
  const scope: Partial<Record<Dimension, DimensionScope>> = {};
  for (const d of dimensions) scope[d] = UNCONSTRAINED;
  return Object.freeze(scope);
}

/** A template's grants in a vocabulary, before any narrowing. */
export function templateGrants(template: RoleTemplate, vocabulary: Vocabulary): readonly Grant[] {
  return Object.freeze(
    ROLE_TEMPLATES[template].map((capability) => Object.freeze({ capability, scope: unconstrainedScope(vocabulary.capabilities[capability].dimensions) })),
  );
}
