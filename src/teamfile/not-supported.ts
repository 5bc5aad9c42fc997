/**
 * Keys for features teamd does not enforce yet. Each is refused at load with "not supported
 * yet" and where it lands — never accepted and silently unenforced, because a policy that
 * reads stronger than it is fails open (issue 4). Each later issue lifts its own keys.
 */
export type Level = "top" | "declare" | "role" | "seat" | "start" | "deploy";

const ENVELOPE = "the resource-envelope issue (after #6)";

/** Constraints range over the team's seats; they are written once, at the top of the file. */
const CONSTRAINTS_AT_TOP = "constraints (§5) count the team's seats, so they are written once at the top of the file, not inside a role or a seat";

/** The delegation settings are the owner's, written once at the top (§8, §9). */
const AT_TOP = (what: string): string =>
  `${what} is owner-sovereign and team-wide (§8, §9), so it is written once at the top of the file, not inside a role or a seat`;

const SHARED: Readonly<Record<string, string>> = {
  leads: AT_TOP("leads and its delegation envelope"),
  leases: "leases (§7) are ledger records issued at run time (`teamd-shim lease issue`, `teamd lease`), never written in the team file",
  ceiling: AT_TOP("the ceiling"),
  deny: AT_TOP("the deny"),
  envelope: `the resource envelope — spend, unattended runtime, seats per lab, visibility (§8) — arrives with ${ENVELOPE}`,
};

export const NOT_SUPPORTED: Readonly<Record<Level, Readonly<Record<string, string>>>> = {
  top: {
    envelope: SHARED.envelope as string,
    leases: SHARED.leases as string,
  },
  declare: {
    roots:
      "declared repository roots (§6): the team file's repository is the one root, and a submodule or linked worktree stays outside every scope until declared roots are built",
  },
  role: {
    ...SHARED,
    constraints: CONSTRAINTS_AT_TOP,
    extends: "role inheritance belongs to the Roles & Skills module (§13); base a role on a built-in `template` instead",
    inherits: "role inheritance belongs to the Roles & Skills module (§13); base a role on a built-in `template` instead",
    skills: "skills are competence, never a gate (§5, §13); teamd keeps none in the team file",
  },
  seat: {
    ...SHARED,
    constraints: CONSTRAINTS_AT_TOP,
  },
  start: {
    binds: "extra binds are entries of the seat's mount plan, which the containment issue builds",
    mounts: "extra mounts are entries of the seat's mount plan, which the containment issue builds",
  },
  deploy: {
    timeout: "a deploy's timeout is fixed by teamd for now (15 minutes)",
  },
};
