import { TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { ABANDON_ACTION } from "../../src/ledger/view.js";
import { checkName } from "../host/names.js";
import { askYesNo } from "./prompt.js";
import { delegatedInForce } from "./apply-delegated.js";
import { ownerPolicyEdit } from "./policy-edit.js";
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
  type Plan = { data: Record<string, unknown>; leads: string; live: string[]; delegated: ReturnType<typeof delegatedInForce> };
  const done = await ownerPolicyEdit<Plan>({
    team,
    action: ABANDON_ACTION,
    target: { kind: TargetKind.TEAM, name: team },
    ambient,
    plan: (inForce, data, live) => {
      const leads = (data.leads as { seat?: string } | undefined)?.seat;
      if (leads === undefined) return { nothing: "the team has no leads" };
      delete data.leads;
      return { data, leads, live, delegated: delegatedInForce(inForce) };
    },
    confirm: async ({ leads, live, delegated }) => {
      if (!options.json) {
        process.stderr.write(
          `Abandon team '${team}': leads (${leads}) removed from the policy in force; every live lease revoked (${live.length}${live.length > 0 ? `: ${live.join(", ")}` : ""}).\n` +
            delegated.map((d) => `The delegated change stays in force, now under your record: ${d.words}\n`).join(""),
        );
      }
      return options.yes === true || (await askYesNo(`Abandon team '${team}'?`));
    },
  });
  if ("nothing" in done) {
    if (options.json) process.stdout.write(`${JSON.stringify({ abandoned: false, team, reason: done.nothing })}\n`);
    else process.stdout.write(`abandon: team '${team}' has no leads; nothing to do\n`);
    return;
  }
  const { leads } = done.plan;
  if (options.json) process.stdout.write(`${JSON.stringify({ abandoned: true, team, leads, seq: done.seq, revokedLeases: done.liveLeases })}\n`);
  else
    process.stdout.write(
      `abandoned: team '${team}' has no leads now (record ${done.seq}); ${done.liveLeases.length} lease(s) revoked. Your teamd.yaml still names ${leads}: edit it before the next apply, or that apply names a leads again\n`,
    );
}
