import type { OperationalCapability } from "./vocabulary.js";

/**
 * The owner-written constraint program of §5: minimum and maximum cardinality of the seats
 * holding a capability or a role, and mutual exclusion on one seat. It is owner-sovereign
 * (§8): only an owner act changes it, loosening or tightening (authority-change.ts).
 *
 * Its own file because the policy (policy.ts) carries the program while the checks over it
 * (constraints.ts) count the policy's seats: with the data beside the checks, the two
 * imported each other.
 */

/** Which seats a constraint counts: holders of a capability, or of a role. */
export type Selector = { readonly kind: "capability"; readonly capability: OperationalCapability } | { readonly kind: "role"; readonly role: string };

export interface MinimumConstraint {
  readonly kind: "minimum";
  readonly of: Selector;
  readonly count: number;
  /** The acts that pause while it is unmet: by default the gate and the merge (§5). */
  readonly pauses: readonly OperationalCapability[];
}

export interface MaximumConstraint {
  readonly kind: "maximum";
  readonly of: Selector;
  readonly count: number;
}

export interface ExclusionConstraint {
  readonly kind: "exclusion";
  /** No one seat may hold two of these. */
  readonly of: readonly Selector[];
}

export type CardinalityConstraint = MinimumConstraint | MaximumConstraint | ExclusionConstraint;

/**
 * The review mode (§5), per team. cross-lab: the lab of every author differs from the
 * gater's and the merger's, and a review floor counts reviewers of distinct labs; distinct-
 * seat: only distinct seats, and every decision names it so — it is never called cross-lab.
 */
export interface ReviewMode {
  readonly mode: "cross-lab" | "distinct-seat";
  /** Reviewer seats (approving, independent) a gate and a merge need; 0 = no floor. */
  readonly floor: number;
}

export interface ConstraintProgram {
  readonly constraints: readonly CardinalityConstraint[];
  readonly review: ReviewMode;
  /** The owner bound deploy to the author-inequality of separation of duties (§5, §9). */
  readonly deployAuthorInequality: boolean;
}

export const DEFAULT_REVIEW: ReviewMode = Object.freeze({ mode: "distinct-seat", floor: 0 });

export const NO_CONSTRAINTS: ConstraintProgram = Object.freeze({ constraints: Object.freeze([]), review: DEFAULT_REVIEW, deployAuthorInequality: false });
