import type { Ledger } from "../src/ledger/index.js";
import type { Seat, StartContext } from "../src/kernel/index.js";
import { loadTeamFileData } from "../src/teamfile/index.js";
import { RefusalError } from "../src/rpc/index.js";

/**
 * What a seat may start with, read from the policy in force — the last applied policy
 * record (`ledger.view.policy`), never the team file on disk, which may have changed since
 * (§10). A seat starts only with its pinned start, and only when its repository (a clone
 * of trunk) does not show it more than its read scope: until the seat-git issue builds
 * filtered histories, a bounded read scope refuses the start.
 */
export interface StartableSeat {
  readonly team: string;
  readonly seat: string;
  readonly start: StartContext;
  readonly policySeq: number;
  readonly policyHash: string;
  readonly contextHash: string;
  /** The team's registered repository (the owner's tree) and hub. */
  readonly repository: string;
  readonly hub: string;
}

export function readyLedger(ledger: Ledger | undefined): Ledger {
  if (ledger === undefined) throw new RefusalError("ledger.unavailable", "this machine has no ledger yet: run teamd init");
  if (ledger.state.status !== "ready") {
    throw new RefusalError("ledger.unavailable", `the ledger is ${ledger.state.status} (${ledger.state.reason}); a seat start that cannot be recorded does not happen: run teamd verify / teamd ledger reconcile`);
  }
  return ledger;
}

/** The seats a team's applied policy declares, by name (all of them, startable or not). */
export function policySeats(ledger: Ledger, team: string): Readonly<Record<string, Seat>> {
  if (ledger.view.team(team) === undefined) {
    throw new RefusalError("team.unknown", `team '${team}' is not registered on this machine: run teamd init in its repository first`);
  }
  const inForce = ledger.view.policy(team);
  if (inForce === undefined) {
    throw new RefusalError("policy.unapplied", `team '${team}' has no applied policy: run teamd apply in its repository (the file on disk is never in force by itself)`);
  }
  let data: unknown;
  try {
    data = JSON.parse(inForce.canonical);
  } catch {
    throw new RefusalError("policy.unapplied", `the policy record ${inForce.seq} of team '${team}' is not JSON; apply the team file again`);
  }
  const loaded = loadTeamFileData(data, { startFileHashes: inForce.startFileHashes });
  if (!loaded.ok) {
    throw new RefusalError("policy.unapplied", `the policy in force (record ${inForce.seq}) no longer loads: ${loaded.errors[0]?.message ?? "invalid"}; apply the team file again`);
  }
  return loaded.policy.seats;
}

/** The seat, checked for a start from the policy in force; a refusal names the rule and the fix. */
export function startableSeat(ledger: Ledger, team: string, seatName: string): StartableSeat {
  const seats = policySeats(ledger, team);
  const seat = Object.prototype.hasOwnProperty.call(seats, seatName) ? seats[seatName] : undefined;
  if (seat === undefined) {
    throw new RefusalError("seat.unknown", `seat '${seatName}' is not in team '${team}''s applied policy (seats: ${Object.keys(seats).join(", ") || "none"}); add it to teamd.yaml and run teamd apply`);
  }
  if (seat.start === undefined || seat.contextHash === undefined) {
    throw new RefusalError("seat.no-start", `seat '${seatName}' of team '${team}' has no start in the applied policy; add start.command to it in teamd.yaml and run teamd apply`);
  }
  const bounded = readScopeBounded(seat);
  if (bounded !== undefined) {
    throw new RefusalError(
      "seat.read-bounded",
      `seat '${seatName}' of team '${team}' ${bounded}, but its repository would be a full clone of trunk; until filtered histories exist (the seat-git issue) ` +
        `such a seat does not start. Fix: give it unbounded read (e.g. role observer) or wait for filtered histories`,
    );
  }
  const registered = ledger.view.team(team);
  const inForce = ledger.view.policy(team);
  if (registered === undefined || inForce === undefined) throw new RefusalError("policy.unapplied", `team '${team}' has no applied policy: run teamd apply`);
  return {
    team,
    seat: seatName,
    start: seat.start,
    policySeq: inForce.seq,
    policyHash: inForce.teamFileHash,
    contextHash: seat.contextHash,
    repository: registered.repository,
    hub: registered.hub,
  };
}

/** Why the seat's read scope is bounded, or undefined when some read authority is unconstrained on path. */
export function readScopeBounded(seat: Seat): string | undefined {
  const reads = seat.byCapability.read ?? [];
  if (reads.length === 0) return "holds no read capability";
  const unbounded = reads.some((authority) => (authority.scope.path ?? { state: "unconstrained" }).state === "unconstrained");
  return unbounded ? undefined : "may read only part of the repository (read is bounded on path)";
}
