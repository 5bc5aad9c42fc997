import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { TeamdHome } from "./home.js";

/**
 * Where a seat's pieces live on the host (DESIGN.md "Repositories", "Seat lifecycle"):
 * TEAMD_HOME/seats/<team>/<seat>/{repo,home,tmp}. The repository and home persist across
 * runs (they are the seat's work); tmp is made per run and removed at stop. The registry
 * of running seats (one file per seat naming its pid-namespace init) lives under run/
 * (the daemon's alone), for the machine-wide stop and the sweep after a crash.
 */
export interface SeatLayout {
  readonly team: string;
  readonly seat: string;
  readonly dir: string;
  readonly repo: string;
  readonly home: string;
  readonly tmp: string;
  readonly socket: string;
  readonly registryFile: string;
}

export function seatsRoot(home: TeamdHome): string {
  return join(home.root, "seats");
}

export function seatRegistryDir(home: TeamdHome): string {
  return join(home.runDir, "seats.d");
}

/** The copy of the shim bundle seats bind (outside teamd's installed code, which is reserved). */
export function shimCopyDir(home: TeamdHome): string {
  return join(home.root, "shim");
}

/**
 * The daemon's git work outside every seat's view: quarantines for pushed packs and the
 * filtered mirrors that bounded-read seats fetch from (src/effects/git-filter.ts).
 */
export function gitWorkDir(home: TeamdHome): { readonly quarantine: string; filteredMirror(team: string, seat: string): string } {
  const root = join(home.root, "git");
  return { quarantine: join(root, "quarantine"), filteredMirror: (team, seat) => join(root, "filtered", team, `${seat}.git`) };
}

export function seatLayout(home: TeamdHome, team: string, seat: string): SeatLayout {
  const dir = join(seatsRoot(home), team, seat);
  return {
    team,
    seat,
    dir,
    repo: join(dir, "repo"),
    home: join(dir, "home"),
    tmp: join(dir, "tmp"),
    // User mode: beside the other sockets in run/ (0700). System mode: in seat-sockets/,
    // which the seat user may traverse (never list) to reach its own, which it alone owns.
    socket: home.mode === "system" ? join(home.root, "seat-sockets", `${team}.${seat}.sock`) : join(home.seatSocketDir, `${team}.${seat}.sock`),
    registryFile: join(seatRegistryDir(home), `${team}.${seat}.json`),
  };
}

/** teamd's own installed code (the package root: dist/ and node_modules): reserved, never bound. */
export function teamdCodeRoot(): string {
  // dist/daemon/host/seat-layout.js, or daemon/host/seat-layout.ts under the test runner -> the package root.
  const above = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
  return basename(above) === "dist" ? dirname(above) : above;
}

/** The built shim bundle (npm run build: scripts/build-shim.ts). */
export function builtShimBundle(): string {
  return join(teamdCodeRoot(), "dist", "shim-bundle", "teamd-shim.cjs");
}

/** The seat's egress launcher and proxy (shim/egress.ts), its own small bundle. */
export function builtEgressBundle(): string {
  return join(teamdCodeRoot(), "dist", "shim-bundle", "teamd-egress.mjs");
}

/** The egress socket beside a seat's gRPC socket: `<x>.sock` → `<x>.egress.sock`. */
export function egressSocketPath(seatSocket: string): string {
  return seatSocket.replace(/\.sock$/, "") + ".egress.sock";
}
