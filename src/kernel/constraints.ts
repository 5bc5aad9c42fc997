import type { CardinalityConstraint, ConstraintProgram, ReviewMode, Selector } from "./constraint-program.js";
import type { KernelFacts } from "./facts.js";
import type { Seat } from "./policy.js";

/** What counting needs of a seat (a compiled seat at load, a sealed one at act time). */
export type HoldingSeat = Pick<Seat, "name" | "roles" | "authorities" | "byCapability">;
import type { OperationalCapability } from "./vocabulary.js";

/**
 * The constraint program (constraint-program.ts) checked over a set of seats, at three
 * times. At launch: the loader refuses a team file that breaks any of them (static). On
 * every authority change (add, remove, grant): `checkAuthorityChange` re-checks all three
 * over the resulting authority, atomically with the change. And where expiry,
 * revocation or stop — which are not requests and always apply — leave a minimum unmet, the
 * acts it gates pause: `authorize` refuses them with `constraint.paused` until it is restored.
 */

export function showSelector(s: Selector): string {
  return s.kind === "capability" ? s.capability : `role:${s.role}`;
}

/** How a mode is named in every decision: distinct-seat is never called cross-lab. */
export function showMode(review: ReviewMode): string {
  return review.mode === "cross-lab" ? "cross-lab review mode" : "distinct-seat review mode (not cross-lab)";
}

/**
 * Whether a seat holds what a selector names. A capability is held when one of the seat's
 * authorities for it grants something (no empty dimension) and is not revoked.
 */
export function seatHolds(seat: HoldingSeat, selector: Selector, revoked: readonly string[]): boolean {
  if (selector.kind === "role") {
    if (!seat.roles.includes(selector.role)) return false;
    if (revoked.length === 0) return true;
    // A role is held while any authority it gave this seat is live.
    return seat.authorities.some((a) => a.source.kind === "role" && a.source.role === selector.role && !revoked.includes(a.id));
  }
  for (const a of seat.byCapability[selector.capability] ?? []) {
    if (revoked.includes(a.id)) continue;
    let grants = true;
    for (const d of Object.keys(a.scope) as (keyof typeof a.scope)[]) if (a.scope[d]?.state === "empty") grants = false;
    if (grants) return true;
  }
  return false;
}

/** The seats that count toward a selector: holders, neither stopped nor holding only revoked authority. */
export function holders(seats: Readonly<Record<string, HoldingSeat>>, selector: Selector, facts: KernelFacts = {}): string[] {
  const revoked = facts.revoked ?? [];
  const stopped = facts.stopped ?? [];
  const out: string[] = [];
  for (const seat of Object.values(seats)) if (!stopped.includes(seat.name) && seatHolds(seat, selector, revoked)) out.push(seat.name);
  return out;
}

/** One broken constraint: which, and a sentence naming it. */
export interface Violation {
  readonly rule: "constraint.minimum" | "constraint.maximum" | "constraint.exclusion";
  readonly index: number;
  readonly constraint: CardinalityConstraint;
  readonly message: string;
}

/** Every constraint the authority (seats, less revoked and stopped) breaks; [] when all hold. */
export function violations(program: ConstraintProgram, seats: Readonly<Record<string, HoldingSeat>>, facts: KernelFacts = {}): Violation[] {
  const out: Violation[] = [];
  program.constraints.forEach((c, index) => {
    if (c.kind === "exclusion") {
      const revoked = facts.revoked ?? [];
      for (const seat of Object.values(seats)) {
        const held = c.of.filter((s) => seatHolds(seat, s, revoked));
        if (held.length > 1)
          out.push({
            rule: "constraint.exclusion",
            index,
            constraint: c,
            message: `seat ${seat.name} holds ${held.map(showSelector).join(" and ")}, which constraint ${index + 1} makes mutually exclusive`,
          });
      }
      return;
    }
    const who = holders(seats, c.of, facts);
    if (c.kind === "minimum" && who.length < c.count) {
      out.push({
        rule: "constraint.minimum",
        index,
        constraint: c,
        message: `constraint ${index + 1} needs at least ${c.count} seat(s) holding ${showSelector(c.of)}, and ${who.length} do${who.length === 0 ? "" : ` (${who.join(", ")})`}`,
      });
    }
    if (c.kind === "maximum" && who.length > c.count) {
      out.push({
        rule: "constraint.maximum",
        index,
        constraint: c,
        message: `constraint ${index + 1} allows at most ${c.count} seat(s) holding ${showSelector(c.of)}, and ${who.length} would (${who.join(", ")})`,
      });
    }
  });
  return out;
}

/**
 * The minimums revocation, expiry or stop has left unmet: what the daemon tells the owner
 * (§11) and what pauses the acts each gates. Pure: the same view gives the same list.
 */
export function lostMinimums(program: ConstraintProgram, seats: Readonly<Record<string, HoldingSeat>>, facts: KernelFacts): Violation[] {
  return violations({ ...program, constraints: program.constraints.filter((c) => c.kind === "minimum") }, seats, facts);
}

/** The first unmet minimum that pauses this act, if any. `seats` is read only when some minimum pauses the act. */
export function pausingMinimum(
  program: ConstraintProgram,
  seats: () => Readonly<Record<string, HoldingSeat>>,
  facts: KernelFacts,
  act: OperationalCapability,
): Violation | undefined {
  let holding: Readonly<Record<string, HoldingSeat>> | undefined;
  for (let index = 0; index < program.constraints.length; index++) {
    const c = program.constraints[index];
    if (c === undefined || c.kind !== "minimum" || !c.pauses.includes(act)) continue;
    holding ??= seats();
    const who = holders(holding, c.of, facts);
    if (who.length < c.count) {
      return {
        rule: "constraint.minimum",
        index,
        constraint: c,
        message: `constraint ${index + 1} needs at least ${c.count} seat(s) holding ${showSelector(c.of)}, and only ${who.length} do now (revoked, expired or stopped)`,
      };
    }
  }
  return undefined;
}
