import { type GranterSignature, checkTwoGranter, copyHoldsAdmin, sameCopy } from "./agreement.js";
import { type LeaseRevocation, cascade } from "./cascade.js";
import { canonicalJson } from "./canonical.js";
import type { ConstraintProgram } from "./constraint-program.js";
import { type HoldingSeat, type Violation, showSelector, violations } from "./constraints.js";
import { type Refusal, refuse } from "./decision.js";
import { effectiveSeats } from "./lease-issue.js";
import { leaseList } from "./lease-liveness.js";
import type { Policy, Seat } from "./policy.js";
import type { Principal } from "./principal.js";
import { ownValue } from "./records.js";
import type { KernelView } from "./view.js";
import type { AdministrativeCapability } from "./vocabulary.js";

/**
 * An authority change — add a seat, remove a seat, a grant (any other team-file change) —
 * decided before it commits, atomically with it (§5, §9, §10). The daemon calls this with
 * the view in force and the policy the change would put in force (loaded by the same loader,
 * so its hashes are real); the kernel compares the two.
 *
 * In order: (1) a change to an owner-sovereign setting — the constraint program, the review
 * mode, the declared sets, a seat's lab binding — is the owner's alone (§8, §9); (2) the
 * principal the §9 table names: add a same copy — an agree holder or the owner; add any other
 * seat, or edit — the owner or a grant holder; remove — the owner (leads arrives with issue
 * 6), and a seat holding grant or agree is removed by the owner only; (3) a co-signed change
 * carries a valid two-granter approval; (4) the constraints of §5 over the resulting
 * authority — standing plus live leases, less revoked, less stopped, less the leases the
 * change's cascade revokes: a delegate's change that breaks one is refused
 * naming it; the owner's commits, and each minimum it leaves unmet is returned as `paused`
 * (the acts it gates pause, and the owner is told).
 */
export interface AuthorityChange {
  readonly kind: "add-seat" | "remove-seat" | "edit";
  readonly principal: Principal;
  /** The seat added or removed (add-seat, remove-seat). */
  readonly seat?: string;
  /** The policy the change would put in force. */
  readonly after: Policy;
  /**
   * The input state now (§15): the policy in force and the lease set, hashed by the daemon from
   * the ledger when it decides — never taken from a request. A co-signed change is checked against it.
   */
  readonly inputState?: string;
  /** A two-granter change: both signatures over this proposal (§10), each made over the input state it names. */
  readonly coSigned?: { readonly proposal: string; readonly signatures: readonly GranterSignature[] };
}

/**
 * A committed change carries its cascade (cascade.ts): the lease revocations the daemon
 * appends in the same atomic batch as the change — both commit or neither (§7).
 */
export type ChangeDecision =
  | { readonly decision: "commit"; readonly paused: readonly Violation[]; readonly agreement: boolean; readonly revocations: readonly LeaseRevocation[] }
  | Refusal;

function programText(p: ConstraintProgram): string {
  return canonicalJson({
    review: { mode: p.review.mode, floor: p.review.floor },
    deploy: p.deployAuthorInequality,
    constraints: p.constraints.map((c) =>
      c.kind === "exclusion"
        ? { x: c.of.map(showSelector) }
        : { k: c.kind, n: c.count, of: showSelector(c.of), ...(c.kind === "minimum" ? { p: [...c.pauses] } : {}) },
    ),
  });
}

/** The owner-sovereign settings the change touches (§8), in words; [] when none. */
export function sovereignChanges(before: Policy, after: Policy): string[] {
  const out: string[] = [];
  if (programText(before.constraints) !== programText(after.constraints)) out.push("the constraint program or the review mode");
  if (canonicalJson(before.declared as never) !== canonicalJson(after.declared as never)) out.push("a declared set");
  for (const seat of Object.values(after.seats)) {
    const was = ownValue(before.seats, seat.name);
    if (was !== undefined && was.lab !== seat.lab) out.push(`the lab binding of seat ${seat.name}`);
  }
  const envelope = (p: Policy): string =>
    canonicalJson({ seat: p.leads?.seat ?? null, envelope: (p.leads?.envelope ?? []).map((a) => canonicalJson({ c: a.capability, s: a.scope as never })) });
  if (envelope(before) !== envelope(after)) out.push("leads or the delegation envelope");
  if (canonicalJson((before.ceiling ?? null) as never) !== canonicalJson((after.ceiling ?? null) as never)) out.push("the ceiling");
  if (canonicalJson((before.deny ?? []) as never) !== canonicalJson((after.deny ?? []) as never)) out.push("the deny");
  if (canonicalJson((before.twoGranter ?? []) as never) !== canonicalJson((after.twoGranter ?? []) as never) || before.twoGranterLabs !== after.twoGranterLabs)
    out.push("the two-granter requirement");
  if (canonicalJson((before.accountIdentities ?? {}) as never) !== canonicalJson((after.accountIdentities ?? {}) as never)) out.push("an account's identity");
  return out;
}

function holds(seat: Seat | undefined, capability: AdministrativeCapability): boolean {
  return seat?.admin?.includes(capability) ?? false;
}

function key(v: Violation): string {
  return v.rule === "constraint.exclusion" ? v.message : `${v.rule}:${v.index}`;
}

/**
 * Decide an authority change; see the module comment for the order. Pure and total. `now` is
 * the decision time: live leases count toward §5 as standing grants do, and a lease's
 * liveness is walked at it — a team with leases and no time is refused (fail closed).
 */
export function checkAuthorityChange(view: KernelView, change: AuthorityChange, now?: number): ChangeDecision {
  try {
    return decideChange(view, change, now);
  } catch (error) {
    return refuse(
      "kernel.fault",
      `the change could not be evaluated (${error instanceof Error ? error.message : "a non-error value was thrown"}); refused (fail closed)`,
    );
  }
}

/**
 * The seats as §5 counts them (§5: "checked on every authority change over standing plus
 * leased authority"): before the change, every live lease; after it, the leases its cascade
 * leaves, walked under the proposed policy.
 */
function holdingBeforeAndAfter(
  view: KernelView,
  after: Policy,
  revocations: readonly LeaseRevocation[],
  now: number | undefined,
): { before: Record<string, HoldingSeat>; after: Record<string, HoldingSeat> } | Refusal {
  if (leaseList(view.facts.leases).length === 0) return { before: { ...view.policy.seats }, after: { ...after.seats } };
  if (now === undefined)
    return refuse("request.malformed", "the team holds leases, and an authority change counts the live ones (§5): the decision needs its time");
  const revokedLeases = [...(view.facts.revokedLeases ?? []), ...revocations.map((r) => r.lease)];
  return {
    before: effectiveSeats(view, now),
    after: effectiveSeats({ policy: after, facts: { ...view.facts, revokedLeases } }, now),
  };
}

function decideChange(view: KernelView, change: AuthorityChange, now: number | undefined): ChangeDecision {
  const before = view.policy;
  const { after, principal } = change;
  const owner = principal.kind === "owner";
  const actor = principal.kind === "seat" ? ownValue(before.seats, principal.seat) : undefined;
  if (principal.kind === "seat" && actor === undefined)
    return refuse("table.principal", `seat ${principal.seat} is not in the policy in force, so it authorizes nothing`);
  const who = principal.kind === "owner" ? "the owner" : `seat ${principal.seat}`;

  const sovereign = sovereignChanges(before, after);
  if (sovereign.length > 0 && !owner) {
    return refuse(
      "table.owner-only",
      `the change touches ${sovereign.join(", ")}, which is owner-sovereign (§8): loosening or tightening, only the owner may change it — ${who} may not`,
    );
  }

  let agreement = false;
  if (change.kind === "add-seat") {
    const name = change.seat ?? "";
    if (ownValue(before.seats, name) !== undefined || ownValue(after.seats, name) === undefined)
      return refuse("request.malformed", `add-seat names seat '${name}', which must be new in the proposed policy`);
    const copy = sameCopy(before, after, name);
    if (!owner) {
      if (copy.same && holds(actor, "agree")) {
        const admin = copyHoldsAdmin(after.seats[name] as Seat);
        if (admin !== undefined) return admin;
        agreement = true;
      } else if (!holds(actor, "grant")) {
        if (holds(actor, "agree"))
          return refuse(
            "agree.not-same-copy",
            `seat ${name} is not a same copy: ${copy.same ? "" : copy.why}; adding it is a grant, and ${who} holds agree, not grant`,
          );
        return refuse(
          "table.principal",
          `adding a seat is authorized by the owner, a grant holder, or — for a same copy — an agree holder; ${who} holds neither`,
        );
      }
    }
  } else if (change.kind === "remove-seat") {
    const name = change.seat ?? "";
    const target = ownValue(before.seats, name);
    if (target === undefined || ownValue(after.seats, name) !== undefined)
      return refuse("request.malformed", `remove-seat names seat '${name}', which must be in force and absent from the proposed policy`);
    if (!owner) {
      const admin = target.admin ?? [];
      if (admin.length > 0) return refuse("table.principal", `seat ${name} holds ${admin.join(", ")} and is removed by the owner only`);
      if (!holds(actor, "leads")) return refuse("table.principal", `removing a seat is authorized by the owner or leads; ${who} is neither`);
    }
  } else if (!owner && !holds(actor, "grant")) {
    return refuse(
      "table.principal",
      `a team-file change other than a same copy is a grant: the owner or a grant holder authorizes it, and ${who} holds no grant`,
    );
  }

  if (change.coSigned !== undefined) {
    if (change.inputState === undefined)
      return refuse("twogranter.void", "a co-signed change is checked against the input state now, and the decision was given none (fail closed)");
    const void_ = checkTwoGranter(change.coSigned.proposal, change.inputState, change.coSigned.signatures);
    if (void_ !== undefined) return void_;
  }

  // §5 over the resulting authority, standing plus leased; the program in force after the change counts.
  const revocations = cascade(view, after);
  const holding = holdingBeforeAndAfter(view, after, revocations, now);
  if ("decision" in holding) return holding;
  const was = new Set(violations(before.constraints, holding.before, view.facts).map(key));
  const result = violations(after.constraints, holding.after, view.facts);
  const fresh = result.filter((v) => !was.has(key(v)));
  const breaking = fresh.find((v) => v.rule !== "constraint.minimum" || !owner);
  if (breaking !== undefined) {
    return refuse(
      breaking.rule,
      `${breaking.message}; the change would break it, so ${who}'s change is refused${breaking.rule === "constraint.minimum" ? " (the owner's own narrowing would commit and pause instead)" : ""}`,
    );
  }
  return { decision: "commit", paused: result.filter((v) => v.rule === "constraint.minimum"), agreement, revocations };
}
