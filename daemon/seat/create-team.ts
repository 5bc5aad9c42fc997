import { isAbsolute, resolve } from "node:path";
import { RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import type { CreateTeamRequest, CreateTeamResponse } from "../../src/gen/teamd/v1/shim_pb.js";
import { checkCreate, checkCreator, readBound, seatCarve, refuse, type CreateFacts, type Refusal } from "../../src/kernel/index.js";
import { policyInForce } from "../../src/ledger/policy-in-force.js";
import { fromHex, principalKey, seatPrincipal, toHex, type Ledger, type RecordDraft } from "../../src/ledger/index.js";
import type { SpendTree } from "../../src/kernel/envelope-spend.js";
import { readUnderRoot, removeMade, unfitRoot, writeNewInRoot } from "../../src/effects/team-root.js";
import { RefusalError } from "../../src/rpc/errors.js";
import { redactCredentials } from "../../src/teamfile/credentials.js";
import { loadTeamFileText, type LoadedPolicy } from "../../src/teamfile/index.js";
import { createHub, ensureRemote, hubPath } from "../host/hub.js";
import { checkName } from "../host/names.js";
import { excludeTeamFile, TEAM_FILE_NAME } from "../host/team-file-placement.js";
import type { TeamdHome } from "../host/home.js";
import { requestBytes, type SeatContext, type SeatIdentity, type SeatPipeline } from "./pipeline.js";

/**
 * create through the shim (§9 "create (execute)", §10, §8): a seat holding create asks for a team
 * of its making — a child team file and one of the repository roots its create-bound names. The
 * kernel decides it against the bound the owner wrote on the machine (src/kernel/create-bound.ts);
 * the daemon makes the child's hub from that root, writes the child's file there (never over one),
 * and records the child — its TEAM record and its policy in force — as the creating seat's act,
 * never the owner's, in one batch decided under the machine's one lock, so two creates cannot
 * spend one remainder or one root. The owner is told (a notice), sees the child in `teamd status`
 * with its parent, and applies its file in its repository as for any team.
 */
export interface SeatCreate {
  create(identity: SeatIdentity, request: CreateTeamRequest): Promise<Omit<CreateTeamResponse, "$typeName" | "$unknown">>;
}

export interface SeatCreateDeps {
  readonly pipeline: SeatPipeline;
  readonly home: TeamdHome;
  /** The spend tree a team is a node of, now (daemon/server/spend-book.ts); undefined: the team has no spend ceiling. */
  readonly spendTree: (team: string) => SpendTree | undefined;
  /** The live seats of a team (each as the lab it launched as): what its labs' seat allowance counts. */
  readonly liveSeats: (team: string) => { seat: string; lab: string | undefined }[];
  /** Start every seat of a team (the bound says whether creating also starts). */
  readonly startTeam: (team: string) => Promise<string[]>;
}

/** A child's team file is at most this long (a seat chose it; the daemon parses it). */
export const MAX_CHILD_FILE_BYTES = 256 * 1024;
/** The child's file, loaded by the owner's own loader, its start files read from the root it will live at. */
async function loadChild(text: string, root: string): Promise<LoadedPolicy | Refusal> {
  // First without start files, to learn which it pins; then with each read (no link followed) from the root.
  const files = new Map<string, Uint8Array | undefined>();
  const probe = loadTeamFileText(text, { readStartFile: (p) => (files.set(p, undefined), undefined), isDirectory: () => false });
  for (const path of files.keys()) files.set(path, await readUnderRoot(root, path));
  const loaded = files.size === 0 ? probe : loadTeamFileText(text, { readStartFile: (p) => files.get(p), isDirectory: () => false });
  if (!loaded.ok) {
    const first = loaded.errors[0];
    // Recorded, and shown to the owner: a key, a name or a line the seat wrote may carry a credential's shape (§11: never recorded).
    const said = first ? `${first.at ? `${first.at}: ` : ""}${first.message}` : "invalid";
    return refuse("create.invalid", `the child's team file does not load (${loaded.errors.length} error(s)): ${redactCredentials(said)}`);
  }
  return loaded;
}

export function createSeatCreate(deps: SeatCreateDeps): SeatCreate {
  const { pipeline } = deps;

  /**
   * What the kernel decides a create over, read now — the policy in force included, read again
   * (not the call's start: an owner act taking create away meanwhile holds at the lock).
   */
  function facts(ledger: Ledger, ctx: SeatContext, boundSeq: number | undefined): CreateFacts {
    const team = ctx.identity.team;
    const policy = policyInForce(ledger, team).policy;
    const carve = seatCarve(ledger.view.teams(), team);
    const clock = ledger.view.runtimeClock(team);
    const limit = policy.ceiling?.runtimeMs;
    const own = limit === undefined ? undefined : clock.renewedAt + limit;
    const deadline = own === undefined ? clock.deadline : clock.deadline === undefined ? own : Math.min(own, clock.deadline);
    const tree = deps.spendTree(team);
    return {
      policy,
      live: deps.liveSeats(team),
      carvedSeats: carve.carved,
      ...(carve.slice !== undefined ? { ownSlice: carve.slice } : {}),
      ...(tree !== undefined ? { spendTree: tree } : {}),
      created: boundSeq === undefined ? 0 : ledger.view.createdUnder(boundSeq),
      ...(deadline !== undefined ? { deadline } : {}),
      teamNames: ledger.view.teams().map((t) => t.team),
      teamRoots: ledger.view.teams().map((t) => t.repository),
    };
  }

  return {
    async create(identity, request) {
      const action = "team.create";
      const ctx = await pipeline.context(identity, action, { guardInAct: true });
      const target = { kind: TargetKind.TEAM, name: identity.team };
      // Every refusal of a create may echo what the seat wrote (a command, a name): recorded with credential shapes redacted.
      const fail = async (refusal: Refusal) => pipeline.refuse(ctx, redacted(refusal), action, target);
      if (request.teamFile.byteLength > MAX_CHILD_FILE_BYTES)
        throw await fail(refuse("create.invalid", `a child's team file is at most ${MAX_CHILD_FILE_BYTES / 1024} KiB`));
      const root = request.root;
      if (root.length === 0 || root.length > 4096 || !isAbsolute(root) || resolve(root) !== root || /[\u0000-\u001f\u007f]/.test(root))
        throw await fail(refuse("create.root", "the root is one of the bound's repository roots, as an absolute path"));
      const text = Buffer.from(request.teamFile).toString("utf8");
      // §15, one retry rule: a request id this seat used for a create is answered from its records when the bytes
      // are the same, refused when they are not — before anything is looked at again (its root is taken by then).
      const digest = requestBytes(["create", root, request.teamFile]);
      const prior =
        request.requestId === "" ? undefined : ctx.ledger.view.recordedRequest(principalKey(seatPrincipal(identity.team, identity.seat)), request.requestId);
      if (prior !== undefined) {
        const made = prior.subjects[0] === undefined ? undefined : ctx.ledger.view.team(prior.subjects[0]);
        if (prior.action !== action || prior.digest !== toHex(digest) || made === undefined)
          throw await fail(
            refuse(
              "request.replay-mismatch",
              `request id ${request.requestId} was used for another request (records ${prior.seqs[0] ?? "?"}); a retry must send the same bytes`,
            ),
          );
        return {
          team: made.team,
          teamSeq: BigInt(made.seq),
          policySeq: BigInt(ctx.ledger.view.policy(made.team)?.seq ?? 0),
          started: [],
          deadlineUnixMs: BigInt(made.created?.deadlineUnixMs ?? 0),
        };
      }
      // The bound is read (and checked) first: a seat with none learns so before its file is parsed.
      const boundState = ctx.ledger.view.createBound(identity.team, identity.seat);
      const bound = boundState === undefined ? undefined : readBound(boundState.canonical);
      if (typeof bound === "string") throw await fail(refuse("create.bound", `the create-bound on record does not read (${bound}); the owner writes it again`));
      const early = checkCreator(bound, identity.seat, root, facts(ctx.ledger, ctx, boundState?.seq));
      if (early !== undefined) throw await fail(early);
      const loaded = await loadChild(text, root);
      if ("decision" in loaded) throw await fail(loaded);
      const child = loaded.policy.team;
      try {
        checkName("team", child);
      } catch (error) {
        throw await fail(refuse("create.name", error instanceof Error ? error.message : String(error)));
      }
      const data = JSON.parse(loaded.canonical) as Record<string, unknown>;
      const ask = { seat: identity.seat, root, child: loaded.policy, data };
      const first = checkCreate(bound, ask, facts(ctx.ledger, ctx, boundState?.seq), pipeline.clock());
      if (first.decision === "refuse") throw await fail(first);

      // The root as the daemon will use it: its own real path, outside TEAMD_HOME, a repository of its own.
      const unfit = await unfitRoot(root, deps.home.root);
      if (unfit !== undefined) throw await fail(refuse("create.root", unfit));
      // The effects before the record, each undone if the record is refused: the child's file in
      // its root (never over one: a root with a team file is someone's), then its hub.
      const written = await writeNewInRoot(root, TEAM_FILE_NAME, text, deps.home.mode === "system");
      if ("error" in written)
        throw await fail(
          refuse(
            "create.root",
            `${root}/${TEAM_FILE_NAME} cannot be made (${written.error}): the root is not a directory, or already has a team file and is someone's`,
          ),
        );
      const filePath = written.path;
      let hubMade = false;
      try {
        // As init's, best effort, and in user mode only: in system mode git would run as root in the
        // owner's repository and leave root-owned files in its .git (the owner runs teamd init there).
        const ownRepo = deps.home.mode === "user";
        if (ownRepo) await excludeTeamFile(root).catch(() => undefined);
        const hub = await createHub(deps.home.root, child, root, deps.home.ownerGid === undefined ? {} : { sharedGid: deps.home.ownerGid });
        hubMade = hub.created;
        // A hub left under that name (a team once registered, or made by hand) is not the child's to take.
        if (!hub.created) throw await fail(refuse("create.name", `a hub named '${child}' already exists under TEAMD_HOME; name the child another way`));
        const signer = seatPrincipal(identity.team, identity.seat);
        const bytes = { id: request.requestId, digest };
        const recorded = await pipeline.record(ctx, action, target, bytes, (_view, now) => {
          // Again under the lock, over the records as they stand now: a create meanwhile took its count, its root or its slice.
          const state = ctx.ledger.view.createBound(identity.team, identity.seat);
          const again = state === undefined ? undefined : readBound(state.canonical);
          if (state?.seq !== boundState?.seq || typeof again === "string")
            return refuse("create.bound", "the create-bound changed while the create was prepared; ask again");
          const decided = checkCreate(again, ask, facts(ctx.ledger, ctx, state?.seq), now);
          if (decided.decision === "refuse") return redacted(decided);
          const policyHash = fromHex(loaded.hashes.policy.replace(/^sha256:/, ""));
          const drafts: RecordDraft[] = [
            {
              type: RecordType.TEAM,
              team: child,
              actor: signer,
              signer,
              action,
              payload: {
                domain: { team: child, repositoryRoot: root },
                target: { kind: TargetKind.TEAM, name: child },
                requestId: bytes.id,
                requestDigest: bytes.digest,
                detail: {
                  case: "team",
                  value: {
                    repository: root,
                    hub: hub.path,
                    parent: identity.team,
                    boundSeq: BigInt(state?.seq ?? 0),
                    bound: state?.canonical ?? "",
                    deadlineUnixMs: BigInt(decided.deadline ?? 0),
                  },
                },
              },
            },
            {
              type: RecordType.POLICY,
              team: child,
              actor: signer,
              signer,
              action: "policy.create",
              payload: {
                domain: { team: child, repositoryRoot: root },
                target: { kind: TargetKind.TEAM, name: child },
                after: { identity: { case: "contentSha256", value: policyHash } },
                detail: {
                  case: "policy",
                  value: { teamFileHash: policyHash, canonical: loaded.canonical, startFileHashes: { ...loaded.startFiles }, inForceSeq: 0n },
                },
              },
            },
          ];
          return drafts;
        });
        const teamRecord = ctx.ledger.view.team(child);
        if (ownRepo) await ensureRemote(root, hub.path).catch(() => undefined);
        const started = alsoStarts(bound) ? await deps.startTeam(child).catch(() => [] as string[]) : [];
        return {
          team: child,
          teamSeq: BigInt(teamRecord?.seq ?? recorded.seq),
          policySeq: BigInt(ctx.ledger.view.policy(child)?.seq ?? 0),
          started,
          deadlineUnixMs: BigInt(teamRecord?.created?.deadlineUnixMs ?? 0),
        };
      } catch (error) {
        // Refused (or failed) after the effects: nothing of the child stays but what is on record.
        if (ctx.ledger.view.team(child)?.created?.by !== identity.seat || ctx.ledger.view.team(child)?.repository !== root)
          await removeMade([filePath, ...(hubMade ? [hubPath(deps.home.root, child)] : [])]);
        if (error instanceof RefusalError) throw error;
        // A failure of the effects (git could not clone the root: no commit, not a repository) is refused and on record too.
        const why = error instanceof Error ? (error.message.split("\n")[0] ?? "") : String(error);
        throw await fail(refuse("create.root", `the child could not be made at ${root}: ${why}`));
      }
    },
  };
}

/** A refusal as it is recorded and shown to the owner: no credential shape the seat wrote (§11). */
function redacted(refusal: Refusal): Refusal {
  return { ...refusal, reason: redactCredentials(refusal.reason) };
}

/** Whether the bound says creating also starts the child. */
function alsoStarts(bound: ReturnType<typeof readBound> | undefined): boolean {
  return bound !== undefined && typeof bound !== "string" && bound.alsoStarts;
}
