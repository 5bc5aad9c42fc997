import { describe, expect, it } from "vitest";
import type { Policy } from "../../src/kernel/policy.js";
import { type PolicyDiff, diffPolicies } from "../../src/kernel/policy-diff.js";
import { loadTeamFileData } from "../../src/teamfile/index.js";

/**
 * What `teamd apply` shows the owner before confirming: policies are built by the real loader
 * from team-file data, so the diff is read over exactly what the kernel decides with.
 */
const files: Record<string, string> = { "AGENTS.md": "You are a worker.\n" };

function load(data: Record<string, unknown>, startFiles: Record<string, string> = files): Policy {
  const loaded = loadTeamFileData(data, { readStartFile: (p) => (p in startFiles ? new TextEncoder().encode(startFiles[p]) : undefined) });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.policy;
}

type TeamFile = Record<string, unknown> & { seats: Record<string, Record<string, unknown>> };

function base(): TeamFile {
  return {
    version: 1,
    team: "proj",
    review: { mode: "distinct-seat" },
    declare: { branches: ["main"], labs: ["anthropic", "openai"] },
    seats: {
      w1: { lab: "anthropic", roles: ["executor"], start: { command: ["claude"], files: ["AGENTS.md"] } },
      r1: { lab: "openai", roles: ["verifier"], capabilities: { "use-broker": null } },
    },
  };
}

/** A copy of the base team file with one edit. */
function edit(change: (file: TeamFile) => void): TeamFile {
  const file = structuredClone(base());
  change(file);
  return file;
}

const ALL_W1 = ["read {path: *}  (role executor)", "write {path: *}  (role executor)"];

interface Case {
  readonly description: string;
  readonly before?: TeamFile;
  readonly after: TeamFile;
  readonly expect: Partial<PolicyDiff>;
}

const table: Case[] = [
  {
    description: "the first apply: every seat is added with all it holds, the declared sets read against none",
    after: base(),
    expect: {
      first: true,
      unchanged: false,
      team: ["declared branch added: main", "declared lab added: anthropic", "declared lab added: openai"],
    },
  },
  { description: "the same file again changes nothing", before: base(), after: base(), expect: { first: false, unchanged: true, seats: [], team: [] } },
  {
    description: "the same content written differently changes nothing",
    before: base(),
    after: edit((f) => {
      f.declare = { labs: ["openai", "anthropic", "openai"], branches: ["refs/heads/main"] };
      f.seats.w1 = { ...f.seats.w1, roles: ["executor", "executor"] };
    }),
    expect: { unchanged: true, seats: [], team: [] },
  },
  {
    description: "a seat added",
    before: base(),
    after: edit((f) => (f.seats.w2 = { lab: "openai", roles: ["observer"], capabilities: { write: { path: "docs/" } } })),
    expect: {
      unchanged: false,
      team: [],
      seats: [
        {
          seat: "w2",
          status: "added",
          gains: ["read {path: *}  (role observer)", "write {path: [docs]}  (direct)"],
          losses: [],
          other: ["lab: (none) -> openai", "roles: [] -> [observer]"],
        },
      ],
    },
  },
  {
    description: "a seat removed loses everything it held",
    before: base(),
    after: edit((f) => delete f.seats.w1),
    expect: {
      team: [],
      seats: [
        {
          seat: "w1",
          status: "removed",
          gains: [],
          losses: ALL_W1,
          other: expect.arrayContaining([
            "lab: anthropic -> (none)",
            "roles: [executor] -> []",
            expect.stringMatching(/^start: command \["claude"\], workdir \., env \[\], files \[AGENTS\.md\] -> \(none\)$/),
          ]) as unknown as string[],
        },
      ],
    },
  },
  {
    description: "a role added to a seat gains every authority of the role, and shares the one it already held",
    before: base(),
    after: edit((f) => (f.seats.w1 = { ...f.seats.w1, roles: ["executor", "verifier"] })),
    expect: {
      team: [],
      seats: [
        {
          seat: "w1",
          status: "changed",
          gains: ["gate {path: *, branch: *}  (role verifier)", "review {path: *, branch: *}  (role verifier)"],
          losses: [],
          other: ["roles: [executor] -> [executor, verifier]", "source of read {path: *}: role executor -> role executor, role verifier"],
        },
      ],
    },
  },
  {
    description: "narrowing a scope is one loss and one gain",
    before: edit((f) => (f.seats.w2 = { lab: "openai", capabilities: { write: { path: "src/" } } })),
    after: edit((f) => (f.seats.w2 = { lab: "openai", capabilities: { write: { path: "src/api/" } } })),
    expect: {
      team: [],
      seats: [{ seat: "w2", status: "changed", gains: ["write {path: [src/api]}  (direct)"], losses: ["write {path: [src]}  (direct)"], other: [] }],
    },
  },
  {
    description: "widening a scope is one loss and one gain",
    before: edit((f) => (f.seats.w2 = { lab: "openai", capabilities: { merge: { path: "src/", branch: "main" } } })),
    after: edit((f) => (f.seats.w2 = { lab: "openai", capabilities: { merge: { path: ["src/", "docs/"], branch: "main" } } })),
    expect: {
      seats: [
        {
          seat: "w2",
          status: "changed",
          gains: ["merge {path: [docs, src], branch: [main]}  (direct)"],
          losses: ["merge {path: [src], branch: [main]}  (direct)"],
          other: [],
        },
      ],
    },
  },
  {
    description: "a direct grant removed",
    before: base(),
    after: edit((f) => (f.seats.r1 = { lab: "openai", roles: ["verifier"] })),
    expect: { team: [], seats: [{ seat: "r1", status: "changed", gains: [], losses: ["use-broker {task: *}  (direct)"], other: [] }] },
  },
  {
    description: "a grant moved from a role to a direct grant at the same scope is neither gained nor lost",
    before: edit((f) => (f.seats.w2 = { lab: "openai", roles: ["observer"] })),
    after: edit((f) => (f.seats.w2 = { lab: "openai", capabilities: { read: null } })),
    expect: {
      seats: [
        { seat: "w2", status: "changed", gains: [], losses: [], other: ["roles: [observer] -> []", "source of read {path: *}: role observer -> direct"] },
      ],
    },
  },
  {
    description: "a grant held twice and now once is no loss",
    before: edit((f) => (f.seats.w2 = { lab: "openai", roles: ["observer"], capabilities: { read: null } })),
    after: edit((f) => (f.seats.w2 = { lab: "openai", roles: ["observer"] })),
    expect: { seats: [{ seat: "w2", status: "changed", gains: [], losses: [], other: ["source of read {path: *}: role observer, direct -> role observer"] }] },
  },
  {
    description: "a lab changed",
    before: base(),
    after: edit((f) => (f.seats.r1 = { ...f.seats.r1, lab: "anthropic" })),
    expect: { team: [], seats: [{ seat: "r1", status: "changed", gains: [], losses: [], other: ["lab: openai -> anthropic"] }] },
  },
  {
    description: "a start command changed (and with it the context hash)",
    before: base(),
    after: edit((f) => (f.seats.w1 = { ...f.seats.w1, start: { command: ["claude", "--model", "opus"], files: ["AGENTS.md"] } })),
    expect: {
      team: [],
      seats: [
        {
          seat: "w1",
          status: "changed",
          gains: [],
          losses: [],
          other: [
            'start command: ["claude"] -> ["claude", "--model", "opus"]',
            expect.stringMatching(/^context hash: sha256:[0-9a-f]{64} -> sha256:[0-9a-f]{64}$/) as unknown as string,
          ],
        },
      ],
    },
  },
  {
    description: "a start env binding and the workdir changed",
    before: base(),
    after: edit((f) => (f.seats.w1 = { ...f.seats.w1, start: { command: ["claude"], workdir: "src", env: { MODE: "work" }, files: ["AGENTS.md"] } })),
    expect: {
      seats: [
        {
          seat: "w1",
          status: "changed",
          gains: [],
          losses: [],
          other: ["start workdir: . -> src", 'start env MODE added: "work"', expect.stringMatching(/^context hash: /) as unknown as string],
        },
      ],
    },
  },
  {
    description: "egress declared (the lab's endpoints with it), then widened by one host and a private range",
    before: base(),
    after: edit((f) => (f.seats.w1 = { ...f.seats.w1, start: { command: ["claude"], files: ["AGENTS.md"], network: { allow: ["a.example.com:443"] } } })),
    expect: {
      seats: [
        {
          seat: "w1",
          status: "changed",
          gains: [],
          losses: [],
          other: [
            "start egress: none -> [a.example.com:443, api.anthropic.com:443, platform.claude.com:443]",
            expect.stringMatching(/^context hash: /) as unknown as string,
          ],
        },
      ],
    },
  },
  {
    description: "egress widened: each host:port and range added is shown",
    before: edit((f) => (f.seats.w1 = { ...f.seats.w1, start: { command: ["claude"], files: ["AGENTS.md"], network: { allow: ["a.example.com:443"] } } })),
    after: edit(
      (f) =>
        (f.seats.w1 = {
          ...f.seats.w1,
          start: { command: ["claude"], files: ["AGENTS.md"], network: { allow: ["a.example.com:443", "*.npmjs.org:443"], private: ["10.0.0.0/8"] } },
        }),
    ),
    expect: {
      seats: [
        {
          seat: "w1",
          status: "changed",
          gains: [],
          losses: [],
          other: [
            "start egress added: *.npmjs.org:443",
            "start egress private range added: 10.0.0.0/8",
            expect.stringMatching(/^context hash: /) as unknown as string,
          ],
        },
      ],
    },
  },
  {
    description: "a declared branch added",
    before: base(),
    after: edit((f) => (f.declare = { branches: ["main", "release/*"], labs: ["anthropic", "openai"] })),
    expect: { seats: [], team: ["declared branch added: release/*"], unchanged: false },
  },
  {
    description: "the review mode and floor changed",
    before: base(),
    after: edit((f) => (f.review = { mode: "cross-lab", floor: 1 })),
    expect: { seats: [], team: ["review mode: distinct-seat -> cross-lab", "review floor: 0 -> 1"] },
  },
  {
    description: "a constraint added and one removed",
    before: edit((f) => (f.constraints = [{ minimum: 1, of: "gate" }])),
    after: edit((f) => (f.constraints = [{ exclusive: ["write", "gate"] }])),
    expect: { seats: [], team: ["constraint added: exclusive [gate, write]", "constraint removed: minimum 1 of gate (pauses gate, merge)"] },
  },
  {
    description: "a deny added",
    before: base(),
    after: edit((f) => (f.deny = { write: { path: "secrets/" } })),
    expect: { seats: [], team: ["deny added: write {path: [secrets]}"] },
  },
  {
    description: "leads given to a seat: the seat gains leads, the team shows the envelope",
    before: base(),
    after: edit((f) => (f.leads = { seat: "r1", envelope: { merge: { path: "docs/", branch: "main" } } })),
    expect: {
      team: ["leads: (none) -> r1", "leads envelope added: merge {path: [docs], branch: [main]}"],
      seats: [{ seat: "r1", status: "changed", gains: ["leads  (administrative)"], losses: [], other: [] }],
    },
  },
  {
    description: "the ceiling set",
    before: base(),
    after: edit((f) => (f.ceiling = { "lease-ttl": "8h", capabilities: { read: null } })),
    expect: {
      seats: [],
      team: ["ceiling lease-ttl: 1d -> 8h", "ceiling now bounds capabilities: what it does not name is unreachable", "ceiling added: read {path: *}"],
    },
  },
  {
    description: "a team role narrowed: its holders lose and gain, the team names the role",
    before: edit((f) => {
      f.roles = { docs: { template: "executor", scope: { path: "docs/" } } };
      f.seats.w2 = { lab: "openai", roles: ["docs"] };
    }),
    after: edit((f) => {
      f.roles = { docs: { template: "executor", scope: { path: "docs/api/" } } };
      f.seats.w2 = { lab: "openai", roles: ["docs"] };
    }),
    expect: {
      team: [expect.stringMatching(/^role changed: docs \(sha256:[0-9a-f]{64} -> sha256:[0-9a-f]{64}\)$/) as unknown as string],
      seats: [
        {
          seat: "w2",
          status: "changed",
          gains: ["read {path: [docs/api]}  (role docs)", "write {path: [docs/api]}  (role docs)"],
          losses: ["read {path: [docs]}  (role docs)", "write {path: [docs]}  (role docs)"],
          other: [],
        },
      ],
    },
  },
];

describe("diffPolicies: what an apply changes against the policy in force", () => {
  it.each(table)("$description", ({ before, after, expect: expected }) => {
    const diff = diffPolicies(before === undefined ? undefined : load(before), load(after));
    expect(diff).toMatchObject(expected);
  });

  it("the first apply lists every seat as added, with all it holds", () => {
    const diff = diffPolicies(undefined, load(base()));
    expect(diff.seats.map((s) => [s.seat, s.status])).toEqual([
      ["r1", "added"],
      ["w1", "added"],
    ]);
    expect(diff.seats[0]?.gains).toEqual([
      "gate {path: *, branch: *}  (role verifier)",
      "read {path: *}  (role verifier)",
      "review {path: *, branch: *}  (role verifier)",
      "use-broker {task: *}  (direct)",
    ]);
    expect(diff.seats[1]?.gains).toEqual(ALL_W1);
  });

  it("a start file's content changed shows only as the seat's context hash: the canonical form is the same", () => {
    const before = load(base());
    const after = load(base(), { "AGENTS.md": "You are a careful worker.\n" });
    expect(after.hash).toBe(before.hash);
    const diff = diffPolicies(before, after);
    expect(diff.unchanged).toBe(false);
    expect(diff.seats).toMatchObject([{ seat: "w1", status: "changed", gains: [], losses: [], other: [expect.stringMatching(/^context hash: /)] }]);
  });

  it("is symmetric: what one direction gains, the other loses", () => {
    const a = load(edit((f) => (f.seats.w2 = { lab: "openai", capabilities: { write: { path: "src/" }, read: null } })));
    const b = load(edit((f) => (f.seats.w2 = { lab: "openai", capabilities: { write: { path: "src/api/" }, deploy: null } })));
    const forward = diffPolicies(a, b).seats.find((s) => s.seat === "w2");
    const backward = diffPolicies(b, a).seats.find((s) => s.seat === "w2");
    expect(forward?.gains).toEqual(backward?.losses);
    expect(forward?.losses).toEqual(backward?.gains);
  });
});
