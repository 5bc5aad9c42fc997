import { OwnerActKind } from "../../src/gen/teamd/v1/control_pb.js";
import type { TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { signOwnerAct } from "../../src/ledger/index.js";
import { loadTeamFileData } from "../../src/teamfile/index.js";
import { RefusalError } from "../../src/rpc/errors.js";
import { resolveHome } from "../host/home.js";
import { openOwnerChannel } from "../owner/channel.js";
import { ownerKeyForAct } from "./owner-session.js";
import type { Ambient } from "../host/ambient.js";

type Channel = Awaited<ReturnType<typeof openOwnerChannel>>;
type InForce = Awaited<ReturnType<Channel["policyInForce"]>>;

/**
 * An owner act that is one edit of the policy in force, not an apply of the owner's file
 * (abandon, §9; rebind, §8): the canonical policy in force, edited, loaded by the owner's own
 * loader, signed by the owner as a policy record under its own action, and decided by the daemon
 * as an apply is — so the lease cascade the edit calls for (§7) is the kernel's, in the same
 * batch. Such a record renews no runtime (src/ledger/view.ts). `plan` reads the policy in force
 * and the team's live leases and returns the edited data and what to tell the owner, or a
 * reason there is nothing to do; `confirm` asks (or not) before anything is signed.
 */
export async function ownerPolicyEdit<Plan extends { readonly data: Record<string, unknown> }>(options: {
  readonly team: string;
  readonly action: string;
  readonly target: { readonly kind: TargetKind; readonly name: string };
  readonly plan: (inForce: InForce, data: Record<string, unknown>, liveLeases: string[]) => Plan | { readonly nothing: string };
  readonly confirm: (plan: Plan) => Promise<boolean>;
  readonly ambient: Ambient;
}): Promise<{ plan: Plan; seq: number; liveLeases: string[] } | { nothing: string }> {
  const { team } = options;
  const key = await ownerKeyForAct();
  const channel = await openOwnerChannel(resolveHome(), options.ambient.now);
  try {
    const inForce = await channel.policyInForce(team);
    if (!inForce.applied) throw new RefusalError("policy.unapplied", `team '${team}' has no policy in force to change`);
    const live = (await channel.leases(team)).leases.filter((l) => l.live).map((l) => l.leaseId);
    const plan = options.plan(inForce, JSON.parse(inForce.canonical) as Record<string, unknown>, live);
    if ("nothing" in plan) return { nothing: plan.nothing };
    const loaded = loadTeamFileData(plan.data, { startFileHashes: { ...inForce.startFileHashes }, proposal: true });
    if (!loaded.ok)
      throw new RefusalError(loaded.errors[0]?.rule ?? "teamfile.schema", `the changed policy does not load: ${loaded.errors[0]?.message ?? "invalid"}`);
    if (!(await options.confirm(plan))) throw new Error("cancelled; nothing was signed");
    const hash = Uint8Array.from(Buffer.from(loaded.hashes.policy.replace(/^sha256:/, ""), "hex"));
    const act = await signOwnerAct(
      {
        type: RecordType.POLICY,
        team,
        action: options.action,
        payload: {
          domain: { team, repositoryRoot: "" },
          target: { kind: options.target.kind, name: options.target.name },
          after: { identity: { case: "contentSha256", value: hash } },
          requestId: options.ambient.newId(),
          detail: {
            case: "policy",
            value: { teamFileHash: hash, canonical: loaded.canonical, startFileHashes: { ...inForce.startFileHashes }, inForceSeq: inForce.seq },
          },
        },
      },
      key.seed,
    );
    const receipt = await channel.submit(OwnerActKind.APPLY, act);
    return { plan, seq: receipt.seq, liveLeases: live };
  } finally {
    await channel.close();
  }
}
