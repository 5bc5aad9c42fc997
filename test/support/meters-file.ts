import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The owner's meters for tests of the spend envelope (docs/cli.md "Meters"): TEAMD_HOME/meters.json,
 * 0600, as the daemon reads it at its start. The fake provider's Anthropic cost report, with the
 * admin key in the daemon's environment, is the usual one.
 */
export function writeMetersFile(home: string, meters: Record<string, unknown>): void {
  const file = join(home, "meters.json");
  writeFileSync(file, JSON.stringify({ meters }));
  chmodSync(file, 0o600);
}

/** A meter of team proj's lab anthropic on the fake provider's cost report for `workspace`, its key in `keyEnv`. */
export function anthropicMeter(api: string, workspace: string, keyEnv: string, every: string): Record<string, unknown> {
  return { kind: "anthropic-cost", team: "proj", lab: "anthropic", workspace, api, keyEnv, every };
}
