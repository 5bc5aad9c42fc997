import type { Launcher, LaunchResult, ProbeResult } from "./launcher-types.js";
import { refuseContainment } from "./refusal.js";
import { createLinuxLauncher, type LinuxLauncherOptions } from "./launcher-linux.js";
import { createMacosLauncher } from "./launcher-macos.js";
import { createWindowsLauncher } from "./launcher-windows.js";
import { createUncontainedLauncher } from "./launcher-none.js";

/**
 * One interface over the platforms' containment (DESIGN.md "src/sandbox/"): the seat
 * lifecycle asks a launcher to run a command inside a plan and gets back a handle it can
 * watch and kill. Only launchers touch the OS; what they run is decided before, as data.
 *
 * The interface itself is in launcher-types.ts, which every platform's launcher imports; this
 * file picks one of them, and passes the interface on to its callers.
 */
export type {
  CgroupPlacement,
  Launcher,
  LaunchRequest,
  LaunchResult,
  PipeStreams,
  ProbeResult,
  PtyStreams,
  SeatExit,
  SeatIo,
  SeatProcess,
} from "./launcher-types.js";

export interface LauncherOptions {
  readonly linux?: LinuxLauncherOptions;
}

/** The launcher for a platform (default: this one): its containment, and `containment: none` where that is built. */
export function createLauncher(platform: NodeJS.Platform = process.platform, options: LauncherOptions = {}): Launcher {
  switch (platform) {
    case "linux":
      return byContainment(createLinuxLauncher(options.linux), createUncontainedLauncher(options.linux));
    case "darwin":
      return byContainment(createMacosLauncher(), uncontainedNotSupported("darwin", "macOS"));
    case "win32":
      return byContainment(createWindowsLauncher(), uncontainedNotSupported("win32", "Windows"));
    default:
      return createUnsupportedLauncher(platform);
  }
}

/**
 * One launcher over two: each launch goes to the one its request's containment names. The
 * probe (`teamd doctor`) is the contained one's: whether seats can be contained here.
 */
function byContainment(contained: Launcher, uncontained: Launcher): Launcher {
  return {
    platform: contained.platform,
    probe: (user) => contained.probe(user),
    launch: (request) => (request.containment === "none" ? uncontained : contained).launch(request),
  };
}

/** The uncontained launcher is Linux's (its wrapper, tree walk and tools are): elsewhere `containment: none` refuses too. */
function uncontainedNotSupported(platform: NodeJS.Platform, name: string): Launcher {
  const refusal = refuseContainment(
    "containment.unavailable",
    `running a seat uncontained (\`containment: none\`) on ${name} is not supported yet`,
    "run the seat on Linux",
  );
  return {
    platform,
    probe: async (): Promise<ProbeResult> => ({ ok: false, refusal }),
    launch: async (): Promise<LaunchResult> => ({ ok: false, refusal }),
  };
}

/** Any other platform: no containment is known there, so no seat starts. */
function createUnsupportedLauncher(platform: NodeJS.Platform): Launcher {
  const refusal = refuseContainment(
    "containment.unavailable",
    `containment on ${platform} is not supported`,
    "run seats on Linux (bubblewrap; or uncontained there, with `containment: none` in the team file: every record then says against a mistake only)",
  );
  return {
    platform,
    probe: async (): Promise<ProbeResult> => ({ ok: false, refusal }),
    launch: async (): Promise<LaunchResult> => ({ ok: false, refusal }),
  };
}
