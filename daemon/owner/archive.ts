import { git } from "../../src/effects/git.js";
import type { ArchiveReceipt, Ledger } from "../../src/ledger/index.js";

/**
 * The owner's archive act on the daemon's side (§15 archival; src/ledger/archive.ts does the
 * work): what only the host can add is which commits are merged — a push's authorship stays in
 * the live store until its commits are on one of the team's trunks in the hub. A trunk here is
 * every branch of the hub that is no seat's (`seat/<name>/…` are the seats' own).
 */
export async function mergedCommits(ledger: Ledger): Promise<(team: string, commit: string) => boolean> {
  const byTeam = new Map<string, Set<string>>();
  for (const team of ledger.view.teams()) {
    const merged = new Set<string>();
    try {
      const refs = (await git(["for-each-ref", "--format=%(refname)", "refs/heads/"], { gitDir: team.hub })).stdout
        .split("\n")
        .filter((r) => r !== "" && !r.startsWith("refs/heads/seat/"));
      if (refs.length > 0) for (const c of (await git(["rev-list", ...refs], { gitDir: team.hub })).stdout.split("\n")) if (c !== "") merged.add(c);
    } catch {
      // A hub that cannot be read merges nothing: every push of the team stays (never less kept).
    }
    byTeam.set(team.team, merged);
  }
  return (team, commit) => byTeam.get(team)?.has(commit) ?? false;
}

/** Carry out an archive act (checked by the ledger: the owner's signature, the request, the cut). */
export async function ownerArchive(ledger: Ledger, act: Uint8Array, progress?: (line: string) => void): Promise<ArchiveReceipt> {
  const merged = await mergedCommits(ledger);
  let shown = "";
  return ledger.archive(act, {
    merged,
    progress: (phase, done, total) => {
      const line = `${phase === "plan" ? "reading" : "writing"} ${Math.floor((done / Math.max(total, 1)) * 100)}%`;
      if (line !== shown && (done === total || done % 50_000 < 4096)) progress?.(`${line} (${done}/${total})`);
      shown = line;
    },
  });
}
