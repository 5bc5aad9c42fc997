import { PrincipalKind, RecordType, RevocationSubject, TargetKind, type RecordHeader, type RecordPayload } from "../gen/teamd/v1/ledger_pb.js";
import type { LeaseFact } from "../kernel/facts.js";
import type { WalkedRecord } from "./chain-walk.js";
import { toSafeNumber, type PrincipalInit } from "./codec.js";
import type { RecordDraft } from "./record-draft.js";

/**
 * Lease records and their revocations (§7, §15), both ways: the draft a lease or a
 * revocation is appended as, and the projection of those records into the kernel's lease
 * facts. A lease record is immutable: the LEASE detail carries its id, parent, root grant,
 * expiry and holder; the fields carry what the kernel also reads — the issuer, capability,
 * the scope as the record writes it (canonical JSON), the issue time and a co-signer. A
 * lease is revoked by a separate REVOCATION record (subject LEASE), never by a change.
 *
 * The projection keeps, per team, the leases by id and the revoked ids (monotonic), and
 * hands the kernel one frozen object per change — so a decision reads them without copying
 * 10,000 leases per request.
 */
export interface LeaseFactsOfTeam {
  readonly leases: Readonly<Record<string, LeaseFact>>;
  /** Lease ids with a revocation record, in record order. */
  readonly revokedLeases: readonly string[];
}

export const LEASE_ISSUE_ACTION = "lease.issue";
export const LEASE_REVOKE_ACTION = "lease.revoke";

const field = (fields: readonly { key: string; value: string }[], key: string): string | undefined => fields.find((f) => f.key === key)?.value;

/** The record a decided lease is appended as (a seat's issuance; the owner signs the same payload). */
export function leaseDraft(team: string, lease: LeaseFact, actor: PrincipalInit, request?: SeatRequest): RecordDraft {
  return {
    type: RecordType.LEASE,
    team,
    actor,
    action: LEASE_ISSUE_ACTION,
    capability: { capability: lease.capability },
    payload: { ...leasePayload(team, lease, request?.id ?? ""), ...(request !== undefined ? { requestDigest: request.digest } : {}) },
  };
}

/** A seat's request id and the digest of its request bytes: a retry must match both (§15). */
export interface SeatRequest {
  readonly id: string;
  readonly digest: Uint8Array;
}

export function leasePayload(team: string, lease: LeaseFact, requestId = ""): RecordDraft["payload"] {
  return {
    target: { kind: TargetKind.LEASE, name: lease.id },
    rootGrant: lease.rootGrant,
    requestId,
    fields: [
      { key: "issuer", value: lease.issuer },
      { key: "capability", value: lease.capability },
      { key: "scope", value: JSON.stringify(lease.scope) },
      { key: "issuedAt", value: String(lease.issuedAt) },
      ...(lease.coSigner !== undefined ? [{ key: "coSigner", value: lease.coSigner }] : []),
    ],
    detail: {
      case: "lease",
      value: {
        leaseId: lease.id,
        parentLeaseId: lease.parent ?? "",
        rootGrant: lease.rootGrant,
        expiresUnixMs: BigInt(lease.expiresAt),
        holder: { kind: PrincipalKind.SEAT, team, seat: lease.holder },
      },
    },
  };
}

/** A revocation of one lease the daemon appends (a seat's revocation, or a cascade of an owner act). */
export function leaseRevocationDraft(
  team: string,
  leaseId: string,
  reason: string,
  actor: PrincipalInit,
  signer?: PrincipalInit,
  request?: SeatRequest,
): RecordDraft {
  return {
    type: RecordType.REVOCATION,
    team,
    actor,
    ...(signer !== undefined ? { signer } : {}),
    action: LEASE_REVOKE_ACTION,
    payload: {
      target: { kind: TargetKind.LEASE, name: leaseId },
      ...(request !== undefined ? { requestId: request.id, requestDigest: request.digest } : {}),
      detail: { case: "revocation", value: { subject: RevocationSubject.LEASE, subjectId: leaseId, reason } },
    },
  };
}

/** Read a LEASE record back as the kernel's fact; undefined for a record that does not carry one. */
export function leaseFactOf(record: {
  readonly header: Pick<RecordHeader, "type" | "capability" | "timeUnixMs">;
  readonly payload: RecordPayload;
}): LeaseFact | undefined {
  const { header, payload } = record;
  if (header.type !== RecordType.LEASE || payload.detail.case !== "lease") return undefined;
  const l = payload.detail.value;
  const fields = payload.fields;
  const issuer = field(fields, "issuer");
  const capability = field(fields, "capability") ?? header.capability?.capability;
  const scopeText = field(fields, "scope");
  if (!l.leaseId || !issuer || !capability || scopeText === undefined || l.holder?.kind !== PrincipalKind.SEAT) return undefined;
  let scope: LeaseFact["scope"];
  try {
    scope = JSON.parse(scopeText) as LeaseFact["scope"];
  } catch {
    return undefined;
  }
  const coSigner = field(fields, "coSigner");
  return Object.freeze({
    id: l.leaseId,
    ...(l.parentLeaseId ? { parent: l.parentLeaseId } : {}),
    rootGrant: l.rootGrant,
    issuer,
    holder: l.holder.seat,
    capability,
    scope: Object.freeze(scope),
    issuedAt: Number(field(fields, "issuedAt") ?? toSafeNumber(header.timeUnixMs, "time")),
    expiresAt: toSafeNumber(l.expiresUnixMs, "lease expiry"),
    ...(coSigner ? { coSigner } : {}),
  });
}

export interface LeaseProjector {
  apply(record: WalkedRecord): void;
  /** The team's lease facts: the same frozen object until a lease or revocation of the team commits. */
  leaseFacts(team: string): LeaseFactsOfTeam;
  /** The team a lease belongs to. */
  leaseTeam(leaseId: string): string | undefined;
}

const EMPTY: LeaseFactsOfTeam = Object.freeze({ leases: Object.freeze({}), revokedLeases: Object.freeze([]) });

export function createLeaseProjector(): LeaseProjector {
  const byTeam = new Map<string, { leases: Map<string, LeaseFact>; revoked: Set<string>; frozen: LeaseFactsOfTeam | undefined }>();
  const teamOf = new Map<string, string>();
  const slot = (team: string) => {
    let s = byTeam.get(team);
    if (s === undefined) byTeam.set(team, (s = { leases: new Map(), revoked: new Set(), frozen: undefined }));
    return s;
  };
  return {
    apply(record) {
      const { header, payload } = record;
      if (header.type === RecordType.LEASE) {
        const fact = leaseFactOf(record);
        if (fact === undefined) return;
        const s = slot(header.team);
        s.leases.set(fact.id, fact);
        s.frozen = undefined;
        teamOf.set(fact.id, header.team);
      } else if (header.type === RecordType.REVOCATION && payload.detail.case === "revocation" && payload.detail.value.subject === RevocationSubject.LEASE) {
        const id = payload.detail.value.subjectId;
        // A revocation belongs to its lease's team; an owner's act names the team it was signed for.
        const s = slot(teamOf.get(id) ?? header.team);
        if (s.revoked.has(id)) return;
        s.revoked.add(id);
        s.frozen = undefined;
      }
    },
    leaseFacts(team) {
      const s = byTeam.get(team);
      if (s === undefined) return EMPTY;
      s.frozen ??= Object.freeze({ leases: Object.freeze(Object.fromEntries(s.leases)), revokedLeases: Object.freeze([...s.revoked]) });
      return s.frozen;
    },
    leaseTeam: (id) => teamOf.get(id),
  };
}
