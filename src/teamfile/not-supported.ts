/**
 * Keys for features teamd does not enforce yet. Each is refused at load with "not supported
 * yet" and where it lands — never accepted and silently unenforced, because a policy that
 * reads stronger than it is fails open (issue 4). Each later issue lifts its own keys.
 */
export type Level = "top" | "declare" | "role" | "seat" | "start";

const DELEGATION = "the delegation issue (#6)";
const ACT_TIME = "the act-time issue (#5)";
const ENVELOPE = "the resource-envelope issue (after #6)";

const SHARED: Readonly<Record<string, string>> = {
  leads: `leads and the delegation envelope (§9) arrive with ${DELEGATION}`,
  leases: `leases (§7) arrive with ${DELEGATION}`,
  ceiling: `the ceiling (§8) arrives with ${DELEGATION}`,
  deny: `the deny (§8) arrives with ${DELEGATION}`,
  constraints: `constraints — minimum, maximum, mutual exclusion (§5) — arrive with ${ACT_TIME}`,
  envelope: `the resource envelope — spend, unattended runtime, seats per lab, visibility (§8) — arrives with ${ENVELOPE}`,
  grant: `grant (§10) arrives with ${ACT_TIME}`,
  agree: `agree (§10) arrives with ${ACT_TIME}`,
  create: `create and its create-bounds (§10) arrive with ${ACT_TIME}`,
};

export const NOT_SUPPORTED: Readonly<Record<Level, Readonly<Record<string, string>>>> = {
  top: {
    ...SHARED,
    review: `the review mode — cross-lab or distinct-seat (§5) — arrives with ${ACT_TIME}`,
    "review-mode": `the review mode — cross-lab or distinct-seat (§5) — arrives with ${ACT_TIME}`,
    "two-granter": `the two-granter requirement (§10) arrives with ${ACT_TIME}`,
    "create-bounds": `create-bounds (§10) arrive with ${ACT_TIME}`,
  },
  declare: {
    roots: "declared repository roots (§6): the team file's repository is the one root, and a submodule or linked worktree stays outside every scope until declared roots are built",
  },
  role: {
    ...SHARED,
    extends: "role inheritance belongs to the Roles & Skills module (§13); base a role on a built-in `template` instead",
    inherits: "role inheritance belongs to the Roles & Skills module (§13); base a role on a built-in `template` instead",
    skills: "skills are competence, never a gate (§5, §13); teamd keeps none in the team file",
  },
  seat: {
    ...SHARED,
  },
  start: {
    binds: "extra binds are entries of the seat's mount plan, which the containment issue builds",
    mounts: "extra mounts are entries of the seat's mount plan, which the containment issue builds",
    network: "network access is decided by the egress proxy, which the containment issue builds",
  },
};
