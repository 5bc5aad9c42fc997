import type { Launcher, LaunchResult, ProbeResult } from "./launcher-types.js";
import { refuseContainment } from "./refusal.js";

/**
 * Windows: not supported yet. sandbox-profiles/windows-job-limits.json sketches the job
 * object a later issue will build (limits and kill-on-close); file containment on Windows
 * (AppContainer or a restricted token) is not designed yet. Until then a seat does not
 * start here.
 */
export function createWindowsLauncher(): Launcher {
  const refusal = refuseContainment(
    "containment.unavailable",
    "containment on Windows (job objects with a restricted token) is not supported yet",
    "run seats on Linux (bubblewrap); running them uncontained (`containment: none` in the team file) is not supported here yet either",
  );
  return {
    platform: "win32",
    probe: async (): Promise<ProbeResult> => ({ ok: false, refusal }),
    launch: async (): Promise<LaunchResult> => ({ ok: false, refusal }),
  };
}
