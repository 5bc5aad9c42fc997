import { TargetKind } from "../src/gen/teamd/v1/ledger_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { BrokerRequest, BrokerResponseSchema, BrokerTaskSchema } from "../src/gen/teamd/v1/shim_pb.js";
import { checkTaskId, scrubValue, TrackerConfigError, TrackerError, type Broker, type BrokerAnswer, type BrokerOperation, type ResolvedTracker, type TaskDetail, type TaskSummary } from "../src/broker/index.js";
import { refuse, type KernelRequest, type RuleId } from "../src/kernel/index.js";
import { credentialShape } from "../src/teamfile/credentials.js";
import { RefusalError } from "../src/rpc/index.js";
import { requestBytes, type SeatPipeline } from "./seat-pipeline.js";
import type { SeatIdentity } from "./shim-service.js";

/**
 * `teamd-shim broker pull | read | claim` through the pipeline (§11). The order:
 *
 * 1. act-as is refused (`act-as.no-broker`): the broker serves tasks, it acts under no
 *    owner's account for a seat;
 * 2. the kernel decides use-broker over the task resource with the operation (`authority.none`,
 *    `scope.task`, `broker.operation`), recorded when refused;
 * 3. the resource's tracker is resolved — the team file's `trackers:` entry in the owner's
 *    configuration, or the embedded default folder — before any intent (`broker.tracker`);
 * 4. intent, the tracker call, outcome. The records name the operation, the resource, the task
 *    id and the tracker — never a task's content, never a credential. A tracker's refusal
 *    (`broker.task`, `broker.claimed`, `broker.upstream`) is the outcome `refused` with its rule
 *    in the note; a claim the tracker did not answer is `unknown` (it may have happened).
 */
export interface SeatBroker {
  call(identity: SeatIdentity, request: BrokerRequest): Promise<MessageInitShape<typeof BrokerResponseSchema>>;
}

const OPERATIONS: readonly string[] = ["pull", "read", "claim"];

const RULE_OF: Readonly<Record<TrackerError["kind"], RuleId>> = { task: "broker.task", claimed: "broker.claimed", upstream: "broker.upstream", unreachable: "broker.upstream" };

function wire(task: TaskSummary | TaskDetail): MessageInitShape<typeof BrokerTaskSchema> {
  return { id: task.id, title: task.title, state: task.state, labels: [...task.labels], assignee: task.assignee, url: task.url, claimed: task.claimed, body: "body" in task ? task.body : "" };
}

export function createSeatBroker(deps: { readonly pipeline: SeatPipeline; readonly broker: Broker }): SeatBroker {
  const { pipeline, broker } = deps;
  return {
    async call(identity, request) {
      const operation = request.operation;
      const action = OPERATIONS.includes(operation) ? `broker.${operation}` : "broker";
      const ctx = await pipeline.context(identity, action, { guardInAct: true });
      const task = request.task;
      const id = operation === "pull" ? "" : request.id;
      const target = { kind: TargetKind.TASK, name: id === "" ? task : `${task}#${id}` };
      const fail = async (rule: RuleId, reason: string) => pipeline.refuse(ctx, refuse(rule, reason), action, task === "" ? undefined : target);

      if (request.asAccount !== "") throw await fail("act-as.no-broker", `the broker acts under no owner's account for a seat (act-as '${request.asAccount}' is not built); pull, read and claim run without --as`);
      if (task === "") throw await fail("request.malformed", "a broker request names its task resource (one of declare.tasks)");
      if (operation !== "pull" && OPERATIONS.includes(operation)) {
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
      const kernelRequest: Omit<KernelRequest, "seat"> = { capability: "use-broker", effect: { task }, brokerOperation: operation };
      await pipeline.decide(ctx, kernelRequest, action);

      const trackers = ctx.policy.policy.trackers;
      const trackerName = trackers !== undefined && Object.prototype.hasOwnProperty.call(trackers, task) ? trackers[task] : undefined;
      let resolved: ResolvedTracker;
      try {
        resolved = await broker.resolve(identity.team, task, trackerName);
      } catch (error) {
        if (error instanceof TrackerConfigError) throw await fail("broker.tracker", error.message);
        throw error;
      }

      let answer: BrokerAnswer | undefined;
      let failure: { rule: RuleId; reason: string } | undefined;
      const reply = await pipeline.act(
        ctx,
        kernelRequest,
        {
          action,
          target,
          requestId: request.requestId,
          request: requestBytes([operation, task, id]),
          payload: { fields: [{ key: "operation", value: operation }, { key: "tracker", value: resolved.name }, ...(id !== "" ? [{ key: "id", value: id }] : [])] },
        },
        async () => {
          try {
            answer = await broker.run(resolved, operation as BrokerOperation, id, `${identity.team}/${identity.seat}`);
          } catch (error) {
            if (!(error instanceof TrackerError)) {
              // A pull or read changes nothing: it is refused. A claim may have happened: unknown.
              if (operation === "claim") throw new Error("the tracker call failed");
              failure = { rule: "broker.upstream", reason: "the tracker call failed" };
              return { result: "refused", note: `${failure.rule}: ${failure.reason}` };
            }
            // Scrubbed again: a note is a record, and a record never holds a credential.
            const reason = scrubValue(error.message, resolved.forms);
            // A claim nobody answered may have happened: the outcome is unknown, never refused.
            if (error.kind === "unreachable" && operation === "claim") throw new Error(reason);
            failure = { rule: RULE_OF[error.kind], reason };
            return { result: "refused", note: `${failure.rule}: ${reason}` };
          }
          const note = answer.operation === "pull" ? `${answer.tasks.length} open tasks served` : answer.operation === "read" ? "task served" : "task claimed";
          return { result: "done", note };
        },
      );
      if (reply.status === "unknown") throw new RefusalError("broker.upstream", `${reply.note}; the claim may or may not have happened (record ${reply.intentSeq}); the owner checks the tracker and resolves it (teamd ledger resolve)`);
      // The tracker's refusal is the outcome `refused`; a refusal record names its rule beside it.
      if (reply.status === "refused") throw failure !== undefined ? await pipeline.refuse(ctx, refuse(failure.rule, failure.reason), action, target) : new RefusalError("broker.replay", `request ${request.requestId} was refused before: ${reply.note}`);
      if (answer === undefined) throw new RefusalError("broker.replay", `request ${request.requestId} was answered before (record ${reply.intentSeq}); what the broker serves is never recorded: ask again with a new request id`);
      const tasks = answer.operation === "pull" ? answer.tasks.map(wire) : [wire(answer.task)];
      return { operation, task, tasks, tracker: resolved.name, intentSeq: BigInt(reply.intentSeq), outcomeSeq: BigInt(reply.outcomeSeq ?? 0) };
    },
  };
}
