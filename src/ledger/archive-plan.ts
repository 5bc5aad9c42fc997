import { PrincipalKind, RecordType, RevocationSubject, type RecordHeader, type RecordPayload } from "../gen/teamd/v1/ledger_pb.js";
import { decodeHeader, decodePayload, encodeProposal, headerHash, proposalOf, sha256, toSafeNumber } from "./codec.js";
import { isTrunkRecord, READ_IN_FULL, unsettled } from "./gate-reads.js";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import type { StoreReader } from "./store.js";
import { TRUNK_ACTIONS } from "./trunk-facts.js";
import { NOT_RENEWING, type LedgerView } from "./view.js";

/**
 * Which records below an archive's cut the gate still reads (§15 archival; docs/records.md
 * "Archival"): they stay in the live store, everything else below the cut leaves it. The view
 * the daemon decides with is rebuilt from the live store alone at every open, so what stays is
 * exactly what that view must still hold for the gate to decide as before:
 *
 * - genesis (the keys), each registered team's record, the policy in force and the team's last
 *   renewal (the unattended runtime counts from it, §8);
 * - live leases (not expired, not revoked) and every lease they rest on (their chain, §7), and
 *   every revocation that is not of a lease (a seat's stays in force), and the revocation of
 *   any lease that stays (a revoked parent under a lease not yet revoked itself);
 * - stops in force, and a record whose flag file is still on disk (a resume clearing such a
 *   stop too): the flag and its record are one statement;
 * - every intent whose outcome is not settled (pending, or unknown and not reconciled), with
 *   its outcome, and the start of a run no seat_stop has ended (the envelope counts live runs);
 * - the trunk's gated acts (review, gate, merge, deploy: their passes, reviews and consumption),
 *   with their outcomes and resolutions. Kept whole for now: they are a few per change, and a
 *   finer rule (drop an effect id once its pass can serve nothing) is not built;
 * - a push or file write whose commit is not on a trunk yet (the authorship of an unmerged
 *   change); which commits are merged is the hub's to say (`merged`), and without it every
 *   done push stays.
 *
 * - the spend envelope's meter reports and reservations of the last SPEND_KEEP_MS (62 days: a
 *   spend period is at most 31 days or a month, and the book reads this period and the one before);
 * - each seat's last handoff checkpoint (its next run is given it).
 *
 * What leaves: refusals, notices, served reads, seat stops, older checkpoints, settled intents and
 * outcomes of every other act, expired or revoked leases and their revocations, older policies,
 * older archive records. An owner act that leaves is named in the cut record by its id
 * (`spentActs`): its replay is still answered as recorded (view.ts), never recorded twice.
 */

/** How long the spend envelope's records stay live: this period and the one before, each at most 31 days (§8). */
export const SPEND_KEEP_MS = 62 * 24 * 60 * 60 * 1000;

export interface KeptRecord {
  readonly seq: number;
  readonly hash: Uint8Array;
  readonly type: RecordType;
  /** Why the gate still reads it. */
  readonly why: string;
  /** Kept without asking: genesis and the archive records (the ledger's own frame), never a reason to refuse a cut. */
  readonly frame: boolean;
}

export interface CutPlan {
  readonly fromSeq: number;
  readonly cutSeq: number;
  /** The header hash of record cutSeq - 1: what the live chain resumes from. */
  readonly cutHash: Uint8Array;
  /** Every record below the cut the live store keeps, ascending. */
  readonly kept: readonly KeptRecord[];
  /** The ids of the owner acts whose records leave the live store. */
  readonly spentActs: readonly Uint8Array[];
  /** How many records leave the live store. */
  readonly archived: number;
}

export interface PlanOptions {
  readonly reader: StoreReader;
  readonly view: LedgerView;
  readonly now: number;
  readonly fromSeq: number;
  readonly cutSeq: number;
  /** The ids of the flags on disk (stops and revocations). */
  readonly flagIds: ReadonlySet<string>;
  /** The subjects ("<RevocationSubject>:<id>") of the revocation flags on disk. */
  readonly revocationFlags: ReadonlySet<string>;
  /** Is this commit on one of the team's trunks (merged)? Absent: no commit is known to be. */
  readonly merged?: (team: string, commit: string) => boolean;
  readonly progress?: (done: number, total: number) => void;
}

const PAGE = 2048;

function field(payload: RecordPayload, key: string): string[] {
  return payload.fields.filter((f) => f.key === key).map((f) => f.value);
}

/** Plan a cut: one read of the live store below it, a page at a time, yielding to the event loop between pages (the daemon serves on). */
export async function planCut(options: PlanOptions): Promise<CutPlan> {
  const { reader, view, now, cutSeq } = options;
  const last = reader.record(cutSeq - 1);
  if (last === undefined) throw new Error(`record ${cutSeq - 1}, the last before the cut, is not in the live store`);
  const cutHash = headerHash(last.header);

  // Runs a seat_stop ended (it may come after the cut): a start without one is a live run.
  const stoppedRuns = new Set<string>();
  for (let at = 0; ;) {
    const page = reader.recordsOfType(RecordType.SEAT_STOP, at, PAGE);
    if (page.length === 0) break;
    for (const row of page) {
      at = row.seq + 1;
      const detail = row.payload ? decodePayload(row.payload).detail : undefined;
      if (detail?.case === "seat") stoppedRuns.add(detail.value.runId);
    }
  }

  // Live leases per team, and every lease one of them rests on (its chain).
  const leaseNeeds = new Map<string, Map<string, string>>();
  const leasesOf = (team: string): Map<string, string> => {
    let needs = leaseNeeds.get(team);
    if (needs !== undefined) return needs;
    needs = new Map();
    const facts = view.leaseFacts(team);
    const revoked = new Set(facts.revokedLeases);
    for (const lease of Object.values(facts.leases)) {
      const live = lease.expiresAt > now && !revoked.has(lease.id) && !options.revocationFlags.has(`${RevocationSubject.LEASE}:${lease.id}`);
      if (!live) continue;
      needs.set(lease.id, `lease ${lease.id} of seat ${lease.holder} is live until ${new Date(lease.expiresAt).toISOString()}`);
      for (let parent = lease.parent, depth = 0; parent !== undefined && depth < 64; depth++) {
        if (!needs.has(parent)) needs.set(parent, `lease ${parent}: the live lease ${lease.id} rests on it`);
        parent = Object.prototype.hasOwnProperty.call(facts.leases, parent) ? facts.leases[parent]?.parent : undefined;
      }
    }
    leaseNeeds.set(team, needs);
    return needs;
  };

  // Each seat's last handoff (the next run reads it), by team and seat.
  const lastHandoff = new Map<string, number>();
  for (let at = 0; ;) {
    const page = reader.recordsOfType(RecordType.CHECKPOINT, at, PAGE);
    if (page.length === 0) break;
    for (const row of page) {
      at = row.seq + 1;
      const header = decodeHeader(row.header);
      let seat = "";
      if (row.payload === null) continue; // an earlier archive took a tombstoned one's payload
      try {
        seat = decodePayload(row.payload).target?.name ?? "";
      } catch {
        continue; // a payload that does not decode is no handoff (verify says what is wrong)
      }
      lastHandoff.set(`${header.team}/${seat}`, row.seq);
    }
  }

  // The team's last renewal (§8): its latest owner-signed policy or renew record, anywhere in the live store.
  const renewals = new Map<string, number>();
  for (const type of [RecordType.POLICY, RecordType.RENEW]) {
    for (let at = 0; ;) {
      const page = reader.recordsOfType(type, at, PAGE);
      if (page.length === 0) break;
      for (const row of page) {
        at = row.seq + 1;
        const header = decodeHeader(row.header);
        if (header.signer?.kind !== PrincipalKind.OWNER || !header.signature || header.team === "" || NOT_RENEWING.includes(header.action)) continue;
        if ((renewals.get(header.team) ?? -1) < row.seq) renewals.set(header.team, row.seq);
      }
    }
  }

  const kept: KeptRecord[] = [];
  const keptIntents = new Map<number, string>();
  const keptSeqs = new Set<number>();
  const spentActs: Uint8Array[] = [];
  let archived = 0;

  const need = (seq: number, header: RecordHeader, payload: RecordPayload): { why: string; frame: boolean } | undefined => {
    const team = header.team;
    const detail = payload.detail;
    if (header.flag?.flagId && options.flagIds.has(header.flag.flagId))
      return { why: "its flag file is still on disk (the flag and its record are one statement)", frame: false };
    switch (header.type) {
      case RecordType.GENESIS:
        return { why: READ_IN_FULL[RecordType.GENESIS] as string, frame: true };
      case RecordType.ARCHIVE:
        return undefined;
      case RecordType.TEAM:
        if (view.team(team)?.seq === seq) return { why: `team ${team}'s registration (its repository and hub)`, frame: false };
        // A created team's creation carries its lineage (parent, slice, inherited clock), which a later registration keeps.
        return header.action === "team.create" && view.team(team)?.created !== undefined
          ? { why: `team ${team}'s creation (its parent, its slice, its inherited runtime)`, frame: false }
          : undefined;
      case RecordType.POLICY:
        if (view.policy(team)?.seq === seq) return { why: `the policy in force of team ${team}`, frame: false };
        if (view.policy(team)?.ownerSeq === seq)
          return { why: `the owner's last apply for team ${team}: the delegated grants in force were made over it`, frame: false };
        return renewals.get(team) === seq ? { why: `team ${team}'s last renewal: its unattended runtime counts from it`, frame: false } : undefined;
      case RecordType.CREATE_BOUND:
        return detail.case === "createBound" && view.createBound(team, detail.value.seat)?.seq === seq
          ? { why: `the create-bound of ${detail.value.seat}@${team} in force`, frame: false }
          : undefined;
      case RecordType.RENEW:
        return renewals.get(team) === seq ? { why: `team ${team}'s last renewal: its unattended runtime counts from it`, frame: false } : undefined;
      case RecordType.GRANT:
      case RecordType.AGREEMENT:
        // Those since the owner's last apply are in force (the view rebuilds them from that apply on); older ones are history.
        return (view.policy(team)?.delegated ?? []).some((d) => d.seq === seq)
          ? { why: `${READ_IN_FULL[header.type] as string} (team ${team}, since the owner's last apply)`, frame: false }
          : undefined;
      case RecordType.METER:
      case RecordType.RESERVE:
        return Number(header.timeUnixMs) >= now - SPEND_KEEP_MS
          ? {
              why: `the spend envelope of team ${team} counts its ${header.type === RecordType.METER ? "meter reports" : "reservations"} of this period and the one before`,
              frame: false,
            }
          : undefined;
      case RecordType.CHECKPOINT:
        return lastHandoff.get(`${team}/${payload.target?.name ?? ""}`) === seq
          ? { why: `seat ${team}/${payload.target?.name ?? ""}'s last handoff: its next run is given it`, frame: false }
          : undefined;
      case RecordType.LEASE: {
        const id = detail.case === "lease" ? detail.value.leaseId : "";
        const why = leasesOf(team).get(id);
        return why === undefined ? undefined : { why, frame: false };
      }
      case RecordType.REVOCATION:
        // A revocation of a lease that stays (one a live lease rests on) stays with it: without it the lease would read unrevoked.
        if (detail.case === "revocation" && detail.value.subject === RevocationSubject.LEASE && leasesOf(team).has(detail.value.subjectId))
          return { why: `the revocation of lease ${detail.value.subjectId}, which stays`, frame: false };
        if (detail.case === "revocation" && detail.value.subject !== RevocationSubject.LEASE)
          return {
            why: `the revocation of ${RevocationSubject[detail.value.subject]?.toLowerCase() ?? "a subject"} ${detail.value.subjectId} stays in force`,
            frame: false,
          };
        return undefined;
      case RecordType.STOP:
        return view.activeStops().some((s) => s.seq === seq) ? { why: "a stop in force", frame: false } : undefined;
      case RecordType.RESUME:
        return detail.case === "resume" && detail.value.flagIds.some((id) => options.flagIds.has(id))
          ? { why: "it cleared a stop whose flag file is still on disk", frame: false }
          : undefined;
      case RecordType.TOMBSTONE: {
        const of = detail.case === "tombstone" ? toSafeNumber(detail.value.seq, "tombstoned seq") : -1;
        return keptSeqs.has(of) ? { why: `the tombstone of record ${of}, which stays`, frame: false } : undefined;
      }
      case RecordType.OUTCOME:
      case RecordType.RECONCILE: {
        const of =
          detail.case === "outcome"
            ? toSafeNumber(detail.value.intentSeq, "intent seq")
            : detail.case === "reconcile" && detail.value.subject.case === "outcome"
              ? toSafeNumber(detail.value.subject.value.intentSeq, "intent seq")
              : -1;
        const why = keptIntents.get(of);
        return why === undefined ? undefined : { why: `it settles intent ${of}, which stays: ${why}`, frame: false };
      }
      case RecordType.INTENT:
      case RecordType.GATE:
      case RecordType.REVIEW:
      case RecordType.SEAT_START: {
        const why = intentNeed(seq, header, payload);
        if (why !== undefined) keptIntents.set(seq, why);
        return why === undefined ? undefined : { why, frame: false };
      }
      default:
        return undefined;
    }
  };

  function intentNeed(seq: number, header: RecordHeader, payload: RecordPayload): string | undefined {
    if (unsettled(view, seq)) return `intent ${seq} (${header.action}) has no settled outcome (teamd ledger resolve ${seq})`;
    if (header.type === RecordType.SEAT_START) {
      const detail = payload.detail;
      const run = detail.case === "seat" ? detail.value.runId : "";
      const started = view.intent(seq)?.status === "done" || payload.requestId === "";
      return started && run !== "" && !stoppedRuns.has(run)
        ? `the start of seat ${header.team}/${detail.case === "seat" ? detail.value.seat : ""}'s live run ${run}`
        : undefined;
    }
    if (!isTrunkRecord(header)) return undefined;
    const act = TRUNK_ACTIONS[header.action];
    if (act !== "push" && act !== "write") return `a ${header.action} act's record: the gate reads its passes, reviews and consumption`;
    const state = view.intent(seq);
    const done =
      state !== undefined && (state.status === "done" || state.resolution?.decision === "accept-done" || state.resolution?.decision === "resolved-done");
    if (!done || state === undefined) return undefined;
    const commits = act === "push" ? field(payload, "commit") : [new TextDecoder().decode(state.reply)];
    const open = commits.find((c) => c !== "" && !(options.merged?.(header.team, c) ?? false));
    return open === undefined ? undefined : `the authorship of commit ${open.slice(0, 12)} (not on a trunk yet)`;
  }

  const total = cutSeq;
  for (let at = 0; at < cutSeq;) {
    const page = reader.records(at, PAGE, cutSeq - 1);
    if (page.length === 0) break;
    for (const row of page) {
      at = row.seq + 1;
      const header = decodeHeader(row.header);
      // A tombstoned record an earlier archive took has no payload here; it is kept only if a need says so from its header.
      const payload = row.payload ? decodePayload(row.payload) : decodePayload(new Uint8Array(0));
      const needed = need(row.seq, header, payload);
      if (needed !== undefined) {
        kept.push({ seq: row.seq, hash: headerHash(row.header), type: header.type, why: needed.why, frame: needed.frame });
        keptSeqs.add(row.seq);
        continue;
      }
      archived++;
      if (header.signer?.kind === PrincipalKind.OWNER && header.signature) spentActs.push(sha256(encodeProposal(proposalOf(header))));
    }
    options.progress?.(Math.min(at, total), total);
    await yieldToLoop();
  }
  return { fromSeq: options.fromSeq, cutSeq, cutHash, kept, spentActs, archived };
}

/** The refusal's words for a cut that would move out what the gate reads: each record, why, and the fix. */
export function describeNeeded(plan: CutPlan, limit = 8): string {
  const needed = plan.kept.filter((k) => !k.frame);
  const shown = needed
    .slice(0, limit)
    .map((k) => `record ${k.seq}: ${k.why}`)
    .join("; ");
  const more = needed.length > limit ? `; and ${needed.length - limit} more` : "";
  const first = needed[0]?.seq ?? plan.cutSeq;
  return (
    `${needed.length} record(s) before the cut at ${plan.cutSeq} are still read by the gate: ${shown}${more}. ` +
    `Fix: cut before them (--before ${first}), settle them (teamd lease revoke, teamd ledger resolve, teamd apply), ` +
    `or keep them in the live store past the cut (--keep)`
  );
}
