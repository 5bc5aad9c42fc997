import { refuse, type Refusal } from "./decision.js";
import type { Policy } from "./policy.js";

/**
 * The resource envelope's seats (§8): per lab, the most live seats — checked at apply (the seats
 * a team file declares: policy-compile.ts) and at every launch (the seats live now, a seat's restart included: a
 * seat is live from its launch to its stop). A lab the ceiling does not cap is not bounded here.
 */

/**
 * A launch of `seat` while `live` (the team's live seats, each with its lab, the launching seat
 * not among them) run: refused when its lab's live seats already reach the cap.
 */
export function checkSeatLaunch(
  policy: Pick<Policy, "seats" | "ceiling">,
  seat: string,
  live: readonly { readonly seat: string; readonly lab: string | undefined }[],
  /**
   * Create (§8, §10): per lab, the seat allowances this team carved to teams it created (its own
   * cap less them), and — for a created team — its slice's allowance (a cap its own file can only lower).
   */
  carve: { readonly carved?: Readonly<Record<string, number>>; readonly slice?: Readonly<Record<string, number | undefined>> } = {},
): Refusal | undefined {
  const lab = Object.prototype.hasOwnProperty.call(policy.seats, seat) ? policy.seats[seat]?.lab : undefined;
  if (lab === undefined) return undefined;
  const own = policy.ceiling?.seats?.[lab];
  const sliced = carve.slice === undefined ? undefined : Object.prototype.hasOwnProperty.call(carve.slice, lab) ? (carve.slice[lab] ?? undefined) : 0;
  const caps = [own, sliced].filter((c): c is number => c !== undefined);
  if (caps.length === 0) return undefined;
  const cap = Math.max(0, Math.min(...caps) - (carve.carved?.[lab] ?? 0));
  const running = live.filter((s) => s.seat !== seat && s.lab === lab).map((s) => s.seat);
  if (running.length < cap) return undefined;
  return refuse(
    "envelope.seats",
    `lab ${lab} may have at most ${cap} live seat(s) in this team (the ceiling's seats), and ${running.length} run: ${running.sort().join(", ") || "none"}; stop one first (teamd stop SEAT), or raise the cap (an owner act)`,
  );
}
