import { describe, expect, it } from "vitest";
import type { LeaseFact } from "../../src/kernel/facts.js";
import { checkOwnerLease, checkOwnerRevoke } from "../../src/kernel/owner-lease.js";
import type { RuleId } from "../../src/kernel/rules.js";
import { createKernelView, type KernelView } from "../../src/kernel/view.js";
import { loadTeamFileData } from "../../src/teamfile/load.js";

/**
 * The owner's lease acts (src/kernel/owner-lease.ts), as tables: an owner-issued lease is a
 * root lease from the leads envelope, issued as leads and decided as leads' own; an owner's
 * revocation names a lease, and one known to be another team's is refused — with the store
 * down (no leases read) the flag holds and nothing more is refused.
 */
const NOW = 1_000_000;
const HOUR = 3_600_000;

function viewOf(data: Record<string, unknown>): KernelView {
  const loaded = loadTeamFileData({ version: 1, team: "t", ceiling: { "lease-ttl": "30d" }, seats: { lead: {}, a: {} }, ...data });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return createKernelView(loaded.policy);
}

const WITH_LEADS = viewOf({ leads: { seat: "lead", envelope: { write: { path: ["docs/"] } } } });
const NO_LEADS = viewOf({});

const lease = (over: Partial<LeaseFact> = {}): LeaseFact => ({
  id: "l1",
  rootGrant: "leads:envelope/write/0",
  issuer: "lead",
  holder: "a",
  capability: "write",
  scope: { path: ["docs/"] },
  issuedAt: NOW,
  expiresAt: NOW + HOUR,
  ...over,
});

interface LeaseCase {
  readonly description: string;
  readonly view: KernelView | undefined;
  readonly fact: LeaseFact | undefined;
  /** undefined: the lease may issue. */
  readonly rule: RuleId | undefined;
}

const leaseCases: readonly LeaseCase[] = [
  { description: "a root lease from the envelope, issued as leads", view: WITH_LEADS, fact: lease(), rule: undefined },
  { description: "an act that carries no readable lease", view: WITH_LEADS, fact: undefined, rule: "owner.act-invalid" },
  { description: "a re-lease (the seat holding the parent issues those)", view: WITH_LEADS, fact: lease({ parent: "p" }), rule: "owner.act-invalid" },
  { description: "a team with no applied policy", view: undefined, fact: lease(), rule: "policy.unapplied" },
  { description: "a team without leads", view: NO_LEADS, fact: lease(), rule: "lease.no-leads" },
  { description: "issued as another seat than leads", view: WITH_LEADS, fact: lease({ issuer: "a", holder: "lead" }), rule: "lease.source" },
  { description: "wider than the envelope", view: WITH_LEADS, fact: lease({ scope: { path: ["src/"] } }), rule: "lease.wider" },
  { description: "to leads itself: authority never returns up its chain", view: WITH_LEADS, fact: lease({ holder: "lead" }), rule: "lease.ancestor" },
];

interface RevokeCase {
  readonly description: string;
  readonly leaseId: string | undefined;
  readonly leases: Readonly<Record<string, LeaseFact>> | undefined;
  readonly rule: RuleId | undefined;
}

const revokeCases: readonly RevokeCase[] = [
  { description: "a lease of the team", leaseId: "l1", leases: { l1: lease() }, rule: undefined },
  { description: "an act that names no lease", leaseId: undefined, leases: { l1: lease() }, rule: "owner.act-invalid" },
  { description: "a lease that is not the team's", leaseId: "l2", leases: { l1: lease() }, rule: "lease.unknown" },
  { description: "the store down: the flag holds, nothing more is refused", leaseId: "l2", leases: undefined, rule: undefined },
  { description: "the store down, no lease named: still refused", leaseId: undefined, leases: undefined, rule: "owner.act-invalid" },
];

describe("checkOwnerLease", () => {
  it.each(leaseCases.map((c) => [c.description, c] as const))("%s", (_d, c) => {
    const refused = checkOwnerLease(c.view, "t", c.fact, NOW);
    expect(refused?.rule, refused?.reason).toBe(c.rule);
  });
});

describe("checkOwnerRevoke", () => {
  it.each(revokeCases.map((c) => [c.description, c] as const))("%s", (_d, c) => {
    const refused = checkOwnerRevoke("t", c.leaseId, c.leases);
    expect(refused?.rule, refused?.reason).toBe(c.rule);
  });
});
