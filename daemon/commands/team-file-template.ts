/**
 * The commented team file `teamd init` writes at the repository root. It must load as it
 * stands (a test checks it): a fresh team has one seat that may read everything and write
 * nothing until the owner edits this file and runs `teamd apply`.
 */
export function teamFileTemplate(team: string): string {
  return `# teamd.yaml — the policy for team ${team}. Written by \`teamd init\`; never committed
# (it is listed in .git/info/exclude) so no copy of it reaches a seat.
# Nothing here is in force until you run \`teamd apply\`; the full reference, with every key
# and a complete example, is docs/team-file.md.

# The capability vocabulary this file is written against (§3).
version: 1

team: ${team}

# Declared sets: a branch (or env, account, task, lab) outside its set is outside every scope.
declare:
  branches: [main]
  labs: [anthropic]

# The review mode (§5), required as soon as a seat holds review, gate or merge — an explicit
# choice, named in every trunk act's record: distinct-seat (the author of a change may not
# review, gate or merge it; any other seat may) or cross-lab (nor may a seat of the author's
# lab: write \`review: { mode: cross-lab, floor: 1 }\`). floor: how many approving reviews
# a merge needs.
review: { mode: distinct-seat, floor: 0 }

# Deploy commands: per environment in declare.envs, the argv teamd runs (outside every
# sandbox, on a gated artifact) and the files it pins by hash. For example:
# deploy:
#   staging:
#     command: [sh, deploy/ship.sh]
#     files: [deploy/ship.sh]

# Seats: one agent each. Built-in role templates: observer, diagnostician, planner, executor,
# verifier, operator, coordinator (docs/team-file.md says what each holds).
seats:
  scout:
    lab: anthropic
    # observer: read only. Give a seat \`executor\` (read + write) when it should change files.
    roles: [observer]
    start:
      command: [claude]
`;
}

/** A team name from a repository directory's name: lower-case, dashes for the rest, a letter first. */
export function defaultTeamName(repoDirName: string): string | undefined {
  const name = repoDirName
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^[^a-z]+/, "")
    .replace(/-+/g, "-")
    .slice(0, 32)
    .replace(/-+$/, "");
  return name === "" ? undefined : name;
}
