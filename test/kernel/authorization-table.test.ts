import { describe, expect, it } from "vitest";
import { tablePrincipal, type TableOperation, type TablePrincipal } from "../../src/kernel/authorization-table.js";
import { checkAuthorityChange } from "../../src/kernel/authority-change.js";
import { checkCreate, readBound, seatCarve, type CreateBound, type CreateFacts } from "../../src/kernel/create-bound.js";
import { checkSeatLaunch } from "../../src/kernel/envelope-seats.js";
import { runtimeRefusal } from "../../src/kernel/envelope-runtime.js";
import type { SpendTree } from "../../src/kernel/envelope-spend.js";
import type { Policy } from "../../src/kernel/policy.js";
import { createKernelView } from "../../src/kernel/view.js";
import { loadTeamFileData } from "../../src/teamfile/load.js";

/**
 * The rows of §9's authorization table that issue 30 builds — start and stop a team, resume, the
 * machine stop, abandon, create (execute), remove a seat, and the owner-sovereign changes (rebind
 * among them) — each as a table of cases: its principal column (who may, who may not, and the
 * refusal named), then its bounds column through the kernel function that decides them.
 */
const seat = (lab: string, capabilities: Record<string, unknown>, start = true) => ({
  lab,
  capabilities,
  ...(start ? { start: { command: ["sleep", "3600"] } } : {}),
});

function load(data: Record<string, unknown>): Policy {
  const loaded = loadTeamFileData(data);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.policy;
}

const TEAM = {
  version: 1,
  team: "proj",
  declare: { branches: ["main"], labs: ["anthropic", "openai"] },
  review: { mode: "distinct-seat" },
  ceiling: { seats: { anthropic: 4 }, runtime: "2h" },
  leads: { seat: "lead" },
  seats: {
    lead: seat("anthropic", { read: null }),
    maker: seat("anthropic", { read: null, create: null }),
    granter: seat("openai", { read: null, grant: null }),
    clerk: seat("openai", { read: null, agree: null }),
    worker: seat("openai", { read: null }),
  },
};
const policy = load(TEAM);

const owner: TablePrincipal = { kind: "owner" };
const of = (name: string, team = "proj"): TablePrincipal => ({ kind: "seat", seat: name, team });

describe("§9's principal column, the rows issue 30 builds", () => {
  const CASES: [TableOperation, TablePrincipal, string | undefined][] = [
    ["team.start", owner, undefined],
    ["team.start", of("lead"), undefined],
    ["team.start", of("worker"), "table.principal"],
    ["team.start", of("lead", "other"), "table.principal"],
    ["team.stop", owner, undefined],
    ["team.stop", of("lead"), undefined],
    ["team.stop", of("granter"), "table.principal"],
    ["team.stop", of("lead", "other"), "table.principal"],
    ["team.resume", owner, undefined],
    ["team.resume", of("lead"), "table.principal"],
    ["machine.stop", owner, undefined],
    ["machine.stop", of("lead"), "table.principal"],
    ["team.abandon", owner, undefined],
    ["team.abandon", of("lead"), "table.principal"],
    ["team.create", of("maker"), undefined],
    ["team.create", owner, "table.principal"],
    ["team.create", of("lead"), "table.principal"],
    ["team.create", of("maker", "other"), "table.principal"],
    ["owner-sovereign", owner, undefined],
    ["owner-sovereign", of("granter"), "table.principal"],
    ["owner-sovereign", of("lead"), "table.principal"],
  ];
  it.each(CASES)("%s by %j: %s", (operation, principal, rule) => {
    expect(tablePrincipal(operation, principal, "proj", policy)?.rule).toBe(rule);
  });
});

describe("remove a seat (§9): owner or leads; a grant, agree or leads holder by the owner only", () => {
  const without = (name: string) => load({ ...TEAM, seats: Object.fromEntries(Object.entries(TEAM.seats).filter(([n]) => n !== name)) });
  const CASES: [string, TablePrincipal, string | undefined][] = [
    ["worker", of("lead"), undefined],
    ["worker", owner, undefined],
    ["worker", of("granter"), "table.principal"],
    ["granter", of("lead"), "table.principal"],
    ["clerk", of("lead"), "table.principal"],
    ["maker", of("lead"), "table.principal"],
    ["granter", owner, undefined],
  ];
  it.each(CASES)("remove %s by %j: %s", (name, principal, rule) => {
    const p = principal.kind === "owner" ? principal : { kind: "seat" as const, seat: principal.seat };
    const decided = checkAuthorityChange(createKernelView(policy), { kind: "remove-seat", seat: name, principal: p, after: without(name) });
    expect(decided.decision === "refuse" ? decided.rule : undefined).toBe(rule);
  });
});

describe("owner-sovereign (§8): a rebind is the owner's; a grant holder may not make it", () => {
  const rebound = load({ ...TEAM, seats: { ...TEAM.seats, worker: seat("anthropic", { read: null }) } });
  it.each([
    [owner, undefined],
    [{ kind: "seat" as const, seat: "granter" }, "table.owner-only"],
  ] as const)("rebind worker by %j: %s", (principal, rule) => {
    const decided = checkAuthorityChange(createKernelView(policy), { kind: "edit", principal, after: rebound });
    expect(decided.decision === "refuse" ? decided.rule : undefined).toBe(rule);
  });
});

describe("start a team or seat (§9 bounds, §8): the seat allowance less what create carved, a created team's slice, the runtime", () => {
  const live = (n: number) => Array.from({ length: n }, (_, i) => ({ seat: `s${i}`, lab: "anthropic" }));
  const CASES: [string, number, Parameters<typeof checkSeatLaunch>[3], string | undefined][] = [
    ["under the cap", 3, {}, undefined],
    ["at the cap", 4, {}, "envelope.seats"],
    ["the cap less a carve of 2", 2, { carved: { anthropic: 2 } }, "envelope.seats"],
    ["the cap less a carve of 1", 2, { carved: { anthropic: 1 } }, undefined],
    ["a created team's slice of 1, tighter than its own cap", 1, { slice: { anthropic: 1 } }, "envelope.seats"],
    ["a lab its slice does not name: none", 0, { slice: { openai: 3 } }, "envelope.seats"],
    ["a lab its slice names without seats: its own cap", 3, { slice: { anthropic: undefined } }, undefined],
  ];
  it.each(CASES)("%s", (_name, running, carve, rule) => {
    expect(checkSeatLaunch(policy, "maker", live(running), carve)?.rule).toBe(rule);
  });
  it("the runtime: the creator's clock, and a created team's inherited deadline", () => {
    expect(runtimeRefusal(policy, { renewedAt: 0 }, 2 * 3_600_000)?.rule).toBe("envelope.runtime");
    expect(runtimeRefusal(policy, { renewedAt: 0, deadline: 1000 }, 1000)?.rule).toBe("envelope.runtime");
    expect(runtimeRefusal(policy, { renewedAt: 0, deadline: 5000 }, 1000)).toBeUndefined();
  });
  it("seatCarve reads what create carved from the team records", () => {
    const bound = JSON.stringify({
      alsoStarts: false,
      grant: false,
      labs: { anthropic: { seats: 2 } },
      roots: ["/r"],
      seat: "maker",
      starts: [],
      team: "proj",
      teams: 2,
    });
    const teams = [{ team: "proj" }, { team: "kid", created: { parent: "proj", bound } }];
    expect(seatCarve(teams, "proj")).toEqual({ carved: { anthropic: 2 } });
    expect(seatCarve(teams, "kid")).toEqual({ carved: {}, slice: { anthropic: 2 } });
  });
});

describe("create (execute) within its bounds (§10, §8)", () => {
  const bound = (over: Partial<CreateBound> = {}): CreateBound => ({
    seat: "maker",
    team: "proj",
    teams: 2,
    roots: ["/srv/kid", "/srv/kid2"],
    starts: [["sleep", "3600"]],
    alsoStarts: false,
    grant: false,
    labs: { anthropic: { seats: 2 } },
    ...over,
  });
  const facts = (over: Partial<CreateFacts> = {}): CreateFacts => ({
    policy,
    live: [{ seat: "maker", lab: "anthropic" }],
    carvedSeats: {},
    created: 0,
    teamNames: ["proj"],
    teamRoots: ["/srv/proj"],
    deadline: 10_000_000,
    ...over,
  });
  const CHILD = {
    version: 1,
    team: "kid",
    declare: { branches: ["main"], labs: ["anthropic", "openai"] },
    review: { mode: "distinct-seat" },
    seats: { k1: seat("anthropic", { read: null }) },
  };
  const child = (over: Record<string, unknown> = {}) => {
    const data = { ...CHILD, ...over };
    return { seat: "maker", root: "/srv/kid", child: load(data), data };
  };
  const withSeats = (seats: Record<string, unknown>) => child({ seats });
  const NOW = 1_000_000;

  const CASES: [string, CreateBound | undefined, ReturnType<typeof child>, CreateFacts, string | undefined][] = [
    ["within the bound", bound(), child(), facts(), undefined],
    ["no bound on the machine", undefined, child(), facts(), "create.bound"],
    ["a bound of another seat", bound({ seat: "lead" }), child(), facts(), "create.bound"],
    ["a seat not holding create", bound({ seat: "worker" }), { ...child(), seat: "worker" }, facts(), "create.not-held"],
    ["one team too many", bound(), child(), facts({ created: 2 }), "create.count"],
    ["a root the bound does not name", bound(), { ...child(), root: "/srv/other" }, facts(), "create.root"],
    ["a root a team lives at", bound(), child(), facts({ teamRoots: ["/srv/kid"] }), "create.root"],
    ["a name taken", bound(), child(), facts({ teamNames: ["proj", "kid"] }), "create.name"],
    ["a start command not listed", bound(), withSeats({ k1: { lab: "anthropic", start: { command: ["bash", "-c", "x"] } } }), facts(), "create.start"],
    [
      "an uncontained seat",
      bound(),
      withSeats({ k1: { lab: "anthropic", start: { command: ["sleep", "3600"], containment: "none" } } }),
      facts(),
      "create.start",
    ],
    [
      "egress of its own",
      bound(),
      withSeats({ k1: { lab: "anthropic", start: { command: ["sleep", "3600"], network: { allow: ["example.com:443"] } } } }),
      facts(),
      "create.start",
    ],
    ["grant where the bound gives none", bound(), withSeats({ k1: seat("anthropic", { read: null, grant: null }) }), facts(), "create.grant"],
    ["grant where the bound gives it", bound({ grant: true }), withSeats({ k1: seat("anthropic", { read: null, grant: null }) }), facts(), undefined],
    [
      "deploy commands",
      bound(),
      child({ deploy: { staging: { command: ["true"] } }, declare: { ...CHILD.declare, envs: ["staging"] } }),
      facts(),
      "create.owner-only",
    ],
    ["a seat in a lab the slice does not name", bound(), withSeats({ k1: seat("openai", { read: null }) }), facts(), "create.seats"],
    [
      "more seats than the lab's allowance",
      bound(),
      withSeats({ a: seat("anthropic", {}), b: seat("anthropic", {}), c: seat("anthropic", {}) }),
      facts(),
      "create.seats",
    ],
    ["a seat slice past what is left (cap 4, 1 live, 2 carved)", bound(), child(), facts({ carvedSeats: { anthropic: 2 } }), "create.slice"],
    [
      "a seat slice that fits exactly (cap 4, 2 live)",
      bound(),
      child(),
      facts({
        live: [
          { seat: "a", lab: "anthropic" },
          { seat: "b", lab: "anthropic" },
        ],
      }),
      undefined,
    ],
    ["a creator that is a child: its own slice bounds what it carves", bound(), child(), facts({ ownSlice: { anthropic: 2 } }), "create.slice"],
    ["no runtime left to give", bound(), child(), facts({ deadline: NOW }), "envelope.runtime"],
    ["seats in a lab the creator caps, the bound naming no allowance there", bound({ labs: {} }), child(), facts(), "create.seats"],
    ["a seat with no lab under per-lab caps", bound({ labs: {} }), withSeats({ k1: { capabilities: { read: null } } }), facts(), "create.seats"],
    [
      "an environment of its own (BASH_ENV runs what the bound does not list)",
      bound(),
      withSeats({ k1: { lab: "anthropic", start: { command: ["sleep", "3600"], env: { BASH_ENV: "/tmp/x" } } } }),
      facts(),
      "create.start",
    ],
    [
      "create issued onward to a child's seat",
      bound({ grant: true }),
      withSeats({ k1: seat("anthropic", { read: null, create: null }) }),
      facts(),
      "create.grant",
    ],
  ];
  it.each(CASES)("%s", (_name, b, request, f, rule) => {
    const decided = checkCreate(b, request, f, NOW);
    expect(decided.decision === "refuse" ? decided.rule : undefined).toBe(rule);
  });

  it("the child's clock: the creator's remainder, or the bound's own window (never a fresh one by default)", () => {
    expect(checkCreate(bound(), child(), facts({ deadline: 5_000_000 }), NOW)).toEqual({ decision: "allow", deadline: 5_000_000 });
    expect(checkCreate(bound({ runtimeMs: 60_000 }), child(), facts({ deadline: 5_000_000 }), NOW)).toEqual({ decision: "allow", deadline: NOW + 60_000 });
    const { deadline: _none, ...unbounded } = facts();
    expect(checkCreate(bound(), child(), unbounded, NOW)).toEqual({ decision: "allow" });
  });

  describe("the spend slice, carved from the creator's remainders (aggregate and per lab, net of in flight and earlier carves)", () => {
    const spending = load({
      ...TEAM,
      ceiling: { ...TEAM.ceiling, spend: { currency: "USD", period: "1d", total: 10, labs: { anthropic: 6 }, "per-dispatch": 1 } },
    });
    const childSpend = (total: number, labs: Record<string, number> = {}) => ({ currency: "USD", period: "1d", total, labs, "per-dispatch": 1 });
    const tree = (spent: number, reserved: number, carvedTotal?: number): SpendTree => ({
      currency: "USD",
      nodes: {
        proj: {
          id: "proj",
          caps: { total: 1000, labs: { anthropic: 600 } },
          spent: { anthropic: spent },
          reserved: { anthropic: reserved },
          meters: { anthropic: "fresh" },
        },
        ...(carvedTotal !== undefined
          ? { old: { id: "old", parent: "proj", caps: { total: carvedTotal, labs: { anthropic: carvedTotal } }, spent: {}, reserved: {}, meters: {} } }
          : {}),
      },
    });
    const slice = (total: number, lab: number) => bound({ spend: total, labs: { anthropic: { seats: 2, spend: lab } } });
    const request = (total: number, lab: number) => child({ ceiling: { spend: childSpend(total, { anthropic: lab }) } });
    const CASES: [string, CreateBound, ReturnType<typeof child>, SpendTree | undefined, string | undefined][] = [
      ["fits", slice(300, 200), request(300, 200), tree(100, 100), undefined],
      ["the aggregate short (1000 - 100 - 100 - 500 carved = 300 < 400)", slice(400, 100), request(400, 100), tree(100, 100, 500), "create.slice"],
      ["the lab short (600 - 200 - 100 = 300 < 350)", slice(350, 350), request(350, 350), tree(200, 100), "create.slice"],
      ["no slice named under a spend ceiling", bound(), child(), tree(0, 0), "create.slice"],
      ["the child without a spend ceiling", slice(300, 200), child(), tree(0, 0), "create.slice"],
      ["spend that cannot be established", slice(300, 200), request(300, 200), undefined, "create.slice"],
    ];
    it.each(CASES)("%s", (_name, b, req, t, rule) => {
      const decided = checkCreate(b, req, facts({ policy: spending, ...(t !== undefined ? { spendTree: t } : {}) }), NOW);
      expect(decided.decision === "refuse" ? decided.rule : undefined).toBe(rule);
    });
  });

  it("a bound reads back from its canonical form, and refuses what conservation forbids", () => {
    expect(readBound("{")).toBe("the bound is not JSON");
    const labsPastTotal = JSON.stringify({
      alsoStarts: false,
      grant: false,
      labs: { a: { spend: 600 }, b: { spend: 600 } },
      roots: ["/r"],
      seat: "s",
      spend: 1000,
      starts: [],
      team: "t",
      teams: 1,
    });
    expect(readBound(labsPastTotal)).toMatch(/sum past the aggregate/);
    const labWithoutTotal = JSON.stringify({
      alsoStarts: false,
      grant: false,
      labs: { a: { spend: 600 } },
      roots: ["/r"],
      seat: "s",
      starts: [],
      team: "t",
      teams: 1,
    });
    expect(readBound(labWithoutTotal)).toMatch(/aggregate spend beside it/);
    expect(readBound(JSON.stringify({ alsoStarts: false, grant: false, labs: {}, roots: ["relative"], seat: "s", starts: [], team: "t", teams: 1 }))).toMatch(
      /absolute/,
    );
  });
});
