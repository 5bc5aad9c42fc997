import { cascade, createKernelView, diffPolicies, type LeaseRevocation, type Policy, type PolicyDiff } from "../../src/kernel/index.js";
import { loadTeamFileData } from "../../src/teamfile/index.js";
import type { LeasesResponse, PolicyInForceResponse } from "../../src/gen/teamd/v1/control_pb.js";
import { leaseFactOfEntry } from "../../src/rpc/lease-entry.js";

/**
 * What `teamd apply` shows before the owner signs: the new file against the policy in force
 * (as recorded — never the file that was on disk last time), seat by seat, and the leases the
 * change would revoke (the kernel's cascade, §7) — the daemon computes the same cascade again
 * when the act arrives and appends it with the policy record in one transaction.
 */
export function policyDiff(inForce: PolicyInForceResponse, next: Policy): { readonly diff: PolicyDiff; readonly against: string; readonly before?: Policy } {
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
  return { diff: diffPolicies(before, next), against, before };
}

/** The leases a change would revoke: the kernel's cascade over the team's leases as the daemon holds them. */
export function leaseCascade(before: Policy | undefined, next: Policy, leases: LeasesResponse): LeaseRevocation[] {
  if (before === undefined || leases.leases.length === 0) return [];
  const facts = { leases: Object.fromEntries(leases.leases.map((e) => [e.leaseId, leaseFactOfEntry(e)])), revokedLeases: [...leases.revoked] };
  return cascade(createKernelView(before, facts), next);
}

export function formatPolicyDiff(diff: PolicyDiff, against: string, revocations: readonly LeaseRevocation[] = []): string {
  if (diff.unchanged) return `No change against ${against}.\n`;
  const lines = [`Changes against ${against}:`];
  for (const line of diff.team) lines.push(`  team: ${line}`);
  for (const seat of diff.seats) {
    lines.push(`  seat ${seat.seat}${seat.status === "changed" ? "" : ` (${seat.status})`}:`);
    for (const gain of seat.gains) lines.push(`    + ${gain}`);
    for (const loss of seat.losses) lines.push(`    - ${loss}`);
    for (const other of seat.other) lines.push(`    ~ ${other}`);
  }
  if (revocations.length === 0) lines.push("  leases: none would be revoked");
  else {
    lines.push(`  leases: ${revocations.length} would be revoked, recorded with the policy (a restored grant revives none):`);
    for (const r of revocations) lines.push(`    x ${r.lease}: ${r.reason}`);
  }
  return `${lines.join("\n")}\n`;
}
