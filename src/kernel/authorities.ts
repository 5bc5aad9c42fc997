import type { Authority } from "./authority.js";
import { liveLeases } from "./lease-liveness.js";
import type { Seat } from "./policy.js";
import type { KernelView } from "./view.js";
import type { OperationalCapability } from "./vocabulary.js";

/**
 * The authorities a seat may act under for one capability: "a seat holds its list and its
 * live leases, and nothing else" (§7, §10) — its standing list (roles and direct grants) less
 * any authority the ledger records as revoked, then every lease it holds that is live at the
 * view's decision time (the whole chain walked, lease-liveness.ts). A view without a time
 * (`now`) sees no lease at all: liveness exists only at a time, so it fails closed. The deny
 * and the ceiling are applied per effect by `authorize` (ceiling-deny.ts), whatever covers it.
 */
export function candidateAuthorities(view: KernelView, seat: Seat, capability: OperationalCapability): readonly Authority[] {
  const all = seat.byCapability[capability] ?? [];
  // A revoked authority is not a request: it ends at once (§5), and covers nothing after.
  const revoked = view.facts.revoked;
  const standing = revoked === undefined || revoked.length === 0 ? all : all.filter((a) => !revoked.includes(a.id));
  if (view.now === undefined || view.facts.leases === undefined) return standing;
  const leased = liveLeases(view, seat.name, capability, view.now);
  if (leased.length === 0) return standing;
  // The same frozen list while the live set and the standing list stand, so coverage's index of it is reused.
  const known = combined.get(leased);
  if (known !== undefined && known.standing === standing) return known.candidates;
  const candidates = Object.freeze([...standing, ...leased]);
  if (Object.isFrozen(leased) && Object.isFrozen(standing)) combined.set(leased, { standing, candidates });
  return candidates;
}

// eslint-disable-next-line teamd/module-state -- a memo keyed by the frozen live-lease list (set only when both lists are frozen): its entry follows from its key alone, so no caller sees another's; hot on every leased decision
const combined = new WeakMap<readonly Authority[], { readonly standing: readonly Authority[]; readonly candidates: readonly Authority[] }>();
