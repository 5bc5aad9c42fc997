import {
  type ChangeDecision,
  checkAuthorityChange,
  createKernelView,
  diffPolicies,
  type LeaseRevocation,
  type Policy,
  type PolicyDiff,
  type Violation,
} from "../../src/kernel/index.js";
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
    // As recorded (decided when it committed): a policy in force with a floor paused still loads.
    const loaded = loadTeamFileData(JSON.parse(inForce.canonical), { startFileHashes: { ...inForce.startFileHashes }, proposal: true });
    before = loaded.ok ? loaded.policy : undefined;
  } catch {
    before = undefined;
  }
  const against = `the policy in force (record ${inForce.seq}, ${inForce.teamFileHash})`;
  // A record this release cannot load any more is shown as a first apply, and said so.
  if (before === undefined) return { diff: diffPolicies(undefined, next), against: `${against}, which this release cannot read` };
  return { diff: diffPolicies(before, next), against, before };
}

/**
 * The owner's change as the daemon will decide it (the kernel's checkAuthorityChange over the
 * team's leases as the daemon holds them, at `now`): refused for a maximum or exclusion it
 * would break counting live leases, else committed with the minimums it leaves unmet (paused)
 * and the leases its cascade revokes. Undefined for a team's first policy (no policy in force).
 */
export function ownerChange(before: Policy | undefined, next: Policy, leases: LeasesResponse, now: number): ChangeDecision | undefined {
  if (before === undefined) return undefined;
  const facts = { leases: Object.fromEntries(leases.leases.map((e) => [e.leaseId, leaseFactOfEntry(e)])), revokedLeases: [...leases.revoked] };
  return checkAuthorityChange(createKernelView(before, facts), { kind: "edit", principal: { kind: "owner" }, after: next }, now);
}

export function formatPolicyDiff(diff: PolicyDiff, against: string, revocations: readonly LeaseRevocation[] = [], paused: readonly Violation[] = []): string {
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
  // §5: the owner's narrowing commits; what a floor gates pauses until it is met again.
  for (const v of paused)
    lines.push(
      `  floor left unmet: ${v.message}; ${v.constraint.kind === "minimum" ? v.constraint.pauses.join(", ") : "its acts"} would pause (constraint.paused) until it is met again`,
    );
  return `${lines.join("\n")}\n`;
}
