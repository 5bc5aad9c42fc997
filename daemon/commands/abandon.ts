import { OwnerActKind } from "../../src/gen/teamd/v1/control_pb.js";
import { RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { signOwnerAct } from "../../src/ledger/index.js";
import { ABANDON_ACTION } from "../../src/ledger/view.js";
import { loadTeamFileData } from "../../src/teamfile/index.js";
import { RefusalError } from "../../src/rpc/index.js";
import { resolveHome } from "../host/home.js";
import { checkName } from "../host/names.js";
import { openOwnerChannel } from "../owner/channel.js";
import { ownerKeyForAct } from "./owner-session.js";
import { askYesNo } from "./prompt.js";
import { delegatedInForce } from "./apply-delegated.js";
import type { Ambient } from "../host/ambient.js";

/**
 * `teamd abandon --team T` (§9: owner only): the team is left without leads, and every live lease
 * in it is revoked in the same batch — the selector is every live lease, not only those below
 * leads (§9, §7: no delegation survives without a leads). It is the policy in force with its
 * leads removed, signed by the owner and decided by the kernel as an apply is (the cascade is the
 * kernel's); the owner's file on disk still names leads until the owner edits it, and an apply of
 * it names a leads again — the revoked leases stay revoked.
 */
export async function abandonCommand(options: { team: string; yes?: boolean; json?: boolean }, ambient: Ambient): Promise<void> {
  const team = checkName("team", options.team);
  const key = await ownerKeyForAct();
  const channel = await openOwnerChannel(resolveHome(), ambient.now);
  try {
    const inForce = await channel.policyInForce(team);
    if (!inForce.applied) throw new RefusalError("policy.unapplied", `team '${team}' has no applied policy; there is no leads to abandon`);
    const data = JSON.parse(inForce.canonical) as Record<string, unknown>;
    const leads = (data.leads as { seat?: string } | undefined)?.seat;
    if (leads === undefined) {
      if (options.json) process.stdout.write(`${JSON.stringify({ abandoned: false, team, reason: "the team has no leads" })}\n`);
      else process.stdout.write(`abandon: team '${team}' has no leads; nothing to do\n`);
      return;
    }
    delete data.leads;
    const loaded = loadTeamFileData(data, { startFileHashes: { ...inForce.startFileHashes }, proposal: true });
    if (!loaded.ok)
      throw new RefusalError(loaded.errors[0]?.rule ?? "teamfile.schema", `the policy without leads does not load: ${loaded.errors[0]?.message ?? "invalid"}`);
    const live = (await channel.leases(team)).leases.filter((l) => l.live).map((l) => l.leaseId);
    const delegated = delegatedInForce(inForce);
    if (!options.json) {
      process.stderr.write(
        `Abandon team '${team}': leads (${leads}) removed from the policy in force; every live lease revoked (${live.length}${live.length > 0 ? `: ${live.join(", ")}` : ""}).\n` +
          delegated.map((d) => `The delegated change stays in force, now under your record: ${d.words}\n`).join(""),
      );
    }
    if (!options.yes && !(await askYesNo(`Abandon team '${team}'?`))) throw new Error("cancelled; nothing was abandoned");
    const hash = Uint8Array.from(Buffer.from(loaded.hashes.policy.replace(/^sha256:/, ""), "hex"));
    const act = await signOwnerAct(
      {
        type: RecordType.POLICY,
        team,
        action: ABANDON_ACTION,
        payload: {
          domain: { team, repositoryRoot: "" },
          target: { kind: TargetKind.TEAM, name: team },
          after: { identity: { case: "contentSha256", value: hash } },
          requestId: ambient.newId(),
          detail: {
            case: "policy",
            value: { teamFileHash: hash, canonical: loaded.canonical, startFileHashes: { ...inForce.startFileHashes }, inForceSeq: inForce.seq },
          },
        },
      },
      key.seed,
    );
    const receipt = await channel.submit(OwnerActKind.APPLY, act);
    if (options.json) process.stdout.write(`${JSON.stringify({ abandoned: true, team, leads, seq: receipt.seq, revokedLeases: live })}\n`);
    else
      process.stdout.write(
        `abandoned: team '${team}' has no leads now (record ${receipt.seq}); ${live.length} lease(s) revoked. Your teamd.yaml still names ${leads}: edit it before the next apply, or that apply names a leads again\n`,
      );
  } finally {
    await channel.close();
  }
}
