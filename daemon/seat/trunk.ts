import type { MessageInitShape } from "@bufbuild/protobuf";
import { GateResult, RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import type { TrunkActSchema } from "../../src/gen/teamd/v1/shim_pb.js";
import { normalizeBranch, refuse, type KernelFacts, type Refusal } from "../../src/kernel/index.js";
import { noteRule } from "../../src/kernel/rules.js";
import { fromHex } from "../../src/ledger/index.js";
import { git, treeOfCommit } from "../../src/effects/git.js";
import { effectIdOf, mergeInto, MergeConflict, NothingToMerge, summarizeChange, type ChangeSummary } from "../../src/effects/git-merge.js";
import { readRef, RefMoved } from "../../src/effects/git-receive.js";
import { RefBusy } from "../../src/effects/ref-lock.js";
import { requestBytes, type SeatContext, type SeatPipeline, type SeatIdentity } from "./pipeline.js";

/**
 * Trunk acts through the shim (§3, §5, §15): review, gate and merge of a seat's branch into
 * the trunk. The change is computed from the hub itself — the branch's commits the trunk
 * lacks, the tree the merge would give, every path it changes — and bound by its effect id
 * (changed paths, destination tree, destination ref, base, policy hash), never by labels the
 * seat supplies. The kernel decides each act against the ledger's facts for that effect id
 * (the author set of the change, gate and review records, outcomes, consumed passes) and the
 * live runs; a merge consumes exactly one pass and is performed by the daemon in the hub.
 */
/** The digest of what a seat asked for (a trunk act's own request), recorded on its intent. */
function askedDigest(parts: readonly string[]): string {
  return Buffer.from(requestBytes(parts)).toString("hex");
}

export type TrunkActInit = MessageInitShape<typeof TrunkActSchema>;

export interface SeatTrunk {
  review(identity: SeatIdentity, request: { requestId: string; branch: string; into: string; approve: boolean }): Promise<TrunkActInit>;
  gate(identity: SeatIdentity, request: { requestId: string; branch: string; into: string; pass: boolean }): Promise<TrunkActInit>;
  merge(identity: SeatIdentity, request: { requestId: string; branch: string; into: string }): Promise<TrunkActInit>;
}

export interface SeatTrunkDeps {
  readonly pipeline: SeatPipeline;
  /** The live run and home of each running seat of a team (the independence facts, O). */
  runs(team: string): Readonly<Record<string, { readonly run: string; readonly home: string }>>;
  /** Test seam: called after a merge moved the trunk, before its outcome is recorded. */
  readonly afterMerge?: () => void;
}

interface Change {
  readonly summary: ChangeSummary;
  readonly effectId: string;
  readonly branch: string;
  readonly trunk: string;
  readonly facts: KernelFacts;
}

export function createSeatTrunk(deps: SeatTrunkDeps): SeatTrunk {
  /**
   * A retry (§15): a request id this seat already used answers with what was recorded, before
   * the change is computed again — after a merge the branch is in the trunk, and recomputing
   * would answer "nothing to merge" instead of the merge that happened.
   */
  /**
   * A retry (§15): the seat's own request — its branch, destination and verdict — is recorded on
   * the intent (`asked`, a digest), so a request id used again with other bytes is refused, not
   * answered with the first act (found by an attack from a seat: a gate of another branch under
   * a used id was told it happened). An intent without it (from before it was recorded) cannot
   * prove a retry the same: refused too.
   */
  async function recorded(ctx: SeatContext, requestId: string, action: string, asked: string): Promise<TrunkActInit | undefined> {
    const again = await deps.pipeline.replay(ctx, requestId, action);
    if (again === undefined) return undefined;
    const { state, field } = again;
    if (field("asked") !== asked) {
      throw await deps.pipeline.refuse(
        ctx,
        refuse(
          "request.replay-mismatch",
          `request id ${requestId} was used for another ${action} (intent ${state.intentSeq}); a retry must send the same branch, destination and verdict`,
        ),
        action,
      );
    }
    // A retry refused is an attempt of its own: on record.
    const refusal = unsettled(state.status === "pending" ? "unknown" : state.status, state.note, state.resolution);
    if (refusal !== undefined) throw await deps.pipeline.refuse(ctx, refusal, action);
    return {
      effectId: state.effectId,
      intentSeq: BigInt(state.intentSeq),
      outcomeSeq: BigInt(state.outcomeSeq ?? 0),
      base: field("base"),
      head: field("head"),
      commit: new TextDecoder().decode(state.reply),
    };
  }

  async function change(ctx: SeatContext, branchName: string, into: string, action: string): Promise<Change> {
    const hub = ctx.team.hub;
    const fail = async (rule: "trunk.ref" | "trunk.conflict" | "trunk.nothing", reason: string) => deps.pipeline.refuse(ctx, refuse(rule, reason), action);
    const branch = normalizeBranch(branchName, { pattern: false });
    if (!branch.ok) throw await fail("trunk.ref", `'${branchName}' is not a branch name: ${branch.reason}`);
    const trunk = into
      ? normalizeBranch(into, { pattern: false })
      : { ok: true as const, name: (await git(["symbolic-ref", "--short", "HEAD"], { gitDir: hub })).stdout.trim() };
    if (!trunk.ok) throw await fail("trunk.ref", `'${into}' is not a branch name: ${trunk.reason}`);
    // A seat's branch changes only by its own seat's pushes (DESIGN.md "Repositories"): never
    // the destination of a review, gate or merge — a merge there moved another seat's work and
    // left a commit no seat authored on it (found by an attack from a seat).
    if (trunk.name.startsWith("seat/"))
      throw await fail("trunk.ref", `${trunk.name} is a seat's branch: it changes only by its own seat's pushes, never by a merge; name a trunk with --into`);
    if (trunk.name === branch.name)
      throw await fail("trunk.ref", `${branch.name} is both the change and its destination; name the trunk it would land on with --into`);
    const branchRef = `refs/heads/${branch.name}`;
    const trunkRef = `refs/heads/${trunk.name}`;
    for (const ref of [branchRef, trunkRef]) {
      if ((await readRef(hub, ref)) === undefined)
        throw await fail("trunk.ref", `${ref.slice("refs/heads/".length)} does not exist in the hub (git ls-remote teamd lists what you may see)`);
    }
    let summary: ChangeSummary;
    try {
      summary = await summarizeChange(hub, trunkRef, branchRef);
    } catch (error) {
      if (error instanceof MergeConflict)
        throw await fail("trunk.conflict", `${branch.name} conflicts with ${trunk.name} in ${error.paths.slice(0, 5).join(", ")}; the author rebases it first`);
      if (error instanceof NothingToMerge) throw await fail("trunk.nothing", `${branch.name} holds nothing ${trunk.name} lacks`);
      throw error;
    }
    const effectId = effectIdOf(summary, trunkRef, ctx.policy.policy.hash);
    const facts = ctx.ledger.view.trunkFacts(ctx.identity.team, { effectId, commits: summary.commits, runs: deps.runs(ctx.identity.team) });
    return { summary, effectId, branch: branch.name, trunk: trunk.name, facts };
  }

  function reply(c: Change, intentSeq: number, outcomeSeq: number | undefined, commit = ""): TrunkActInit {
    return {
      effectId: c.effectId,
      intentSeq: BigInt(intentSeq),
      outcomeSeq: BigInt(outcomeSeq ?? 0),
      base: c.summary.base,
      head: c.summary.head,
      tree: c.summary.tree,
      commit,
    };
  }

  /** A recorded state is settled when done, or an unknown the daemon or the owner since resolved as done; else its refusal. */
  function unsettled(status: "done" | "refused" | "unknown", note: string, resolution?: { readonly decision: string }): Refusal | undefined {
    if (status === "done") return undefined;
    if (status === "unknown" && (resolution?.decision === "resolved-done" || resolution?.decision === "accept-done")) return undefined;
    if (status === "unknown") return refuse("ledger.unknown-outcome", note || "the act's outcome is unknown");
    // A refusal the effect met names its rule in the note (`git.ref-busy: …`); a moved ref is trunk.moved.
    const named = noteRule(note);
    return named !== undefined ? refuse(named.rule, named.reason) : refuse("trunk.moved", note || `the act's outcome is ${status}`);
  }

  /** The act's own outcome: a refusal it records already (refused, unknown) is not recorded twice. */
  function settled(
    ctx: SeatContext,
    result: { readonly status: "done" | "refused" | "unknown"; readonly note: string; readonly resolution?: { readonly decision: string } | undefined },
  ): void {
    const refusal = unsettled(result.status, result.note, result.resolution);
    if (refusal !== undefined) throw deps.pipeline.outcomeRefusal(ctx, refusal);
  }

  /** §5: the review mode is an explicit policy, named in every record of a trunk act. */
  function reviewModeField(ctx: SeatContext): { key: string; value: string } {
    const review = ctx.policy.policy.constraints.review;
    return { key: "review-mode", value: `${review.mode}, floor ${review.floor}` };
  }

  const NO_ARTIFACT = { identity: { case: "none" as const, value: {} } };

  /** A verdict (review or gate): its record is the act itself — intent and outcome carrying the effect id. */
  async function verdict(
    identity: SeatIdentity,
    capability: "review" | "gate",
    request: { requestId: string; branch: string; into: string },
    field: { key: string; value: string },
  ): Promise<TrunkActInit> {
    const ctx = await deps.pipeline.context(identity, capability);
    const asked = askedDigest([capability, request.branch, request.into, field.value]);
    const again = await recorded(ctx, request.requestId, capability, asked);
    if (again !== undefined) return again;
    const c = await change(ctx, request.branch, request.into, capability);
    const result = await deps.pipeline.act(
      ctx,
      // §6: scope on the real destination — the trunk the change would land on, as a merge
      // is (and as the pass is re-checked at merge); the source branch is what is reviewed.
      { capability, effect: { paths: [...c.summary.paths], branch: c.trunk, effectId: c.effectId } },
      {
        action: capability,
        // The RFC's own record types (§15): a verifier reading GATE records finds every gate.
        type: capability === "gate" ? RecordType.GATE : RecordType.REVIEW,
        target: { kind: TargetKind.REF, name: `refs/heads/${c.branch}` },
        requestId: request.requestId,
        request: requestBytes([capability, c.effectId, field.value]),
        treeHash: await treeOfCommit(ctx.team.hub, c.summary.base),
        payload: {
          // A verdict changes no artifact: typed none (§15: no fictional hashes).
          before: NO_ARTIFACT,
          after: NO_ARTIFACT,
          detail:
            capability === "gate"
              ? { case: "gate", value: { result: field.value === "pass" ? GateResult.PASS : GateResult.FAIL } }
              : { case: "review", value: { verdict: field.value } },
          effectId: fromHex(c.effectId),
          fields: [field, reviewModeField(ctx), { key: "base", value: c.summary.base }, { key: "head", value: c.summary.head }, { key: "asked", value: asked }],
        },
        facts: c.facts,
        pathsFromHub: true,
      },
      async () => ({ result: "done" }),
    );
    settled(ctx, result);
    return reply(c, result.intentSeq, result.outcomeSeq);
  }

  return {
    review: (identity, request) => verdict(identity, "review", request, { key: "verdict", value: request.approve ? "approve" : "reject" }),
    gate: (identity, request) => verdict(identity, "gate", request, { key: "result", value: request.pass ? "pass" : "refuse" }),

    async merge(identity, request) {
      const ctx = await deps.pipeline.context(identity, "merge");
      const asked = askedDigest(["merge", request.branch, request.into]);
      const again = await recorded(ctx, request.requestId, "merge", asked);
      if (again !== undefined) return again;
      const c = await change(ctx, request.branch, request.into, "merge");
      const result = await deps.pipeline.act(
        ctx,
        // A merge's branch dimension is its destination: the trunk it changes.
        { capability: "merge", effect: { paths: [...c.summary.paths], branch: c.trunk, effectId: c.effectId } },
        {
          action: "merge",
          target: { kind: TargetKind.REF, name: `refs/heads/${c.trunk}` },
          requestId: request.requestId,
          request: requestBytes(["merge", c.effectId]),
          treeHash: await treeOfCommit(ctx.team.hub, c.summary.base),
          // The pass the kernel chose is consumed by this intent (never twice, §15).
          payload: (decision) => ({
            // The trunk's tip it lands on, and the tree it gives (the effect id's destination tree).
            before: { identity: { case: "gitCommit", value: c.summary.base } },
            after: { identity: { case: "gitTree", value: c.summary.tree } },
            effectId: fromHex(c.effectId),
            fields: [
              { key: "consumes", value: decision?.pass ?? "" },
              reviewModeField(ctx),
              { key: "base", value: c.summary.base },
              { key: "head", value: c.summary.head },
              { key: "asked", value: asked },
            ],
          }),
          facts: c.facts,
          pathsFromHub: true,
        },
        async () => {
          try {
            const commit = await mergeInto(
              ctx.team.hub,
              c.summary,
              { name: `seat ${identity.seat}`, email: `${identity.seat}@${identity.team}.teamd` },
              `Merge ${c.branch} into ${c.trunk}\n\nteamd effect ${c.effectId}`,
            );
            deps.afterMerge?.();
            return { result: "done", reply: new TextEncoder().encode(commit) };
          } catch (error) {
            // The trunk or the branch moved after the decision: nothing changed, the pass stays.
            if (error instanceof RefMoved) return { result: "refused", note: `${error.message}; the change is no longer the one decided on: review it again` };
            // A lock another update held through every retry: nothing moved — refused, never unknown (§15).
            if (error instanceof RefBusy) return { result: "refused", note: `git.ref-busy: ${error.message}; merge again` };
            throw error;
          }
        },
      );
      settled(ctx, result);
      return reply(c, result.intentSeq, result.outcomeSeq, new TextDecoder().decode(result.reply));
    },
  };
}
