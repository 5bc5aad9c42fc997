/**
 * A team file for seat tests: team `proj`, observer seats whose start command just waits
 * (`sleep 3600`), so a seat runs until it is stopped without any agent CLI installed.
 */
export function sleeperTeamFile(seats: readonly string[]): string {
  const entries = seats.map((seat) => `  ${seat}:\n    lab: anthropic\n    roles: [observer]\n    start:\n      command: [sleep, "3600"]\n`);
  return teamFile(entries.join(""));
}

/** A team file for team `proj` (branch main, lab anthropic unless told) with these seats: YAML, each seat indented two spaces. */
export function teamFile(seats: string, labs: readonly string[] = ["anthropic"]): string {
  return `version: 1\nteam: proj\ndeclare:\n  branches: [main]\n  labs: [${labs.join(", ")}]\nreview: { mode: distinct-seat }\nseats:\n${seats}`;
}

/**
 * A team file with one seat that reads everything and writes under `src/`, waiting (`sleep 3600`)
 * until stopped: the escape tests' usual attacker. `start` adds lines to its start (YAML, indented six).
 */
export function srcWriterTeamFile(seat: string, start = ""): string {
  return teamFile(
    `  ${seat}:\n    lab: anthropic\n    capabilities:\n      read: ~\n      write: { path: src/ }\n    start:\n      command: [sleep, "3600"]\n${start}`,
  );
}

/**
 * Team `proj` led by seat w (a lease issues only with a present leads, §9), which reads
 * everything and writes under `writes`, and a second seat r that reads everything (and holds
 * `rCapabilities` besides, YAML indented six), both waiting (`sleep 3600`): the leases, retry and
 * record tests' usual pair.
 */
export function leadsWriterTeamFile(writes = "src/", rCapabilities = ""): string {
  return teamFile(`  w:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: ${writes} }
    start:
      command: [sleep, "3600"]
  r:
    lab: anthropic
    capabilities:
      read: ~
${rCapabilities}    start:
      command: [sleep, "3600"]
`).replace("seats:\n", "leads:\n  seat: w\nseats:\n");
}
