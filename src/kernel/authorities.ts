import type { Authority } from "./authority.js";
import type { Seat } from "./policy.js";
import type { KernelView } from "./view.js";
import type { OperationalCapability } from "./vocabulary.js";

/**
 * The authorities a seat may act under for one capability: "a seat holds its list and its
 * live leases, and nothing else" (§7, §10). In this release that is its standing list
 * (roles and direct capabilities), less any authority the ledger records as revoked since the
 * policy was applied (issue 5). This is the seam the delegation issue (#6) fills: live
 * leases join the list here (liveness walked up the whole chain), and the deny and the
 * ceiling filter it here (deny wins through every role and lease; outside the ceiling is
 * unreachable, §8) — so every decision sees one list and the coverage rule stays unchanged.
 */
export function candidateAuthorities(view: KernelView, seat: Seat, capability: OperationalCapability): readonly Authority[] {
  const all = seat.byCapability[capability] ?? [];
  // A revoked authority is not a request: it ends at once (§5), and covers nothing after.
  const revoked = view.facts.revoked;
  if (revoked === undefined || revoked.length === 0) return all;
  return all.filter((a) => !revoked.includes(a.id));
}
