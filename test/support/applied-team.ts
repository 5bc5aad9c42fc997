import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { initTeam, type HarnessOptions, type TeamdHarness } from "./teamd-harness.js";

export type AppliedTeam = TeamdHarness;

/**
 * What most integration tests start from: `initTeam` (the harness's temporary home and
 * repository, a real daemon, `teamd init`), then the given team file written and applied.
 * Fails naming the step that failed, after stopping the daemon and removing the folder.
 */
export async function appliedTeam(prefix: string, teamFile: string, files?: Record<string, string>, options: HarnessOptions = {}): Promise<AppliedTeam> {
  const h = await initTeam(prefix, { ...options, ...(files ? { files } : {}) });
  try {
    writeFileSync(join(h.repo, "teamd.yaml"), teamFile);
    await h.ok(["apply", "--yes"]);
  } catch (error) {
    await h.cleanup();
    throw error;
  }
  return h;
}
