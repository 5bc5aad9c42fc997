import { UsageError } from "../../src/rpc/errors.js";
import { fromBinary } from "@bufbuild/protobuf";
import { HeadReconciliationSchema, ReconcileDecision } from "../../src/gen/teamd/v1/ledger_pb.js";
import { OwnerActKind } from "../../src/gen/teamd/v1/control_pb.js";
import { headReconcileDraft, outcomeReconcileDraft, signOwnerAct } from "../../src/ledger/index.js";
import { resolveHome } from "../host/home.js";
import { openOwnerChannel } from "../owner/channel.js";
import { ownerKeyForAct } from "./owner-session.js";
import { askYesNo } from "./prompt.js";
import type { Ambient } from "../host/ambient.js";

/**
 * `teamd ledger reconcile`: a blocked ledger (rollback, fork, broken chain, a head naming a
 * record the store lacks) refuses every gated act until the owner signs what it observed.
 * The owner accepts exactly that observation — never "whatever is there now" — so a ledger
 * that changes again after the look stays blocked. Reconciliation never clears a stop and
 * never drops a revocation (§15).
 */
export async function reconcileHead(options: { yes?: boolean; json?: boolean }, ambient: Ambient): Promise<void> {
  const home = resolveHome();
  const channel = await openOwnerChannel(home, ambient.now);
  try {
    const status = await channel.ledgerStatus();
    if (status.state !== "blocked") {
      const text = status.state === "ready" ? "the ledger is not blocked; nothing to reconcile" : `the ledger is ${status.state}: ${status.reason}`;
      if (options.json) process.stdout.write(JSON.stringify({ reconciled: false, state: status.state, reason: status.reason }) + "\n");
      else process.stdout.write(text + "\n");
      return;
    }
    if (status.observation.byteLength === 0)
      throw new Error(`the ledger is blocked (${status.rule}: ${status.reason}) and no reconciliation can accept it: restore a copy of the ledger`);
    const observation = fromBinary(HeadReconciliationSchema, status.observation);
    process.stderr.write(`the ledger is blocked by ${status.rule}: ${status.reason}\n`);
    if (!options.yes && !(await askYesNo("Accept the ledger as it is now observed (this is recorded, signed by you)?")))
      throw new Error("cancelled; nothing was changed");
    const key = await ownerKeyForAct();
    const act = await signOwnerAct(headReconcileDraft(observation), key.seed);
    const receipt = await channel.submit(OwnerActKind.RECONCILE, act);
    if (options.json) process.stdout.write(JSON.stringify({ reconciled: true, seq: receipt.seq }) + "\n");
    else process.stdout.write(`reconciled: record ${receipt.seq}\n`);
  } finally {
    await channel.close();
  }
}

/** `teamd ledger resolve SEQ --team T (--done | --repeat NEW_ID)`: resolve an unknown outcome. */
export async function resolveUnknown(
  intentSeq: string,
  options: { team: string; done?: boolean; repeat?: string; json?: boolean },
  ambient: Ambient,
): Promise<void> {
  if (!/^\d+$/.test(intentSeq)) throw new UsageError(`'${intentSeq}' is not a record seq`);
  if (Boolean(options.done) === (options.repeat !== undefined)) throw new UsageError("say what happened: --done (accept as done) or --repeat NEW_REQUEST_ID");
  const home = resolveHome();
  const key = await ownerKeyForAct();
  const channel = await openOwnerChannel(home, ambient.now);
  try {
    const draft = outcomeReconcileDraft({
      team: options.team,
      intentSeq: Number(intentSeq),
      decision: options.done ? ReconcileDecision.ACCEPT_DONE : ReconcileDecision.REPEAT,
      ...(options.repeat !== undefined ? { newRequestId: options.repeat } : {}),
    });
    const receipt = await channel.submit(OwnerActKind.RECONCILE, await signOwnerAct(draft, key.seed));
    if (options.json) process.stdout.write(JSON.stringify({ resolved: true, seq: receipt.seq }) + "\n");
    else process.stdout.write(`resolved intent ${intentSeq}: record ${receipt.seq}\n`);
  } finally {
    await channel.close();
  }
}
