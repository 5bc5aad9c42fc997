import { describe, expect, it } from "vitest";
import type { LeaseFact } from "../../src/kernel/facts.js";
import { decideLease, type SeatLeaseRequest } from "../../src/kernel/lease-choice.js";
import type { Policy } from "../../src/kernel/policy.js";
import type { RuleId } from "../../src/kernel/rules.js";
import { createKernelView } from "../../src/kernel/view.js";
import { loadTeamFileData } from "../../src/teamfile/load.js";

/**
 * The lease issue choice (src/kernel/lease-choice.ts), as a table: a source or a parent named is
 * decided as named; a root lease without one tries the issuer's own standing grants for the
 * capability, then the leads envelope when the issuer is leads, and issues from the first that
 * covers it — or refuses with the first source's refusal.
 */
const NOW = 1_000_000;
const HOUR = 3_600_000;

function policy(): Policy {
  const loaded = loadTeamFileData({
    version: 1,
    team: "t",
    leads: { seat: "lead", envelope: { write: { path: ["docs/"] } } },
    ceiling: { "lease-ttl": "30d" },
    seats: { lead: { capabilities: { write: { path: ["src/"] } } }, a: { capabilities: { write: { path: ["src/"] } } }, b: {}, c: {} },
  });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.policy;
}

/** A live lease of a's own grant to b: the parent of the re-lease cases. */
const HELD: LeaseFact = {
  id: "held",
  rootGrant: "a/direct/write/0",
  issuer: "a",
  holder: "b",
  capability: "write",
  scope: { path: ["src/"] },
  issuedAt: NOW - HOUR,
  expiresAt: NOW + 10 * HOUR,
};
const view = createKernelView(policy(), { leases: { held: HELD } });

const request = (over: Partial<SeatLeaseRequest>): SeatLeaseRequest => ({
  leaseId: "new",
  issuer: "lead",
  recipient: "b",
  capability: "write",
  scope: { path: ["src/"] },
  expiresAt: NOW + HOUR,
  ...over,
});

interface Case {
  readonly description: string;
  readonly request: SeatLeaseRequest;
  /** The root grant the issued lease carries, or the rule that refused it. */
  readonly expected: { readonly issue: string } | { readonly refuse: RuleId };
}

const cases: readonly Case[] = [
  { description: "no source named: the issuer's own standing grant covers it", request: request({}), expected: { issue: "lead/direct/write/0" } },
  {
    description: "no source named: leads' own grant does not cover it, the envelope does",
    request: request({ scope: { path: ["docs/"] } }),
    expected: { issue: "leads:envelope/write/0" },
  },
  {
    description: "no source named: a seat that is not leads never reaches the envelope",
    request: request({ issuer: "a", scope: { path: ["docs/"] } }),
    expected: { refuse: "lease.wider" },
  },
  {
    description: "no source named, none covers: the first source's refusal",
    request: request({ scope: { path: ["other/"] } }),
    expected: { refuse: "lease.wider" },
  },
  {
    description: "no source for the capability at all: the kernel's own refusal (a root lease names its source)",
    request: request({ capability: "merge" }),
    expected: { refuse: "request.malformed" },
  },
  {
    description: "a source named is decided as named, never searched past",
    request: request({ source: "leads:envelope/write/0" }),
    expected: { refuse: "lease.wider" },
  },
  {
    description: "a source named that covers it issues from it",
    request: request({ source: "leads:envelope/write/0", scope: { path: ["docs/"] } }),
    expected: { issue: "leads:envelope/write/0" },
  },
  {
    description: "a re-lease of a held lease keeps its root grant, no source searched",
    request: request({ issuer: "b", recipient: "c", parent: "held", scope: { path: ["src/"] } }),
    expected: { issue: "a/direct/write/0" },
  },
  {
    description: "a re-lease wider than its parent is refused",
    request: request({ issuer: "b", recipient: "c", parent: "held", scope: { path: ["docs/"] } }),
    expected: { refuse: "lease.wider" },
  },
  {
    description: "a re-lease back up its chain is refused",
    request: request({ issuer: "b", recipient: "a", parent: "held", scope: { path: ["src/"] } }),
    expected: { refuse: "lease.ancestor" },
  },
];

describe("decideLease (the lease issue choice)", () => {
  it.each(cases.map((c) => [c.description, c] as const))("%s", (_d, c) => {
    const decided = decideLease(view, c.request, NOW);
    const got = decided.decision === "issue" ? { issue: decided.lease.rootGrant } : { refuse: decided.rule };
    expect(got, decided.decision === "refuse" ? decided.reason : "").toEqual(c.expected);
  });
});
