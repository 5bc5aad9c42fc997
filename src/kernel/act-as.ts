import { type Refusal, refuse } from "./decision.js";
import type { Policy } from "./policy.js";

/**
 * Which of the owner's accounts an act runs under (§3 act-as), from what the act is and the
 * account the seat named (`--as`): the one place that decides it, for the broker and deploy
 * alike. An act teamd performs under no account refuses a named one (`act-as.unmediated`)
 * rather than deciding it and then ignoring it; an act that runs under an account refuses a
 * request that names none, or another than the owner declared (`act-as.required`).
 *
 * - A broker comment is the owner's speech: it runs under the account the seat names. A pull,
 *   a claim and a read run under the tracker's credential, under no account.
 * - A deploy to an environment that pushes to the owner's remote runs under the account the
 *   team file declares for it (the seat may omit it, or name that one); a deploy that runs the
 *   owner's command runs under none.
 *
 * This says under which account; whether the seat holds act-as over it is `authorize`'s
 * coverage stage, decided in addition to the act's own capability.
 */
export type UnderAccount = { readonly act: "broker"; readonly operation: string } | { readonly act: "deploy"; readonly env: string };

/** The broker operations that run under the owner's account; the others run under the tracker's credential. */
const BROKER_AS_ACCOUNT: readonly string[] = ["comment"];

export function actAsAccount(policy: Pick<Policy, "pushes">, act: UnderAccount, named: string | undefined): { readonly account: string | undefined } | Refusal {
  if (act.act === "broker") {
    const underAccount = BROKER_AS_ACCOUNT.includes(act.operation);
    if (underAccount && named === undefined) {
      return refuse(
        "act-as.required",
        `a broker ${act.operation} is made under the owner's account; name it (asAccount, \`--as ACCOUNT\`) and hold act-as over it`,
      );
    }
    if (!underAccount && named !== undefined) {
      return refuse("act-as.unmediated", `a broker ${act.operation} runs under the tracker's credential, not under an owner's account; drop --as '${named}'`);
    }
    return { account: named };
  }
  const env = act.env;
  const pushes = policy.pushes;
  const push = pushes !== undefined && Object.prototype.hasOwnProperty.call(pushes, env) ? pushes[env] : undefined;
  if (push === undefined) {
    if (named !== undefined) {
      return refuse(
        "act-as.unmediated",
        `a deploy to ${env} runs the owner's command, under no owner's account; drop --as '${named}' (only an environment that pushes to the owner's remote runs under an account)`,
      );
    }
    return { account: undefined };
  }
  if (named !== undefined && named !== push.account) {
    return refuse("act-as.required", `a deploy to ${env} pushes under the account the owner declared for it, '${push.account}'; --as '${named}' names another`);
  }
  return { account: push.account };
}
