import { type Refusal, refuse } from "./decision.js";
import type { Policy, Seat } from "./policy.js";
import { ownValue } from "./records.js";
import type { KernelView } from "./view.js";

/**
 * §10 agreement, the pure part. agree permits one thing: adding a seat that is a same copy of
 * one the team has — identical by hash (not by a text compare) of its start files, its
 * resolved role content, its resolved capability set and the rest of its execution context
 * (lab, working root, environment bindings: all inside the context hash). The copy holds no
 * agree, grant, create or leads (and no live lease: leases arrive with issue 6). Anything else
 * is a grant.
 *
 * Two-granter: both granters sign the same canonical proposal, keyed to its exact input state
 * (§15); a change to that state voids both approvals. Hashes arrive as data.
 */
export type SameCopy = { readonly same: true; readonly of: string } | { readonly same: false; readonly why: string };

function roleHashes(policy: Policy, seat: Seat): string {
  return seat.roles.map((r) => `${r}=${Object.prototype.hasOwnProperty.call(policy.roles, r) ? policy.roles[r]?.hash : "?"}`).join(",");
}

/** Why `copy` (in `after`) differs from `source` (in `before`), or undefined when it is the same copy. */
function difference(before: Policy, source: Seat, after: Policy, copy: Seat): string | undefined {
  if (source.contextHash === undefined || copy.contextHash === undefined) return "a seat without a pinned start has no execution context to compare";
  if (copy.contextHash !== source.contextHash)
    return `its execution context differs from ${source.name}'s (lab, command, working root, environment bindings or a start file's content)`;
  if (copy.capabilitiesHash !== source.capabilitiesHash) return `its resolved capability set differs from ${source.name}'s`;
  if (roleHashes(after, copy) !== roleHashes(before, source)) return `its resolved role content differs from ${source.name}'s`;
  return undefined;
}

/** Whether the new seat is a same copy of some seat the team already has (§10). */
export function sameCopy(before: Policy, after: Policy, seatName: string): SameCopy {
  const copy = Object.prototype.hasOwnProperty.call(after.seats, seatName) ? after.seats[seatName] : undefined;
  if (copy === undefined) return { same: false, why: `seat ${seatName} is not in the proposed policy` };
  const reasons: string[] = [];
  for (const source of Object.values(before.seats)) {
    const why = difference(before, source, after, copy);
    if (why === undefined) return { same: true, of: source.name };
    reasons.push(why);
  }
  return { same: false, why: reasons.length === 0 ? "the team has no seat to copy" : (reasons.find((r) => r.startsWith("its execution")) ?? reasons[0] ?? "") };
}

/** A copy never carries the administrative capabilities (§10). */
export function copyHoldsAdmin(seat: Seat): Refusal | undefined {
  const held = seat.admin ?? [];
  if (held.length === 0) return undefined;
  return refuse(
    "agree.copy-holds-admin",
    `the copy ${seat.name} would hold ${held.join(", ")}; a same copy holds no agree, grant, create or leads, and those are never copied`,
  );
}

/** One granter's signature over a canonical proposal, as the ledger keeps it. */
export interface GranterSignature {
  readonly signer: string;
  /** Hash of the canonical proposal this signer signed. */
  readonly proposal: string;
  /** The exact input state it was keyed to (tree, team-file and lease-set hashes, §15). */
  readonly inputState: string;
}

/**
 * A two-granter approval: two distinct signers, the same proposal, the same input state, and
 * that state still the current one. Anything else is void (re-propose).
 */
export function checkTwoGranter(proposal: string, currentInputState: string, signatures: readonly GranterSignature[]): Refusal | undefined {
  const [a, b] = signatures;
  if (signatures.length !== 2 || a === undefined || b === undefined)
    return refuse("twogranter.void", `a two-granter change needs exactly two signatures over one proposal, and has ${signatures.length}`);
  if (a.signer === b.signer) return refuse("twogranter.void", `both signatures are by ${a.signer}; two granters are two principals`);
  for (const s of signatures) {
    if (s.proposal !== proposal) return refuse("twogranter.void", `${s.signer} signed another proposal (${s.proposal}), not ${proposal}`);
    if (s.inputState !== currentInputState) {
      return refuse(
        "twogranter.void",
        `${s.signer} signed over input state ${s.inputState}, and the state is now ${currentInputState}; a changed input state voids both approvals — re-propose`,
      );
    }
  }
  return undefined;
}

/**
 * Two granters over one proposal and the current input state (§10), each one with standing: the
 * owner, or a seat holding grant that is not leads (§9: leads has no grant power); distinct, and
 * from different labs where the owner said so. The asker is the first.
 */
export function checkGranters(
  view: KernelView,
  asker: string,
  proposal: string,
  inputState: string,
  signatures: readonly GranterSignature[],
  /** What gives standing: grant (a grant), or — for a same-copy agreement, §10 "two can be asked to agree" — agree or grant. */
  standing: readonly ("grant" | "agree")[] = ["grant"],
): Refusal | undefined {
  const [first, second] = signatures;
  if (signatures.length !== 2 || first === undefined || second === undefined)
    return refuse("twogranter.void", `a two-granter change needs exactly two confirmations, and has ${signatures.length}`);
  if (first.signer !== asker) return refuse("twogranter.void", `the asker ${asker} is one of the two granters, and the first`);
  if (first.signer === second.signer) return refuse("twogranter.void", `both confirmations are by ${first.signer}; two granters are two principals`);
  return (
    granterStanding(view, first.signer, standing) ??
    secondGranter(view, first.signer, second.signer, standing) ??
    checkTwoGranter(proposal, inputState, signatures)
  );
}

/**
 * The second granter beside `first` (a change's asker, or a lease's issuer — whose authority is
 * its source): the owner or a grant holder that is not leads, and of another lab than the first
 * where the owner requires it (§10).
 */
export function secondGranter(view: KernelView, first: string, second: string, accepts: readonly ("grant" | "agree")[] = ["grant"]): Refusal | undefined {
  const standing = granterStanding(view, second, accepts);
  if (standing !== undefined) return standing;
  if (view.policy.twoGranterLabs !== "distinct" || first === "owner" || second === "owner") return undefined;
  const a = ownValue(view.policy.seats, first)?.lab;
  const b = ownValue(view.policy.seats, second)?.lab;
  if (a !== undefined && b !== undefined && a !== b) return undefined;
  return refuse(
    "twogranter.labs",
    `the owner requires the two granters from different labs, and ${first} (${a ?? "no lab"}) and ${second} (${b ?? "no lab"}) are not`,
  );
}

function granterStanding(view: KernelView, signer: string, accepts: readonly ("grant" | "agree")[] = ["grant"]): Refusal | undefined {
  if (signer === "owner") return undefined;
  if (view.policy.leads?.seat === signer) return refuse("twogranter.standing", `${signer} is leads, and leads has no grant power (§9): it is never a granter`);
  const seat = ownValue(view.policy.seats, signer);
  if (seat === undefined) return refuse("twogranter.standing", `${signer} is not in the policy in force`);
  if (!accepts.some((a) => (seat.admin ?? []).includes(a)))
    return refuse("twogranter.standing", `${signer} holds no ${accepts.join(" or ")}: a granter is the owner or a ${accepts.join(" or ")} holder`);
  return undefined;
}
