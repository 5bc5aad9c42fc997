import type { Authority } from "./authority.js";
import { refuse } from "./decision.js";
import type { LeaseFact } from "./facts.js";
import { type Expiry, type Liveness, expiredReason, faulted, leaseList, revokedSet, walkLeaseReference, walkLink, withShadow } from "./lease-walk.js";
import { ownValue } from "./records.js";
import type { KernelView } from "./view.js";
import type { OperationalCapability } from "./vocabulary.js";

export { type Liveness, ENVELOPE_PREFIX, chainSeats, heldSource, leaseAuthority, leaseList, leasesHeldBy } from "./lease-walk.js";

/**
 * Lease liveness at use time (§7), answered from memoized verdicts rather than a walk per
 * decision. The walk (lease-walk.ts) reads the clock at one kind of check only, each link's
 * expiry; every other check is a function of the policy and the ledger's facts alone. So each
 * lease's chain is walked once per (policy, facts) with the expiry checks left out and
 * recorded in the order the walk makes them — the clock-independent verdict — and the answer
 * at a time `now` is the first recorded expiry check `now` fails (the lease's own first, then
 * its ancestors' up the chain), else that verdict. Same rule, same reason, as the walk.
 *
 * The memo is keyed on the frozen inputs themselves — the leases record, the policy, the
 * revoked-lease ids and the revoked-authority ids — through WeakMaps: a memo is a function of
 * its key, which never changes, and holds nothing alive; no clock, no I/O, the same answer
 * for the same input. A view whose inputs are not frozen gets a memo for the one call.
 * Chains the memo does not hold (a cycle, more than 64 links: never live) are walked afresh.
 */
interface Verdict {
  /** The walk with the expiry checks left out. */
  readonly fixed: Liveness;
  /** The expiry checks the walk makes before `fixed`'s own failure: this lease's, then up the chain. */
  readonly expiries: readonly Expiry[];
  /** The earliest of them: before it, `fixed` is the answer. */
  readonly liveUntil: number;
}

/** One holder's leases of one capability, in the ledger's order, and its live set over a span of time. */
interface Held {
  readonly leases: LeaseFact[];
  /** The verdicts of `leases`, index for index, once read. */
  verdicts?: readonly (Verdict | undefined)[];
  /** The live set over [from, until): the live leases' authorities, and which leases are dead. */
  live?: { readonly from: number; readonly until: number; readonly authorities: readonly Authority[]; readonly dead: readonly number[] };
}

interface Store {
  readonly view: KernelView;
  /** undefined: an irregular chain (a cycle, more than 64 links), walked afresh at each use. */
  readonly verdicts: Map<string, Verdict | undefined>;
  held: Map<string, Map<string, Held>> | undefined;
  /** The store made before this one for the same policy: its verdicts carry over where provably unchanged. */
  previous: Store | undefined;
}

const ABSENT: object = Object.freeze({});
type Level<T> = WeakMap<object, T>;
// eslint-disable-next-line teamd/module-state -- a memo keyed by the frozen leases, policy and revocations (frozenInputs checks them before a store is kept): verdicts follow from those keys alone; hot on every leased decision
const stores: Level<Level<Level<Level<Store>>>> = new WeakMap();
/** By policy, the store made last for it (one per policy; the one before it is let go). */
// eslint-disable-next-line teamd/module-state -- by frozen policy, the store made last for it: lets verdicts carry over where provably unchanged, never across policies; hot as above
const latest: Level<Store> = new WeakMap();

function level<T>(map: Level<T>, key: object, make: () => T): T {
  let hit = map.get(key);
  if (hit === undefined) map.set(key, (hit = make()));
  return hit;
}

function frozenInputs(view: KernelView): boolean {
  const { leases, revokedLeases, revoked } = view.facts;
  if (!Object.isFrozen(view.policy)) return false;
  if (revokedLeases !== undefined && !Object.isFrozen(revokedLeases)) return false;
  if (revoked !== undefined && !Object.isFrozen(revoked)) return false;
  if (leases === undefined) return true;
  if (!Object.isFrozen(leases)) return false;
  for (const lease of leaseList(leases)) if (!Object.isFrozen(lease) || !Object.isFrozen(lease.scope)) return false;
  return true;
}

function storeOf(view: KernelView): Store {
  const { leases, revokedLeases, revoked } = view.facts;
  const make = (): Store => ({
    view: { policy: view.policy, facts: { leases, revokedLeases, revoked } },
    verdicts: new Map(),
    held: undefined,
    previous: undefined,
  });
  const byLeases = stores.get(leases ?? ABSENT);
  const known = byLeases
    ?.get(view.policy)
    ?.get(revokedLeases ?? ABSENT)
    ?.get(revoked ?? ABSENT);
  if (known !== undefined) return known;
  // Checked once per new key: the leases record and every lease in it frozen, so the memo cannot go stale.
  if (!frozenInputs(view)) return make();
  const byPolicy = level(stores, leases ?? ABSENT, () => new WeakMap());
  const byRevokedLeases = level(byPolicy, view.policy, () => new WeakMap());
  const byRevoked = level(byRevokedLeases, revokedLeases ?? ABSENT, () => new WeakMap());
  return level(byRevoked, revoked ?? ABSENT, () => {
    const made = make();
    const prior = latest.get(view.policy);
    if (prior !== undefined && prior.view.facts.revoked === revoked) {
      made.previous = prior;
      prior.previous = undefined;
    }
    latest.set(view.policy, made);
    return made;
  });
}

function revokedIn(store: Store, id: string): boolean {
  const revokedLeases = store.view.facts.revokedLeases;
  return revokedLeases !== undefined && revokedSet(revokedLeases).has(id);
}

/**
 * A verdict of the previous store (same policy, same revoked authorities) that holds here
 * unchanged, or undefined: the walk reads of the facts only the chain's lease records and
 * whether each is revoked, so a verdict carries over when this lease is the same record,
 * revoked here exactly when it was there, and its parent's verdict carried over too. After a
 * lease issues or is revoked, the team's other chains are not walked again.
 */
function carried(store: Store, id: string): Verdict | undefined {
  const prior = store.previous;
  const old = prior?.verdicts.get(id);
  if (prior === undefined || old === undefined) return undefined;
  const lease = ownValue(store.view.facts.leases ?? {}, id);
  if (lease !== ownValue(prior.view.facts.leases ?? {}, id) || revokedIn(store, id) !== revokedIn(prior, id)) return undefined;
  if (lease?.parent !== undefined) {
    const before = prior.verdicts.get(lease.parent);
    // A regular verdict's parent was read to make it; a chain here is regular where it was (the same records).
    if (before === undefined || verdictOf(store, lease.parent) !== before) return undefined;
  }
  return old;
}

/** Whether the chain ends (at a root or a missing parent) within the walk's 65 links. */
function regular(store: Store, id: string): boolean {
  const leases = store.view.facts.leases;
  if (leases === undefined) return true;
  let link = ownValue(leases, id);
  for (let links = 0; link !== undefined; links++) {
    if (links >= 65) return false;
    link = link.parent === undefined ? undefined : ownValue(leases, link.parent);
  }
  return true;
}

function verdictOf(store: Store, id: string): Verdict | undefined {
  if (store.verdicts.has(id)) return store.verdicts.get(id);
  let verdict = carried(store, id);
  if (verdict === undefined && regular(store, id)) {
    // Every ancestor of a regular chain is regular, so the parent's verdict is always there.
    const walked = walkLink(store.view, id, undefined, 0, (parent) => {
      const v = verdictOf(store, parent) as Verdict;
      return { liveness: v.fixed, expiries: v.expiries };
    });
    let liveUntil = Infinity;
    for (const e of walked.expiries) if (e.expiresAt < liveUntil) liveUntil = e.expiresAt;
    const fixed = walked.liveness;
    if (fixed.live) Object.freeze(fixed.chain);
    else Object.freeze(fixed.refusal);
    verdict = Object.freeze({ fixed: Object.freeze(fixed), expiries: Object.freeze(walked.expiries), liveUntil });
  }
  store.verdicts.set(id, verdict);
  return verdict;
}

/** The verdict at `now`: the first expiry check it fails, in the walk's order, else the fixed verdict. */
function answer(store: Store, id: string, verdict: Verdict | undefined, now: number): Liveness {
  if (verdict === undefined) return walkLeaseReference(store.view, id, now);
  if (!(now >= verdict.liveUntil)) return verdict.fixed;
  const { expiries } = verdict;
  for (let j = 0; j < expiries.length; j++) {
    const e = expiries[j] as Expiry;
    if (!(now >= e.expiresAt)) continue;
    let reason = expiredReason(e, now);
    for (let i = j - 1; i >= 0; i--) reason = `lease ${(expiries[i] as Expiry).id}'s ancestor ${(expiries[i + 1] as Expiry).id} is not live: ${reason}`;
    const { lease, authority } = verdict.fixed;
    return {
      live: false,
      ...(lease !== undefined ? { lease } : {}),
      ...(authority !== undefined ? { authority } : {}),
      refusal: refuse("lease.expired", reason),
    };
  }
  return verdict.fixed;
}

/** The chain walk without the ceiling/deny shadow, at `now`. */
export function walkLease(view: KernelView, id: string, now: number): Liveness {
  const store = storeOf(view);
  return answer(store, id, verdictOf(store, id), now);
}

/** Whether one lease is live now, with the ceiling and deny shadow (§7, §8). Pure and total. */
export function leaseLiveness(view: KernelView, leaseId: string, now: number): Liveness {
  try {
    return withShadow(view, walkLease(view, leaseId, now));
  } catch (error) {
    return faulted(leaseId, error);
  }
}

function heldBy(store: Store, seat: string, capability: string): Held | undefined {
  if (store.held === undefined) {
    const held = new Map<string, Map<string, Held>>();
    for (const lease of leaseList(store.view.facts.leases)) {
      let byCapability = held.get(lease.holder);
      if (byCapability === undefined) held.set(lease.holder, (byCapability = new Map()));
      const entry = byCapability.get(lease.capability);
      if (entry === undefined) byCapability.set(lease.capability, { leases: [lease] });
      else entry.leases.push(lease);
    }
    store.held = held;
  }
  return store.held.get(seat)?.get(capability);
}

/** The seat's live set for the capability at `now`: kept with the span of time over which it holds. */
function liveSet(store: Store, held: Held, now: number): NonNullable<Held["live"]> {
  const cached = held.live;
  if (cached !== undefined && now >= cached.from && now < cached.until) return cached;
  const verdicts = (held.verdicts ??= held.leases.map((lease) => verdictOf(store, lease.id)));
  let from = -Infinity;
  let until = Infinity;
  const authorities: Authority[] = [];
  const dead: number[] = [];
  verdicts.forEach((v, i) => {
    // A chain dead without the clock, or irregular, is dead at every time.
    if (v === undefined || !v.fixed.live) dead.push(i);
    else if (!(now >= v.liveUntil)) {
      authorities.push(v.fixed.authority);
      if (v.liveUntil < until) until = v.liveUntil;
    } else {
      dead.push(i);
      if (v.liveUntil > from) from = v.liveUntil;
    }
  });
  return (held.live = { from, until, authorities: Object.freeze(authorities), dead });
}

/**
 * The authorities of the leases a seat holds for one capability that are live at `now`, in
 * the ledger's order. The set changes only when `now` passes a live chain's earliest expiry,
 * so it is kept with the span of time over which it holds.
 */
export function liveLeases(view: KernelView, seat: string, capability: OperationalCapability, now: number): readonly Authority[] {
  const store = storeOf(view);
  const held = heldBy(store, seat, capability);
  return held === undefined ? [] : liveSet(store, held, now).authorities;
}

/** The leases a seat holds for one capability that are dead at `now`, with why, in the ledger's order. */
export function deadLeases(view: KernelView, seat: string, capability: OperationalCapability, now: number): Liveness[] {
  const store = storeOf(view);
  const held = heldBy(store, seat, capability);
  if (held === undefined) return [];
  const out: Liveness[] = [];
  for (const i of liveSet(store, held, now).dead) {
    const lease = held.leases[i] as LeaseFact;
    out.push(answer(store, lease.id, held.verdicts?.[i], now));
  }
  return out;
}

/** The leases a seat holds for one capability, split into live (as authorities) and dead (with why). */
export function heldLeases(
  view: KernelView,
  seat: string,
  capability: OperationalCapability,
  now: number,
): { readonly live: Authority[]; readonly dead: Liveness[] } {
  return { live: [...liveLeases(view, seat, capability, now)], dead: deadLeases(view, seat, capability, now) };
}
