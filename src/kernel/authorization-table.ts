import { refuse, type Refusal } from "./decision.js";
import type { Policy } from "./policy.js";

/**
 * The authorization table of §9, its principal column for the operations that are not a change of
 * the team file (authority-change.ts decides those: add, remove, grant) nor a lease (lease-issue.ts)
 * nor an operational act (authorize.ts): who may start and stop a team, stop the machine, abandon,
 * create, and make the owner-sovereign changes (rebind, ceiling, deny, declared sets, the
 * constraint program, two-granter). Each operation has exactly one authorizing principal; the
 * owner may do everything here except where the table says otherwise, and nothing written on the
 * owner is given to leads by implication. The bounds of each row are decided where the row's act
 * is (create-bound.ts, envelope-*.ts, the stop flags); this says only who.
 */
export type TableOperation =
  /** Start a team or a seat of it: owner, or leads for its own team. */
  | "team.start"
  /** Stop a team: owner, or leads for its own team (a team stop never reaches another team). */
  | "team.stop"
  /** Clear a stop (§15): an owner act, whoever raised it. */
  | "team.resume"
  /** The machine-wide stop: owner only (§11). */
  | "machine.stop"
  /** --abandon: owner only. */
  | "team.abandon"
  /** create (execute): the seat holding create (its bounds: create-bound.ts). */
  | "team.create"
  /** Rebind a seat's lab, change a ceiling, deny, declared set, minimum, maximum, exclusion, the review mode or two-granter: owner only (§8). */
  | "owner-sovereign";

export type TablePrincipal = { readonly kind: "owner" } | { readonly kind: "seat"; readonly seat: string; readonly team: string };

const own = <T>(record: Readonly<Record<string, T>>, key: string): T | undefined =>
  Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;

const OWNER_ONLY: Readonly<Partial<Record<TableOperation, string>>> = {
  "team.resume": "clearing a stop is an owner act, whoever raised it (§15)",
  "machine.stop": "the machine-wide stop is the owner's only (§11)",
  "team.abandon": "--abandon is the owner's only (§9)",
  "owner-sovereign": "a rebind, and every change to a ceiling, deny, declared set or the constraint program, is an owner act (§8)",
};

/**
 * Whether `principal` may authorize `operation` on team `team` under `policy` (that team's policy
 * in force): undefined when the table names it, a `table.principal` refusal saying who may when not.
 */
export function tablePrincipal(
  operation: TableOperation,
  principal: TablePrincipal,
  team: string,
  policy: Pick<Policy, "seats" | "leads">,
): Refusal | undefined {
  if (principal.kind === "owner")
    return operation === "team.create"
      ? refuse("table.principal", "create is executed by the seat holding it, recorded as that seat's act; the owner writes the bound (§10)")
      : undefined;
  const who = `seat ${principal.seat} of team ${principal.team}`;
  const ownerOnly = OWNER_ONLY[operation];
  if (ownerOnly !== undefined) return refuse("table.principal", `${ownerOnly}; ${who} may not`);
  const seat = principal.team === team ? own(policy.seats, principal.seat) : undefined;
  if (seat === undefined)
    return refuse("table.principal", `${who} is not a seat of team ${team}, so it authorizes nothing there (a team's acts are never another team's)`);
  switch (operation) {
    case "team.start":
    case "team.stop":
      if (policy.leads?.seat === principal.seat) return undefined;
      return refuse(
        "table.principal",
        `${operation === "team.start" ? "starting" : "stopping"} a team is the owner's, or leads's for its own team; ${who} is not leads`,
      );
    case "team.create":
      if ((seat.admin ?? []).includes("create")) return undefined;
      return refuse("table.principal", `create is executed by the seat holding it (§10); ${who} does not`);
    default:
      return refuse("table.principal", `${who} may not`);
  }
}
