import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { KernelFacts, LeaseFact } from "../../src/kernel/facts.js";
import { heldLeases, leaseLiveness, liveLeases, walkLease } from "../../src/kernel/lease-liveness.js";
import { heldLeasesReference, leaseLivenessReference, walkLeaseReference } from "../../src/kernel/lease-walk.js";
import type { Policy } from "../../src/kernel/policy.js";
import { type KernelView, createKernelView } from "../../src/kernel/view.js";
import { loadTeamFileData } from "../../src/teamfile/load.js";

/**
 * The memoized lease verdicts (lease-liveness.ts) against the reference walk (lease-walk.ts),
 * which is the definition: the same liveness — rule, reason, lease, authority and chain — for
 * every lease, at every time, over random delegation trees with forged links, missing and
 * cyclic parents, revocations of leases and of the grant, no leads, ceilings and denies, and
 * times on and around every expiry. The views are queried at several times in any order and
 * share one frozen leases record under different policies and revocations, so a memo keyed
 * wrongly (or kept across a time it does not hold for) shows.
 */
const SEATS = ["lead", "a", "b", "c", "d"];
const PATHS = ["src", "src/x", "src/y", "docs", "docs/z"];
const NOW = 1_000_000;

interface World {
  grant: { holder: string; path: string } | undefined;
  envelope: string | undefined;
  leads: boolean;
  ceiling: string[] | undefined;
  deny: string | undefined;
}

function policyOf(w: World): Policy {
  const seats: Record<string, unknown> = {};
  for (const s of SEATS) seats[s] = w.grant !== undefined && w.grant.holder === s ? { capabilities: { write: { path: [w.grant.path] } } } : {};
  const data = {
    version: 1,
    team: "t",
    ...(w.leads ? { leads: { seat: "lead", envelope: w.envelope === undefined ? {} : { write: { path: [w.envelope] } } } } : {}),
    ...(w.ceiling !== undefined ? { ceiling: { capabilities: { write: { path: w.ceiling } }, "lease-ttl": "30d" } } : { ceiling: { "lease-ttl": "30d" } }),
    ...(w.deny !== undefined ? { deny: { write: { path: [w.deny] } } } : {}),
    seats,
  };
  const loaded = loadTeamFileData(data);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.policy;
}

const world: fc.Arbitrary<World> = fc.record({
  grant: fc.option(fc.record({ holder: fc.constantFrom("a", "b"), path: fc.constantFrom("src", "src/x", "docs") }), { nil: undefined }),
  envelope: fc.option(fc.constantFrom("src", "docs", "src/y"), { nil: undefined }),
  leads: fc.constantFrom(true, true, true, false), // leads present far more often
  ceiling: fc.option(fc.subarray(["src", "docs", "src/x"], { minLength: 1 }), { nil: undefined }),
  deny: fc.option(fc.constantFrom("src/x", "docs/z", "src"), { nil: undefined }),
});

const rawLease = fc.record({
  parentPick: fc.nat(40),
  parentMode: fc.constantFrom("earlier", "earlier", "earlier", "earlier", "root", "any", "missing"),
  forged: fc.nat(5),
  fromEnvelope: fc.boolean(),
  issuer: fc.constantFrom(...SEATS),
  holder: fc.constantFrom(...SEATS),
  path: fc.constantFrom(...PATHS, "src/x/q"),
  expiry: fc.integer({ min: NOW - 10, max: NOW + 60 }),
  capability: fc.constantFrom("write", "write", "write", "review"),
});
type RawLease = typeof rawLease extends fc.Arbitrary<infer T> ? T : never;

const within = (p: string, q: string): boolean => p === q || p.startsWith(`${q}/`);
const pathOf = (l: LeaseFact): string => (l.scope.path as string[])[0] as string;

function buildLeases(raws: readonly RawLease[]): LeaseFact[] {
  const out: LeaseFact[] = [];
  raws.forEach((r, i) => {
    // Mostly attenuating chains; also a parent picked among all leases (later ones, itself: cycles) and a missing one.
    const parentId =
      r.parentMode === "root" || (r.parentMode === "earlier" && out.length === 0)
        ? undefined
        : r.parentMode === "missing"
          ? "GONE"
          : r.parentMode === "any"
            ? `L${r.parentPick % raws.length}`
            : `L${r.parentPick % out.length}`;
    const parent = parentId === undefined ? undefined : out.find((l) => l.id === parentId);
    const forged = r.forged === 0;
    const issuer =
      parent !== undefined && !forged
        ? parent.holder
        : forged || parentId !== undefined
          ? r.issuer
          : r.fromEnvelope
            ? "lead"
            : r.parentPick % 2 === 0
              ? "a"
              : "b";
    out.push({
      id: `L${i}`,
      ...(parentId !== undefined ? { parent: parentId } : {}),
      rootGrant: parent !== undefined && !forged ? parent.rootGrant : r.fromEnvelope ? "leads:envelope/write/0" : `${issuer}/direct/write/0`,
      issuer,
      holder: r.holder,
      capability: r.capability,
      scope: { path: [parent === undefined || forged || within(r.path, pathOf(parent)) ? r.path : pathOf(parent)] },
      issuedAt: 0,
      expiresAt: parent === undefined || forged ? r.expiry : Math.min(r.expiry, parent.expiresAt),
    });
  });
  return out;
}

/** Times on, just before and just after every expiry, and a few others. */
function timesOf(leases: readonly LeaseFact[], picks: readonly number[]): number[] {
  const edges = [...new Set(leases.flatMap((l) => [l.expiresAt - 1, l.expiresAt, l.expiresAt + 1]))];
  return [NOW - 20, ...picks.map((p) => edges[p % edges.length] as number), NOW + 100, NOW - 20, ...edges];
}

function expectSame(view: KernelView, ids: readonly string[], now: number): void {
  for (const id of ids) {
    expect(walkLease(view, id, now), `${id} at ${now}`).toEqual(walkLeaseReference(view, id, now));
    expect(leaseLiveness(view, id, now), `${id} at ${now}`).toEqual(leaseLivenessReference(view, id, now));
  }
  for (const seat of SEATS) {
    for (const capability of ["write", "review"] as const) {
      const reference = heldLeasesReference(view, seat, capability, now);
      expect(heldLeases(view, seat, capability, now), `${seat} ${capability} at ${now}`).toEqual(reference);
      expect(liveLeases(view, seat, capability, now), `${seat} ${capability} at ${now}`).toEqual(reference.live);
    }
  }
}

describe("memoized lease verdicts against the reference walk (§7)", () => {
  it("the same liveness, rule and reason for every lease and seat at every time, in any order of times", () => {
    fc.assert(
      fc.property(
        world,
        fc.array(rawLease, { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(12), { maxLength: 3 }),
        fc.boolean(),
        fc.array(fc.nat(200), { maxLength: 6 }),
        (w, raws, revokePicks, revokeGrant, timePicks) => {
          const list = buildLeases(raws);
          const leases = Object.fromEntries(list.map((l) => [l.id, l]));
          const revokedLeases = revokePicks.filter((i) => i < list.length).map((i) => `L${i}`);
          const revoked = revokeGrant && w.grant !== undefined ? [`${w.grant.holder}/direct/write/0`] : undefined;
          const view = createKernelView(policyOf(w), { leases, revokedLeases, ...(revoked !== undefined ? { revoked } : {}) });
          for (const now of timesOf(list, timePicks)) expectSame(view, [...list.map((l) => l.id), "GONE"], now);
        },
      ),
      { numRuns: 100 },
    );
  });

  it("views sharing one frozen leases record under different policies and revocations never share an answer they should not", () => {
    fc.assert(
      fc.property(
        world,
        world,
        fc.array(rawLease, { minLength: 1, maxLength: 10 }),
        fc.array(fc.nat(10), { maxLength: 3 }),
        fc.array(fc.nat(100), { minLength: 2, maxLength: 5 }),
        (w1, w2, raws, revokePicks, timePicks) => {
          const list = buildLeases(raws);
          const [p1, p2] = [policyOf(w1), policyOf(w2)];
          const facts: KernelFacts = createKernelView(p1, { leases: Object.fromEntries(list.map((l) => [l.id, l])) }).facts;
          const revokedLeases = Object.freeze(revokePicks.filter((i) => i < list.length).map((i) => `L${i}`));
          const views: KernelView[] = [
            createKernelView(p1, facts),
            createKernelView(p2, facts),
            { policy: p1, facts: Object.freeze({ ...facts, revokedLeases }) },
            { policy: p2, facts: Object.freeze({ ...facts, revokedLeases }) },
            { policy: p1, facts: Object.freeze({ ...facts, revokedLeases: Object.freeze([...revokedLeases, "L0"]) }) },
          ];
          const edges = timesOf(list, timePicks);
          for (const now of [NOW - 20, ...timePicks.map((p) => edges[p % edges.length] as number), NOW + 100])
            for (const view of views)
              expectSame(
                view,
                list.map((l) => l.id),
                now,
              );
        },
      ),
      { numRuns: 60 },
    );
  });

  it("after each change to the leases or revocations (verdicts carried over from the facts before), the same as the reference", () => {
    const change = fc.record({ kind: fc.constantFrom("add", "add", "revoke", "replace", "drop", "back"), pick: fc.nat(40), raw: rawLease });
    fc.assert(
      fc.property(
        world,
        fc.array(rawLease, { minLength: 1, maxLength: 10 }),
        fc.array(change, { minLength: 1, maxLength: 6 }),
        fc.array(fc.nat(100), { minLength: 1, maxLength: 3 }),
        (w, raws, changes, timePicks) => {
          const policy = policyOf(w);
          const first = buildLeases(raws);
          const history: KernelFacts[] = [createKernelView(policy, { leases: Object.fromEntries(first.map((l) => [l.id, l])), revokedLeases: [] }).facts];
          let next = first.length;
          for (const c of changes) {
            const at = history[history.length - 1] as KernelFacts;
            const leases: Record<string, LeaseFact> = { ...at.leases };
            const ids = Object.keys(leases);
            let revokedLeases = [...(at.revokedLeases ?? [])];
            const id = ids[c.pick % Math.max(ids.length, 1)] ?? "L0";
            if (c.kind === "add") {
              // A re-lease of an existing lease (its holder issuing) or a fresh root, as a new record.
              const parent = leases[id];
              const l = buildLeases([...raws, c.raw])[raws.length] as LeaseFact;
              leases[`N${next}`] = {
                ...l,
                id: `N${next}`,
                ...(parent !== undefined && c.raw.parentMode !== "root"
                  ? { parent: parent.id, issuer: parent.holder, rootGrant: parent.rootGrant, expiresAt: Math.min(l.expiresAt, parent.expiresAt) }
                  : {}),
              };
              next++;
            } else if (c.kind === "revoke") revokedLeases = [...revokedLeases, id];
            else if (c.kind === "replace" && leases[id] !== undefined)
              leases[id] = { ...(leases[id] as LeaseFact), holder: c.raw.holder, expiresAt: c.raw.expiry };
            else if (c.kind === "drop") delete leases[id];
            const facts = c.kind === "back" ? (history[c.pick % history.length] as KernelFacts) : createKernelView(policy, { leases, revokedLeases }).facts;
            history.push(facts);
            const view = createKernelView(policy, facts);
            const edges = timesOf(Object.values(facts.leases ?? {}), timePicks);
            for (const now of [NOW - 20, ...timePicks.map((p) => edges[p % edges.length] as number), NOW + 100])
              expectSame(view, [...Object.keys(facts.leases ?? {}), "GONE"], now);
          }
        },
      ),
      { numRuns: 120 },
    );
  });

  it("a view whose facts are not frozen is answered afresh: a lease changed between calls reads its new state", () => {
    const policy = policyOf({ grant: undefined, envelope: "src", leads: true, ceiling: undefined, deny: undefined });
    const leases: Record<string, LeaseFact> = {
      R: {
        id: "R",
        rootGrant: "leads:envelope/write/0",
        issuer: "lead",
        holder: "a",
        capability: "write",
        scope: { path: ["src"] },
        issuedAt: 0,
        expiresAt: NOW + 10,
      },
    };
    const view: KernelView = { policy, facts: { leases } };
    expect(walkLease(view, "R", NOW).live).toBe(true);
    leases.R = { ...(leases.R as LeaseFact), holder: "lead" };
    expect(walkLease(view, "R", NOW)).toEqual(walkLeaseReference(view, "R", NOW));
    expect(walkLease(view, "R", NOW).live).toBe(false);
  });

  it("a chain longer than 64 links, and a cycle, read as the reference reads them", () => {
    const policy = policyOf({ grant: undefined, envelope: "src", leads: true, ceiling: undefined, deny: undefined });
    const leases: Record<string, LeaseFact> = {};
    for (let i = 0; i < 70; i++) {
      leases[`D${i}`] = {
        id: `D${i}`,
        ...(i > 0 ? { parent: `D${i - 1}` } : {}),
        rootGrant: "leads:envelope/write/0",
        issuer: i === 0 ? "lead" : (SEATS[1 + ((i - 1) % 4)] as string),
        holder: SEATS[1 + (i % 4)] as string,
        capability: "write",
        scope: { path: ["src"] },
        issuedAt: 0,
        expiresAt: NOW + 100 - i,
      };
    }
    leases.X = {
      id: "X",
      parent: "Y",
      rootGrant: "leads:envelope/write/0",
      issuer: "a",
      holder: "b",
      capability: "write",
      scope: { path: ["src"] },
      issuedAt: 0,
      expiresAt: NOW + 10,
    };
    leases.Y = {
      id: "Y",
      parent: "X",
      rootGrant: "leads:envelope/write/0",
      issuer: "b",
      holder: "a",
      capability: "write",
      scope: { path: ["src"] },
      issuedAt: 0,
      expiresAt: NOW + 5,
    };
    const view = createKernelView(policy, { leases });
    for (const now of [NOW - 1, NOW + 5, NOW + 31, NOW + 200]) expectSame(view, Object.keys(leases), now);
    expect(walkLease(view, "D69", NOW).live).toBe(false);
    expect(walkLease(view, "X", NOW - 1)).toMatchObject({ live: false, refusal: { rule: "lease.unknown" } });
  });
});
