import { join } from "node:path";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  LabEnvelopeSchema,
  LedgerSummarySchema,
  SelftestStandingSchema,
  SpendStatusSchema,
  StopInForceSchema,
  TeamStatusSchema,
} from "../../src/gen/teamd/v1/control_pb.js";
import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import type { SpendStatus } from "./spend-book.js";
import type { Policy } from "../../src/kernel/index.js";
import type { Ledger } from "../../src/ledger/index.js";
import { loadTeamFile } from "../../src/teamfile/index.js";
import { describeLedger } from "../host/ledger-host.js";
import { describeLeases } from "../owner/leases.js";
import { policyInForce } from "../../src/ledger/policy-in-force.js";
import { runtimeLeftMs, runtimeWindowMs } from "../../src/kernel/envelope-runtime.js";
import { seatCarve } from "../../src/kernel/create-bound.js";
import { TEAM_FILE_NAME } from "../host/team-file-placement.js";
import type { TeamdHome } from "../host/home.js";
import { countUnseen } from "../host/notice-mark.js";
import { hostFingerprint, selftestSummary } from "../host/selftest-record.js";

/**
 * What `teamd status` shows beyond the seats: the ledger's head, the owner's stops in force,
 * and each team with its policy in force against the file on disk. Everything here is read
 * (the ledger's view, the local flags, the owner's team file); nothing is recorded. Each
 * part answers on its own: a team whose policy no longer loads, or a ledger that is down,
 * is reported as such, never an error for the whole status.
 */

/** The notices the owner has not seen (docs/status.md `notices.unseen`), counted in the daemon's own store; undefined when it has none. */
export function noticesUnseen(home: TeamdHome, ledger: Ledger | undefined): number | undefined {
  if (ledger === undefined) return undefined;
  try {
    return countUnseen(home, (from, limit) => ledger.entries(from, limit, RecordType.NOTICE));
  } catch {
    return undefined;
  }
}

/** The last selftest as a start reads it (the fingerprint of bubblewrap is remembered while its binary is unchanged). */
export function selftestStandingMessage(home: TeamdHome, bwrapVersion: () => string): MessageInitShape<typeof SelftestStandingSchema> {
  const s = selftestSummary(home, hostFingerprint(bwrapVersion));
  return { standing: s.standing, at: s.at ?? "", reason: s.reason ?? "" };
}

export function ledgerSummary(ledger: Ledger | undefined): MessageInitShape<typeof LedgerSummarySchema> {
  // The same reading LedgerStatus gives (keys and the reconciliation observation left out).
  const { state, rule, reason, headSeq, headHash } = describeLedger(ledger, new Uint8Array(0));
  return { state, rule, reason, headSeq, headHash, verified: state === "ready" };
}

/**
 * The stops in force, from the flags (which hold with the store down). A flag that cannot be
 * verified is in force too — the ledger's guard treats it as a stop (fail closed) — and is
 * shown with scope "unverifiable" so the owner sees why every act is refused.
 */
export function stopsInForce(ledger: Ledger | undefined): MessageInitShape<typeof StopInForceSchema>[] {
  if (ledger === undefined) return [];
  const read = ledger.readFlags();
  const recorded = (id: string): bigint => {
    if (ledger.state.status !== "ready") return 0n;
    return BigInt(ledger.view.flagRecorded(id) ?? 0);
  };
  const stops = read.flags
    .filter((f) => f.kind === "stop" && !(ledger.state.status === "ready" && ledger.view.stopCleared(f.id)))
    .map((f) => ({ flagId: f.id, scope: f.scope ?? "", team: f.team, recordedSeq: recorded(f.id) }));
  const unverifiable = read.invalid.map((i) => ({ flagId: i.file, scope: "unverifiable", team: "", recordedSeq: 0n }));
  // A stop on record with no flag: leads's stop of its team (§9), held by its record until the owner's resume names it.
  const byRecord =
    ledger.state.status === "ready"
      ? ledger.view
          .activeStops()
          .filter((s) => s.flagId.startsWith("seq:"))
          .map((s) => ({ flagId: s.flagId, scope: s.scope, team: s.team, recordedSeq: BigInt(s.seq) }))
      : [];
  return [...stops, ...byRecord, ...unverifiable];
}

/** The team file on disk against the policy in force (§10: only an applied policy is ever in force). */
async function teamFileAgainstPolicy(repository: string, policyHash: string | undefined): Promise<{ teamFile: string; teamFileDetail: string }> {
  const path = join(repository, TEAM_FILE_NAME);
  let loaded;
  try {
    // Over a policy in force the owner's change is decided against it (a floor left unmet commits and pauses): not refused on its own.
    loaded = await loadTeamFile(path, { proposal: policyHash !== undefined });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { teamFile: "missing", teamFileDetail: `${path} does not exist` };
    return { teamFile: "invalid", teamFileDetail: `${path} cannot be read: ${code ?? String(error)}` };
  }
  if (!loaded.ok) {
    const first = loaded.errors[0];
    return {
      teamFile: "invalid",
      teamFileDetail: `${loaded.errors.length} error(s); first: ${first?.line !== undefined ? `line ${first.line}: ` : ""}${first?.message ?? "invalid"}`,
    };
  }
  if (policyHash === undefined) return { teamFile: "unapplied", teamFileDetail: `${loaded.hashes.policy} is not applied: run teamd apply` };
  if (loaded.hashes.policy === policyHash) return { teamFile: "in-force", teamFileDetail: "" };
  return {
    teamFile: "differs",
    teamFileDetail: `${loaded.hashes.policy} on disk is not in force (${policyHash} is): run teamd apply to show the diff and apply it`,
  };
}

/** The spend book's view of a team (daemon/server/spend-book.ts) as the proto's SpendStatus (int64 amounts). */
function spendStatus(s: SpendStatus | undefined): { spend?: MessageInitShape<typeof SpendStatusSchema> } {
  if (s === undefined) return {};
  return {
    spend: {
      currency: s.currency,
      periodStartUnixMs: BigInt(s.periodStart),
      periodEndUnixMs: BigInt(s.periodEnd),
      limit: BigInt(s.limit),
      reported: BigInt(s.reported),
      reserved: BigInt(s.reserved),
      remainder: BigInt(s.remainder),
      overage: BigInt(s.overage),
      perDispatch: BigInt(s.perDispatch),
      labs: s.labs.map((l) => ({
        lab: l.lab,
        limited: l.limit !== null,
        limit: BigInt(l.limit ?? 0),
        reported: BigInt(l.reported),
        reserved: BigInt(l.reserved),
        remainder: BigInt(l.remainder),
        meter: l.meter,
        meters: l.meters.map((m) => ({ name: m.name, atUnixMs: BigInt(m.at ?? 0), error: m.error ?? "" })),
      })),
    },
  };
}

/** Per declared lab, the envelope's caps against what is used now (§8): live seats by the lab they launched as. */
function labEnvelopes(
  policy: Policy,
  live: readonly { readonly lab?: string }[],
  carve: ReturnType<typeof seatCarve>,
): MessageInitShape<typeof LabEnvelopeSchema>[] {
  const caps = policy.ceiling;
  if (caps?.seats === undefined && caps?.visibility === undefined && carve.slice === undefined) return [];
  return policy.declared.labs.map((lab) => {
    // The cap a launch meets (§8, §10): the ceiling's, a created team's slice where tighter, less what this team carved to its children.
    const sliced = carve.slice === undefined ? undefined : Object.prototype.hasOwnProperty.call(carve.slice, lab) ? carve.slice[lab] : 0;
    const capped = [caps?.seats?.[lab], sliced].filter((c): c is number => c !== undefined);
    const seatsCap = capped.length === 0 ? undefined : Math.max(0, Math.min(...capped) - (carve.carved[lab] ?? 0));
    const visibility = caps?.visibility?.[lab];
    return {
      lab,
      seatsCapped: seatsCap !== undefined,
      seatsCap: seatsCap ?? 0,
      seatsLive: live.filter((s) => s.lab === lab).length,
      visibilityCapped: visibility !== undefined,
      visibility: visibility === undefined ? [] : visibility.state === "bounded" ? [...visibility.values] : visibility.state === "empty" ? [] : ["."],
    };
  });
}

export async function teamsStatus(
  ledger: Ledger | undefined,
  now: number,
  running: readonly { readonly team: string; readonly lab?: string }[] = [],
  spendOf: (team: string) => SpendStatus | undefined = () => undefined,
): Promise<MessageInitShape<typeof TeamStatusSchema>[]> {
  if (ledger === undefined || ledger.state.status !== "ready") return [];
  const teams: MessageInitShape<typeof TeamStatusSchema>[] = [];
  for (const team of ledger.view.teams()) {
    const inForce = ledger.view.policy(team.team);
    const policyHash = inForce === undefined ? undefined : `sha256:${inForce.teamFileHash}`;
    let leads = "";
    let seats: string[] = [];
    let liveLeases = 0;
    let policyProblem: string | undefined;
    let review: { mode: string; floor: number } = { mode: "", floor: 0 };
    let envelope: MessageInitShape<typeof LabEnvelopeSchema>[] = [];
    let runtime = { runtimeMs: 0n, runtimeLeftMs: 0n };
    if (inForce !== undefined) {
      try {
        const { policy } = policyInForce(ledger, team.team);
        leads = policy.leads?.seat ?? "";
        review = policy.constraints.review;
        seats = Object.keys(policy.seats).sort();
        liveLeases = describeLeases(ledger, team.team, now).leases.filter((l) => l.live).length;
        const clock = ledger.view.runtimeClock(team.team);
        const left = runtimeLeftMs(policy, clock, now);
        if (left !== undefined) runtime = { runtimeMs: BigInt(runtimeWindowMs(policy, clock) ?? 0), runtimeLeftMs: BigInt(Math.ceil(left)) };
        envelope = labEnvelopes(
          policy,
          running.filter((s) => s.team === team.team),
          seatCarve(ledger.view.teams(), team.team),
        );
      } catch (error) {
        policyProblem = error instanceof Error ? error.message : String(error);
      }
    }
    const delegated = inForce?.delegated.length ?? 0;
    const onDisk = await teamFileAgainstPolicy(team.repository, policyHash);
    // §10: delegates changed the policy since the owner's apply — the file on disk says none of it.
    const file =
      delegated > 0 && onDisk.teamFile === "differs"
        ? {
            teamFile: "delegated",
            teamFileDetail: `${delegated} delegated change(s) since the owner's apply (record ${inForce?.ownerSeq ?? 0}): teamd policy export writes the policy in force to the file; teamd apply --drop-delegated takes them back`,
          }
        : onDisk;
    teams.push({
      team: team.team,
      repository: team.repository,
      hub: team.hub,
      policySeq: BigInt(inForce?.seq ?? 0),
      delegatedChanges: delegated,
      parent: team.created?.parent ?? "",
      createdBy: team.created?.by ?? "",
      policyHash: policyHash ?? "",
      ...file,
      policyProblem: policyProblem ?? "",
      leads,
      seats,
      liveLeases,
      reviewMode: review.mode,
      reviewFloor: review.floor,
      envelope,
      ...runtime,
      ...spendStatus(spendOf(team.team)),
    });
  }
  return teams;
}
