import { candidateAuthorities } from "./authorities.js";
import { type CanonicalEffect, coverByOne } from "./coverage.js";
import { type Refusal, refuse } from "./decision.js";
import type { AuthorFact, GateRecordFact, OutcomeFact } from "./facts.js";
import { ownValue } from "./records.js";
import { checkAuthorInequality } from "./separation.js";
import type { KernelView } from "./view.js";

/**
 * §15: a merge consumes a successful gate decision, and a deploy ships under one. The
 * successful decision is exactly one object — a gate record of result pass whose effect id
 * equals the act's — and it is re-validated at act time:
 *
 * - an obsolete pass (another effect id: a smaller footprint, another base, one more
 *   commit), a refusal record and an intent alone never qualify;
 * - a refused or unknown outcome carrying the effect id voids every pass for it decided before
 *   it was on record — so a failed deploy voids the artifact's pass in every environment (the
 *   effect id has none), and a pass recorded after it (a re-gate) is valid (§3);
 * - the gater must still hold the gate authority it signed under (not revoked; for a merge,
 *   still covering the merge's paths and ref) and still satisfy §5 (not an author; the lab
 *   predicate in cross-lab mode);
 * - a merge takes a pass no merge consumed before (facts.consumed); a deploy may ship under a
 *   pass a merge consumed ("or the merge that consumed one").
 *
 * Voiding is monotone: adding records (outcomes, revocations, consumptions) only ever turns
 * an allow into a refusal, never the reverse (test/kernel/gate-pass.property.test.ts).
 */

/** The outcome that voids this pass, if any: a refused or unknown one on record at or after its decision (or either unplaced). */
function voidingOutcome(view: KernelView, pass: GateRecordFact): OutcomeFact | undefined {
  return (view.facts.outcomes ?? []).find(
    (o) =>
      o.effectId === pass.effectId && (o.result === "refused" || o.result === "unknown") && (o.at === undefined || pass.at === undefined || pass.at <= o.at),
  );
}
export interface PassChoice {
  readonly pass: GateRecordFact;
}

/** Why this gate record cannot serve now, or undefined when its gater is still good. */
function gaterProblem(
  view: KernelView,
  record: GateRecordFact,
  authors: readonly AuthorFact[] | undefined,
  effect: CanonicalEffect | undefined,
): string | undefined {
  const seat = ownValue(view.policy.seats, record.signer);
  if (seat === undefined) return `its gater ${record.signer} is not a seat of the policy in force`;
  const live = candidateAuthorities(view, seat, "gate");
  const used = live.find((a) => a.id === record.authority);
  if (used === undefined)
    return `its gater ${record.signer} no longer holds the gate authority ${record.authority} it signed under (revoked, or the policy changed)`;
  if (effect !== undefined && "decision" in coverByOne("gate", ["path", "branch"], [used], effect, { declared: view.policy.declared })) {
    return `the gate authority ${record.authority} of ${record.signer} no longer covers this effect`;
  }
  if (authors !== undefined) {
    const sod = checkAuthorInequality(view, authors, seat, "gate", true);
    if (sod !== undefined) return `its gater no longer satisfies §5: ${sod.reason}`;
  }
  return undefined;
}

/**
 * The pass a merge (exclusive) or a deploy (shared) rests on, or the refusal naming why none
 * qualifies. `effect` is the act's canonical effect when its paths and ref are known (merge),
 * and `authors` the change's author set when it is established.
 */
export function choosePass(
  view: KernelView,
  effectId: string,
  act: "merge" | "deploy",
  authors: readonly AuthorFact[] | undefined,
  effect: CanonicalEffect | undefined,
): PassChoice | Refusal {
  const gates = view.facts.gates ?? [];
  const passes = gates.filter((g) => g.effectId === effectId && g.result === "pass");
  if (passes.length === 0) {
    const notes: string[] = [];
    const obsolete = gates.filter((g) => g.result === "pass" && g.effectId !== effectId).length;
    if (obsolete > 0) notes.push(`${obsolete} pass(es) for other effect ids are obsolete: a pass blesses exactly the effect it gated`);
    if (gates.some((g) => g.effectId === effectId && g.result === "refuse")) notes.push("the gate record for this effect id is a refusal");
    if ((view.facts.intents ?? []).some((i) => i.effectId === effectId && i.act === "gate")) notes.push("an intent to gate is not a gate decision");
    return refuse(
      "pass.missing",
      `the ${act} needs a gate record of result pass for effect ${effectId}, and there is none${notes.length > 0 ? ` (${notes.join("; ")})` : ""}; gate this exact change first`,
    );
  }
  const standing = passes.filter((p) => voidingOutcome(view, p) === undefined);
  if (standing.length === 0) {
    const voiding = voidingOutcome(view, passes[passes.length - 1] as GateRecordFact) as OutcomeFact;
    const where = voiding.env !== undefined ? ` (in ${voiding.env}; the effect id carries no environment, so the pass is void in every environment)` : "";
    return refuse(
      "pass.voided",
      `a ${voiding.result} outcome of a ${voiding.act} for effect ${effectId}${where} voids every pass for it recorded before it; re-gate the change`,
    );
  }
  const problems: string[] = [];
  const valid: GateRecordFact[] = [];
  for (const p of standing) {
    const why = gaterProblem(view, p, authors, effect);
    if (why === undefined) valid.push(p);
    else problems.push(`pass ${p.id}: ${why}`);
  }
  if (valid.length === 0) return refuse("pass.gater-invalid", `no pass for effect ${effectId} is still valid: ${problems.join("; ")}`);
  if (act === "deploy") return { pass: valid[0] as GateRecordFact };
  const consumed = view.facts.consumed ?? [];
  const free = valid.find((p) => !consumed.includes(p.id));
  if (free === undefined)
    return refuse(
      "pass.consumed",
      `every valid pass for effect ${effectId} (${valid.map((p) => p.id).join(", ")}) has already been consumed by a merge; a pass is consumed once`,
    );
  return { pass: free };
}
