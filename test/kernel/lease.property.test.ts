import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { authorize } from "../../src/kernel/authorize.js";
import { cascade } from "../../src/kernel/cascade.js";
import type { LeaseFact } from "../../src/kernel/facts.js";
import { issueLease } from "../../src/kernel/lease-issue.js";
import { leaseLiveness } from "../../src/kernel/lease-liveness.js";
import type { Policy } from "../../src/kernel/policy.js";
import type { KernelRequest } from "../../src/kernel/request.js";
import { createKernelView } from "../../src/kernel/view.js";
import { loadTeamFileData } from "../../src/teamfile/load.js";

/**
 * §7 and §8 against a brute-force reference written independently of the kernel: random
 * delegation trees (root leases from a standing grant or the leads envelope, re-leases of
 * any earlier lease, any holder, any path, any expiry), random revocations, a random time,
 * a random narrowing/reassignment of the grant, a random ceiling and deny. The reference
 * says a lease is live iff every link up its chain is (not expired, not revoked, holder a
 * seat and not leads, issuer holds its source or parent, within it, outside the chain).
 */
const SEATS = ["lead", "a", "b", "c", "d"];
const PATHS = ["src", "src/x", "src/y", "docs", "docs/z"];
const within = (p: string, q: string): boolean => p === q || p.startsWith(`${q}/`);
const NOW = 1_000_000;

interface World {
  grant: { holder: string; path: string } | undefined;
  envelope: string | undefined;
  ceiling: string[] | undefined;
  deny: string | undefined;
}

function policyOf(w: World): Policy {
  const seats: Record<string, unknown> = {};
  for (const s of SEATS) seats[s] = w.grant !== undefined && w.grant.holder === s ? { capabilities: { write: { path: [w.grant.path] } } } : {};
  const data = {
    version: 1,
    team: "t",
    leads: { seat: "lead", envelope: w.envelope === undefined ? {} : { write: { path: [w.envelope] } } },
    ...(w.ceiling !== undefined ? { ceiling: { capabilities: { write: { path: w.ceiling } }, "lease-ttl": "30d" } } : { ceiling: { "lease-ttl": "30d" } }),
    ...(w.deny !== undefined ? { deny: { write: { path: [w.deny] } } } : {}),
    seats,
  };
  const loaded = loadTeamFileData(data);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.policy;
}

const rawLease = fc.record({
  parentPick: fc.nat(20),
  fromEnvelope: fc.boolean(),
  rootish: fc.boolean(),
  issuer: fc.constantFrom(...SEATS),
  holder: fc.constantFrom(...SEATS),
  path: fc.constantFrom(...PATHS),
  expiry: fc.integer({ min: NOW - 10, max: NOW + 200 }),
});

const pathOf = (l: LeaseFact): string => (l.scope.path as string[])[0] as string;

function buildLeases(raws: readonly (typeof rawLease extends fc.Arbitrary<infer T> ? T : never)[]): LeaseFact[] {
  const out: LeaseFact[] = [];
  raws.forEach((r, i) => {
    const parent = r.rootish || out.length === 0 ? undefined : out[r.parentPick % out.length];
    // A root lease's issuer is mostly one that could hold its source (leads for the envelope,
    // a or b for the grant), so live chains are common; a forged one still appears.
    const forged = r.parentPick % 5 === 0;
    const issuer =
      parent !== undefined ? (forged ? r.issuer : parent.holder) : forged ? r.issuer : r.fromEnvelope ? "lead" : r.parentPick % 2 === 0 ? "a" : "b";
    out.push({
      id: `L${i}`,
      ...(parent !== undefined ? { parent: parent.id } : {}),
      rootGrant: parent !== undefined ? parent.rootGrant : r.fromEnvelope ? "leads:envelope/write/0" : `${issuer}/direct/write/0`,
      issuer,
      holder: r.holder,
      capability: "write",
      // A re-lease mostly attenuates (path and expiry within its parent), sometimes not.
      scope: { path: [parent === undefined || forged || within(r.path, pathOf(parent)) ? r.path : pathOf(parent)] },
      issuedAt: 0,
      expiresAt: parent === undefined || forged ? r.expiry : Math.min(r.expiry, parent.expiresAt),
    });
  });
  return out;
}

/** The reference: live iff every link is. */
function refLive(w: World, leases: ReadonlyMap<string, LeaseFact>, revoked: ReadonlySet<string>, id: string, now: number): boolean {
  const chain: LeaseFact[] = [];
  let link = leases.get(id);
  while (link !== undefined) {
    chain.unshift(link);
    link = link.parent === undefined ? undefined : leases.get(link.parent);
  }
  const root = chain[0];
  if (root === undefined || root.parent !== undefined) return false;
  const seen = new Set<string>();
  for (let i = 0; i < chain.length; i++) {
    const l = chain[i] as LeaseFact;
    const path = (l.scope.path as string[])[0] as string;
    if (now >= l.expiresAt || revoked.has(l.id) || l.holder === "lead") return false;
    if (i === 0) {
      if (l.holder === l.issuer) return false;
      if (l.rootGrant.startsWith("leads:")) {
        if (l.issuer !== "lead" || w.envelope === undefined || !within(path, w.envelope)) return false;
      } else if (w.grant === undefined || w.grant.holder !== l.issuer || !within(path, w.grant.path)) return false;
    } else {
      const p = chain[i - 1] as LeaseFact;
      if (p.holder !== l.issuer || !within(path, (p.scope.path as string[])[0] as string) || l.expiresAt > p.expiresAt || seen.has(l.holder)) return false;
    }
    seen.add(l.issuer);
    seen.add(l.holder);
  }
  return true;
}

const world = fc.record({
  grant: fc.option(fc.record({ holder: fc.constantFrom("a", "b"), path: fc.constantFrom("src", "src/x", "docs") }), { nil: undefined }),
  envelope: fc.option(fc.constantFrom("src", "docs", "src/y"), { nil: undefined }),
  ceiling: fc.option(fc.subarray(["src", "docs", "src/x"], { minLength: 1 }), { nil: undefined }),
  deny: fc.option(fc.constantFrom("src/x", "docs/z"), { nil: undefined }),
});

describe("lease liveness against a brute-force reference (§7)", () => {
  it("a lease is live iff its whole chain is live and covered, under any revocations and time", () => {
    fc.assert(
      fc.property(
        world,
        fc.array(rawLease, { minLength: 1, maxLength: 8 }),
        fc.array(fc.nat(8), { maxLength: 2 }),
        fc.integer({ min: NOW - 20, max: NOW + 60 }),
        (w, raws, revokePicks, now) => {
          const list = buildLeases(raws);
          const leases = new Map(list.map((l) => [l.id, l]));
          const revoked = new Set(revokePicks.filter((i) => i < list.length).map((i) => `L${i}`));
          const policy = policyOf({ ...w, ceiling: undefined, deny: undefined });
          const view = createKernelView(policy, { leases: Object.fromEntries(leases), revokedLeases: [...revoked] });
          for (const l of list) {
            const live = refLive(w, leases, revoked, l.id, now);
            expect(leaseLiveness(view, l.id, now).live, l.id).toBe(live);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("no capability escapes its chain, the ceiling or the deny: every allowed write is covered by reference", () => {
    fc.assert(
      fc.property(world, fc.array(rawLease, { minLength: 1, maxLength: 6 }), (w, raws) => {
        const list = buildLeases(raws);
        const leases = new Map(list.map((l) => [l.id, l]));
        const view = createKernelView(policyOf(w), { leases: Object.fromEntries(leases) });
        for (const seat of SEATS) {
          for (const path of PATHS) {
            const file = `${path}/f.ts`;
            const d = authorize(view, { seat, capability: "write", effect: { paths: [file] } } as KernelRequest, NOW);
            const standing = w.grant !== undefined && w.grant.holder === seat && within(file, w.grant.path);
            const leased = list.some(
              (l) => l.holder === seat && within(file, (l.scope.path as string[])[0] as string) && refLive(w, leases, new Set(), l.id, NOW),
            );
            const bounded = (w.deny === undefined || !within(file, w.deny)) && (w.ceiling === undefined || w.ceiling.some((c) => within(file, c)));
            expect(d.decision === "allow", `${seat} ${file} ${d.decision === "refuse" ? d.rule : d.authority.id}`).toBe((standing || leased) && bounded);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it("the same with many leases per seat (the decision's lease index and coverage index in use)", () => {
    let crowded = 0;
    // Crowded on purpose: mostly root leases from the envelope (src) to a or b, under src, expiring late.
    const crowd = rawLease.map((r) => ({
      ...r,
      rootish: r.parentPick % 3 !== 0,
      fromEnvelope: r.parentPick % 7 !== 0,
      holder: r.holder === "lead" || r.holder === "c" ? "a" : r.holder,
      path: r.path.startsWith("docs") ? "src/x" : r.path,
      expiry: r.expiry + 300,
    }));
    fc.assert(
      fc.property(
        world.map((w) => ({ ...w, envelope: "src" })),
        fc.array(crowd, { minLength: 100, maxLength: 160 }),
        fc.integer({ min: NOW - 5, max: NOW + 400 }),
        (w, raws, now) => {
          const list = buildLeases(raws);
          const leases = new Map(list.map((l) => [l.id, l]));
          const view = createKernelView(policyOf(w), { leases: Object.fromEntries(leases) });
          for (const seat of SEATS) {
            if (list.filter((l) => l.holder === seat && refLive(w, leases, new Set(), l.id, now)).length >= 16) crowded++;
            for (const path of [...PATHS, "elsewhere"]) {
              const file = `${path}/f.ts`;
              const d = authorize(view, { seat, capability: "write", effect: { paths: [file] } } as KernelRequest, now);
              const standing = w.grant !== undefined && w.grant.holder === seat && within(file, w.grant.path);
              const leased = list.some(
                (l) => l.holder === seat && within(file, (l.scope.path as string[])[0] as string) && refLive(w, leases, new Set(), l.id, now),
              );
              const bounded = (w.deny === undefined || !within(file, w.deny)) && (w.ceiling === undefined || w.ceiling.some((c) => within(file, c)));
              expect(d.decision === "allow", `${seat} ${file} ${d.decision === "refuse" ? d.rule : d.authority.id}`).toBe((standing || leased) && bounded);
              // An allow under a lease names a lease of this seat that is live by reference and covers the file.
              if (d.decision === "allow" && d.authority.id.startsWith("lease:")) {
                const used = leases.get(d.authority.id.slice("lease:".length));
                expect(used?.holder).toBe(seat);
                expect(used !== undefined && refLive(w, leases, new Set(), used.id, now) && within(file, pathOf(used))).toBe(true);
              }
            }
          }
        },
      ),
      { numRuns: 60 },
    );
    // The crowded case is what this test is for: make sure it happened.
    expect(crowded).toBeGreaterThan(0);
  });

  it("revoked leases never return: a cascade's revocations survive restoring the grant", () => {
    fc.assert(
      fc.property(world, fc.array(rawLease, { minLength: 1, maxLength: 8 }), fc.constantFrom("narrow", "reassign", "remove"), (w, raws, how) => {
        if (w.grant === undefined) return;
        const list = buildLeases(raws);
        const facts = { leases: Object.fromEntries(list.map((l) => [l.id, l])) };
        const before = policyOf({ ...w, ceiling: undefined, deny: undefined });
        const changed: World = {
          ...w,
          ceiling: undefined,
          deny: undefined,
          grant:
            how === "remove"
              ? undefined
              : how === "reassign"
                ? { ...w.grant, holder: w.grant.holder === "a" ? "b" : "a" }
                : { ...w.grant, path: `${w.grant.path}/x` },
        };
        const revocations = cascade(createKernelView(before, facts), policyOf(changed)).map((r) => r.lease);
        // Every lease that the change killed is in the batch, and after restoring the grant stays dead.
        const afterChange = createKernelView(policyOf(changed), facts);
        const restored = createKernelView(before, { ...facts, revokedLeases: revocations });
        for (const l of list) {
          const wasLive = leaseLiveness(createKernelView(before, facts), l.id, NOW).live;
          if (wasLive && !leaseLiveness(afterChange, l.id, NOW).live) expect(revocations, l.id).toContain(l.id);
          if (revocations.includes(l.id)) expect(leaseLiveness(restored, l.id, NOW).live).toBe(false);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("a re-lease that issues is never wider than its parent nor outlives it", () => {
    fc.assert(
      fc.property(
        world,
        fc.array(rawLease, { minLength: 1, maxLength: 6 }),
        fc.nat(5),
        fc.constantFrom(...SEATS),
        fc.constantFrom(...PATHS),
        fc.integer({ min: NOW + 1, max: NOW + 150 }),
        (w, raws, pick, recipient, path, expiresAt) => {
          const list = buildLeases(raws);
          const parent = list[pick % list.length] as LeaseFact;
          const view = createKernelView(policyOf(w), { leases: Object.fromEntries(list.map((l) => [l.id, l])) });
          const d = issueLease(
            view,
            { leaseId: "NEW", issuer: parent.holder, recipient, capability: "write", scope: { path: [path] }, expiresAt, parent: parent.id },
            NOW,
          );
          if (d.decision !== "issue") return;
          expect(leaseLiveness(view, parent.id, NOW).live).toBe(true);
          expect(within(path, (parent.scope.path as string[])[0] as string)).toBe(true);
          expect(d.lease.expiresAt).toBeLessThanOrEqual(parent.expiresAt);
          expect(d.lease.rootGrant).toBe(parent.rootGrant);
          // What issues is live at once: the issuance check and the use-time walk agree.
          const withNew = createKernelView(policyOf(w), { leases: { ...Object.fromEntries(list.map((l) => [l.id, l])), NEW: d.lease } });
          expect(leaseLiveness(withNew, "NEW", NOW).live).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
