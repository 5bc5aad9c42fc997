import { RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import type { LeaseEntry } from "../../src/gen/teamd/v1/lease_pb.js";
import type { AdministerRequest, AdministerResponse, ProposalEntry } from "../../src/gen/teamd/v1/shim_pb.js";
import {
  applyDelegatedChange,
  canonicalJson,
  checkDelegatedChange,
  describeChange,
  refuse,
  type DelegatedChange,
  type KernelView,
  type LeaseFact,
  type Refusal,
} from "../../src/kernel/index.js";
import { decideLease } from "../../src/kernel/lease-choice.js";
import { tablePrincipal } from "../../src/kernel/authorization-table.js";
import { readIsUnbounded, readScope } from "../../src/kernel/read-scope.js";
import type { LeaseRequest, ProposedLease } from "../../src/kernel/lease-issue.js";
import { parseLeaseScope } from "../../src/kernel/lease-scope.js";
import {
  fromHex,
  LedgerRefusal,
  leaseDraft,
  leaseRevocationDraft,
  principalKey,
  seatPrincipal,
  sha256,
  toHex,
  type Ledger,
  type RecordDraft,
} from "../../src/ledger/index.js";
import { decisionView, leaseFactsFor } from "../../src/ledger/decision-view.js";
import type { PolicySeqView } from "../../src/ledger/record-draft.js";
import { leaseSetHash } from "../../src/ledger/input-state.js";
import { policyInForce } from "../../src/ledger/policy-in-force.js";
import { leaseEntry } from "../../src/rpc/lease-entry.js";
import { RefusalError } from "../../src/rpc/errors.js";
import { credentialShape } from "../../src/teamfile/credentials.js";
import { loadTeamFileData } from "../../src/teamfile/index.js";
import { requestBytes, type SeatContext, type SeatIdentity, type SeatPipeline } from "./pipeline.js";

/**
 * Delegated administration through the shim (§9, §10): a grant holder grants, takes back, or
 * adds a seat; an agree holder adds a same copy; where the owner put a capability behind
 * two-granter, the change (or a lease of it) waits as a proposal until a second granter
 * confirms it over the same input state. One agreement is a whole file: each change commits a
 * new whole canonical policy — the one in force with the change applied, loaded by the owner's
 * own loader — as a GRANT or AGREEMENT record the granting seat signs (its socket), in one batch
 * with the revocations its cascade makes, and only while the policy it was decided over is still
 * the one in force (a check at commit).
 *
 * Proposals live in the daemon's memory, bounded (per team, and by age): a restart, or any
 * change to the input state, voids them — a re-proposal is one call.
 */
export interface SeatAdmin {
  administer(identity: SeatIdentity, request: AdministerRequest): Promise<AdministerResponse>;
  /** The proposals waiting for a second granter, as this seat may see them (§3's controlled view). */
  proposals(identity: SeatIdentity): Promise<ProposalEntry[]>;
  confirm(identity: SeatIdentity, requestId: string, proposalId: string): Promise<AdministerResponse>;
  /** leads stops its own team (§9, §15): recorded, held until the owner's resume; the team's seats stop after the reply. */
  stopTeam(identity: SeatIdentity, reason: string): Promise<{ seq: number; seats: string[] }>;
  /** leads starts its own team or one seat of it (§9): the pinned starts only, under every bound a start meets. */
  startTeam(identity: SeatIdentity, seat: string): Promise<string[]>;
  /** The team-level address (§9): the team's notices as leads may read them (§3's controlled view: subjects only). */
  teamNotices(identity: SeatIdentity, afterSeq: number): Promise<{ notices: { seq: number; timeUnixMs: number; subject: string }[]; next: number }>;
  /** A lease of a two-granter capability (leases.ts hands it here): a proposal, never a lease alone. */
  proposeLease(ctx: SeatContext, request: ProposedLease): Promise<string>;
}

export interface SeatAdminDeps {
  readonly pipeline: SeatPipeline;
  readonly newId: () => string;
  /** The team's running seats, and a way to stop them all (the composition root's seat manager). */
  readonly teamSeats: (team: string) => string[];
  readonly stopTeamSeats: (team: string) => Promise<void>;
  /** Start a team's seats (one, or every one with a start not running): the names started. */
  readonly startTeamSeats: (team: string, seat: string | undefined, by: string) => Promise<string[]>;
}

/** A stop's reason as a seat wrote it: one line, printable, bounded. */
function stopReason(text: string): string {
  // Bounded before any work on it: the seat chose its length.
  const line = [...text.slice(0, 1024)]
    .filter((c) => c >= " " && !(c >= "\u007f" && c <= "\u009f") && !/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u.test(c))
    .join("");
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** A proposal waits at most this long for its second granter. */
export const PROPOSAL_TTL_MS = 15 * 60 * 1000;
/** At most this many proposals wait per team: a seat cannot fill the daemon's memory with them. */
export const MAX_PROPOSALS_PER_TEAM = 16;
/** At most this many of them from one asker: one seat cannot hold the team's queue (and every other granter's proposal) off. */
export const MAX_PROPOSALS_PER_ASKER = 4;
/**
 * A delegate's change may not grow the canonical policy past this many bytes (§8: the owner's
 * file is the owner's; every delegated record carries the whole policy, and every decision loads
 * it). A change that does not grow it (a take-back) is never held by the bound.
 */
export const MAX_DELEGATED_POLICY_BYTES = 256 * 1024;

/** Why no more proposal may wait from `asker` in `team`, or undefined. */
function queueFull(open: readonly { readonly team: string; readonly asker: string }[], team: string, asker: string): string | undefined {
  const ofTeam = open.filter((p) => p.team === team);
  if (ofTeam.length >= MAX_PROPOSALS_PER_TEAM)
    return `team ${team} already has ${ofTeam.length} proposals waiting; confirm or let them lapse (${PROPOSAL_TTL_MS / 60000} min) first`;
  const mine = ofTeam.filter((p) => p.asker === asker).length;
  if (mine >= MAX_PROPOSALS_PER_ASKER)
    return `${asker} already has ${mine} proposals waiting in team ${team} (at most ${MAX_PROPOSALS_PER_ASKER}); confirm or let them lapse (${PROPOSAL_TTL_MS / 60000} min) first`;
  return undefined;
}

type Pending = { readonly kind: "change"; readonly change: DelegatedChange } | { readonly kind: "lease"; readonly lease: ProposedLease };

interface Proposal {
  readonly id: string;
  readonly team: string;
  readonly asker: string;
  readonly pending: Pending;
  /** The canonical proposal's hash (hex): over the team, the asker, the change and the input state. */
  readonly hash: string;
  readonly inputState: string;
  readonly createdAt: number;
  readonly description: string;
}

const encoder = new TextEncoder();

/** The change a request asks for, as the kernel reads it; a refusal for a malformed one. */
function changeOf(request: AdministerRequest): DelegatedChange | Refusal {
  const c = request.change;
  switch (c.case) {
    case "grant": {
      const scope = parseLeaseScope(c.value.scope);
      if (!("ok" in scope)) return scope;
      return { kind: "grant", seat: c.value.seat, capability: c.value.capability, scope: scope.scope, ...(c.value.name !== "" ? { name: c.value.name } : {}) };
    }
    case "ungrant":
      return { kind: "ungrant", seat: c.value.seat, capability: c.value.capability, ...(c.value.name !== "" ? { name: c.value.name } : {}) };
    case "seatAdd":
      return { kind: "add-seat", seat: c.value.seat, like: c.value.like, ...(c.value.roles.length > 0 ? { roles: [...c.value.roles] } : {}) };
    case "seatRemove":
      return { kind: "remove-seat", seat: c.value.seat };
    default:
      return refuse("request.malformed", "an administer request names a grant, an ungrant, a seat add or a seat removal");
  }
}

export function createSeatAdmin(deps: SeatAdminDeps): SeatAdmin {
  const { pipeline } = deps;
  const proposals = new Map<string, Proposal>();

  function prune(now: number): void {
    for (const [id, p] of proposals) if (now - p.createdAt > PROPOSAL_TTL_MS) proposals.delete(id);
  }

  /** The decision view over the policy in force now (never the context's, which may be older) and the team's leases. */
  function current(ledger: Ledger, team: string): { view: KernelView; inForce: NonNullable<ReturnType<Ledger["view"]["policy"]>>; inputState: string } {
    // policyInForce refuses a team with none; the record it loaded from is the view's.
    const { policy } = policyInForce(ledger, team);
    const inForce = ledger.view.policy(team) as NonNullable<ReturnType<Ledger["view"]["policy"]>>;
    const leases = leaseFactsFor(ledger, team);
    const view = decisionView(policy, undefined, leases);
    // §15's input state of an authority change: the policy record in force and the lease set.
    return { view, inForce, inputState: `${inForce.seq}:${inForce.teamFileHash}:${toHex(leaseSetHash(leases))}` };
  }

  function proposalHash(team: string, asker: string, pending: Pending, inputState: string): string {
    return toHex(sha256(encoder.encode(canonicalJson({ team, asker, pending: pending as never, inputState }))));
  }

  function stillInForce(team: string, seq: number) {
    return (view: PolicySeqView): Refusal | undefined =>
      view.policy(team)?.seq === seq
        ? undefined
        : refuse("grant.changed", `the policy in force of team ${team} changed before the change could be recorded; ask again over the new one`);
  }

  type Outcome = { seq: number; kind: string; description: string; revoked: string[]; lease?: LeaseEntry };

  /**
   * Decide and record one change under the pipeline's lock. `confirmation`: the second granter
   * of a proposal (its principal and the proposal); without it a change behind two-granter
   * becomes a proposal (a `twogranter.pending` refusal on record, the id in `pendingId`).
   */
  async function runChange(
    ctx: SeatContext,
    asker: string,
    change: DelegatedChange,
    bytes: { id: string; digest: Uint8Array },
    confirmation: Proposal | undefined,
    pendingId: { id?: string; stale?: boolean },
  ): Promise<Outcome> {
    const team = ctx.identity.team;
    const description = describeChange(change);
    let kind = "grant";
    let revoked: string[] = [];
    const action =
      confirmation !== undefined
        ? "policy.confirm"
        : change.kind === "add-seat"
          ? "seat.add"
          : change.kind === "remove-seat"
            ? "seat.remove"
            : `policy.${change.kind}`;
    const record = await pipeline.record(ctx, action, { kind: TargetKind.TEAM, name: team }, bytes, (_view, now) => {
      const { view, inForce, inputState } = current(ctx.ledger, team);
      if (confirmation !== undefined) pendingId.stale = confirmation.inputState !== inputState;
      const applied = applyDelegatedChange(JSON.parse(inForce.canonical) as unknown, change);
      if ("decision" in applied) return applied;
      const loaded = loadTeamFileData(applied.data, { startFileHashes: inForce.startFileHashes, proposal: true });
      if (!loaded.ok) {
        const first = loaded.errors[0];
        return refuse(first?.rule ?? "teamfile.schema", `the policy with this change does not load: ${first?.message ?? "invalid"}`);
      }
      const size = encoder.encode(loaded.canonical).length;
      if (size > MAX_DELEGATED_POLICY_BYTES && size > encoder.encode(inForce.canonical).length)
        return refuse(
          "grant.bound",
          `the policy with this change is ${size} bytes, past the ${MAX_DELEGATED_POLICY_BYTES} a delegate's change may grow it to; the owner writes a policy that large`,
        );
      const pending: Pending = { kind: "change", change };
      const hash = confirmation?.hash ?? proposalHash(team, asker, pending, inputState);
      const confirmations =
        confirmation === undefined
          ? undefined
          : [
              { signer: asker, proposal: confirmation.hash, inputState: confirmation.inputState },
              { signer: ctx.identity.seat, proposal: hash, inputState },
            ];
      const decided = checkDelegatedChange(
        view,
        { principal: asker, change, after: loaded.policy, inputState, proposal: hash, ...(confirmations !== undefined ? { confirmations } : {}) },
        now,
      );
      if (decided.decision === "propose") {
        const full = queueFull([...proposals.values()], team, asker);
        if (full !== undefined) return refuse("twogranter.pending", full);
        const id = deps.newId();
        proposals.set(id, { id, team, asker, pending, hash, inputState, createdAt: now, description });
        pendingId.id = id;
        return refuse(
          "twogranter.pending",
          `${decided.reason}; proposal ${id} waits (teamd-shim confirm ${id}, by another granter, within ${PROPOSAL_TTL_MS / 60000} min)`,
        );
      }
      if (decided.decision === "refuse") return decided;
      kind = decided.agreement ? "agreement" : "grant";
      revoked = decided.revocations.map((r) => r.lease);
      const signer = seatPrincipal(team, asker);
      const actor = seatPrincipal(team, ctx.identity.seat);
      const draft: RecordDraft = {
        type: decided.agreement ? RecordType.AGREEMENT : RecordType.GRANT,
        team,
        actor,
        signer,
        // §9: a seat's removal (leads's) is a team-file change on record as a grant record, its action naming it.
        action: decided.agreement ? "policy.agree" : change.kind === "remove-seat" ? "seat.remove" : "policy.grant",
        payload: {
          domain: { team, repositoryRoot: ctx.team.repository },
          target: {
            kind: change.kind === "add-seat" || change.kind === "remove-seat" ? TargetKind.SEAT : TargetKind.GRANT,
            name: `${change.seat}${change.kind === "add-seat" || change.kind === "remove-seat" ? "" : `/${change.capability}`}`,
          },
          after: { identity: { case: "contentSha256", value: fromHex(loaded.hashes.policy.replace(/^sha256:/, "")) } },
          requestId: bytes.id,
          requestDigest: bytes.digest,
          inputState: { teamFileHash: fromHex(inForce.teamFileHash), leaseSetHash: leaseSetHash(leaseFactsFor(ctx.ledger, team)) },
          detail: {
            case: "policy",
            value: {
              teamFileHash: fromHex(loaded.hashes.policy.replace(/^sha256:/, "")),
              canonical: loaded.canonical,
              startFileHashes: { ...inForce.startFileHashes },
              change: canonicalJson(change as never),
              inForceSeq: BigInt(inForce.seq),
            },
          },
        },
        ...(confirmation !== undefined
          ? {
              coAuthorization: {
                principal: actor,
                proposalHash: fromHex(hash),
                inputState: { teamFileHash: fromHex(inForce.teamFileHash), leaseSetHash: leaseSetHash(leaseFactsFor(ctx.ledger, team)) },
                confirmedUnixMs: BigInt(now),
              },
            }
          : {}),
        check: stillInForce(team, inForce.seq),
      };
      const cascade = decided.revocations.map((r) => leaseRevocationDraft(team, r.lease, r.reason, actor, signer, bytes));
      return [draft, ...cascade];
    });
    return { seq: record.seq, kind, description, revoked };
  }

  /** A confirmed lease proposal: the lease, issued by its asker, co-authorized by the confirmer (§10). */
  async function runLease(ctx: SeatContext, proposal: Proposal, bytes: { id: string; digest: Uint8Array }, seen: { stale?: boolean }): Promise<Outcome> {
    if (proposal.pending.kind !== "lease") throw new Error("not a lease proposal");
    const { ttlMs, ...request } = proposal.pending.lease;
    const team = ctx.identity.team;
    let issued: LeaseFact | undefined;
    const leaseId = deps.newId();
    const record = await pipeline.record(ctx, "lease.confirm", { kind: TargetKind.LEASE, name: leaseId }, bytes, (_view, now) => {
      const { view, inputState } = current(ctx.ledger, team);
      seen.stale = proposal.inputState !== inputState;
      const decided = decideLease(
        view,
        {
          ...request,
          leaseId,
          expiresAt: now + ttlMs,
          coSigned: {
            proposal: proposal.hash,
            inputState,
            signatures: [
              { signer: proposal.asker, proposal: proposal.hash, inputState: proposal.inputState },
              { signer: ctx.identity.seat, proposal: proposal.hash, inputState },
            ],
          },
        } as LeaseRequest,
        now,
      );
      if (decided.decision === "refuse") return decided;
      issued = decided.lease;
      const draft = leaseDraft(team, decided.lease, seatPrincipal(team, ctx.identity.seat), bytes);
      return [
        {
          ...draft,
          signer: seatPrincipal(team, proposal.asker),
          coAuthorization: {
            principal: seatPrincipal(team, ctx.identity.seat),
            proposalHash: fromHex(proposal.hash),
            inputState: { leaseSetHash: leaseSetHash(leaseFactsFor(ctx.ledger, team)) },
            confirmedUnixMs: BigInt(now),
          },
        },
      ];
    });
    const view = pipeline.view(ctx);
    const lease = issued ?? view.facts.leases?.[leaseId];
    return {
      seq: record.seq,
      kind: "lease",
      description: proposal.description,
      revoked: [],
      ...(lease !== undefined ? { lease: leaseEntry(view, lease, pipeline.clock()) } : {}),
    };
  }

  /**
   * §15: a byte-identical retry of a request that committed is answered from its record — never a
   * second dispatch, never a refusal (the record's action is the change's, policy.grant or
   * policy.agree, or the lease's, not the door's: the pipeline would call it another request).
   */
  function recorded(ctx: SeatContext, bytes: { id: string; digest: Uint8Array }): Outcome | undefined {
    if (bytes.id === "") return undefined;
    const prior = ctx.ledger.view.recordedRequest(principalKey(seatPrincipal(ctx.identity.team, ctx.identity.seat)), bytes.id);
    if (prior === undefined || prior.digest !== toHex(bytes.digest)) return undefined;
    const kind =
      prior.action === "policy.agree" ? "agreement" : prior.action === "policy.grant" ? "grant" : prior.action === "lease.issue" ? "lease" : undefined;
    if (kind === undefined) return undefined;
    return { seq: prior.seqs[0] ?? 0, kind, description: "", revoked: kind === "lease" ? [] : prior.subjects.slice(1) };
  }

  function response(outcome: Outcome): AdministerResponse {
    return {
      seq: BigInt(outcome.seq),
      kind: outcome.kind,
      proposalId: "",
      description: outcome.description,
      revoked: outcome.revoked,
      ...(outcome.lease !== undefined ? { lease: outcome.lease } : {}),
    } as AdministerResponse;
  }

  /**
   * The controlled view of a proposal (§3): that one change, its paths within the confirmer's own
   * read scope (every disclosure is a read), a credential-shaped value withheld, bounded.
   */
  function shown(ctx: SeatContext, proposal: Proposal): string {
    let text = proposal.description;
    const scope =
      proposal.pending.kind === "change" && proposal.pending.change.kind === "grant"
        ? proposal.pending.change.scope
        : proposal.pending.kind === "lease"
          ? proposal.pending.lease.scope
          : undefined;
    const paths =
      scope !== null && typeof scope === "object" && Array.isArray((scope as { path?: unknown }).path) ? (scope as { path: unknown[] }).path.map(String) : [];
    if (paths.length > 0 && !readIsUnbounded(ctx.policy.policy, ctx.seat)) {
      const readable = readScope(ctx.policy.policy, ctx.seat, pipeline.clock());
      for (const path of paths.filter((p) => !readable.file(p)).sort((a, b) => b.length - a.length))
        text = text.split(path).join("(a path outside your read scope)");
    }
    const words = text.split(/(\s+)/).map((w) => (credentialShape(w, () => false) !== undefined ? "[withheld: credential shape]" : w));
    const joined = words.join("");
    return joined.length > 400 ? `${joined.slice(0, 400)}…` : joined;
  }

  return {
    async administer(identity, request) {
      const ctx = await pipeline.context(identity, "policy.change", { guardInAct: true });
      const change = changeOf(request);
      if ("decision" in change) throw await pipeline.refuse(ctx, change, "policy.change");
      const bytes = { id: request.requestId, digest: requestBytes(["administer", canonicalJson(change as never)]) };
      const retried = recorded(ctx, bytes);
      if (retried !== undefined) return response({ ...retried, description: describeChange(change) });
      const pendingId: { id?: string } = {};
      prune(pipeline.clock());
      try {
        return response(await runChange(ctx, identity.seat, change, bytes, undefined, pendingId));
      } catch (error) {
        if (pendingId.id !== undefined && error instanceof RefusalError && error.rule === "twogranter.pending")
          return { seq: 0n, kind: "grant", proposalId: pendingId.id, description: describeChange(change), revoked: [] } as unknown as AdministerResponse;
        throw error;
      }
    },

    async proposals(identity) {
      const ctx = await pipeline.context(identity, "policy.proposals", { quiet: true });
      prune(pipeline.clock());
      // Only a seat that may confirm sees proposals (§3: the view is for a seat that must confirm), never leads: a grant
      // holder every one; an agree holder a same copy's (§10: two can be asked to agree).
      const admin = ctx.policy.policy.leads?.seat === identity.seat ? [] : (ctx.seat.admin ?? []);
      const mayConfirm = (p: Proposal) =>
        admin.includes("grant") || (admin.includes("agree") && p.pending.kind === "change" && p.pending.change.kind === "add-seat");
      return [...proposals.values()]
        .filter((p) => p.team === identity.team && p.asker !== identity.seat && mayConfirm(p))
        .map(
          (p) =>
            ({
              proposalId: p.id,
              asker: p.asker,
              kind: p.pending.kind === "lease" ? "lease" : "grant",
              description: shown(ctx, p),
              createdUnixMs: BigInt(p.createdAt),
              inputState: p.inputState,
            }) as unknown as ProposalEntry,
        );
    },

    async confirm(identity, requestId, proposalId) {
      const ctx = await pipeline.context(identity, "policy.confirm", { guardInAct: true });
      prune(pipeline.clock());
      const bytes = { id: requestId, digest: requestBytes(["confirm", proposalId]) };
      const retried = recorded(ctx, bytes);
      if (retried !== undefined) return response(retried);
      const proposal = proposals.get(proposalId);
      if (proposal === undefined || proposal.team !== identity.team)
        throw await pipeline.refuse(
          ctx,
          refuse(
            "twogranter.void",
            `no proposal ${proposalId.slice(0, 64)} waits in team ${identity.team} (it lapsed, was confirmed, or the daemon restarted); ask the granter to propose again`,
          ),
          "policy.confirm",
        );
      const seen: { stale?: boolean } = {};
      try {
        const outcome =
          proposal.pending.kind === "lease"
            ? await runLease(ctx, proposal, bytes, seen)
            : await runChange(ctx, proposal.asker, proposal.pending.change, bytes, proposal, seen);
        proposals.delete(proposalId);
        return response(outcome);
      } catch (error) {
        // A changed input state voids the proposal for good (§10: re-propose); a refusal of this
        // confirmer (its standing, its lab, the asker itself) leaves it for another granter.
        if (seen.stale === true) proposals.delete(proposalId);
        throw error;
      }
    },

    async stopTeam(identity, reason) {
      const action = "stop.team";
      const ctx = await pipeline.context(identity, action, { guardInAct: true });
      // §9: "stop a team — owner, or leads for its own team"; the socket is the seat, its team the one it stops.
      const principal = tablePrincipal("team.stop", { kind: "seat", seat: identity.seat, team: identity.team }, identity.team, ctx.policy.policy);
      if (principal !== undefined) throw await pipeline.refuse(ctx, principal, action);
      // leads's stop holds from its record: with the store down it cannot be made (the owner's holds by its flag).
      const record = await ctx.ledger.leadsStop(identity.team, identity.seat, stopReason(reason) || "stopped by leads").catch(async (error: unknown) => {
        if (error instanceof LedgerRefusal) throw await pipeline.refuse(ctx, error.refusal, action);
        throw error;
      });
      const seats = deps.teamSeats(identity.team);
      // After the reply has gone: leads's own seat is among those stopped.
      setTimeout(() => void deps.stopTeamSeats(identity.team).catch(() => undefined), 250).unref();
      return { seq: record.seq, seats };
    },

    async startTeam(identity, seat) {
      const action = "start.team";
      // The guards first (§15): a stopped team is started again only after the owner's resume.
      const ctx = await pipeline.context(identity, action, { guardInAct: true });
      const principal = tablePrincipal("team.start", { kind: "seat", seat: identity.seat, team: identity.team }, identity.team, ctx.policy.policy);
      if (principal !== undefined) throw await pipeline.refuse(ctx, principal, action);
      const guarded = ctx.ledger.guard(identity.team);
      if (guarded !== undefined) throw await pipeline.refuse(ctx, guarded, action);
      if (seat !== "" && !Object.prototype.hasOwnProperty.call(ctx.policy.policy.seats, seat))
        throw await pipeline.refuse(ctx, refuse("seat.unknown", `seat '${seat}' is not in team ${identity.team}'s policy in force`), action);
      // The start runs the pinned command and its whole hashed context, nothing the caller names (§9, §10); the seat manager's bounds (runtime, seats, spend) hold.
      return deps.startTeamSeats(identity.team, seat === "" ? undefined : seat, `leads:${identity.seat}`);
    },

    async teamNotices(identity, afterSeq) {
      const action = "notices.team";
      const ctx = await pipeline.context(identity, action, { quiet: true });
      if (ctx.policy.policy.leads?.seat !== identity.seat)
        throw await pipeline.refuse(
          ctx,
          refuse(
            "table.principal",
            `the team's notices go to leads, its single team-level address (§9); seat ${identity.seat} is not leads of team ${identity.team}`,
          ),
          action,
        );
      const from = Math.max(0, Math.min(Number.MAX_SAFE_INTEGER, afterSeq)) + 1;
      const seen = ctx.ledger.entries(from, 200, RecordType.NOTICE);
      const notices = seen
        .filter((e) => e.team === identity.team && e.payload?.detail.case === "notice")
        .map((e) => ({ seq: e.seq, timeUnixMs: e.timeUnixMs, subject: stopReason(e.payload?.detail.case === "notice" ? e.payload.detail.value.subject : "") }));
      return { notices, next: seen.length > 0 ? (seen[seen.length - 1]?.seq ?? afterSeq) : afterSeq };
    },

    async proposeLease(ctx, lease) {
      const team = ctx.identity.team;
      const now = pipeline.clock();
      prune(now);
      const full = queueFull([...proposals.values()], team, ctx.identity.seat);
      if (full !== undefined) throw await pipeline.refuse(ctx, refuse("twogranter.pending", full), "lease.issue");
      // §10: only a lease that would issue but for its second granter waits — decided now, over
      // the state now, as it will be again at the confirmation (never an unchecked request in the
      // confirmer's view: its recipient, scope and source are a real lease's).
      const { view: decisionNow } = current(ctx.ledger, team);
      const { ttlMs, ...asked } = lease;
      const trial = decideLease(decisionNow, { ...asked, leaseId: deps.newId(), expiresAt: now + ttlMs } as LeaseRequest, now);
      if (trial.decision === "refuse" && trial.rule !== "lease.two-granter") throw await pipeline.refuse(ctx, trial, "lease.issue");
      const { inputState } = current(ctx.ledger, team);
      const pending: Pending = { kind: "lease", lease };
      const id = deps.newId();
      const scope = Object.entries((lease.scope ?? {}) as Record<string, unknown>)
        .map(([d, v]) => `${d}=${Array.isArray(v) ? v.join("|") : String(v)}`)
        .join(",");
      proposals.set(id, {
        id,
        team,
        asker: ctx.identity.seat,
        pending,
        hash: proposalHash(team, ctx.identity.seat, pending, inputState),
        inputState,
        createdAt: now,
        description: `lease ${lease.capability} ${scope || "*"} to ${lease.recipient} for ${Math.round(lease.ttlMs / 1000)} s`,
      });
      return id;
    },
  };
}
