import { createFlags, LedgerRefusal, publicKeyFromRaw, type PublicKey } from "../../src/ledger/index.js";
import { describeError } from "../../src/ledger/errors.js";
import { RefusalError } from "../../src/rpc/errors.js";
import type { TeamdHome } from "../host/home.js";
import { ledgerLayout, readPinnedOwnerKey } from "../host/ledger-host.js";
import type { LedgerSlot } from "../owner/acts.js";
import type { SeatManager, SeatView } from "../lifecycle/manager.js";

/**
 * The daemon's side of `teamd stop --all` (§11 the machine-wide stop, §15 failure boundary) and
 * of `teamd stop --team T` (a team's stop, §9: the same flag, scoped to one team).
 * The order is the point: the owner's signature is checked and the flag raised first (the
 * CLI has usually raised it already; raising is idempotent), so the stop is in force before
 * any seat is touched and whatever the store does; then every seat of every team is killed
 * while the ledger records the stop — or, with the store down, leaves it to be appended
 * late when the store returns (the ledger does that on its next clean open or resume).
 */
export interface StopAllResult {
  readonly flagId: string;
  readonly recorded: boolean;
  readonly seq: number;
  readonly reason: string;
  readonly stopped: SeatView[];
}

function ownerKeyOf(home: TeamdHome, slot: LedgerSlot): PublicKey {
  const ledger = slot.get();
  if (ledger) return ledger.ownerKey;
  const pinned = readPinnedOwnerKey(ledgerLayout(home));
  if (pinned === undefined)
    throw new RefusalError("owner.act-invalid", "this machine has no pinned owner key, so no stop can be checked: run teamd init first");
  return publicKeyFromRaw(pinned);
}

export async function handleStopAll(
  home: TeamdHome,
  slot: LedgerSlot,
  seats: SeatManager,
  act: Uint8Array,
  raised?: (flagId: string) => void,
): Promise<StopAllResult> {
  const flags = createFlags({ dir: ledgerLayout(home).flagsDir, ownerKey: ownerKeyOf(home, slot) });
  let flagId: string;
  let team: string | undefined;
  try {
    const flag = await flags.raise(act);
    if (flag.kind !== "stop" || flag.scope === undefined)
      throw new RefusalError("owner.act-invalid", "a stop takes an owner-signed stop act: machine-wide (stop --all) or one team's (stop --team)");
    flagId = flag.id;
    // A team's stop (§9, §15): that team's seats, never another's.
    if (flag.scope === "team") team = flag.team;
    raised?.(flagId);
  } catch (error) {
    if (error instanceof LedgerRefusal) throw RefusalError.from(error.refusal);
    throw error;
  }
  const ledger = slot.get();
  const record = async (): Promise<{ recorded: boolean; seq: number; reason: string }> => {
    if (ledger === undefined) return { recorded: false, seq: 0, reason: "this machine has no ledger yet" };
    try {
      const reply = await ledger.stop(act);
      return reply.recorded
        ? { recorded: true, seq: reply.recorded.seq, reason: "" }
        : { recorded: false, seq: 0, reason: reply.reason ?? "the store is unavailable" };
    } catch (error) {
      return { recorded: false, seq: 0, reason: describeError(error) };
    }
  };
  const [stopped, recorded] = await Promise.all([
    team === undefined ? seats.stopAll("the owner's machine-wide stop", "stop-flag") : seats.stop(team, undefined),
    record(),
  ]);
  return { flagId, ...recorded, stopped };
}
