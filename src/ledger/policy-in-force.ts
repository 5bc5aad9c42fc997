import { fromHex, type Ledger } from "./index.js";
import { deepFreeze, type Seat, type StartContext } from "../kernel/index.js";
import { loadTeamFileData } from "../teamfile/index.js";
import { RefusalError } from "../rpc/errors.js";
import type { ReadFilter } from "../effects/git-filter.js";
import { readFilter, readIsUnbounded } from "../effects/read-filter.js";
import type { PolicyInForce } from "./decision-cache.js";

export type { PolicyInForce } from "./decision-cache.js";

/**
 * What a seat may start with, read from the policy in force — the last applied policy
 * record (`ledger.view.policy`), never the team file on disk, which may have changed since
 * (§10). A seat starts only with its pinned start; its repository shows it no more than its
 * read scope (a filtered history when that is bounded, src/effects/read-filter.ts).
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
  /** The content hash (`sha256:<hex>`) the applied policy pinned for each of the start's files, by repo-relative path. */
  readonly pinnedFiles: Readonly<Record<string, string>>;
  /** What the seat may read, when that is not the whole repository: its repository is then a filtered history. */
  readonly readFilter: ReadFilter | undefined;
}

export function readyLedger(ledger: Ledger | undefined): Ledger {
  if (ledger === undefined) throw new RefusalError("ledger.unavailable", "this machine has no ledger yet: run teamd init");
  if (ledger.state.status !== "ready") {
    throw new RefusalError(
      "ledger.unavailable",
      `the ledger is ${ledger.state.status} (${ledger.state.reason}); a seat start that cannot be recorded does not happen: run teamd verify / teamd ledger reconcile`,
    );
  }
  return ledger;
}

/**
 * The team's policy in force, rebuilt from its record (never the file on disk, §10), deep
 * frozen. The record is immutable, so its load is kept by the ledger's own decision cache
 * (decision-cache.ts), by (team, seq): a seat request pays for the canonical parse once per
 * applied policy, not once per call.
 */
export function policyInForce(ledger: Ledger, team: string): PolicyInForce {
  if (ledger.view.team(team) === undefined) {
    throw new RefusalError("team.unknown", `team '${team}' is not registered on this machine: run teamd init in its repository first`);
  }
  const inForce = ledger.view.policy(team);
  if (inForce === undefined) {
    throw new RefusalError(
      "policy.unapplied",
      `team '${team}' has no applied policy: run teamd apply in its repository (the file on disk is never in force by itself)`,
    );
  }
  return ledger.decisionCache.policy(team, inForce.seq, () => loadPolicy(team, inForce));
}

function loadPolicy(team: string, inForce: NonNullable<ReturnType<Ledger["view"]["policy"]>>): PolicyInForce {
  let data: unknown;
  try {
    data = JSON.parse(inForce.canonical);
  } catch {
    throw new RefusalError("policy.unapplied", `the policy record ${inForce.seq} of team '${team}' is not JSON; apply the team file again`);
  }
  // A recorded policy was decided when it committed (§5): one the owner's narrowing left below a
  // floor is in force, its floors paused at act time — the launch check is not run again here.
  const loaded = loadTeamFileData(data, { startFileHashes: inForce.startFileHashes, proposal: true });
  if (!loaded.ok) {
    throw new RefusalError(
      "policy.unapplied",
      `the policy in force (record ${inForce.seq}) no longer loads: ${loaded.errors[0]?.message ?? "invalid"}; apply the team file again`,
    );
  }
  // Frozen throughout once, here: the kernel's memos are keyed by it (decision-view.ts).
  return { policy: deepFreeze(loaded.policy), seq: inForce.seq, teamFileHash: inForce.teamFileHash, teamFileHashBytes: fromHex(inForce.teamFileHash) };
}

/** The seats a team's applied policy declares, by name (all of them, startable or not). */
export function policySeats(ledger: Ledger, team: string): Readonly<Record<string, Seat>> {
  return policyInForce(ledger, team).policy.seats;
}

/** The seat, checked for a start from the policy in force; a refusal names the rule and the fix. */
export function startableSeat(ledger: Ledger, team: string, seatName: string): StartableSeat {
  const { policy } = policyInForce(ledger, team);
  const seats = policy.seats;
  const seat = Object.prototype.hasOwnProperty.call(seats, seatName) ? seats[seatName] : undefined;
  if (seat === undefined) {
    throw new RefusalError(
      "seat.unknown",
      `seat '${seatName}' is not in team '${team}''s applied policy (seats: ${Object.keys(seats).join(", ") || "none"}); add it to teamd.yaml and run teamd apply`,
    );
  }
  if (seat.start === undefined || seat.contextHash === undefined) {
    throw new RefusalError(
      "seat.no-start",
      `seat '${seatName}' of team '${team}' has no start in the applied policy; add start.command to it in teamd.yaml and run teamd apply`,
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
    pinnedFiles: Object.fromEntries(seat.start.files.map((path) => [path, inForce.startFileHashes[path] ?? ""])),
    repository: registered.repository,
    hub: registered.hub,
    readFilter: readIsUnbounded(policy, seat) ? undefined : readFilter(policy, seat, Date.now()),
  };
}
