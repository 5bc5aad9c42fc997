import { accountIdentity } from "../../src/kernel/account-identities.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import type { DeployResponseSchema } from "../../src/gen/teamd/v1/shim_pb.js";
import { readIsUnbounded, refuse, startContextCanonical, type DeployCommand, type DeployPush, type KernelRequest } from "../../src/kernel/index.js";
import { actAsAccount } from "../../src/kernel/act-as.js";
import { fromHex } from "../../src/ledger/index.js";
import { git } from "../../src/effects/git.js";
import { effectIdOf } from "../../src/effects/git-merge.js";
import { NotAnArtifact, summarizeArtifact, type ArtifactSummary } from "../../src/effects/git-artifact.js";
import { ExportRefused } from "../../src/effects/git-export.js";
import {
  isPinnedFile,
  prepareDeployFolder,
  readPinnedFile,
  removeDeployFolder,
  sweepDeployFolders,
  type DeployFolder,
  type PinnedFile,
} from "../../src/effects/deploy-folder.js";
import { runDeployCommand, type DeployExit } from "../../src/effects/deploy-run.js";
import { pushToRemote, type RemotePushResult } from "../../src/effects/git-push-remote.js";
import { AccountConfigError, scrubValue, secretForms, type AccountCredential, type Broker, type SecretForms } from "../../src/broker/index.js";
import { sha256 } from "../../src/teamfile/hashes.js";
import { requestBytes, type SeatContext, type SeatPipeline, type SeatIdentity } from "./pipeline.js";

/**
 * Deploy through the shim (§3 deploy, §10, §15). The seat names an environment and, at most, a
 * commit of the trunk; everything else the daemon establishes itself, each step refusing with
 * its rule before anything is recorded as an intent:
 *
 * 1. act-as: an environment that pushes to the owner's remote runs under the account the team
 *    file declares for it; a seat naming another is refused (`act-as.required`), and one naming
 *    an account for an environment that runs a command too (`act-as.unmediated`);
 * 2. the artifact, from the hub: a commit the trunk holds, and the effect id of the change
 *    that made it (`deploy.artifact`);
 * 3. the kernel: the seat's deploy(env), the env declared, a still-valid pass for that
 *    effect id — not voided by a failed or unknown deploy in any environment;
 * 4. the owner's command for that env, and every file it pins, read from the owner's
 *    repository and checked against the hashes `teamd apply` recorded (`deploy.command`,
 *    `deploy.unpinned`);
 * 5. a fresh folder under TEAMD_HOME holding exactly the artifact's tree, the verified
 *    pinned files written over their paths (they are reserved: no seat changed them).
 *
 * An environment that pushes (§3 act-as) takes steps 3 and 4 differently: the kernel decides
 * deploy(env) and act-as over the declared account together; then the account's credential is
 * read from the owner's configuration (`act-as.credential`); the effect pushes the artifact
 * commit from the hub to the declared remote branch (src/effects/git-push-remote.ts). A
 * rejected or refused push is a refused outcome (`deploy.push`) and voids the pass as a failed
 * command does; a push killed mid-way leaves the outcome unknown.
 *
 * Then the durable intent, and the effect: the command, outside the sandbox, with a minimal
 * explicit environment and a deadline. Exit 0 is done; any other exit is a refused outcome,
 * which voids the pass (§15); a command killed at its deadline, or a daemon that died while it
 * ran, leaves the outcome unknown — the environment stays blocked until the owner resolves it.
 */
export type DeployReply = MessageInitShape<typeof DeployResponseSchema>;

export interface SeatDeploy {
  deploy(identity: SeatIdentity, request: { requestId: string; env: string; artifact: string; asAccount: string }): Promise<DeployReply>;
  /** At daemon start, before any deploy: remove the folders a daemon that died mid-deploy left; returns their names. */
  sweep(): Promise<string[]>;
}

export interface SeatDeployDeps {
  readonly pipeline: SeatPipeline;
  /** TEAMD_HOME: deploy folders are made under it (never in a shared temp folder). */
  readonly home: string;
  /** The live run and home of each running seat (the trunk facts' independence input). */
  runs(team: string): Readonly<Record<string, { readonly run: string; readonly home: string }>>;
  /** The command's deadline; default 15 minutes. */
  readonly timeoutMs?: number;
  /** The owner's account credentials (act-as): read at each push, never held by a seat. */
  readonly broker: Pick<Broker, "account">;
  /** Test seam (TEAMD_TEST_CRASH_IN_DEPLOY=1): called once the intent is durable, before the command runs. */
  readonly afterIntent?: () => void;
}

export const DEPLOY_TIMEOUT_MS = 15 * 60_000;
const NO_SECRETS = secretForms([]);
/** What a seat is shown of the command's output: the end, where errors are. */
const TAIL_BYTES = 8 * 1024;
/** A deploy exports the artifact's tree into TEAMD_HOME; a larger one is refused before anything is written. */
const MAX_EXPORT_BYTES = 2 * 1024 * 1024 * 1024;
/** The PATH a deploy command gets unless the owner binds another (`env: { PATH: … }`). */
const DEPLOY_PATH = "/usr/local/bin:/usr/bin:/bin";

export function createSeatDeploy(deps: SeatDeployDeps): SeatDeploy {
  const timeoutMs = deps.timeoutMs ?? DEPLOY_TIMEOUT_MS;
  /**
   * One deploy per environment at a time, in arrival order: the next is decided only after the
   * previous outcome is recorded — a failure voids the pass it would ship under, an unknown
   * blocks the environment — and two commands never race on one environment.
   */
  const running = new Map<string, Promise<unknown>>();
  function oneAtATime<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = running.get(key) ?? Promise.resolve();
    const mine = before.then(work, work);
    const settled = mine.then(
      () => undefined,
      () => undefined,
    );
    running.set(key, settled);
    void settled.then(() => {
      if (running.get(key) === settled) running.delete(key);
    });
    return mine;
  }

  function actOf(
    a: ArtifactSummary | undefined,
    effectId: string,
    intentSeq: number,
    outcomeSeq: number | undefined,
    commit: string,
  ): NonNullable<DeployReply["act"]> {
    return {
      effectId,
      intentSeq: BigInt(intentSeq),
      outcomeSeq: BigInt(outcomeSeq ?? 0),
      base: a?.base ?? "",
      head: a?.head ?? "",
      tree: a?.tree ?? "",
      commit,
    };
  }

  /** A request id this seat used before answers with what was recorded, and never runs the command again (§15). */
  async function recorded(ctx: SeatContext, requestId: string, env: string, artifact: string): Promise<DeployReply | undefined> {
    const again = await deps.pipeline.replay(ctx, requestId, "deploy");
    if (again === undefined) return undefined;
    const { state, field } = again;
    // A retry refused is an attempt of its own: each refusal below is on record.
    // The first request named its env and perhaps an artifact (else the trunk's head then): a retry names the same.
    if (field("env") !== env || (artifact !== "" && !field("artifact").startsWith(artifact))) {
      throw await deps.pipeline.refuse(
        ctx,
        refuse(
          "request.replay-mismatch",
          `request id ${requestId} deployed ${field("artifact")} to ${field("env")} (intent ${state.intentSeq}); a retry must be byte-identical`,
        ),
        "deploy",
      );
    }
    const resolvedDone = state.resolution?.decision === "resolved-done" || state.resolution?.decision === "accept-done";
    if ((state.status === "pending" || state.status === "unknown") && state.resolution === undefined) {
      throw await deps.pipeline.refuse(
        ctx,
        refuse(
          "ledger.unknown-outcome",
          `deploy intent ${state.intentSeq} to ${env} has an unknown outcome (${state.note || "the daemon stopped while it ran"}); ${env} is blocked until the owner runs \`teamd ledger resolve ${state.intentSeq} --team ${ctx.identity.team} --done\` or \`--repeat NEW_ID\``,
        ),
        "deploy",
      );
    }
    if (state.status !== "done" && !resolvedDone) {
      const how = state.resolution !== undefined ? `the owner resolved its unknown outcome as ${state.resolution.decision}` : state.note;
      throw await deps.pipeline.refuse(ctx, refuse("deploy.failed", `deploy intent ${state.intentSeq} to ${env} did not complete: ${how}`), "deploy");
    }
    return {
      act: {
        effectId: state.effectId,
        intentSeq: BigInt(state.intentSeq),
        outcomeSeq: BigInt(state.outcomeSeq ?? 0),
        base: field("base"),
        head: field("head"),
        tree: field("tree"),
        commit: field("artifact"),
      },
      env,
      exitCode: 0,
      outputTail: "",
    };
  }

  /** The artifact and its effect id, from the hub; a refusal recorded where it is none. */
  async function artifactOf(ctx: SeatContext, named: string): Promise<{ summary: ArtifactSummary; trunk: string; effectId: string }> {
    const hub = ctx.team.hub;
    const trunk = (await git(["symbolic-ref", "--short", "HEAD"], { gitDir: hub })).stdout.trim();
    try {
      const summary = await summarizeArtifact(hub, `refs/heads/${trunk}`, named);
      return { summary, trunk, effectId: effectIdOf(summary, summary.trunkRef, ctx.policy.policy.hash) };
    } catch (error) {
      if (error instanceof NotAnArtifact)
        throw await deps.pipeline.refuse(ctx, refuse("deploy.artifact", `${error.message}; name a commit of ${trunk} (the default is its head)`), "deploy");
      throw error;
    }
  }

  /**
   * The owner's pinned files, read once from the owner's repository and checked against the
   * recorded pins (the whole context hash, so argv, workdir and bindings are covered too).
   * The bytes checked are the bytes written into the deploy folder: no second read to race.
   */
  async function pinnedFiles(ctx: SeatContext, command: DeployCommand): Promise<Map<string, PinnedFile>> {
    const recordedHashes = ctx.ledger.view.policy(ctx.identity.team)?.startFileHashes ?? {};
    const files = new Map<string, PinnedFile>();
    const observed: Record<string, string> = Object.create(null) as Record<string, string>;
    const changed: string[] = [];
    let linked = false;
    for (const path of command.context.files) {
      // Read without following a link at the file or at any folder of its path: the owner's
      // working tree holds what the trunk merged, and a seat can push a symbolic link.
      const file = await readPinnedFile(ctx.team.repository, path);
      if (!isPinnedFile(file)) {
        changed.push(`${path} ${file.absent}`);
        linked ||= file.link;
        continue;
      }
      observed[path] = sha256(file.bytes);
      if (observed[path] !== recordedHashes[path]) changed.push(`${path} changed since it was pinned`);
      files.set(path, file);
    }
    const canonical = changed.length === 0 ? startContextCanonical(undefined, command.context, observed) : undefined;
    if (canonical === undefined || sha256(canonical) !== command.hash) {
      const why = changed.length > 0 ? changed.join("; ") : "the command's context does not hash to its pin";
      const fix = linked
        ? "a pinned file is read only as a regular file under real folders of the owner's repository (a link can point anywhere on the host): the owner replaces the link with the file or folder itself, reviews it, and runs teamd apply to pin it"
        : "the owner reviews the change and runs teamd apply to pin it";
      throw await deps.pipeline.refuse(
        ctx,
        refuse("deploy.unpinned", `the deploy command of ${command.env} no longer matches what the owner applied: ${why}; ${fix}`),
        "deploy",
        { kind: TargetKind.ENVIRONMENT, name: command.env },
      );
    }
    return files;
  }

  /** A fresh folder under TEAMD_HOME (src/effects/deploy-folder.ts); an artifact in the pinned files' way is a recorded refusal. */
  async function prepare(ctx: SeatContext, summary: ArtifactSummary, files: ReadonlyMap<string, PinnedFile>, workdir: string): Promise<DeployFolder> {
    try {
      return await prepareDeployFolder(deps.home, { hub: ctx.team.hub, commit: summary.commit, maxBytes: MAX_EXPORT_BYTES }, files, workdir);
    } catch (error) {
      if (error instanceof ExportRefused) throw await deps.pipeline.refuse(ctx, refuse("deploy.artifact", error.message), "deploy");
      throw error;
    }
  }

  function environment(command: DeployCommand, folder: DeployFolder, summary: ArtifactSummary, effectId: string): Record<string, string> {
    // Nothing inherited: the daemon's environment may hold anything. The owner's bindings may
    // set PATH or HOME; teamd's own names come last so no binding can misstate the artifact.
    return {
      PATH: DEPLOY_PATH,
      HOME: folder.home,
      LANG: "C.UTF-8",
      ...command.context.env,
      TEAMD_DEPLOY_ENV: command.env,
      TEAMD_DEPLOY_ARTIFACT: summary.commit,
      TEAMD_DEPLOY_TREE: summary.tree,
      TEAMD_DEPLOY_EFFECT_ID: effectId,
    };
  }

  return {
    sweep() {
      return sweepDeployFolders(deps.home);
    },
    async deploy(identity, request) {
      const ctx = await deps.pipeline.context(identity, "deploy");
      const env = request.env;
      if (env === "") throw await deps.pipeline.refuse(ctx, refuse("request.malformed", "a deploy names its environment"), "deploy");
      // Under which account (the kernel's act-as.ts, as for the broker): the one the team file declares, or none.
      const account = actAsAccount(ctx.policy.policy, { act: "deploy", env }, request.asAccount === "" ? undefined : request.asAccount);
      if ("decision" in account) throw await deps.pipeline.refuse(ctx, account, "deploy", { kind: TargetKind.ENVIRONMENT, name: env });
      return oneAtATime(`${identity.team}\0${env}`, () => deployOnce(identity, request));
    },
  };

  function pushOf(ctx: SeatContext, env: string): DeployPush | undefined {
    const pushes = ctx.policy.policy.pushes;
    return pushes !== undefined && Object.prototype.hasOwnProperty.call(pushes, env) ? pushes[env] : undefined;
  }

  /** The account's credential from the owner's configuration, before any intent; refused naming the fix. */
  async function credentialOf(ctx: SeatContext, push: DeployPush): Promise<{ credential: AccountCredential; forms: SecretForms }> {
    try {
      return await deps.broker.account(push.account, ctx.policy.policy.declared.accounts, accountIdentity(ctx.policy.policy, push.account));
    } catch (error) {
      if (error instanceof AccountConfigError)
        throw await deps.pipeline.refuse(ctx, refuse("act-as.credential", error.message), "deploy", { kind: TargetKind.ENVIRONMENT, name: push.env });
      throw error;
    }
  }

  /** What git or the command printed, each line scrubbed of every credential form and key shape: shown to the seat, never recorded. */
  function scrubLines(text: string, forms: SecretForms): string {
    return text
      .split("\n")
      .map((line) => scrubValue(line, forms))
      .join("\n")
      .slice(-TAIL_BYTES);
  }

  /**
   * What the deploying seat is shown of the output (§3: every content-bearing diagnostic stays
   * within the requester's read scope; issue 24, item 10). The owner's command runs on the whole
   * artifact, so its output may show any file of it: a seat whose read scope covers the whole
   * repository gets the scrubbed tail; any other seat a summary (how much was withheld, and why).
   */
  function shownOutput(ctx: SeatContext, text: string, forms: SecretForms): string {
    const scrubbed = scrubLines(text, forms);
    if (scrubbed.trim() === "" || readIsUnbounded(ctx.policy.policy, ctx.seat)) return scrubbed;
    return `(${Buffer.byteLength(scrubbed)} bytes of output withheld: the command runs on the whole artifact, and your read scope does not cover the whole repository)`;
  }

  /** A publish: the artifact pushed to the owner's remote under the declared account (§3 act-as). */
  async function publishOnce(
    ctx: SeatContext,
    identity: SeatIdentity,
    request: { requestId: string; env: string },
    push: DeployPush,
    artifact: { summary: ArtifactSummary; trunk: string; effectId: string },
    facts: ReturnType<SeatContext["ledger"]["view"]["trunkFacts"]>,
  ): Promise<DeployReply> {
    const { summary, trunk, effectId } = artifact;
    const env = push.env;
    // No account named: the kernel resolves the one the policy declares for this env and requires
    // act-as over it (§6: scope against the account the operation resolves to, not a named one).
    const kernelRequest: Omit<KernelRequest, "seat"> = { capability: "deploy", effect: { env, branch: trunk, effectId } };
    await deps.pipeline.decide(ctx, kernelRequest, "deploy", facts);
    const { credential, forms } = await credentialOf(ctx, push);
    let pushed: RemotePushResult | undefined;
    const result = await deps.pipeline.act(
      ctx,
      kernelRequest,
      {
        action: "deploy",
        target: { kind: TargetKind.ENVIRONMENT, name: env },
        requestId: request.requestId,
        request: requestBytes(["deploy", env, effectId, summary.commit, push.account]),
        // The remote, the branch and the account are the owner's (the team file's); no credential.
        payload: (decision) => ({
          effectId: fromHex(effectId),
          fields: [
            ...artifactFields(env, decision?.pass, summary),
            { key: "remote", value: push.url },
            { key: "branch", value: push.branch },
            { key: "account", value: push.account },
          ],
        }),
        facts,
      },
      async () => {
        deps.afterIntent?.();
        pushed = await pushToRemote({
          hub: ctx.team.hub,
          commit: summary.commit,
          url: push.url,
          branch: push.branch,
          username: credential.username,
          token: credential.token,
          timeoutMs,
        });
        // The notes are teamd's own words; a rejection's reason (the remote's, at most 200
        // characters) is scrubbed of every credential form before it is recorded.
        if (pushed.kind === "done") return { result: "done", note: `pushed to ${push.branch} (${pushed.status}) under ${push.account}` };
        if (pushed.kind === "refused") return { result: "refused", note: `deploy.push: ${scrubValue(pushed.why, forms)}` };
        throw new Error(pushed.why);
      },
    );
    const tail = pushed === undefined ? "" : shownOutput(ctx, pushed.stderr, forms);
    const shown = tail.trim() === "" ? "" : `\n--- git's output (scrubbed, not recorded) ---\n${tail}`;
    if (result.status === "done") {
      return {
        act: actOf(summary, effectId, result.intentSeq, result.outcomeSeq, summary.commit),
        env,
        exitCode: 0,
        outputTail: tail,
        pushedTo: `${push.url} ${push.branch}`,
        account: push.account,
      };
    }
    if (result.status === "unknown")
      throw deps.pipeline.outcomeRefusal(
        ctx,
        refuse(
          "ledger.unknown-outcome",
          `deploy intent ${result.intentSeq} to ${env}: ${result.note}; ${env} is blocked and the pass for effect ${effectId} void until the owner checks ${push.url} and resolves it (teamd ledger resolve ${result.intentSeq} --team ${identity.team})${shown}`,
        ),
      );
    throw deps.pipeline.outcomeRefusal(
      ctx,
      refuse(
        "deploy.push",
        `deploy intent ${result.intentSeq} to ${env}: ${result.note}; the pass for effect ${effectId} is now void in every environment (re-gate the change)${shown}`,
      ),
    );
  }

  async function deployOnce(identity: SeatIdentity, request: { requestId: string; env: string; artifact: string }): Promise<DeployReply> {
    // Read again after waiting its turn: the policy in force may have changed meanwhile.
    const ctx = await deps.pipeline.context(identity, "deploy");
    const env = request.env;
    const again = await recorded(ctx, request.requestId, env, request.artifact);
    if (again !== undefined) return again;

    const artifact = await artifactOf(ctx, request.artifact);
    const { summary, trunk, effectId } = artifact;
    const facts = ctx.ledger.view.trunkFacts(identity.team, { effectId, commits: summary.commits, runs: deps.runs(identity.team) });
    const push = pushOf(ctx, env);
    if (push !== undefined) return publishOnce(ctx, identity, request, push, artifact, facts);
    // deploy's branch dimension is where the artifact comes from: the trunk.
    const kernelRequest: Omit<KernelRequest, "seat"> = { capability: "deploy", effect: { env, branch: trunk, effectId } };
    await deps.pipeline.decide(ctx, kernelRequest, "deploy", facts);

    const deploys = ctx.policy.policy.deploys;
    const command = deploys !== undefined && Object.prototype.hasOwnProperty.call(deploys, env) ? deploys[env] : undefined;
    if (command === undefined) {
      throw await deps.pipeline.refuse(
        ctx,
        refuse(
          "deploy.command",
          `the team file declares no deploy command for ${env}; the owner adds \`deploy: { ${env}: { command: [...], files: [...] } }\` and runs teamd apply`,
        ),
        "deploy",
        { kind: TargetKind.ENVIRONMENT, name: env },
      );
    }
    const files = await pinnedFiles(ctx, command);
    const folder = await prepare(ctx, summary, files, command.context.workdir);
    let exit: DeployExit | undefined;
    try {
      const result = await deps.pipeline.act(
        ctx,
        kernelRequest,
        {
          action: "deploy",
          target: { kind: TargetKind.ENVIRONMENT, name: env },
          requestId: request.requestId,
          request: requestBytes(["deploy", env, effectId, summary.commit]),
          // The pass it ships under; never consumed (a deploy shares it, §3).
          payload: (decision) => ({
            effectId: fromHex(effectId),
            fields: [...artifactFields(env, decision?.pass, summary), { key: "command", value: command.hash }],
          }),
          facts,
        },
        async () => {
          deps.afterIntent?.();
          exit = await runDeployCommand({
            argv: command.context.command,
            cwd: folder.cwd,
            env: environment(command, folder, summary, effectId),
            timeoutMs,
            tailBytes: TAIL_BYTES,
          });
          // The note is recorded: the exit status only, never the output.
          if (exit.kind === "exited")
            return exit.code === 0 ? { result: "done" } : { result: "refused", note: `the deploy command exited with status ${exit.code}` };
          if (exit.kind === "not-started") return { result: "refused", note: `the deploy command could not be started (${exit.reason}); nothing ran` };
          // Killed mid-way: what it did to the environment cannot be known (§15).
          throw new Error(
            exit.timedOut
              ? `the deploy command was killed at its ${Math.round(timeoutMs / 1000)} s deadline`
              : `the deploy command was killed by ${exit.signal}`,
          );
        },
      );
      // No account is used here: the key shapes alone are scrubbed.
      const tail = exit !== undefined && exit.kind !== "not-started" ? shownOutput(ctx, exit.tail, NO_SECRETS) : "";
      if (result.status === "done") {
        return { act: actOf(summary, effectId, result.intentSeq, result.outcomeSeq, summary.commit), env, exitCode: 0, outputTail: tail };
      }
      const shown = tail === "" ? "" : `\n--- the command's last output (not recorded) ---\n${tail}`;
      if (result.status === "unknown")
        throw deps.pipeline.outcomeRefusal(
          ctx,
          refuse(
            "ledger.unknown-outcome",
            `deploy intent ${result.intentSeq} to ${env}: ${result.note}; ${env} is blocked and the pass for effect ${effectId} void until the owner resolves it (teamd ledger resolve ${result.intentSeq} --team ${identity.team})${shown}`,
          ),
        );
      throw deps.pipeline.outcomeRefusal(
        ctx,
        refuse(
          "deploy.failed",
          `deploy intent ${result.intentSeq} to ${env}: ${result.note}; the pass for effect ${effectId} is now void in every environment (re-gate the change)${shown}`,
        ),
      );
    } finally {
      await removeDeployFolder(folder);
    }
  }
}

/** What every deploy intent records of the artifact it ships (a command's run and a publish alike). */
function artifactFields(env: string, pass: string | undefined, summary: ArtifactSummary): { key: string; value: string }[] {
  return [
    { key: "env", value: env },
    { key: "ships", value: pass ?? "" },
    { key: "artifact", value: summary.commit },
    { key: "base", value: summary.base },
    { key: "head", value: summary.head },
    { key: "tree", value: summary.tree },
  ];
}
