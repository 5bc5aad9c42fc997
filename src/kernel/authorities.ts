import type { Authority } from "./authority.js";
import type { Seat } from "./policy.js";
import type { KernelView } from "./view.js";
import type { OperationalCapability } from "./vocabulary.js";

/**
 * The authorities a seat may act under for one capability: "a seat holds its list and its
 * live leases, and nothing else" (§7, §10). In this release that is its standing list
 * (roles and direct capabilities). This is the seam the delegation issue (#6) fills: live
 * leases join the list here (liveness walked up the whole chain), and the deny and the
 * ceiling filter it here (deny wins through every role and lease; outside the ceiling is
 * unreachable, §8) — so every decision sees one list and the coverage rule stays unchanged.
 */
export function candidateAuthorities(_view: KernelView, seat: Seat, capability: OperationalCapability): readonly Authority[] {
  return seat.byCapability[capability] ?? [];
}
