import { type GranterSignature, checkGranters } from "./agreement.js";
import { type ChangeDecision, type AuthorityChange, checkAuthorityChange } from "./authority-change.js";
import type { Authority } from "./authority.js";
import { leaseBoundaryRefusal } from "./ceiling-deny.js";
import { type Refusal, refuse } from "./decision.js";
import { formatScope } from "./scope.js";
import type { Policy } from "./policy.js";
import { isPlainObject, ownValue } from "./records.js";
import type { KernelView } from "./view.js";
import { ADMINISTRATIVE_CAPABILITIES, capabilitySpec } from "./vocabulary.js";

/**
 * A delegate's change to the team (§9, §10): a grant holder grants or takes back one capability
 * of a seat, or adds a seat; an agree holder adds a same copy. One agreement is a whole file:
 * the daemon applies the change to the canonical policy in force (`applyDelegatedChange`, pure
 * data in, data out), loads the result with the same loader the owner's apply uses, and asks
 * `checkDelegatedChange` whether it commits — never a partial edit in place.
 *
 * What a delegate may not do, beyond the table of §9 (checkAuthorityChange): touch anything
 * owner-sovereign (§8), confer anything outside the ceiling or meeting the deny, give an
 * administrative capability (no agent holds grant, agree, create or leads unless the owner
 * writes it, §10), re-key a grant its change did not name (which would revoke that grant's
 * leases as a side effect), or — for a capability behind two-granter — change it alone.
 */
export type DelegatedChange =
  | { readonly kind: "grant"; readonly seat: string; readonly capability: string; readonly scope: unknown; readonly name?: string }
  | { readonly kind: "ungrant"; readonly seat: string; readonly capability: string; readonly name?: string }
  | { readonly kind: "add-seat"; readonly seat: string; readonly like: string; readonly roles?: readonly string[] }
  /** §9: leads (or the owner) removes a seat; one holding grant, agree or leads is the owner's to remove. */
  | { readonly kind: "remove-seat"; readonly seat: string };

/** The change in words, for records, notices and the proposal view. */
export function describeChange(change: DelegatedChange): string {
  switch (change.kind) {
    case "grant":
      return `grant ${change.seat} ${change.capability}${change.name !== undefined ? ` (name ${change.name})` : ""} ${scopeWords(change.scope)}`;
    case "ungrant":
      return `take back ${change.seat}'s ${change.capability}${change.name !== undefined ? ` (name ${change.name})` : ""}`;
    case "add-seat":
      return `add seat ${change.seat} like ${change.like}${(change.roles ?? []).length > 0 ? ` with role ${(change.roles ?? []).join(", ")}` : ""}`;
    case "remove-seat":
      return `remove seat ${change.seat}`;
  }
}

function scopeWords(scope: unknown): string {
  if (!isPlainObject(scope)) return "unconstrained";
  const parts = Object.entries(scope).map(([d, v]) => `${d}: ${Array.isArray(v) ? v.join(", ") : String(v)}`);
  return parts.length === 0 ? "unconstrained" : parts.join("; ");
}

/** C0 and C1 controls, and the bidirectional-text marks and overrides a reader's display obeys. */
const UNSHOWABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

function stringsIn(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (isPlainObject(value)) return Object.entries(value).flatMap(([k, v]) => [k, ...stringsIn(v)]);
  return [];
}

/** A copy never carries these (§10); they are written by the owner on one seat. */
const NEVER_COPIED: readonly string[] = ADMINISTRATIVE_CAPABILITIES;

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

type SeatData = Record<string, unknown> & { capabilities?: Record<string, unknown>; roles?: unknown };

function seatData(data: Record<string, unknown>, name: string): SeatData | undefined {
  const seats = data.seats;
  if (!isPlainObject(seats)) return undefined;
  const seat = ownValue(seats as Record<string, unknown>, name);
  return isPlainObject(seat) ? (seat as SeatData) : undefined;
}

function scopesOf(value: unknown): unknown[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? [...(value as unknown[])] : [value];
}

function nameOf(scope: unknown): string | undefined {
  return isPlainObject(scope) && typeof scope.name === "string" ? scope.name : undefined;
}

/**
 * The policy in force (its canonical data) with one delegated change applied: a new whole file.
 * A refusal names what in the change does not fit the file (an unknown seat, an ambiguous grant).
 */
export function applyDelegatedChange(inForce: unknown, change: DelegatedChange): { readonly data: unknown } | Refusal {
  if (!isPlainObject(inForce) || !isPlainObject(inForce.seats)) return refuse("request.malformed", "the policy in force has no seats to change");
  const data = clone(inForce) as Record<string, unknown>;
  const seats = data.seats as Record<string, unknown>;
  if (change.kind === "add-seat") {
    if (ownValue(seats, change.seat) !== undefined) return refuse("request.malformed", `seat ${change.seat} already exists; a new seat needs a new name`);
    const source = seatData(data, change.like);
    if (source === undefined) return refuse("seat.unknown", `seat '${change.like}' is not in the policy in force; a new seat is added like an existing one`);
    const copy = clone(source);
    // Never copied (§10): the administrative capabilities stay with the seat the owner wrote them on.
    const capabilities = isPlainObject(copy.capabilities) ? { ...copy.capabilities } : {};
    for (const admin of NEVER_COPIED) delete capabilities[admin];
    copy.capabilities = capabilities;
    const roles = Array.isArray(copy.roles) ? (copy.roles as unknown[]).map(String) : [];
    for (const role of change.roles ?? []) if (!roles.includes(role)) roles.push(role);
    copy.roles = roles;
    seats[change.seat] = copy;
    return { data };
  }
  if (change.kind === "remove-seat") {
    if (ownValue(seats, change.seat) === undefined) return refuse("seat.unknown", `seat '${change.seat}' is not in the policy in force`);
    const leads = isPlainObject(data.leads) ? data.leads.seat : data.leads;
    if (leads === change.seat) return refuse("table.principal", `seat ${change.seat} is leads, and is removed by the owner only (§9)`);
    delete seats[change.seat];
    return { data };
  }
  const seat = seatData(data, change.seat);
  if (seat === undefined) return refuse("seat.unknown", `seat '${change.seat}' is not in the policy in force`);
  const capabilities = isPlainObject(seat.capabilities) ? { ...seat.capabilities } : {};
  const held = scopesOf(ownValue(capabilities, change.capability));
  if (change.kind === "grant") {
    // What a delegate writes is shown to the owner and to a confirmer: no control or bidi character in it (§11).
    if ([...stringsIn(change.scope), change.name ?? ""].some((text) => UNSHOWABLE.test(text)))
      return refuse("request.malformed", "a grant's scope and name hold no control or bidirectional-text character");
    const scope = isPlainObject(change.scope) ? { ...change.scope } : change.scope === undefined || change.scope === "*" ? {} : change.scope;
    if (change.name !== undefined) {
      if (!isPlainObject(scope)) return refuse("request.malformed", "a named grant's scope is a map of dimensions");
      if (held.some((s) => nameOf(s) === change.name))
        return refuse("request.malformed", `${change.seat} already holds a ${change.capability} grant named ${change.name}`);
      (scope as Record<string, unknown>).name = change.name;
    }
    capabilities[change.capability] = held.length === 0 ? scope : [...held, scope];
  } else {
    if (held.length === 0) return refuse("grant.absent", `${change.seat} holds no direct ${change.capability} grant to take back`);
    const keep = change.name !== undefined ? held.filter((s) => nameOf(s) !== change.name) : held.length === 1 ? [] : undefined;
    if (keep === undefined)
      return refuse("grant.absent", `${change.seat} holds ${held.length} ${change.capability} grants: name the one to take back (--name)`);
    if (keep.length === held.length) return refuse("grant.absent", `${change.seat} holds no ${change.capability} grant named ${change.name ?? ""}`);
    if (keep.length === 0) delete capabilities[change.capability];
    else capabilities[change.capability] = keep.length === 1 ? keep[0] : keep;
  }
  seats[change.seat] = { ...seat, capabilities };
  return { data };
}

export interface DelegatedRequest {
  /** The seat asking: the socket the request came on (never a field). */
  readonly principal: string;
  readonly change: DelegatedChange;
  /** The policy the change would put in force: `applyDelegatedChange`'s data, loaded by the owner's loader. */
  readonly after: Policy;
  /**
   * The input state now (§15: the policy in force and the lease set, hashed by the daemon from
   * the ledger at the decision): what a two-granter confirmation must have been made over.
   */
  readonly inputState: string;
  /** The canonical proposal's hash (the daemon's, over the team, the change and the input state it was made at). */
  readonly proposal: string;
  /** For a change behind two-granter: the two confirmations (the asker's first). */
  readonly confirmations?: readonly GranterSignature[];
}

/** A delegated change that needs a second granter before it can commit (§10). */
export interface NeedsSecond {
  readonly decision: "propose";
  readonly capabilities: readonly string[];
  readonly reason: string;
}

/** An authority by what it reaches (capability and scope), not its id: a grant re-keyed by the change confers nothing new. */
function key(a: Authority, dims: readonly string[]): string {
  return `${a.capability} ${formatScope(a.scope, dims as never)}`;
}

/**
 * What the change confers that was not held before: new authorities, by capability and scope. A
 * new seat is compared with the seat it copies — what the owner wrote for that one is not conferred again.
 */
function conferred(view: KernelView, after: Policy, change: DelegatedChange): Authority[] {
  const out: Authority[] = [];
  for (const seat of Object.values(after.seats)) {
    const was =
      ownValue(view.policy.seats, seat.name) ??
      (change.kind === "add-seat" && seat.name === change.seat ? ownValue(view.policy.seats, change.like) : undefined);
    for (const a of seat.authorities) {
      const dims = capabilitySpec(after.vocabulary, a.capability)?.dimensions ?? [];
      const before = was?.authorities.some((b) => key(b, dims) === key(a, dims)) ?? false;
      if (!before) out.push(a);
    }
  }
  return out;
}

function adminGiven(view: KernelView, after: Policy): string | undefined {
  for (const seat of Object.values(after.seats)) {
    const was = ownValue(view.policy.seats, seat.name)?.admin ?? [];
    const gained = (seat.admin ?? []).filter((a) => !was.includes(a));
    if (gained.length > 0) return `${seat.name} would hold ${gained.join(", ")}`;
  }
  return undefined;
}

/**
 * An administrative capability the change would take from a seat. The owner writes grant and
 * agree on a seat (§10) and removes a seat holding one (§9); a delegate taking one back would
 * unseat a second owner (or the other lab's second granter) without the owner.
 */
function adminTaken(view: KernelView, after: Policy): string | undefined {
  for (const seat of Object.values(view.policy.seats)) {
    const now = ownValue(after.seats, seat.name)?.admin ?? [];
    const lost = (seat.admin ?? []).filter((a) => !now.includes(a));
    if (lost.length > 0) return `${seat.name} would lose ${lost.join(", ")}`;
  }
  return undefined;
}

/**
 * Decide a delegate's change: the table of §9 and §5 over standing plus leased authority
 * (checkAuthorityChange), and the bounds a second owner works within (§8, §10). Pure and total.
 */
export function checkDelegatedChange(view: KernelView, request: DelegatedRequest, now: number): ChangeDecision | NeedsSecond {
  try {
    return decide(view, request, now);
  } catch (error) {
    return refuse(
      "kernel.fault",
      `the change could not be evaluated (${error instanceof Error ? error.message : "a non-error value was thrown"}); refused (fail closed)`,
    );
  }
}

function decide(view: KernelView, request: DelegatedRequest, now: number): ChangeDecision | NeedsSecond {
  const { change, after } = request;
  const who = `seat ${request.principal}`;
  if (change.kind === "grant" && (ADMINISTRATIVE_CAPABILITIES as readonly string[]).includes(change.capability))
    return refuse(
      "grant.administrative",
      `${change.capability} is administrative: no agent holds grant, agree, create or leads unless the owner writes it (§10), so ${who} may not give it`,
    );
  const admin = adminGiven(view, after);
  if (admin !== undefined) return refuse("grant.administrative", `${admin}; only the owner gives an administrative capability (§10)`);
  // A removal is the table's (§9: a seat holding grant, agree or leads is removed by the owner only, table.principal).
  const taken = change.kind === "remove-seat" ? undefined : adminTaken(view, after);
  if (taken !== undefined) return refuse("grant.administrative", `${taken}; only the owner takes back an administrative capability it wrote (§9, §10)`);

  const kind: AuthorityChange["kind"] = change.kind === "add-seat" ? "add-seat" : change.kind === "remove-seat" ? "remove-seat" : "edit";
  const principal = { kind: "seat" as const, seat: request.principal };
  // Everything it confers sits inside the ceiling and meets no deny (§8: a second owner grants within them).
  const universe = { declared: after.declared };
  const given = conferred(view, after, change);
  for (const a of given) {
    const dims = capabilitySpec(after.vocabulary, a.capability)?.dimensions ?? [];
    const boundary = leaseBoundaryRefusal(after, a.capability, dims, a.scope, universe, `${who}'s grant ${a.id}`);
    if (boundary !== undefined) return boundary;
  }
  // The table of §9 first (agree or grant), so a same copy is known before two-granter is asked.
  const table = checkAuthorityChange(
    view,
    { kind, principal, ...(change.kind === "add-seat" || change.kind === "remove-seat" ? { seat: change.seat } : {}), after, inputState: request.inputState },
    now,
  );
  if (table.decision === "refuse") return table;
  // A new seat that is not an agreed same copy is a grant of everything it holds (§9: "add any
  // other seat — a grant, two-granter where the owner set it"), the copied authorities included.
  // A same copy too (§10: "two can be asked to agree"): a copy of a two-granter holder is agreed by two, the second an agree or grant holder.
  const added = change.kind === "add-seat" ? (ownValue(after.seats, change.seat)?.authorities ?? []) : [];
  const behind = [...new Set([...given, ...added].map((a) => a.capability).filter((c) => (view.policy.twoGranter ?? []).includes(c)))];
  if (behind.length > 0) {
    if (request.confirmations === undefined || request.confirmations.length < 2)
      return {
        decision: "propose",
        capabilities: behind,
        reason: `${behind.join(", ")} is behind two-granter agreement (§10): a second granter (a grant holder${view.policy.twoGranterLabs === "distinct" ? " of another lab" : ""}, never leads) confirms this proposal before it commits`,
      };
    const void_ = checkGranters(
      view,
      request.principal,
      request.proposal,
      request.inputState,
      request.confirmations,
      table.agreement ? ["agree", "grant"] : ["grant"],
    );
    if (void_ !== undefined) return void_;
  }
  // A grant re-keys nothing it did not name: its cascade would revoke another grant's leases.
  if ((change.kind === "grant" || change.kind === "add-seat") && table.revocations.length > 0)
    return refuse(
      "grant.rekeys",
      `the change would re-key an existing grant (going from one grant of a capability to several re-keys an unnamed one, §7) and so revoke ${table.revocations.length} lease(s) rooted in it (${table.revocations.map((r) => r.lease).join(", ")}); the owner names that grant (name:) in the team file first, or the leases end before this grant`,
    );
  return table;
}
