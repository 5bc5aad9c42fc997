import type { Authority } from "./authority.js";
import { DEFAULT_LEASE_TTL_MS, TOOL_MAX_LEASE_TTL_MS } from "./ceiling.js";
import { leaseShadow } from "./ceiling-deny.js";
import { type Refusal, refuse } from "./decision.js";
import type { LeaseFact } from "./facts.js";
import type { Policy } from "./policy.js";
import type { PolicyProblem } from "./policy-input.js";
import { ownValue } from "./records.js";
import { type Scope, type ScopeUniverse, scopeWithin } from "./scope.js";
import { readScope } from "./scope-input.js";
import type { KernelView } from "./view.js";
import { type OperationalCapability, capabilitySpec } from "./vocabulary.js";

/**
 * The lease chain walk (§7), the definition of liveness — derived at use time, never stored:
 * a lease is live only while every link of its chain is — walked up the mandatory parent
 * pointers to the originating source.
 * For each link: it is in the ledger; the team has a present leads (§9); its holder is a
 * member seat and not leads; it is not expired; no revocation record names it; its scope still
 * reads against the declared sets in force; and
 * - a root lease: its named source (a standing grant the issuer holds, or the leads envelope
 *   when the issuer is leads) still exists, is still held by that issuer — reassigning it,
 *   even at the same scope, kills the lease — is not revoked, and still covers the lease;
 * - a re-lease: its parent is live, is held by this lease's issuer, and the lease is within
 *   it (capability, scope, expiry) and carries the same root grant.
 * The whole-chain ban is re-checked too (the holder is none of the chain's issuers or
 * holders). `withShadow` adds the use-time shadow of the ceiling and the deny (a lease wholly
 * outside the one or inside the other); `authorize` applies both per effect instead.
 * lease-liveness.ts answers the same questions fast, from memoized clock-independent verdicts;
 * the walk here is what those answers are tested against (test/kernel/lease-fast.property.test.ts).
 */
export type Liveness =
  | { readonly live: true; readonly lease: LeaseFact; readonly authority: Authority; readonly chain: readonly LeaseFact[] }
  | { readonly live: false; readonly lease?: LeaseFact; readonly authority?: Authority; readonly refusal: Refusal };

/** Walks already made within one decision: a chain shared by many leases is walked once. */
export type LivenessMemo = Map<string, Liveness>;

export const ENVELOPE_PREFIX = "leads:envelope/";

/** A lease's scope read against the policy in force, as the authority it confers. */
export function leaseAuthority(policy: Policy, lease: LeaseFact): Authority | Refusal {
  const spec = capabilitySpec(policy.vocabulary, lease.capability);
  if (spec === undefined || spec.kind !== "operational")
    return refuse(
      "lease.administrative",
      `lease ${lease.id} names ${lease.capability}, which is not an operational capability; only operational capabilities are leasable`,
    );
  const problems: PolicyProblem[] = [];
  const scope = readScope(lease.capability, spec.dimensions, lease.scope, ["scope"], {
    vocabulary: policy.vocabulary,
    declared: policy.declared,
    reserved: policy.reserved,
    problems,
  });
  if (scope === undefined) {
    return refuse(
      "lease.source",
      `lease ${lease.id}'s scope no longer reads against the policy in force (${problems[0]?.message ?? "unreadable"}); a name never silently re-resolves under a live lease (§4, §8)`,
    );
  }
  return Object.freeze({
    id: `lease:${lease.id}`,
    seat: lease.holder,
    capability: lease.capability as OperationalCapability,
    scope,
    source: Object.freeze({ kind: "lease", lease: lease.id, rootGrant: lease.rootGrant, issuer: lease.issuer }),
  });
}

/**
 * The source a root lease names, if the issuer still holds it and it is not revoked: a
 * standing grant of the issuer, or the envelope when the issuer is the current leads.
 */
export function heldSource(view: KernelView, issuer: string, sourceId: string): Authority | undefined {
  const policy = view.policy;
  if (sourceId.startsWith(ENVELOPE_PREFIX)) {
    if (policy.leads === undefined || policy.leads.seat !== issuer) return undefined;
    return policy.leads.envelope.find((a) => a.id === sourceId);
  }
  const seat = ownValue(policy.seats, issuer);
  const found = seat?.authorities.find((a) => a.id === sourceId);
  if (found === undefined || (view.facts.revoked ?? []).includes(found.id)) return undefined;
  return found;
}

function within(a: Scope, b: Scope, universe: ScopeUniverse): boolean {
  return scopeWithin(a, b, universe) === true;
}

function dead(lease: LeaseFact | undefined, refusal: Refusal, authority?: Authority): Liveness {
  return { live: false, ...(lease !== undefined ? { lease } : {}), ...(authority !== undefined ? { authority } : {}), refusal };
}

/**
 * One expiry check a walk makes (the lease's own, then its ancestors', in the order the walk
 * makes them) before the clock-independent verdict's own failure, if any.
 */
export interface Expiry {
  readonly id: string;
  /** When the lease stops being live: its own expiry, or sooner, its issue plus the ceiling's lease-ttl in force. */
  readonly expiresAt: number;
  /** Set when the ceiling's lease-ttl in force ends it before its own expiry (a lowered lease-ttl shadows it, §7). */
  readonly shadowTtlMs?: number;
}

/**
 * When a lease stops being live under the policy in force (§7, issue 24 item 6): its own expiry,
 * or — when the owner lowered the ceiling's lease-ttl after it was issued — its issue plus the
 * lease-ttl now in force. Like every ceiling narrowing it shadows at use time: a lease older than
 * the current lease-ttl is not live while the narrowing stands, and is live again (until its own
 * expiry) if the owner raises it back.
 */
export function leaseExpiry(policy: Policy, lease: LeaseFact): Expiry {
  const ttl = Math.min(policy.ceiling?.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS, TOOL_MAX_LEASE_TTL_MS);
  const bound = lease.issuedAt + ttl;
  return bound < lease.expiresAt ? { id: lease.id, expiresAt: bound, shadowTtlMs: ttl } : { id: lease.id, expiresAt: lease.expiresAt };
}

/** Why a lease is not live at `now` by its expiry. */
export function expiredReason(e: Expiry, now: number): string {
  return e.shadowTtlMs === undefined
    ? `lease ${e.id} expired at ${e.expiresAt} (now ${now})`
    : `lease ${e.id} is older than the ceiling's lease-ttl of ${e.shadowTtlMs} ms in force (it ended at ${e.expiresAt}, now ${now}); a lowered lease-ttl shadows every lease issued before it (§7)`;
}

/** A link walked: its liveness, and (clock-independent walk only) the expiry checks it made first. */
export interface Walked {
  readonly liveness: Liveness;
  readonly expiries: readonly Expiry[];
}

const NO_EXPIRIES: readonly Expiry[] = Object.freeze([]);

/**
 * The reference chain walk without the ceiling/deny shadow, memoized per decision: every link
 * checked in order up to the root. lease-liveness.ts answers from memoized clock-independent
 * verdicts instead; this walk stays as the definition they are tested against, and answers
 * for the irregular chains (a cycle, more than 64 links) the verdicts do not memoize.
 */
export function walkLeaseReference(view: KernelView, id: string, now: number, memo: LivenessMemo = new Map(), depth = 0): Liveness {
  const known = memo.get(id);
  if (known !== undefined) return known;
  const result = walkLink(view, id, now, depth, (parent, d) => ({ liveness: walkLeaseReference(view, parent, now, memo, d), expiries: NO_EXPIRIES })).liveness;
  memo.set(id, result);
  return result;
}

/**
 * One link of the walk, its parent's walk supplied by the caller. `now` undefined is the
 * clock-independent walk: the expiry checks are left out and recorded instead (`expiries`),
 * so that the verdict at a time is the first recorded expiry passed, else this one.
 */
export function walkLink(view: KernelView, id: string, now: number | undefined, depth: number, parentOf: (id: string, depth: number) => Walked): Walked {
  const policy = view.policy;
  const lease = view.facts.leases === undefined ? undefined : ownValue(view.facts.leases, id);
  if (lease === undefined) return only(dead(undefined, refuse("lease.unknown", `lease ${id} is not in the ledger; what cannot be walked is not live`)));
  // Read first, so a dead lease still says what it would have covered (authorize names it).
  const authority = leaseAuthorityOnce(policy, lease);
  const readable = "decision" in authority ? undefined : authority;
  if (depth > 64) return only(dead(lease, refuse("lease.unknown", `lease ${id}'s chain does not end (a cycle or more than 64 links); not live`), readable));
  if (policy.leads === undefined)
    return only(dead(lease, refuse("lease.no-leads", `the team has no leads, so no lease is live (§9); lease ${id} ended with it`), readable));
  if (ownValue(policy.seats, lease.holder) === undefined)
    return only(dead(lease, refuse("lease.recipient", `lease ${id}'s holder ${lease.holder} is no longer a seat of the team`), readable));
  if (lease.holder === policy.leads.seat)
    return only(dead(lease, refuse("lease.ancestor", `lease ${id} is held by ${lease.holder}, the team's leads; no lease lands on leads (§7)`), readable));
  const expiry = leaseExpiry(policy, lease);
  if (now !== undefined && now >= expiry.expiresAt) return only(dead(lease, refuse("lease.expired", expiredReason(expiry, now)), readable));
  const own: readonly Expiry[] = now === undefined ? [expiry] : NO_EXPIRIES;
  const at = (liveness: Liveness, expiries: readonly Expiry[] = own): Walked => ({ liveness, expiries });
  if (view.facts.revokedLeases !== undefined && revokedSet(view.facts.revokedLeases).has(id))
    return at(dead(lease, refuse("lease.revoked", `lease ${id} has a revocation record; revoked leases never return (§7)`), readable));
  if ("decision" in authority) return at(dead(lease, authority));
  const universe: ScopeUniverse = { declared: policy.declared };

  if (lease.parent === undefined) {
    if (lease.holder === lease.issuer) return at(dead(lease, refuse("lease.ancestor", `lease ${id} is held by its own issuer ${lease.issuer}`), authority));
    const source = heldSource(view, lease.issuer, lease.rootGrant);
    if (source === undefined) {
      return at(
        dead(
          lease,
          refuse(
            "lease.source",
            `root lease ${id}'s source ${lease.rootGrant} is no longer held by its issuer ${lease.issuer} (removed, revoked or reassigned — even at the same scope, §7)`,
          ),
          authority,
        ),
      );
    }
    if (source.capability !== authority.capability || !within(authority.scope, source.scope, universe)) {
      return at(
        dead(lease, refuse("lease.source", `root lease ${id}'s source ${lease.rootGrant} no longer covers its ${authority.capability} scope (§7)`), authority),
      );
    }
    return at({ live: true, lease, authority, chain: [lease] });
  }

  const walked = parentOf(lease.parent, depth + 1);
  const chained = now === undefined ? [...own, ...walked.expiries] : NO_EXPIRIES;
  const parent = walked.liveness;
  if (!parent.live) {
    const why = parent.refusal;
    return at(dead(lease, refuse(why.rule, `lease ${id}'s ancestor ${lease.parent} is not live: ${why.reason}`), authority), chained);
  }
  const p = parent.lease;
  if (p.holder !== lease.issuer)
    return at(
      dead(lease, refuse("lease.source", `re-lease ${id}'s parent ${p.id} is held by ${p.holder}, not by its issuer ${lease.issuer}`), authority),
      chained,
    );
  if (p.rootGrant !== lease.rootGrant)
    return at(
      dead(lease, refuse("lease.source", `re-lease ${id} names root grant ${lease.rootGrant}, and its parent ${p.id} descends from ${p.rootGrant}`), authority),
      chained,
    );
  if (parent.authority.capability !== authority.capability || !within(authority.scope, parent.authority.scope, universe) || lease.expiresAt > p.expiresAt) {
    return at(dead(lease, refuse("lease.wider", `re-lease ${id} is wider than its parent ${p.id} (capability, scope or expiry)`), authority), chained);
  }
  const banned = chainSeats(parent.chain);
  if (banned.has(lease.holder))
    return at(dead(lease, refuse("lease.ancestor", `re-lease ${id} lands on ${lease.holder}, already an issuer or holder in its chain`), authority), chained);
  return at({ live: true, lease, authority, chain: [...parent.chain, lease] }, chained);
}

function only(liveness: Liveness): Walked {
  return { liveness, expiries: NO_EXPIRIES };
}

/** Every issuer and holder in a chain (root first): the seats the whole-chain ban excludes. */
export function chainSeats(chain: readonly LeaseFact[]): Set<string> {
  const out = new Set<string>();
  for (const l of chain) {
    out.add(l.issuer);
    out.add(l.holder);
  }
  return out;
}

/** The use-time shadow of the ceiling and the deny over a walked lease (§7, §8). */
export function withShadow(view: KernelView, walked: Liveness): Liveness {
  if (!walked.live) return walked;
  const spec = capabilitySpec(view.policy.vocabulary, walked.authority.capability);
  const shadow = leaseShadow(view.policy, walked.authority, spec?.dimensions ?? [], { declared: view.policy.declared });
  return shadow === undefined ? walked : dead(walked.lease, shadow, walked.authority);
}

/** The reference `leaseLiveness`: the whole chain walked afresh, with the shadow. Total. */
export function leaseLivenessReference(view: KernelView, leaseId: string, now: number): Liveness {
  try {
    return withShadow(view, walkLeaseReference(view, leaseId, now));
  } catch (error) {
    return faulted(leaseId, error);
  }
}

export function faulted(leaseId: string, error: unknown): Liveness {
  return dead(
    undefined,
    refuse(
      "kernel.fault",
      `lease ${leaseId}'s liveness could not be evaluated (${error instanceof Error ? error.message : "a non-error value was thrown"}); not live (fail closed)`,
    ),
  );
}

/**
 * The reference `heldLeases`: every lease the seat holds for the capability, each walked
 * afresh (a memo shared across leases would let a chain of more than 64 links answer by the
 * depth it was first reached at, not its own).
 */
export function heldLeasesReference(
  view: KernelView,
  seat: string,
  capability: OperationalCapability,
  now: number,
): { readonly live: Authority[]; readonly dead: Liveness[] } {
  const live: Authority[] = [];
  const deadOnes: Liveness[] = [];
  const leases = view.facts.leases;
  if (leases === undefined) return { live, dead: deadOnes };
  for (const lease of leasesHeldBy(leases, seat)) {
    if (lease.capability !== capability) continue;
    const l = walkLeaseReference(view, lease.id, now);
    if (l.live) live.push(l.authority);
    else deadOnes.push(l);
  }
  return { live, dead: deadOnes };
}

/**
 * Indexes over the facts, memoized by the (frozen, immutable) facts object itself: the leases
 * by holder, and the revoked ids as a set. A decision reads only the requesting seat's leases
 * and walks their chains, so with 10,000 leases in the team it does not scan all of them per
 * request. Pure: an index is a function of its key, which never changes (facts are frozen),
 * and a WeakMap holds nothing alive — no clock, no I/O, the same answer for the same input.
 */
// eslint-disable-next-line teamd/module-state -- a memo keyed by a frozen leases record (set only when frozen): see above
const listIndex = new WeakMap<object, readonly LeaseFact[]>();

/** The leases of a record in its order, read once per (frozen) record: a 10,000-key record is slow to enumerate. */
export function leaseList(leases: Readonly<Record<string, LeaseFact>> | undefined): readonly LeaseFact[] {
  if (leases === undefined) return [];
  const known = listIndex.get(leases);
  if (known !== undefined) return known;
  const list = Object.freeze(Object.values(leases));
  if (Object.isFrozen(leases)) listIndex.set(leases, list);
  return list;
}

// eslint-disable-next-line teamd/module-state -- a memo keyed by a frozen leases record (set only when frozen): see above
const byHolderIndex = new WeakMap<object, ReadonlyMap<string, readonly LeaseFact[]>>();
// eslint-disable-next-line teamd/module-state -- a memo keyed by a frozen revoked list (set only when frozen): see above
const revokedIndex = new WeakMap<object, ReadonlySet<string>>();

export function leasesHeldBy(leases: Readonly<Record<string, LeaseFact>>, holder: string): readonly LeaseFact[] {
  let index = byHolderIndex.get(leases);
  if (index === undefined || !Object.isFrozen(leases)) {
    const built = new Map<string, LeaseFact[]>();
    for (const lease of leaseList(leases)) {
      const list = built.get(lease.holder);
      if (list === undefined) built.set(lease.holder, [lease]);
      else list.push(lease);
    }
    index = built;
    // Only a frozen record can be indexed once: an unfrozen one may change under the index.
    if (Object.isFrozen(leases)) byHolderIndex.set(leases, index);
  }
  return index.get(holder) ?? [];
}

export function revokedSet(revoked: readonly string[]): ReadonlySet<string> {
  let set = revokedIndex.get(revoked);
  if (set === undefined) {
    set = new Set(revoked);
    if (Object.isFrozen(revoked)) revokedIndex.set(revoked, set);
  }
  return set;
}

/**
 * `leaseAuthority` memoized per (lease, policy): reading a lease's scope against the declared
 * sets is a function of the two frozen values alone, and a decision walks every lease the
 * seat holds — reading each scope once per policy rather than once per request.
 */
// eslint-disable-next-line teamd/module-state -- a memo keyed by a frozen lease and checked against its frozen policy: see above
const authorityIndex = new WeakMap<object, { readonly policy: Policy; readonly read: Authority | Refusal }>();
export function leaseAuthorityOnce(policy: Policy, lease: LeaseFact): Authority | Refusal {
  if (!Object.isFrozen(lease) || !Object.isFrozen(policy)) return leaseAuthority(policy, lease);
  const hit = authorityIndex.get(lease);
  if (hit !== undefined && hit.policy === policy) return hit.read;
  const read = leaseAuthority(policy, lease);
  authorityIndex.set(lease, { policy, read });
  return read;
}
