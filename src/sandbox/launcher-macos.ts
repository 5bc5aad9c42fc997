import type { Launcher, LaunchResult, ProbeResult } from "./launcher-types.js";
import { refuseContainment } from "./refusal.js";

/**
 * macOS: not supported yet. The Seatbelt profile generator exists and is tested on every
 * platform (seatbelt-profile.ts, sandbox-profiles/macos-seatbelt.sb.template); running
 * sandbox-exec and proving it with the escape suite is a later issue. Until then a seat
 * does not start here — it never starts uncontained by accident.
 */
export function createMacosLauncher(): Launcher {
  const refusal = refuseContainment(
    "containment.unavailable",
    "containment on macOS (sandbox-exec with a Seatbelt profile) is not supported yet",
    "run seats on Linux (bubblewrap); running them uncontained (`containment: none` in the team file) is not supported here yet either",
  );
  return {
    platform: "darwin",
    probe: async (): Promise<ProbeResult> => ({ ok: false, refusal }),
    launch: async (): Promise<LaunchResult> => ({ ok: false, refusal }),
  };
}
