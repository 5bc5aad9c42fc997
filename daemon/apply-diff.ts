import { diffPolicies, type Policy, type PolicyDiff } from "../src/kernel/index.js";
import { loadTeamFileData } from "../src/teamfile/index.js";
import type { PolicyInForceResponse } from "../src/gen/teamd/v1/control_pb.js";

/**
 * What `teamd apply` shows before the owner signs: the new file against the policy in force
 * (as recorded — never the file that was on disk last time), seat by seat. Leases: none is
 * issued on a live team yet (the delegation issue), so no change revokes one; the line says so.
 */
export function policyDiff(inForce: PolicyInForceResponse, next: Policy): { readonly diff: PolicyDiff; readonly against: string } {
  if (!inForce.applied) return { diff: diffPolicies(undefined, next), against: "no policy in force yet" };
  let before: Policy | undefined;
  try {
    const loaded = loadTeamFileData(JSON.parse(inForce.canonical), { startFileHashes: { ...inForce.startFileHashes } });
    before = loaded.ok ? loaded.policy : undefined;
  } catch {
    before = undefined;
  }
  const against = `the policy in force (record ${inForce.seq}, ${inForce.teamFileHash})`;
  // A record this release cannot load any more is shown as a first apply, and said so.
  if (before === undefined) return { diff: diffPolicies(undefined, next), against: `${against}, which this release cannot read` };
  return { diff: diffPolicies(before, next), against };
}

export function formatPolicyDiff(diff: PolicyDiff, against: string): string {
  if (diff.unchanged) return `No change against ${against}.\n`;
  const lines = [`Changes against ${against}:`];
  for (const line of diff.team) lines.push(`  team: ${line}`);
  for (const seat of diff.seats) {
    lines.push(`  seat ${seat.seat}${seat.status === "changed" ? "" : ` (${seat.status})`}:`);
    for (const gain of seat.gains) lines.push(`    + ${gain}`);
    for (const loss of seat.losses) lines.push(`    - ${loss}`);
    for (const other of seat.other) lines.push(`    ~ ${other}`);
  }
  lines.push("  leases: none would be revoked (no lease is issued on a live team yet)");
  return `${lines.join("\n")}\n`;
}
