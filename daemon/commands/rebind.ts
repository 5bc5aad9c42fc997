import { TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { REBIND_ACTION } from "../../src/ledger/view.js";
import { UsageError } from "../../src/rpc/errors.js";
import { checkName } from "../host/names.js";
import { askYesNo } from "./prompt.js";
import { ownerPolicyEdit } from "./policy-edit.js";
import type { Ambient } from "../host/ambient.js";

/**
 * `teamd rebind SEAT@TEAM --lab LAB` (§8: the seat-to-lab binding is the owner's, and rebinding
 * is an owner act, never a grant): the policy in force with the seat's lab changed, signed by the
 * owner and decided as an apply is — every lease the seat holds or issued, resting on the old
 * binding, is revoked in the same batch (src/kernel/cascade.ts), re-granted rather than re-agreed.
 * It renews no runtime: the unattended clock and the spend counter keep counting across it, and a
 * reservation held in the old lab stays spent there until a report covers it (an attribution that
 * no longer holds never reopens the remainder).
 */
export async function rebindCommand(ref: string, options: { lab: string; yes?: boolean; json?: boolean }, ambient: Ambient): Promise<void> {
  const at = ref.indexOf("@");
  if (at <= 0) throw new UsageError(`'${ref}' is not SEAT@TEAM: a rebind names the seat and its team`);
  const seat = checkName("seat", ref.slice(0, at));
  const team = checkName("team", ref.slice(at + 1));
  const lab = options.lab;
  type Plan = { data: Record<string, unknown>; was: string; live: string[] };
  const done = await ownerPolicyEdit<Plan>({
    team,
    action: REBIND_ACTION,
    target: { kind: TargetKind.SEAT, name: seat },
    ambient,
    plan: (_inForce, data, live) => {
      const seats = data.seats as Record<string, Record<string, unknown>> | undefined;
      const entry = seats !== undefined && Object.prototype.hasOwnProperty.call(seats, seat) ? seats[seat] : undefined;
      if (entry === undefined) throw new UsageError(`seat '${seat}' is not in team '${team}''s policy in force`);
      const was = typeof entry.lab === "string" ? entry.lab : "(none)";
      if (was === lab) return { nothing: `seat ${seat} is already bound to lab ${lab}` };
      entry.lab = lab;
      return { data, was, live };
    },
    confirm: async ({ was }) => {
      if (!options.json)
        process.stderr.write(
          `Rebind ${seat}@${team}: lab ${was} -> ${lab}. Every lease ${seat} holds or issued is revoked (re-grant what it needs); the runtime and the spend counter keep counting.\n`,
        );
      return options.yes === true || (await askYesNo(`Rebind ${seat}@${team} to lab ${lab}?`));
    },
  });
  if ("nothing" in done) {
    if (options.json) process.stdout.write(`${JSON.stringify({ rebound: false, seat, team, reason: done.nothing })}\n`);
    else process.stdout.write(`rebind: ${done.nothing}; nothing to do\n`);
    return;
  }
  if (options.json) process.stdout.write(`${JSON.stringify({ rebound: true, seat, team, from: done.plan.was, to: lab, seq: done.seq })}\n`);
  else process.stdout.write(`rebound: ${seat}@${team} is lab ${lab} now (record ${done.seq}); a running seat keeps its run's lab until its next start\n`);
}
