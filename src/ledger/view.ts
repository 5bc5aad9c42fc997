import { GateResult, OutcomeResult, PrincipalKind, ReconcileDecision, RecordType, StopScope, type ArtifactIdentity } from "../gen/teamd/v1/ledger_pb.js";
import { encodeProposal, principalKey, proposalOf, sha256, toHex, toSafeNumber } from "./codec.js";
import type { WalkedRecord } from "./chain-walk.js";
import { createTrunkProjector, type TrunkFactsView } from "./trunk-facts.js";
import { createLeaseProjector, type LeaseFactsOfTeam } from "./lease-records.js";

/**
 * The view: the projection of the records into what the kernel decides with (policy in force,
 * stops, leases, revocations, requests and their intents/outcomes, authors, gate passes and
 * the outcomes that void them, and the seats' trunk acts in trunk-facts.ts). It is updated
 * by `apply` as each record commits, and rebuilt from scratch by applying every record on
 * open; both paths run this same function, and `snapshot()` lets a test prove they agree. It
 * holds derived data only: it is never a second source of truth, and nothing in it is written
 * anywhere.
 */

export type RequestStatus = "pending" | "done" | "refused" | "unknown";

export interface Resolution {
  readonly seq: number;
  readonly decision: "accept-done" | "repeat" | "resolved-done" | "resolved-not-done";
  readonly newRequestId: string;
}

export interface RequestState {
  /** principalKey + NUL + request id: request ids are scoped per principal (per seat). */
  readonly key: string;
  readonly principal: string;
  readonly requestId: string;
  /** Hex SHA-256 of the request bytes: a retry must present the same. */
  readonly digest: string;
  readonly team: string;
  readonly target: string;
  readonly intentSeq: number;
  readonly effectId: string;
  readonly status: RequestStatus;
  readonly outcomeSeq: number | undefined;
  readonly note: string;
  readonly reply: Uint8Array;
  readonly resolution: Resolution | undefined;
}

export interface StopState {
  readonly seq: number;
  readonly flagId: string;
  readonly scope: "machine" | "team";
  readonly team: string;
  readonly late: boolean;
}

export interface GatePass {
  readonly seq: number;
  readonly signer: string;
}

export interface LeaseState {
  readonly seq: number;
  readonly leaseId: string;
  readonly parent: string;
  readonly rootGrant: string;
  readonly expiresUnixMs: number;
  readonly holder: string;
}

/** An owner's abandon (`teamd abandon`, §9) is a policy record that renews nothing: not an apply of the owner's file. */
export const ABANDON_ACTION = "policy.abandon";
/** An owner's rebind of a seat's lab (`teamd rebind`, §8) renews nothing either: the clock keeps counting across it. */
export const REBIND_ACTION = "policy.rebind";
/** The policy records that are owner acts but no renewal of the team's runtime. */
export const NOT_RENEWING: readonly string[] = [ABANDON_ACTION, REBIND_ACTION];

export interface PolicyInForce {
  readonly seq: number;
  readonly teamFileHash: string;
  readonly canonical: string;
  readonly startFileHashes: Readonly<Record<string, string>>;
  /** The owner's last applied policy record (the base the delegated changes were made over). */
  readonly ownerSeq: number;
  /** The delegates' grants and agreements since the owner's last apply, oldest first (§10). */
  readonly delegated: readonly DelegatedRecord[];
}

/** One grant or agreement a delegate made (§10): its record, the change, who signed and who confirmed. */
export interface DelegatedRecord {
  readonly seq: number;
  readonly kind: "grant" | "agreement";
  /** The change as canonical JSON (src/kernel/delegated-change.ts). */
  readonly change: string;
  /** The granting seat (the record's signer). */
  readonly signer: string;
  /** A two-granter record's second principal ("owner" or a seat). */
  readonly coAuthorizer?: string;
  readonly timeUnixMs: number;
}

export interface TeamState {
  readonly seq: number;
  readonly team: string;
  readonly repository: string;
  readonly hub: string;
  /** When it was registered (its record's time). */
  readonly timeUnixMs: number;
  /** A team a seat created (§10): its parent, the creating seat, the bound record and form it was made under, and its inherited runtime deadline (0: none). */
  readonly created?: {
    readonly parent: string;
    readonly by: string;
    readonly boundSeq: number;
    readonly bound: string;
    readonly deadlineUnixMs: number;
  };
}

/** A seat's create-bound in force (§10): its record and canonical form. */
export interface CreateBoundState {
  readonly seq: number;
  readonly team: string;
  readonly seat: string;
  readonly canonical: string;
}

/**
 * A team's unattended-runtime clock (§8): the time of the owner's last renewal of it (for a created
 * team never renewed by the owner: its creation), and the deadline a created team inherited —
 * until the owner's own act on it renews it.
 */
export interface RuntimeClock {
  readonly renewedAt: number;
  readonly deadline?: number;
}

export interface LedgerView extends TrunkFactsView {
  readonly lastSeq: number;
  /** The last applied policy of a team: its canonical form is what is in force (never the file on disk). */
  policy(team: string): PolicyInForce | undefined;
  /** A team registered by `teamd init`. */
  team(team: string): TeamState | undefined;
  teams(): readonly TeamState[];
  /** The recorded stops no resume has cleared. */
  activeStops(): readonly StopState[];
  /** The seq of a recorded flag (stop or revocation), by flag id. */
  flagRecorded(flagId: string): number | undefined;
  /** A stop a recorded resume cleared. */
  stopCleared(flagId: string): boolean;
  revoked(subjectKey: string): number | undefined;
  lease(leaseId: string): LeaseState | undefined;
  /** The team's lease records and revoked lease ids, as the kernel reads them (lease-records.ts). */
  leaseFacts(team: string): LeaseFactsOfTeam;
  request(principal: string, requestId: string): RequestState | undefined;
  /**
   * A request answered by records alone (a seat's lease issue or revoke, §15): what its id was
   * used for, the digest of its request bytes, and the records it made — so a retry is answered
   * from them and another payload under the id refused.
   */
  recordedRequest(principal: string, requestId: string): RecordedRequest | undefined;
  /** The seq of the tombstone that hides this record's content, if one does (§15). */
  tombstoneOf(seq: number): number | undefined;
  /** When the owner last renewed the team's unattended runtime (§8): the time of its latest owner-signed policy or renew record; 0: never. */
  renewedAt(team: string): number;
  /** The team's runtime clock: renewedAt, or for a created team the deadline it inherited until the owner renews it (§8). */
  runtimeClock(team: string): RuntimeClock;
  /** A seat's create-bound in force (§10), undefined when none is written or it was cleared. */
  createBound(team: string, seat: string): CreateBoundState | undefined;
  createBounds(): readonly CreateBoundState[];
  /** How many teams were created under one create-bound record. */
  createdUnder(boundSeq: number): number;
  intent(seq: number): RequestState | undefined;
  /** Intents with no outcome yet. */
  pendingIntents(): readonly RequestState[];
  /** Every intent whose outcome is unknown and not yet reconciled, oldest first. */
  unresolvedUnknowns(): readonly RequestState[];
  /** Intents with no outcome yet, on one target. */
  pendingOn(target: string): readonly RequestState[];
  /** Requests whose outcome is unknown and not yet reconciled, on one target. */
  unknownOn(target: string): readonly RequestState[];
  authorsOf(artifact: string): readonly string[];
  gatePasses(effectId: string): readonly GatePass[];
  /** Outcomes refused or unknown that carry this effect id (each voids any pass for it). */
  voidingOutcomes(effectId: string): readonly number[];
  /** The seq of an owner act already recorded, by act id (replays are not recorded twice). */
  ownerAct(actId: string): number | undefined;
  snapshot(): unknown;
}

export interface ViewProjector extends LedgerView {
  apply(record: WalkedRecord): void;
}

/** A request whose records are its whole effect (a lease issued, leases revoked). */
export interface RecordedRequest {
  readonly action: string;
  /** Hex SHA-256 of the request bytes its first record carries. */
  readonly digest: string;
  readonly seqs: readonly number[];
  /** Each record's target name, in record order (the lease issued; each lease revoked). */
  readonly subjects: readonly string[];
}

export function targetKey(team: string, target: { readonly kind?: number; readonly name?: string } | undefined): string {
  return `${team}\u0000${target?.kind ?? 0}\u0000${target?.name ?? ""}`;
}

export function requestKey(principal: string, requestId: string): string {
  return `${principal}\u0000${requestId}`;
}

export function artifactKey(artifact: ArtifactIdentity | undefined): string | undefined {
  const id = artifact?.identity;
  switch (id?.case) {
    case "gitCommit":
      return `commit:${id.value}`;
    case "gitTree":
      return `tree:${id.value}`;
    case "contentSha256":
      return `sha256:${toHex(id.value)}`;
    default:
      return undefined;
  }
}

function addTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

const RESOLUTIONS: Partial<Record<ReconcileDecision, Resolution["decision"]>> = {
  [ReconcileDecision.ACCEPT_DONE]: "accept-done",
  [ReconcileDecision.REPEAT]: "repeat",
  [ReconcileDecision.RESOLVED_DONE]: "resolved-done",
  [ReconcileDecision.RESOLVED_NOT_DONE]: "resolved-not-done",
};

export function createView(): ViewProjector {
  let lastSeq = -1;
  const policies = new Map<string, PolicyInForce>();
  const teams = new Map<string, TeamState>();
  const stops = new Map<string, StopState>();
  const recordedFlags = new Map<string, number>();
  const clearedStops = new Set<string>();
  const revocations = new Map<string, number>();
  const leases = new Map<string, LeaseState>();
  const requests = new Map<string, RequestState>();
  const recordedRequests = new Map<string, RecordedRequest>();
  const tombstones = new Map<number, number>();
  const renewals = new Map<string, number>();
  /** When the owner last applied a policy of its own for a team (an apply; not an abandon or a rebind). */
  const ownerPolicies = new Map<string, number>();
  const bounds = new Map<string, CreateBoundState>();
  const createdCount = new Map<number, number>();
  const intents = new Map<number, string>();
  const intentAfter = new Map<number, string>();
  const pending = new Set<number>();
  const unknownByTarget = new Map<string, Set<number>>();
  const pendingByTarget = new Map<string, Set<number>>();
  const authors = new Map<string, Set<string>>();
  const passes = new Map<string, GatePass[]>();
  const voids = new Map<string, number[]>();
  const ownerActs = new Map<string, number>();
  const trunk = createTrunkProjector();
  const leaseFacts = createLeaseProjector();

  const update = (seq: number, patch: Partial<RequestState>): RequestState | undefined => {
    const key = intents.get(seq);
    const current = key === undefined ? undefined : requests.get(key);
    if (!key || !current) return undefined;
    const next = Object.freeze({ ...current, ...patch });
    requests.set(key, next);
    return next;
  };

  const unblock = (state: RequestState) => {
    const set = unknownByTarget.get(state.target);
    set?.delete(state.intentSeq);
    if (set?.size === 0) unknownByTarget.delete(state.target);
  };

  function apply(record: WalkedRecord): void {
    const { seq, header, payload } = record;
    lastSeq = seq;
    trunk.apply(record);
    leaseFacts.apply(record);
    const team = header.team;
    const detail = payload.detail;
    if (header.signer?.kind === PrincipalKind.OWNER && header.signature) {
      ownerActs.set(toHex(sha256(encodeProposal(proposalOf(header)))), seq);
    }
    if (header.flag?.flagId) recordedFlags.set(header.flag.flagId, seq);
    // §8: only the owner's own acts renew a team's runtime — an apply of its file, a renew.
    if (
      (header.type === RecordType.POLICY || header.type === RecordType.RENEW) &&
      !NOT_RENEWING.includes(header.action) &&
      header.signer?.kind === PrincipalKind.OWNER &&
      header.signature &&
      team !== ""
    )
      renewals.set(team, toSafeNumber(header.timeUnixMs, "record time"));
    if (header.type === RecordType.POLICY && header.action === "policy.apply" && header.signer?.kind === PrincipalKind.OWNER && header.signature && team !== "")
      ownerPolicies.set(team, toSafeNumber(header.timeUnixMs, "record time"));
    switch (header.type) {
      case RecordType.POLICY:
      case RecordType.GRANT:
      case RecordType.AGREEMENT:
        if (header.type !== RecordType.POLICY) noteRecordedRequest(record);
        if (detail.case === "policy") {
          const p = detail.value;
          const owner = header.type === RecordType.POLICY;
          const previous = policies.get(team);
          const coAuthorizer = header.coAuthorization?.principal;
          const delegated: readonly DelegatedRecord[] = owner
            ? []
            : [
                ...(previous?.delegated ?? []),
                Object.freeze({
                  seq,
                  kind: header.type === RecordType.GRANT ? ("grant" as const) : ("agreement" as const),
                  change: p.change,
                  signer: header.signer?.seat ?? "",
                  ...(coAuthorizer !== undefined ? { coAuthorizer: coAuthorizer.kind === PrincipalKind.OWNER ? "owner" : coAuthorizer.seat } : {}),
                  timeUnixMs: toSafeNumber(header.timeUnixMs, "record time"),
                }),
              ];
          policies.set(
            team,
            Object.freeze({
              seq,
              teamFileHash: toHex(p.teamFileHash),
              canonical: p.canonical,
              startFileHashes: Object.freeze({ ...p.startFileHashes }),
              ownerSeq: owner ? seq : (previous?.ownerSeq ?? 0),
              delegated: Object.freeze(delegated),
            }),
          );
        }
        break;
      case RecordType.TEAM:
        // A seat's create is answered from its records on a retry (§15), like a lease's.
        noteRecordedRequest(record);
        if (detail.case === "team") {
          const t = detail.value;
          const created =
            t.parent !== "" && header.signer?.kind === PrincipalKind.SEAT
              ? Object.freeze({
                  parent: t.parent,
                  by: header.signer.seat,
                  boundSeq: toSafeNumber(t.boundSeq, "bound seq"),
                  bound: t.bound,
                  deadlineUnixMs: toSafeNumber(t.deadlineUnixMs, "deadline"),
                })
              : undefined;
          if (created !== undefined) createdCount.set(created.boundSeq, (createdCount.get(created.boundSeq) ?? 0) + 1);
          // The owner's `teamd init` in a created team's repository registers it again: its lineage (parent, slice, clock) stays.
          const before = teams.get(team);
          const lineage = created ?? (before?.repository === t.repository ? before.created : undefined);
          teams.set(
            team,
            Object.freeze({
              seq,
              team,
              repository: t.repository,
              hub: t.hub,
              timeUnixMs: before !== undefined && lineage !== undefined ? before.timeUnixMs : toSafeNumber(header.timeUnixMs, "record time"),
              ...(lineage !== undefined ? { created: lineage } : {}),
            }),
          );
        }
        break;
      case RecordType.CREATE_BOUND:
        if (detail.case === "createBound") {
          const key = `${team}\u0000${detail.value.seat}`;
          if (detail.value.canonical === "") bounds.delete(key);
          else bounds.set(key, Object.freeze({ seq, team, seat: detail.value.seat, canonical: detail.value.canonical }));
        }
        break;
      case RecordType.LEASE:
        noteRecordedRequest(record);
        if (detail.case === "lease") {
          const l = detail.value;
          leases.set(
            l.leaseId,
            Object.freeze({
              seq,
              leaseId: l.leaseId,
              parent: l.parentLeaseId,
              rootGrant: l.rootGrant,
              expiresUnixMs: toSafeNumber(l.expiresUnixMs, "lease expiry"),
              holder: principalKey(l.holder),
            }),
          );
        }
        break;
      case RecordType.REVOCATION:
        noteRecordedRequest(record);
        if (detail.case === "revocation") revocations.set(`${detail.value.subject}:${detail.value.subjectId}`, seq);
        break;
      case RecordType.STOP:
        if (detail.case === "stop") {
          const flagId = header.flag?.flagId || `seq:${seq}`;
          if (!clearedStops.has(flagId)) {
            stops.set(
              flagId,
              Object.freeze({
                seq,
                flagId,
                scope: detail.value.scope === StopScope.MACHINE ? "machine" : "team",
                team: detail.value.team,
                late: header.flag?.late ?? false,
              }),
            );
          }
        }
        break;
      case RecordType.RESUME:
        if (detail.case === "resume")
          for (const id of detail.value.flagIds) {
            stops.delete(id);
            clearedStops.add(id);
          }
        break;
      case RecordType.INTENT:
      case RecordType.GATE:
      case RecordType.REVIEW: {
        // A gate's and a review's intents are GATE and REVIEW records (§15): intents all the same.
        if (header.type === RecordType.GATE && detail.case === "gate" && detail.value.result === GateResult.PASS && payload.effectId.byteLength > 0) {
          addTo(passes, toHex(payload.effectId), { seq, signer: principalKey(header.signer) });
        }
        openIntent(record, targetKey(team, payload.target));
        const onTarget = pendingByTarget.get(targetKey(team, payload.target)) ?? new Set<number>();
        onTarget.add(seq);
        pendingByTarget.set(targetKey(team, payload.target), onTarget);
        const after = artifactKey(payload.after);
        if (after) intentAfter.set(seq, after);
        break;
      }
      case RecordType.SEAT_START:
        // A start is the daemon's act: its seat_start record is the intent (written before the
        // launch, older records carry no request id), closed by an outcome. Pending and answered
        // like any intent, but on no act's target: a starting seat's own acts are not held up by it.
        if (payload.requestId !== "") openIntent(record, `${targetKey(team, payload.target)}#start`);
        break;
      case RecordType.ARCHIVE:
        // The owner acts an archive took out of the live store (archive-plan.ts): still answered
        // as recorded on a replay (and a flag of one as recorded), never recorded twice.
        if (detail.case === "archive")
          for (const id of detail.value.spentActs) {
            ownerActs.set(toHex(id), seq);
            recordedFlags.set(toHex(id), seq);
          }
        break;
      case RecordType.TOMBSTONE:
        if (detail.case === "tombstone") tombstones.set(toSafeNumber(detail.value.seq, "tombstoned seq"), seq);
        break;
      case RecordType.OUTCOME:
        if (detail.case === "outcome") applyOutcome(seq, detail.value.intentSeq, detail.value.result, detail.value.note, detail.value.reply);
        if (detail.case === "outcome" && detail.value.result !== OutcomeResult.DONE && payload.effectId.byteLength > 0) {
          addTo(voids, toHex(payload.effectId), seq);
        }
        break;
      case RecordType.RECONCILE:
        if (detail.case === "reconcile" && detail.value.subject.case === "outcome") {
          const o = detail.value.subject.value;
          const decision = RESOLUTIONS[o.decision];
          const intentSeq = toSafeNumber(o.intentSeq, "intent seq");
          const state = decision ? update(intentSeq, { resolution: { seq, decision, newRequestId: o.newRequestId } }) : undefined;
          if (state) unblock(state);
          if (state && (decision === "accept-done" || decision === "resolved-done")) addAuthor(intentSeq, state.principal);
        }
        break;
      default:
        break;
    }
  }

  /** An intent's request, pending until its outcome: answered to a retry, settled by recovery. */
  function openIntent({ seq, header, payload }: WalkedRecord, target: string): void {
    const principal = principalKey(header.actor);
    const key = requestKey(principal, payload.requestId);
    requests.set(
      key,
      Object.freeze({
        key,
        principal,
        requestId: payload.requestId,
        digest: toHex(payload.requestDigest),
        team: header.team,
        target,
        intentSeq: seq,
        effectId: toHex(payload.effectId),
        status: "pending",
        outcomeSeq: undefined,
        note: "",
        reply: new Uint8Array(0),
        resolution: undefined,
      } satisfies RequestState),
    );
    intents.set(seq, key);
    pending.add(seq);
  }

  function noteRecordedRequest({ seq, header, payload }: WalkedRecord): void {
    if (payload.requestId === "" || header.actor?.kind !== PrincipalKind.SEAT) return;
    const key = requestKey(principalKey(header.actor), payload.requestId);
    const subject = payload.target?.name ?? "";
    const prior = recordedRequests.get(key);
    // One request's records are one batch (a revocation and its cascade): they share the id.
    recordedRequests.set(
      key,
      Object.freeze({
        action: prior?.action ?? header.action,
        digest: prior?.digest ?? toHex(payload.requestDigest),
        seqs: Object.freeze([...(prior?.seqs ?? []), seq]),
        subjects: Object.freeze([...(prior?.subjects ?? []), subject]),
      }),
    );
  }

  function addAuthor(intentSeq: number, principal: string): void {
    const after = intentAfter.get(intentSeq);
    if (!after || !principal.startsWith("seat:")) return;
    const set = authors.get(after) ?? new Set<string>();
    set.add(principal);
    authors.set(after, set);
  }

  function applyOutcome(seq: number, intentSeqBig: bigint, result: OutcomeResult, note: string, reply: Uint8Array): void {
    const intentSeq = toSafeNumber(intentSeqBig, "intent seq");
    const status: RequestStatus = result === OutcomeResult.DONE ? "done" : result === OutcomeResult.REFUSED ? "refused" : "unknown";
    const state = update(intentSeq, { status, outcomeSeq: seq, note, reply });
    if (!state) return;
    pending.delete(intentSeq);
    const onTarget = pendingByTarget.get(state.target);
    onTarget?.delete(intentSeq);
    if (onTarget?.size === 0) pendingByTarget.delete(state.target);
    if (status === "unknown") {
      const set = unknownByTarget.get(state.target) ?? new Set<number>();
      set.add(intentSeq);
      unknownByTarget.set(state.target, set);
    }
    if (status === "done") addAuthor(intentSeq, state.principal);
  }

  const stateOf = (seq: number) => {
    const key = intents.get(seq);
    return key === undefined ? undefined : requests.get(key);
  };

  return {
    apply,
    get lastSeq() {
      return lastSeq;
    },
    policy: (team) => policies.get(team),
    team: (team) => teams.get(team),
    teams: () => [...teams.values()].sort((a, b) => (a.team < b.team ? -1 : a.team > b.team ? 1 : 0)),
    activeStops: () => [...stops.values()],
    flagRecorded: (id) => recordedFlags.get(id),
    stopCleared: (id) => clearedStops.has(id),
    revoked: (subject) => revocations.get(subject),
    lease: (id) => leases.get(id),
    leaseFacts: (team) => leaseFacts.leaseFacts(team),
    request: (principal, requestId) => requests.get(requestKey(principal, requestId)),
    recordedRequest: (principal, requestId) => recordedRequests.get(requestKey(principal, requestId)),
    tombstoneOf: (seq) => tombstones.get(seq),
    renewedAt: (team) => renewals.get(team) ?? 0,
    runtimeClock: (team) => {
      const created = teams.get(team);
      const renewed = renewals.get(team);
      const lineage = created?.created;
      if (lineage === undefined || created === undefined) return { renewedAt: renewed ?? 0 };
      const inherited = lineage.deadlineUnixMs > 0 ? lineage.deadlineUnixMs : undefined;
      // Until the owner's own act on it (a renewal later than its creation), a created team runs to the deadline it inherited.
      if (renewed === undefined || renewed < created.timeUnixMs)
        return inherited !== undefined ? { renewedAt: created.timeUnixMs, deadline: inherited } : { renewedAt: created.timeUnixMs };
      // The owner renewed it; while its policy is still the seat's (no apply of the owner's own since), a renewal gives
      // it the window it was given again — never the limit the seat wrote, nor none (§8: the runtime is owner-sovereign).
      const applied = ownerPolicies.get(team);
      if ((applied === undefined || applied < created.timeUnixMs) && inherited !== undefined)
        return { renewedAt: renewed, deadline: renewed + (inherited - created.timeUnixMs) };
      return { renewedAt: renewed };
    },
    createBound: (team, seat) => bounds.get(`${team}\u0000${seat}`),
    createBounds: () => [...bounds.values()].sort((a, b) => a.seq - b.seq),
    createdUnder: (seq) => createdCount.get(seq) ?? 0,
    intent: stateOf,
    pendingIntents: () => [...pending].sort((a, b) => a - b).flatMap((s) => stateOf(s) ?? []),
    pendingOn: (target) => [...(pendingByTarget.get(target) ?? [])].flatMap((s) => stateOf(s) ?? []),
    unresolvedUnknowns: () =>
      [...unknownByTarget.values()]
        .flatMap((seqs) => [...seqs])
        .sort((a, b) => a - b)
        .flatMap((seq) => stateOf(seq) ?? [])
        .filter((state) => state.resolution === undefined),
    unknownOn: (target) => [...(unknownByTarget.get(target) ?? [])].flatMap((s) => stateOf(s) ?? []),
    authorsOf: (artifact) => [...(authors.get(artifact) ?? [])].sort(),
    gatePasses: (effectId) => passes.get(effectId) ?? [],
    voidingOutcomes: (effectId) => voids.get(effectId) ?? [],
    ownerAct: (actId) => ownerActs.get(actId),
    commitAuthor: trunk.commitAuthor,
    trunkFacts: trunk.trunkFacts,
    snapshot: () => {
      const sorted = <T>(entries: Iterable<[string, T]>) => Object.fromEntries([...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      return {
        lastSeq,
        policies: sorted(policies),
        teams: sorted(teams),
        stops: sorted(stops),
        recordedFlags: sorted(recordedFlags),
        clearedStops: [...clearedStops].sort(),
        revocations: sorted(revocations),
        leases: sorted(leases),
        recordedRequests: sorted(recordedRequests),
        tombstones: Object.fromEntries([...tombstones].sort(([a], [b]) => a - b)),
        renewals: sorted(renewals),
        ownerPolicies: sorted(ownerPolicies),
        createBounds: sorted(bounds),
        createdCount: Object.fromEntries([...createdCount].sort(([a], [b]) => a - b)),
        requests: sorted([...requests].map(([k, v]) => [k, { ...v, reply: toHex(v.reply) }] as [string, unknown])),
        pending: [...pending].sort((a, b) => a - b),
        unknownByTarget: sorted([...unknownByTarget].map(([k, v]) => [k, [...v].sort((a, b) => a - b)] as [string, number[]])),
        authors: sorted([...authors].map(([k, v]) => [k, [...v].sort()] as [string, string[]])),
        passes: sorted(passes),
        voids: sorted(voids),
        ownerActs: sorted(ownerActs),
        trunk: trunk.snapshot(),
      };
    },
  };
}
