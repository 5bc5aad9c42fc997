import type { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { formatScope, OPERATIONAL_CAPABILITIES, refuse } from "../../src/kernel/index.js";
import { credentialShape } from "../../src/teamfile/credentials.js";
import { PROTOCOL_VERSION, TEAMD_VERSION } from "../../src/rpc/protocol.js";
import { type ServiceImpl } from "../../src/rpc/service-types.js";
import type { SeatFiles } from "./files.js";
import type { SeatGit } from "./git.js";
import type { SeatLeases } from "./leases.js";
import type { SeatCreate } from "./create-team.js";
import type { SeatAdmin } from "./administer.js";
import type { SeatTrunk } from "./trunk.js";
import type { SeatDeploy } from "./deploy.js";
import type { SeatBroker } from "./broker.js";
import { requestBytes, type SeatIdentity, type SeatPipeline } from "./pipeline.js";

export type { SeatIdentity };

/** A checkpoint note is a handoff, not a document. */
export const MAX_CHECKPOINT_NOTE = 4096;

export interface ShimServiceDeps {
  readonly daemonInstance: string;
  readonly pipeline: SeatPipeline;
  readonly git: SeatGit;
  readonly files: SeatFiles;
  readonly trunk: SeatTrunk;
  readonly leases: SeatLeases;
  readonly admin: SeatAdmin;
  readonly create: SeatCreate;
  readonly deploy: SeatDeploy;
  readonly broker: SeatBroker;
}

/**
 * The seat-facing service for one seat's socket. The identity is closed over when the
 * socket is created: nothing in a request can name another seat. Every call but the
 * handshake goes through the pipeline (daemon/seat/pipeline.ts).
 */
export function createShimService(identity: SeatIdentity, deps: ShimServiceDeps): ServiceImpl<typeof ShimService> {
  return {
    async hello() {
      return { daemon: { protocol: PROTOCOL_VERSION, program: TEAMD_VERSION } };
    },
    async whoAmI() {
      // The controlled record view of §3: identity, what it holds, its last refusal — nothing
      // of any other seat, no record of the ledger.
      const last = deps.pipeline.lastRefusal(identity);
      const base = {
        seat: identity.seat,
        team: identity.team,
        daemonInstance: deps.daemonInstance,
        lastRefusalRule: last?.rule ?? "",
        lastRefusalReason: last?.reason ?? "",
      };
      // Asking who one is answers even when refused: the refusal is recorded, never shown as the last one.
      const ctx = await deps.pipeline.context(identity, "seat.whoami", { quiet: true }).catch(() => undefined);
      if (ctx === undefined) return base;
      const { vocabulary } = ctx.policy.policy;
      const capabilities = OPERATIONAL_CAPABILITIES.flatMap((capability) =>
        (ctx.seat.byCapability[capability] ?? []).map((authority) => ({
          capability,
          scope: formatScope(authority.scope, vocabulary.capabilities[capability].dimensions),
          source: authority.id,
        })),
      );
      const leases = deps.leases.held(ctx);
      // Said to the seat itself too: an uncontained seat's refusals hold against a mistake only.
      const containment = ctx.policy.policy.seats[identity.seat]?.start?.containment ?? "bwrap";
      const review = ctx.policy.policy.constraints.review;
      return {
        ...base,
        capabilities,
        leases,
        policySeq: BigInt(ctx.policy.seq),
        containment,
        reviewMode: review.mode,
        reviewFloor: review.floor,
        administrative: [...(ctx.seat.admin ?? [])],
      };
    },
    async listRefs(request) {
      return deps.git.listRefs(identity, request.forPush);
    },
    async *fetch(request) {
      for await (const data of deps.git.fetch(identity, request.wants, request.haves)) yield { data };
    },
    async push(parts, context) {
      return deps.git.push(identity, parts, context.signal);
    },
    async fileStat(request) {
      return deps.files.stat(identity, request.path);
    },
    async *fileRead(request) {
      yield* deps.files.read(identity, request.path);
    },
    async fileWrite(parts) {
      return deps.files.write(identity, parts);
    },
    async review(request) {
      return { act: await deps.trunk.review(identity, request) };
    },
    async gate(request) {
      return { act: await deps.trunk.gate(identity, request) };
    },
    async merge(request) {
      return { act: await deps.trunk.merge(identity, request) };
    },
    async leaseIssue(request) {
      const issued = await deps.leases.issue(identity, request);
      if ("proposalId" in issued) return { proposalId: issued.proposalId, seq: 0n };
      return { lease: issued.lease, seq: BigInt(issued.seq) };
    },
    async administer(request) {
      return deps.admin.administer(identity, request);
    },
    async proposals() {
      return { proposals: await deps.admin.proposals(identity) };
    },
    async teamNotices(request) {
      const after = request.afterSeq > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(request.afterSeq);
      const { notices, next } = await deps.admin.teamNotices(identity, after);
      return { notices: notices.map((n) => ({ seq: BigInt(n.seq), timeUnixMs: BigInt(n.timeUnixMs), subject: n.subject })), nextAfterSeq: BigInt(next) };
    },
    async createTeam(request) {
      return deps.create.create(identity, request);
    },
    async startTeam(request) {
      return { started: await deps.admin.startTeam(identity, request.seat) };
    },
    async stopTeam(request) {
      const { seq, seats } = await deps.admin.stopTeam(identity, request.reason);
      return { seq: BigInt(seq), seats };
    },
    async confirm(request) {
      return { done: await deps.admin.confirm(identity, request.requestId, request.proposalId) };
    },
    async leaseRevoke(request) {
      return { revoked: await deps.leases.revoke(identity, request) };
    },
    async leaseList() {
      return { leases: await deps.leases.list(identity) };
    },
    async deploy(request) {
      return deps.deploy.deploy(identity, request);
    },
    async broker(request) {
      return deps.broker.call(identity, request);
    },
    async checkpoint(request) {
      const ctx = await deps.pipeline.context(identity, "seat.checkpoint", { guardInAct: true });
      const note = request.note;
      if (Buffer.byteLength(note) > MAX_CHECKPOINT_NOTE) {
        throw await deps.pipeline.refuse(
          ctx,
          refuse("request.malformed", `a checkpoint note is at most ${MAX_CHECKPOINT_NOTE} bytes; point at a file in your branch instead`),
          "seat.checkpoint",
        );
      }
      // Recorded notes are read by people: one that carries a key's shape is refused unread.
      const shape = credentialShape(note, () => false);
      if (shape !== undefined) {
        throw await deps.pipeline.refuse(
          ctx,
          refuse("secret.shape", `the note carries what looks like a ${shape.name} (${shape.looksLike}); a record never holds a secret`),
          "seat.checkpoint",
        );
      }
      const reply = await deps.pipeline.act(
        ctx,
        undefined,
        {
          action: "seat.checkpoint",
          target: { kind: TargetKind.SEAT, name: identity.seat },
          requestId: request.requestId,
          request: requestBytes([note]),
          payload: { fields: [{ key: "note", value: note }] },
        },
        async () => ({ result: "done" }),
      );
      return { intentSeq: BigInt(reply.intentSeq), outcomeSeq: BigInt(reply.outcomeSeq ?? 0) };
    },
  };
}
