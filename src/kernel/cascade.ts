import { canonicalJson } from "./canonical.js";
import { type Refusal, refuse } from "./decision.js";
import type { LeaseFact } from "./facts.js";
import { ENVELOPE_PREFIX, heldSource, leaseList } from "./lease-liveness.js";
import type { Policy } from "./policy.js";
import type { Principal } from "./principal.js";
import { ownValue } from "./records.js";
import { scopeWithin } from "./scope.js";
import type { KernelView } from "./view.js";
import { DIMENSIONS } from "./vocabulary.js";

/**
 * The revocation cascade (§7, §8, §9): the durable revocation records a change appends in one
 * atomic batch with itself, so a later restoration revives nothing (a restored grant is a
 * fresh grant). The lineage walk already kills these leases at use time; the records are the
 * anti-revival guarantee. What cascades, comparing the policy in force with the one the change
 * puts in force:
 * - leads removed or reassigned: every lease in the team not already revoked (the selector is
 *   all leases, not only those below leads);
 * - a standing grant or envelope entry narrowed, removed or reassigned (a root lease's source
 *   no longer held by its issuer at a scope covering everything it had): every lease rooted
 *   in it;
 * - a seat removed, or its lab rebound: every lease it holds or issued;
 * - a declared name removed (env, branch, account, task): every lease whose scope names it;
 * - a declared name retargeted — an env's deploy command or push, a task's tracker, an
 *   account's identity changed: every lease whose scope names it, as for a removal (§7, §8:
 *   the name now reaches something the lease was never issued for);
 * and, for each, every lease below it by parent pointer. Narrowing the ceiling or the deny is
 * not here: it only shadows at use time (§7), and restoring it re-covers.
 */
export interface LeaseRevocation {
  readonly lease: string;
  readonly reason: string;
}

function children(leases: readonly LeaseFact[]): Map<string, LeaseFact[]> {
  const out = new Map<string, LeaseFact[]>();
  for (const l of leases) {
    if (l.parent === undefined) continue;
    const list = out.get(l.parent);
    if (list === undefined) out.set(l.parent, [l]);
    else list.push(l);
  }
  return out;
}

/** Whether the source a root lease names was narrowed, removed or reassigned by the change. */
function sourceLost(view: KernelView, after: Policy, lease: LeaseFact): boolean {
  const before = heldSource(view, lease.issuer, lease.rootGrant);
  const now = heldSource({ policy: after, facts: view.facts }, lease.issuer, lease.rootGrant);
  if (before === undefined) return false; // already dead at use time; nothing narrowed here
  if (now === undefined || now.capability !== before.capability) return true;
  return scopeWithin(before.scope, now.scope, { declared: after.declared }) !== true;
}

function removedNames(before: Policy, after: Policy): { readonly dimension: string; readonly name: string }[] {
  const out: { dimension: string; name: string }[] = [];
  const pairs = [
    ["branch", "branches"],
    ["env", "envs"],
    ["account", "accounts"],
    ["task", "tasks"],
  ] as const;
  for (const [dimension, set] of pairs) for (const name of before.declared[set]) if (!after.declared[set].includes(name)) out.push({ dimension, name });
  return out;
}

/** What each declared name resolves to, in canonical text: an env's deploy (command hash or push), a task's tracker, an account's identity. */
function resolvesTo(p: Policy, dimension: "env" | "task" | "account", name: string): string {
  switch (dimension) {
    case "env": {
      const command = p.deploys !== undefined ? ownValue(p.deploys, name) : undefined;
      const push = p.pushes !== undefined ? ownValue(p.pushes, name) : undefined;
      return canonicalJson({
        command: command?.hash ?? null,
        push: push === undefined ? null : { url: push.url, branch: push.branch, account: push.account },
      });
    }
    case "task":
      return (p.trackers !== undefined ? ownValue(p.trackers, name) : undefined) ?? "";
    case "account":
      return (p.accountIdentities !== undefined ? ownValue(p.accountIdentities, name) : undefined) ?? "";
  }
}

/** Names declared before and after whose target changed (§7: a retarget cascades like a removal). */
function retargetedNames(before: Policy, after: Policy): { readonly dimension: string; readonly name: string; readonly what: string }[] {
  const out: { dimension: string; name: string; what: string }[] = [];
  const pairs = [
    ["env", "envs", "its deploy command or push"],
    ["task", "tasks", "its tracker"],
    ["account", "accounts", "its identity"],
  ] as const;
  for (const [dimension, set, what] of pairs)
    for (const name of before.declared[set])
      if (after.declared[set].includes(name) && resolvesTo(before, dimension, name) !== resolvesTo(after, dimension, name)) out.push({ dimension, name, what });
  return out;
}

function namesIt(lease: LeaseFact, dimension: string, name: string): boolean {
  const written = Object.prototype.hasOwnProperty.call(lease.scope, dimension) ? lease.scope[dimension] : undefined;
  return Array.isArray(written) && written.includes(name);
}

/** The cascade of a policy change: the full batch of lease revocations to append with it. Pure. */
export function cascade(view: KernelView, after: Policy): LeaseRevocation[] {
  const before = view.policy;
  const revoked = new Set(view.facts.revokedLeases ?? []);
  const all = leaseList(view.facts.leases).filter((l) => !revoked.has(l.id));
  const out = new Map<string, string>();
  const mark = (lease: LeaseFact, reason: string): void => {
    if (!out.has(lease.id)) out.set(lease.id, reason);
  };
  const leadsGone = before.leads !== undefined && (after.leads === undefined || after.leads.seat !== before.leads.seat);
  const leadsReason = leadsGone
    ? `leads ${before.leads?.seat ?? ""} ${after.leads === undefined ? "removed" : `reassigned to ${after.leads.seat}`}: every live lease in the team is revoked (§9)`
    : "";
  const names = removedNames(before, after);
  const retargets = retargetedNames(before, after);
  // Per seat and per source, once: whether the change ended it, and why (a cascade reads 10,000 leases).
  const seatEnded = new Map<string, string | undefined>();
  const seatReason = (seat: string): string | undefined => {
    if (seatEnded.has(seat)) return seatEnded.get(seat);
    const was = ownValue(before.seats, seat);
    const is = ownValue(after.seats, seat);
    const why =
      was !== undefined && is === undefined
        ? `seat ${seat} removed: every lease it holds or issued is revoked (§9)`
        : was !== undefined && is !== undefined && was.lab !== is.lab
          ? `seat ${seat} rebound from lab ${was.lab ?? "(none)"} to ${is.lab ?? "(none)"}: every lease it holds or issued is revoked (§8)`
          : undefined;
    seatEnded.set(seat, why);
    return why;
  };
  const lost = new Map<string, boolean>();
  const sourceLostOnce = (lease: LeaseFact): boolean => {
    const key = `${lease.issuer}\u0000${lease.rootGrant}`;
    let hit = lost.get(key);
    if (hit === undefined) lost.set(key, (hit = sourceLost(view, after, lease)));
    return hit;
  };
  for (const lease of all) {
    if (leadsGone) mark(lease, leadsReason);
    for (const seat of [lease.holder, lease.issuer]) {
      const why = seatReason(seat);
      if (why !== undefined) mark(lease, why);
    }
    if (lease.parent === undefined && !out.has(lease.id) && sourceLostOnce(lease)) {
      mark(
        lease,
        `its source ${lease.rootGrant} was ${lease.rootGrant.startsWith(ENVELOPE_PREFIX) ? "narrowed or removed from the leads envelope" : `narrowed, removed or reassigned from ${lease.issuer}`} (§7)`,
      );
    }
    for (const { dimension, name } of names) {
      if ((DIMENSIONS as readonly string[]).includes(dimension) && namesIt(lease, dimension, name))
        mark(lease, `its scope names ${dimension} '${name}', removed from the declared set; re-adding it restores nothing (§8)`);
    }
    for (const { dimension, name, what } of retargets) {
      if (namesIt(lease, dimension, name))
        mark(
          lease,
          `its scope names ${dimension} '${name}', whose target changed (${what}): a retarget revokes as a removal does, and changing it back restores nothing (§7)`,
        );
    }
  }
  // Everything below a revoked lease, by the parent pointer each carries.
  const below = children(all);
  const queue = [...out.keys()];
  while (queue.length > 0) {
    const id = queue.pop() as string;
    for (const child of below.get(id) ?? []) {
      if (out.has(child.id)) continue;
      out.set(child.id, `below revoked lease ${id}`);
      queue.push(child.id);
    }
  }
  return [...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([lease, reason]) => Object.freeze({ lease, reason }));
}

/**
 * A direct revocation of one lease (§7, §9): by the owner, leads, or an issuer above it in its
 * chain. The batch holds the lease and every lease below it (their walk already fails; the
 * records make it durable).
 */
export function revokeLease(
  view: KernelView,
  principal: Principal,
  leaseId: string,
): { readonly decision: "revoke"; readonly revocations: readonly LeaseRevocation[] } | Refusal {
  const leases = view.facts.leases ?? {};
  const lease = ownValue(leases, leaseId);
  if (lease === undefined) return refuse("lease.unknown", `lease ${leaseId} is not in the ledger`);
  if (principal.kind === "seat" && principal.seat !== view.policy.leads?.seat) {
    const above = new Set<string>();
    let link: LeaseFact | undefined = lease;
    for (let depth = 0; link !== undefined && depth <= 64; depth++) {
      above.add(link.issuer);
      link = link.parent === undefined ? undefined : ownValue(leases, link.parent);
    }
    if (!above.has(principal.seat)) return refuse("lease.revoker", `${principal.seat} is not the owner, leads, or an issuer above lease ${leaseId}`);
  }
  const revoked = new Set(view.facts.revokedLeases ?? []);
  const below = children(leaseList(leases));
  const out: LeaseRevocation[] = [];
  const queue = [leaseId];
  const seen = new Set<string>();
  while (queue.length > 0) {
    const id = queue.shift() as string;
    if (seen.has(id)) continue;
    seen.add(id);
    if (!revoked.has(id))
      out.push({
        lease: id,
        reason: id === leaseId ? `revoked by ${principal.kind === "owner" ? "the owner" : principal.seat}` : `below revoked lease ${leaseId}`,
      });
    for (const c of below.get(id) ?? []) queue.push(c.id);
  }
  return { decision: "revoke", revocations: out };
}
