import { accountIdentity } from "../../src/kernel/account-identities.js";
import { TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { BrokerRequest, BrokerResponseSchema, BrokerTaskSchema } from "../../src/gen/teamd/v1/shim_pb.js";
import {
  AccountConfigError,
  checkTaskId,
  LIMITS,
  scrubValue,
  TrackerConfigError,
  type AccountCredential,
  TrackerError,
  type Broker,
  type BrokerAnswer,
  type BrokerOperation,
  type ResolvedTracker,
  type TaskDetail,
  type TaskSummary,
} from "../../src/broker/index.js";
import { refuse, type KernelRequest, type RuleId } from "../../src/kernel/index.js";
import { BROKER_OPERATIONS } from "../../src/kernel/authorize.js";
import { credentialShape } from "../../src/teamfile/credentials.js";
import { sha256 } from "../../src/teamfile/hashes.js";
import { requestBytes, type SeatPipeline, type SeatIdentity } from "./pipeline.js";

/**
 * `teamd-shim broker pull | read | claim | comment` through the pipeline (§11). The order:
 *
 * 1. the request's shape: a task id for read, claim and comment; a comment's text, non-empty,
 *    at most 32 KiB, without a known key shape (it is published under the owner's name);
 * 2. the kernel decides use-broker over the task resource with the operation (`authority.none`,
 *    `scope.task`, `broker.operation`), and for a comment act-as over the account it is made
 *    under, in addition (§3: `act-as.required` without one; pull, read and claim run under the
 *    tracker's credential and refuse an account, `act-as.unmediated`), recorded when refused;
 * 3. the resource's tracker is resolved — the team file's `trackers:` entry in the owner's
 *    configuration, or the embedded default folder — before any intent (`broker.tracker`);
 * 3b. a comment: the account's credential, from the owner's accounts configuration
 *    (`act-as.credential`), before any intent;
 * 4. intent, the tracker call, outcome. The records name the operation, the resource, the task
 *    id and the tracker (and a comment's account, its length and sha-256) — never a task's
 *    content, never a comment's text, never a credential. A tracker's refusal
 *    (`broker.task`, `broker.claimed`, `broker.upstream`) is the outcome `refused` with its rule
 *    in the note; a claim the tracker did not answer is `unknown` (it may have happened).
 */
export interface SeatBroker {
  call(identity: SeatIdentity, request: BrokerRequest): Promise<MessageInitShape<typeof BrokerResponseSchema>>;
}

const RULE_OF: Readonly<Record<TrackerError["kind"], RuleId>> = {
  task: "broker.task",
  claimed: "broker.claimed",
  upstream: "broker.upstream",
  unreachable: "broker.upstream",
};

function wire(task: TaskSummary | TaskDetail): MessageInitShape<typeof BrokerTaskSchema> {
  return {
    id: task.id,
    title: task.title,
    state: task.state,
    labels: [...task.labels],
    assignee: task.assignee,
    url: task.url,
    claimed: task.claimed,
    body: "body" in task ? task.body : "",
  };
}

export function createSeatBroker(deps: {
  readonly pipeline: SeatPipeline;
  readonly broker: Broker;
  /**
   * The spend envelope's dispatch (daemon/server/spend-book.ts): a claim is a dispatch (§8) and
   * reserves the per-dispatch maximum before the tracker is asked; undefined without a spend ceiling.
   */
  readonly spend?: (
    team: string,
    seat: string,
    dispatch: string,
  ) => { readonly rule: string; readonly reason: string } | { readonly recorded: Promise<number> } | undefined;
  /** A claim the tracker refused dispatched nothing: its reservation goes (recorded), so refused claims cannot drain the team's budget. */
  readonly release?: (team: string, seat: string, dispatch: string) => Promise<void>;
  /** A fresh id per claim attempt: its reservation's key (daemon/host/ambient.ts makes the real one). */
  readonly newId: () => string;
}): SeatBroker {
  const { pipeline, broker } = deps;
  return {
    async call(identity, request) {
      const operation = request.operation;
      const action = BROKER_OPERATIONS.includes(operation) ? `broker.${operation}` : "broker";
      const ctx = await pipeline.context(identity, action, { guardInAct: true });
      const task = request.task;
      const id = operation === "pull" ? "" : request.id;
      const target = { kind: TargetKind.TASK, name: id === "" ? task : `${task}#${id}` };
      const fail = async (rule: RuleId, reason: string) => pipeline.refuse(ctx, refuse(rule, reason), action, task === "" ? undefined : target);

      if (task === "") throw await fail("request.malformed", "a broker request names its task resource (one of declare.tasks)");
      if (operation !== "pull" && BROKER_OPERATIONS.includes(operation)) {
        if (id === "") throw await fail("request.malformed", `broker ${operation} names the task: teamd-shim broker ${operation} ${task} <id>`);
        try {
          checkTaskId(id);
        } catch (error) {
          throw await fail("broker.task", (error as Error).message);
        }
        // A recorded id is read by people: one with a key's shape is refused unread.
        const shape = credentialShape(id, () => false);
        if (shape !== undefined) throw await fail("secret.shape", `the task id looks like a ${shape.name} (${shape.looksLike}); a record never holds a secret`);
      }
      const body = operation === "comment" ? request.body : "";
      if (operation === "comment") {
        if (body.trim() === "")
          throw await fail("request.malformed", "a comment has text: teamd-shim broker comment TASK ID --as ACCOUNT -m TEXT (or --file PATH)");
        if (Buffer.byteLength(body) > LIMITS.comment)
          throw await fail("request.malformed", `the comment is ${Buffer.byteLength(body)} bytes; at most ${LIMITS.comment} are posted under the owner's name`);
        // Published under the owner's name: a text with a key's shape is refused unposted.
        const shape = credentialShape(body, () => false);
        if (shape !== undefined)
          throw await fail(
            "secret.shape",
            `the comment holds what looks like a ${shape.name} (${shape.looksLike}); teamd posts no secret under the owner's name`,
          );
      }
      const asAccount = request.asAccount;
      const kernelRequest: Omit<KernelRequest, "seat"> = {
        capability: "use-broker",
        effect: { task },
        brokerOperation: operation,
        ...(asAccount !== "" ? { asAccount } : {}),
      };
      await pipeline.decide(ctx, kernelRequest, action);
      // §8: a claim dispatches work — reserved against the team's and the seat's lab's spend
      // remainder before the tracker is asked, and refused when it cannot be covered.
      // Keyed by this attempt alone (the task and a fresh id): the book keeps one reservation per
      // key and a release drops the key's, so a key of the task alone let a second claim of a
      // claimed task — by any seat, refused `broker.claimed` — release the first claim's
      // reservation (test/escape/spend-attack.test.ts).
      const dispatch = `claim:${task}#${id}@${deps.newId()}`;
      let reserved = false;
      // Whether this attempt asked the tracker to claim and it did not refuse (done, or unknown:
      // it may have happened). Only such a claim keeps its reservation; every other way out of
      // this call — the tracker's refusal, a replay answered from the record, an act refused
      // before the tracker is asked (a reused request id: request.replay-mismatch), a tracker
      // that cannot be resolved — dispatched nothing, and releases it (the finally below), so a
      // seat cannot drain its team's budget with claims that never reach the tracker.
      let dispatched = false;
      if (operation === "claim") {
        const held = deps.spend?.(identity.team, identity.seat, dispatch);
        if (held !== undefined && "rule" in held) throw await fail("envelope.spend", held.reason);
        if (held !== undefined) await held.recorded;
        reserved = held !== undefined;
      }
      try {
        const trackers = ctx.policy.policy.trackers;
        const trackerName = trackers !== undefined && Object.prototype.hasOwnProperty.call(trackers, task) ? trackers[task] : undefined;
        let resolved: ResolvedTracker;
        try {
          resolved = await broker.resolve(identity.team, task, trackerName);
        } catch (error) {
          if (error instanceof TrackerConfigError) throw await fail("broker.tracker", error.message);
          throw error;
        }

        // The kernel allowed a comment only under an account it named; its credential, before any intent.
        let credential: AccountCredential | undefined;
        if (operation === "comment") {
          try {
            credential = (await broker.account(asAccount, ctx.policy.policy.declared.accounts, accountIdentity(ctx.policy.policy, asAccount))).credential;
          } catch (error) {
            if (error instanceof AccountConfigError) throw await fail("act-as.credential", error.message);
            throw error;
          }
        }
        const bodyFields =
          operation === "comment"
            ? [
                { key: "account", value: asAccount },
                { key: "bytes", value: String(Buffer.byteLength(body)) },
                { key: "sha256", value: sha256(body) },
              ]
            : [];

        let answer: BrokerAnswer | undefined;
        let commented: TaskSummary | undefined;
        let failure: { rule: RuleId; reason: string } | undefined;
        const reply = await pipeline.act(
          ctx,
          kernelRequest,
          {
            action,
            target,
            requestId: request.requestId,
            request: requestBytes([operation, task, id, asAccount, operation === "comment" ? sha256(body) : ""]),
            payload: {
              fields: [
                { key: "operation", value: operation },
                { key: "tracker", value: resolved.name },
                ...(id !== "" ? [{ key: "id", value: id }] : []),
                ...bodyFields,
              ],
            },
          },
          async () => {
            // A claim or a comment changes the tracker: unanswered, it may have happened (unknown).
            const changes = operation === "claim" || operation === "comment";
            try {
              dispatched = operation === "claim";
              if (credential !== undefined) commented = await broker.comment(resolved, id, credential, body, `${identity.team}/${identity.seat}`);
              else answer = await broker.run(resolved, operation as BrokerOperation, id, `${identity.team}/${identity.seat}`);
            } catch (error) {
              if (!(error instanceof TrackerError)) {
                // A pull or read changes nothing: it is refused. A claim may have happened: unknown.
                if (changes) throw new Error("the tracker call failed");
                failure = { rule: "broker.upstream", reason: "the tracker call failed" };
                return { result: "refused", note: `${failure.rule}: ${failure.reason}` };
              }
              // Scrubbed again: a note is a record, and a record never holds a credential.
              const reason = scrubValue(error.message, resolved.forms);
              // A claim nobody answered may have happened: the outcome is unknown, never refused.
              if (error.kind === "unreachable" && changes) throw new Error(reason);
              // The tracker refused: nothing was dispatched.
              dispatched = false;
              failure = { rule: RULE_OF[error.kind], reason };
              return { result: "refused", note: `${failure.rule}: ${reason}` };
            }
            if (answer === undefined) return { result: "done", note: `comment posted as ${asAccount}` };
            const note =
              answer.operation === "pull" ? `${answer.tasks.length} open tasks served` : answer.operation === "read" ? "task served" : "task claimed";
            return { result: "done", note };
          },
        );
        // The outcome `unknown` is this attempt's record: not recorded twice.
        if (reply.status === "unknown")
          throw pipeline.outcomeRefusal(
            ctx,
            refuse(
              "broker.upstream",
              `${reply.note}; the ${operation} may or may not have happened (record ${reply.intentSeq}); the owner checks the tracker and resolves it (teamd ledger resolve)`,
            ),
          );
        // The tracker's refusal is the outcome `refused`; a refusal record names its rule beside it.
        // A retry (no tracker call ran: the reply is the record's) is refused on record too.
        if (reply.status === "refused")
          throw await pipeline.refuse(
            ctx,
            failure !== undefined
              ? refuse(failure.rule, failure.reason)
              : refuse("broker.replay", `request ${request.requestId} was refused before: ${reply.note}`),
            action,
            target,
          );
        if (commented !== undefined)
          return {
            operation,
            task,
            tasks: [wire(commented)],
            tracker: resolved.name,
            intentSeq: BigInt(reply.intentSeq),
            outcomeSeq: BigInt(reply.outcomeSeq ?? 0),
          };
        if (answer === undefined)
          throw await pipeline.refuse(
            ctx,
            refuse(
              "broker.replay",
              `request ${request.requestId} was answered before (record ${reply.intentSeq}); what the broker serves is never recorded: ask again with a new request id`,
            ),
            action,
            target,
          );
        const tasks = answer.operation === "pull" ? answer.tasks.map(wire) : [wire(answer.task)];
        return { operation, task, tasks, tracker: resolved.name, intentSeq: BigInt(reply.intentSeq), outcomeSeq: BigInt(reply.outcomeSeq ?? 0) };
      } finally {
        // A claim that dispatched nothing: its reservation goes, on record (an unknown one stays spent).
        if (reserved && !dispatched) await deps.release?.(identity.team, identity.seat, dispatch);
      }
    },
  };
}
