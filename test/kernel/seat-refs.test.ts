import { describe, expect, it } from "vitest";
import type { Policy, Seat } from "../../src/kernel/policy.js";
import { destination, mayFetch } from "../../src/kernel/seat-refs.js";
import { loadTeamFileData } from "../../src/teamfile/load.js";

/**
 * The hub refs a seat reaches (src/kernel/seat-refs.ts), as tables: which refs `git fetch
 * teamd` may serve it, and where a ref it pushes lands or why it may not. The trunk is
 * `refs/heads/main` throughout, as the hub's HEAD reads.
 */
const TRUNK = "refs/heads/main";

function policy(): Policy {
  const loaded = loadTeamFileData({
    version: 1,
    team: "web",
    review: { mode: "distinct-seat" },
    declare: { branches: ["main"] },
    seats: {
      alice: { roles: ["executor"] },
      // review into bob's branches; gate into every declared branch.
      reviewer: { capabilities: { review: { branch: "seat/bob/*" } } },
      gater: { capabilities: { gate: null } },
      // review into the trunk only: the documented api-reviewer's shape.
      "trunk-reviewer": { capabilities: { review: { branch: "main" } } },
      // an empty gate scope: it covers nothing (a branch no declared one matches is refused at load).
      empty: { capabilities: { gate: { branch: [] } } },
      writer: { capabilities: { write: null, read: null, merge: null } },
    },
  });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.policy;
}

const p = policy();
const seat = (name: string): Seat => {
  const found = p.seats[name];
  if (found === undefined) throw new Error(`no seat ${name}`);
  return found;
};

const fetchCases: { description: string; seat: string; ref: string; expected: boolean }[] = [
  { description: "every seat may fetch the trunk", seat: "alice", ref: TRUNK, expected: true },
  { description: "a seat may fetch its own seat/<name>/ branches", seat: "alice", ref: "refs/heads/seat/alice/fix", expected: true },
  { description: "its own namespace nested deeper", seat: "alice", ref: "refs/heads/seat/alice/a/b", expected: true },
  { description: "an executor may not fetch another seat's branch", seat: "alice", ref: "refs/heads/seat/bob/fix", expected: false },
  { description: "a branch outside seat/ that is not the trunk is never served", seat: "gater", ref: "refs/heads/develop", expected: false },
  { description: "a tag is never served, even to a gater", seat: "gater", ref: "refs/tags/v1", expected: false },
  { description: "the trunk's short name is not the trunk ref", seat: "alice", ref: "main", expected: false },
  { description: "a name that only starts like the seat's namespace is another seat's", seat: "alice", ref: "refs/heads/seat/alice2/fix", expected: false },
  { description: "review into seat/bob/* opens bob's branches", seat: "reviewer", ref: "refs/heads/seat/bob/fix", expected: true },
  {
    description: "a review scope names destinations, not sources: review into seat/bob/* opens carol's branches too",
    seat: "reviewer",
    ref: "refs/heads/seat/carol/fix",
    expected: true,
  },
  { description: "an unconstrained gate opens every seat's branch", seat: "gater", ref: "refs/heads/seat/carol/fix", expected: true },
  {
    description: "review into the trunk only opens every seat's branch (what it reviews)",
    seat: "trunk-reviewer",
    ref: "refs/heads/seat/bob/fix",
    expected: true,
  },
  { description: "an empty gate scope opens nothing", seat: "empty", ref: "refs/heads/seat/bob/fix", expected: false },
  { description: "review opens no branch outside seat/", seat: "trunk-reviewer", ref: "refs/heads/develop", expected: false },
  {
    description: "write, read and merge open no other seat's branch: only review and gate do",
    seat: "writer",
    ref: "refs/heads/seat/bob/fix",
    expected: false,
  },
];

describe("mayFetch", () => {
  it.each(fetchCases)("$description", ({ seat: name, ref, expected }) => {
    expect(mayFetch(p, seat(name), ref, TRUNK)).toBe(expected);
  });

  it("seat branches are declared in every team: a gate opens them though the team file declares only main", () => {
    // policy-compile's SEAT_BRANCHES: seat/* is in every declared branch set, written or not.
    const loaded = loadTeamFileData({
      version: 1,
      team: "web",
      declare: { branches: ["main"] },
      review: { mode: "distinct-seat" },
      seats: { gater: { capabilities: { gate: null } } },
    });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    const gater = loaded.policy.seats.gater;
    if (gater === undefined) throw new Error("no gater");
    expect(mayFetch(loaded.policy, gater, "refs/heads/seat/bob/fix", TRUNK)).toBe(true);
    expect(mayFetch(loaded.policy, gater, "refs/heads/develop", TRUNK)).toBe(false);
    expect(mayFetch(loaded.policy, gater, TRUNK, TRUNK)).toBe(true);
  });
});

describe("mayFetch under the owner's deny and ceiling (§8: the deny wins over every grant)", () => {
  const load = (extra: Record<string, unknown>): Policy => {
    const loaded = loadTeamFileData({
      version: 1,
      team: "web",
      declare: { branches: ["main"] },
      review: { mode: "distinct-seat" },
      seats: { rev: { capabilities: { review: null, read: null } } },
      ...extra,
    });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    return loaded.policy;
  };
  const fetches = (policy: Policy) => mayFetch(policy, policy.seats.rev as Seat, "refs/heads/seat/bob/fix", TRUNK);
  it("a review the deny covers whole opens no seat branch; control: without the deny it does", () => {
    expect(fetches(load({}))).toBe(true);
    expect(fetches(load({ deny: { review: null } }))).toBe(false);
  });
  it("a review wholly outside the ceiling opens none; one the ceiling reaches does", () => {
    expect(fetches(load({ ceiling: { capabilities: { read: null } } }))).toBe(false);
    expect(fetches(load({ ceiling: { capabilities: { read: null, review: { branch: "main" } } } }))).toBe(true);
  });
});

const pushCases: { description: string; ref: string; expected: { hubRef: string } | { rule: string; reason: RegExp } }[] = [
  { description: "a plain branch lands in the seat's own namespace", ref: "refs/heads/fix", expected: { hubRef: "refs/heads/seat/alice/fix" } },
  { description: "a nested plain branch lands under the namespace too", ref: "refs/heads/feature/x", expected: { hubRef: "refs/heads/seat/alice/feature/x" } },
  {
    description: "a branch already in the seat's namespace lands as named",
    ref: "refs/heads/seat/alice/fix",
    expected: { hubRef: "refs/heads/seat/alice/fix" },
  },
  {
    description: "the trunk changes only through a gated merge",
    ref: TRUNK,
    expected: { rule: "push.ref", reason: /main is the trunk; .*git push teamd HEAD:seat\/alice\/<name>/ },
  },
  {
    description: "another seat's branch is refused",
    ref: "refs/heads/seat/bob/fix",
    expected: { rule: "push.ref", reason: /seat\/bob\/fix belongs to another seat; your branches are seat\/alice\/\*/ },
  },
  {
    description: "a prefix of the seat's name is another seat",
    ref: "refs/heads/seat/alice2/fix",
    expected: { rule: "push.ref", reason: /belongs to another seat/ },
  },
  {
    description: "a tag is not a branch",
    ref: "refs/tags/v1",
    expected: { rule: "push.ref", reason: /refs\/tags\/v1 is not a branch; a seat pushes branches only/ },
  },
  { description: "a short name is not a branch ref", ref: "fix", expected: { rule: "push.ref", reason: /fix is not a branch/ } },
];

describe("destination", () => {
  it.each(pushCases)("$description", ({ ref, expected }) => {
    const got = destination("alice", ref, TRUNK);
    if ("hubRef" in expected) {
      expect(got).toEqual({ hubRef: expected.hubRef });
      return;
    }
    expect(got).toMatchObject({ decision: "refuse", rule: expected.rule });
    expect("reason" in got ? got.reason : "").toMatch(expected.reason);
  });

  it("reads the trunk it is given: another trunk makes main a plain branch", () => {
    expect(destination("alice", "refs/heads/main", "refs/heads/develop")).toEqual({ hubRef: "refs/heads/seat/alice/main" });
  });
});
