import { TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import type { LeaseEntry } from "../../src/gen/teamd/v1/lease_pb.js";
import type { LeaseIssueRequest, LeaseRevokeRequest } from "../../src/gen/teamd/v1/shim_pb.js";
import { refuse, revokeLease, type LeaseFact } from "../../src/kernel/index.js";
import { decideLease } from "../../src/kernel/lease-choice.js";
import { leaseDraft, leaseRevocationDraft, principalKey, seatPrincipal, type RecordDraft } from "../../src/ledger/index.js";
import { leaseEntry } from "../../src/rpc/lease-entry.js";
import { parseLeaseScope } from "../../src/kernel/lease-scope.js";
import { requestBytes, type SeatContext, type SeatPipeline, type SeatIdentity } from "./pipeline.js";
import type { ProposedLease } from "../../src/kernel/lease-issue.js";

const seatKeyOf = (identity: SeatIdentity) => principalKey(seatPrincipal(identity.team, identity.seat));

/**
 * A seat's leases through the pipeline (§7, §9): `teamd-shim lease issue | revoke | list`.
 * Issue and revoke are decided by the kernel (`issueLease`, `revokeLease`) under the machine's
 * one lock and recorded — the lease record, or the revocation of the lease and of every lease
 * below it in one transaction — and a refusal is recorded with its rule. The seat is the
 * socket the call came on: it is always the issuer or the revoker, never a field.
 */
export interface SeatLeases {
  /** The lease issued, or — for a capability behind two-granter (§10) — the proposal a second granter confirms. */
  issue(identity: SeatIdentity, request: LeaseIssueRequest): Promise<{ lease: LeaseEntry; seq: number } | { proposalId: string }>;
  revoke(identity: SeatIdentity, request: LeaseRevokeRequest): Promise<string[]>;
  /**
   * The seat's own live leases (§3, the controlled record view: nothing of another seat's, not
   * even a lease it issued — its id was in the issue's reply, which is what revoking needs).
   */
  list(identity: SeatIdentity): Promise<LeaseEntry[]>;
  /** The live leases the seat holds (whoami, in the context it already read). */
  held(ctx: SeatContext): LeaseEntry[];
}

export interface SeatLeasesDeps {
  readonly pipeline: SeatPipeline;
  /** Where a two-granter capability's lease goes to wait for its second granter (administer.ts); its proposal id. */
  readonly proposeLease: (ctx: SeatContext, lease: ProposedLease) => Promise<string>;
  /** A fresh unique id (the composition root's): a new lease's id. */
  readonly newId: () => string;
}

export function createSeatLeases(deps: SeatLeasesDeps): SeatLeases {
  const { pipeline } = deps;
  function toMs(ttl: bigint): number {
    return ttl > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(ttl);
  }

  function entries(ctx: SeatContext, keep: (lease: LeaseFact) => boolean): LeaseEntry[] {
    const view = pipeline.view(ctx);
    const now = pipeline.clock();
    return Object.values(view.facts.leases ?? {})
      .filter(keep)
      .sort((a, b) => a.issuedAt - b.issuedAt || (a.id < b.id ? -1 : 1))
      .map((l) => leaseEntry(view, l, now));
  }

  const held = (ctx: SeatContext) => entries(ctx, (l) => l.holder === ctx.identity.seat).filter((e) => e.live);

  return {
    async issue(identity, request) {
      const action = "lease.issue";
      const ctx = await pipeline.context(identity, action, { guardInAct: true });
      const parsed = parseLeaseScope(request.scope);
      if (!("ok" in parsed)) throw await pipeline.refuse(ctx, parsed, action);
      const scope = parsed.scope;
      // §10: a capability behind two-granter is leased only co-signed — the issuer's request is a proposal.
      if ((ctx.policy.policy.twoGranter ?? []).includes(request.capability as never)) {
        const proposalId = await deps.proposeLease(ctx, {
          issuer: identity.seat,
          recipient: request.recipient,
          capability: request.capability,
          scope,
          ttlMs: toMs(request.ttlMs),
          ...(request.parent ? { parent: request.parent } : {}),
          ...(request.source ? { source: request.source } : {}),
        });
        return { proposalId };
      }
      const leaseId = deps.newId();
      let issued: LeaseFact | undefined;
      const target = { kind: TargetKind.LEASE, name: leaseId };
      // The request's bytes: a retry under its id must send exactly these (§15).
      const bytes = {
        id: request.requestId,
        digest: requestBytes([request.recipient, request.capability, request.scope, String(request.ttlMs), request.parent, request.source]),
      };
      const record = await pipeline.record(ctx, action, target, bytes, (view, now) => {
        const decided = decideLease(
          view,
          {
            leaseId,
            issuer: identity.seat,
            recipient: request.recipient,
            capability: request.capability,
            scope,
            expiresAt: now + toMs(request.ttlMs),
            ...(request.parent ? { parent: request.parent } : {}),
            ...(request.source ? { source: request.source } : {}),
          },
          now,
        );
        if (decided.decision === "refuse") return decided;
        issued = decided.lease;
        return [leaseDraft(identity.team, decided.lease, seatPrincipal(identity.team, identity.seat), bytes)];
      });
      const view = pipeline.view(ctx);
      // A retry: the lease its first try issued, as it stands now (it may have expired since).
      const recordedId = record.replayed ? ctx.ledger.view.recordedRequest(seatKeyOf(identity), request.requestId)?.subjects[0] : undefined;
      const lease = record.replayed ? view.facts.leases?.[recordedId ?? ""] : issued;
      if (lease === undefined) throw new Error(`lease record ${record.seq} is missing from the view`);
      return { lease: leaseEntry(view, lease, pipeline.clock()), seq: record.seq };
    },

    async revoke(identity, request) {
      const action = "lease.revoke";
      const ctx = await pipeline.context(identity, action, { guardInAct: true });
      let revoked: string[] = [];
      const bytes = { id: request.requestId, digest: requestBytes([request.leaseId]) };
      const record = await pipeline.record(ctx, action, { kind: TargetKind.LEASE, name: request.leaseId }, bytes, (view) => {
        const decided = revokeLease(view, { kind: "seat", seat: identity.seat }, request.leaseId);
        if (decided.decision === "refuse") return decided;
        if (decided.revocations.length === 0) return refuse("lease.revoked", `lease ${request.leaseId} and every lease below it are already revoked`);
        revoked = decided.revocations.map((r) => r.lease);
        const actor = seatPrincipal(identity.team, identity.seat);
        return decided.revocations.map((r): RecordDraft => leaseRevocationDraft(identity.team, r.lease, r.reason, actor, undefined, bytes));
      });
      // A retry: every lease its first try revoked.
      if (record.replayed) return [...(ctx.ledger.view.recordedRequest(seatKeyOf(identity), request.requestId)?.subjects ?? [])];
      return revoked;
    },

    list: async (identity) => held(await pipeline.context(identity, "lease.list", { quiet: true })),
    held,
  };
}
