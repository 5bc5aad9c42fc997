import { refuse, type Refusal } from "./decision.js";
import type { Policy } from "./policy.js";
import { showAmount, spendBounds, type SpendTree } from "./envelope-spend.js";
import { isPlainObject } from "./records.js";

/**
 * create (§10) and its bounds, the rule alone: pure, over what the daemon read.
 *
 * A create-bound is owner-sovereign and written on the machine (`teamd create-bounds set`),
 * never in a team file: which seat of which team may create, how many teams, at which
 * repository roots (each child is a repository of its own the owner named), which start
 * commands a child's seats may pin, whether creating also starts the child, whether a child's
 * seat may be given grant or agree, the child's slice — an aggregate spend and, per lab, its spend
 * and its seat allowance — and any explicit child-runtime window (§8).
 *
 * A create is the creating seat's act, never the owner's: it resets no unattended clock, so the
 * child runs down the creator's remaining runtime unless the bound states a window. Its slice is
 * carved from the creator's remainders at create time — aggregate and per lab, spend and seats —
 * decided in the daemon's one serialized order, so two creates cannot spend one remainder.
 * create is non-transferable: held in a seat's own list only (never a role, a lease or a copy).
 */

/** One lab's part of a child's slice: its spend (minor units) and its seat allowance. */
export interface LabSlice {
  readonly spend?: number;
  readonly seats?: number;
}

export interface CreateBound {
  /** The creating seat and its team. */
  readonly seat: string;
  readonly team: string;
  /** How many teams this bound lets the seat create, in all (a cleared and re-set bound counts afresh). */
  readonly teams: number;
  /** Absolute repository roots a child may live at: one child per root. */
  readonly roots: readonly string[];
  /** The start commands (argv) a child's seats may pin; empty: its seats may have no start. */
  readonly starts: readonly (readonly string[])[];
  /** Whether the daemon starts the child's seats once it is created. */
  readonly alsoStarts: boolean;
  /** Whether a child's seat may be given grant or agree (off unless the owner gave it, §10). */
  readonly grant: boolean;
  /** The child's slice: an aggregate spend (minor units) and per lab its spend and seats; absent: no spend slice. */
  readonly spend?: number;
  readonly labs: Readonly<Record<string, LabSlice>>;
  /** An explicit child-runtime window (ms); absent: the child runs down the creator's remainder. */
  readonly runtimeMs?: number;
}

/** The most of anything a bound may list: a bound on what the daemon reads and shows. */
export const MAX_BOUND_ITEMS = 32;
const MAX_TEAMS = 100;
const MAX_ARGV = 64;
const MAX_TEXT = 4096;

/** The bound's canonical JSON form (what the owner signs and the ledger keeps). */
export function canonicalBound(bound: CreateBound): string {
  const labs = Object.fromEntries(
    Object.keys(bound.labs)
      .sort()
      .map((lab) => {
        const s = bound.labs[lab] as LabSlice;
        return [lab, { ...(s.seats !== undefined ? { seats: s.seats } : {}), ...(s.spend !== undefined ? { spend: s.spend } : {}) }];
      }),
  );
  return JSON.stringify({
    alsoStarts: bound.alsoStarts,
    grant: bound.grant,
    labs,
    roots: [...bound.roots].sort(),
    ...(bound.runtimeMs !== undefined ? { runtimeMs: bound.runtimeMs } : {}),
    seat: bound.seat,
    ...(bound.spend !== undefined ? { spend: bound.spend } : {}),
    starts: bound.starts.map((s) => [...s]),
    team: bound.team,
    teams: bound.teams,
  });
}

const count = (v: unknown, max: number): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= max;
const text = (v: unknown): v is string => typeof v === "string" && v.length > 0 && v.length <= MAX_TEXT && !/[\u0000-\u001f\u007f]/.test(v);

/** A bound read back from its canonical form (a record's, or what the CLI built): every field checked; a string saying what is wrong otherwise. */
export function readBound(canonical: string): CreateBound | string {
  let data: unknown;
  try {
    data = JSON.parse(canonical);
  } catch {
    return "the bound is not JSON";
  }
  if (!isPlainObject(data)) return "the bound is not a map";
  const { seat, team, teams, roots, starts, alsoStarts, grant, spend, labs, runtimeMs } = data;
  if (!text(seat) || !text(team)) return "the bound names no seat and team";
  if (!count(teams, MAX_TEAMS) || teams < 1) return `teams must be a whole number from 1 to ${MAX_TEAMS}`;
  if (!Array.isArray(roots) || roots.length === 0 || roots.length > MAX_BOUND_ITEMS || !roots.every((r) => text(r) && r.startsWith("/")))
    return `roots must list 1 to ${MAX_BOUND_ITEMS} absolute paths`;
  if (
    !Array.isArray(starts) ||
    starts.length > MAX_BOUND_ITEMS ||
    !starts.every(
      (s) => Array.isArray(s) && s.length > 0 && s.length <= MAX_ARGV && s.every((w) => typeof w === "string" && w.length <= MAX_TEXT && !w.includes("\u0000")),
    )
  )
    return `starts must list at most ${MAX_BOUND_ITEMS} commands, each a non-empty argv`;
  if (typeof alsoStarts !== "boolean" || typeof grant !== "boolean") return "alsoStarts and grant are true or false";
  if (spend !== undefined && !count(spend, 1e12)) return "spend is an amount in minor units";
  if (runtimeMs !== undefined && !(count(runtimeMs, 366 * 24 * 3600 * 1000) && runtimeMs > 0)) return "runtimeMs is a positive duration";
  if (!isPlainObject(labs) || Object.keys(labs).length > MAX_BOUND_ITEMS) return `labs is a map of at most ${MAX_BOUND_ITEMS} labs`;
  const slices: Record<string, LabSlice> = {};
  let labSpend = 0;
  for (const [lab, slice] of Object.entries(labs)) {
    if (!text(lab) || !isPlainObject(slice)) return `lab '${lab}' has no slice`;
    if (slice.spend !== undefined && !count(slice.spend, 1e12)) return `lab ${lab}'s spend is an amount in minor units`;
    if (slice.seats !== undefined && !count(slice.seats, 1000)) return `lab ${lab}'s seats is a whole number`;
    if (slice.spend === undefined && slice.seats === undefined) return `lab ${lab} names neither spend nor seats`;
    labSpend += slice.spend ?? 0;
    slices[lab] = { ...(slice.spend !== undefined ? { spend: slice.spend } : {}), ...(slice.seats !== undefined ? { seats: slice.seats } : {}) };
  }
  const labsWithSpend = Object.values(slices).filter((s) => s.spend !== undefined).length;
  if (labsWithSpend > 0 && spend === undefined) return "a lab's spend slice needs an aggregate spend beside it (per-lab caps never replace the aggregate, §8)";
  if (spend !== undefined && labSpend > spend) return "the labs' spend slices sum past the aggregate (§8: they never exceed it)";
  return {
    seat,
    team,
    teams,
    roots: (roots as string[]).slice(),
    starts: (starts as string[][]).map((s) => s.slice()),
    alsoStarts,
    grant,
    ...(spend !== undefined ? { spend } : {}),
    labs: slices,
    ...(runtimeMs !== undefined ? { runtimeMs } : {}),
  };
}

/** What the daemon read for one create: the creator's team as it stands, and the machine's teams. */
export interface CreateFacts {
  /** The creator's policy in force. */
  readonly policy: Policy;
  /** The creator's team's live seats, each with its lab (§8 seats: a lab's remaining allowance is its cap less these). */
  readonly live: readonly { readonly seat: string; readonly lab: string | undefined }[];
  /** Per lab, the seat allowances already carved from the creator's team to its children. */
  readonly carvedSeats: Readonly<Record<string, number>>;
  /** A creator that was itself created: its own slice's seat allowance per lab (seatCarve's `slice`). */
  readonly ownSlice?: Readonly<Record<string, number | undefined>>;
  /** The spend tree the creator's team is a node of (its ancestors and descendants); absent: the creator has no spend ceiling. */
  readonly spendTree?: SpendTree;
  /** Teams this bound has created so far. */
  readonly created: number;
  /** The creator team's runtime deadline (ms since the epoch); absent: none. */
  readonly deadline?: number;
  /** Registered teams, by name, and the repository roots they live at. */
  readonly teamNames: readonly string[];
  readonly teamRoots: readonly string[];
}

export interface CreateRequest {
  readonly seat: string;
  readonly root: string;
  /** The child's compiled policy (its team is the child's name) and its canonical data. */
  readonly child: Policy;
  readonly data: Readonly<Record<string, unknown>>;
}

export interface CreateAllowed {
  readonly decision: "allow";
  /** The child's runtime deadline: the bound's window from now, or the creator's remainder; absent: none. */
  readonly deadline?: number;
}

const own = <T>(record: Readonly<Record<string, T>>, key: string): T | undefined =>
  Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;

/** Top-level keys a child's file may not carry: each acts under the owner's identity or credentials, which create does not give. */
const OWNER_ONLY_KEYS: readonly string[] = ["deploy", "accounts", "trackers"];

/**
 * The creator's standing, before any child file is read (§9, §10): it holds create in its own
 * list, a bound is written for it on the machine, the bound's count is not spent, and the root
 * is one the bound names and no team lives at.
 */
export function checkCreator(bound: CreateBound | undefined, seat: string, root: string, facts: CreateFacts): Refusal | undefined {
  const holder = own(facts.policy.seats, seat);
  if (holder === undefined || !(holder.admin ?? []).includes("create"))
    return refuse(
      "create.not-held",
      `${seat} does not hold create: the owner writes \`create: ~\` in a seat's own capabilities (§10); it is never leased or copied`,
    );
  if (bound === undefined || bound.seat !== seat || bound.team !== facts.policy.team)
    return refuse(
      "create.bound",
      `no create-bound is written on this machine for ${seat}@${facts.policy.team}: create is bounded by what the owner wrote (§10); ask the owner to run teamd create-bounds set ${seat}@${facts.policy.team}`,
    );
  if (facts.created >= bound.teams) return refuse("create.count", `the bound lets ${seat} create ${bound.teams} team(s), and it has created ${facts.created}`);
  if (!bound.roots.includes(root)) return refuse("create.root", `${root} is not one of the repository roots the bound names (${bound.roots.join(", ")})`);
  if (facts.teamRoots.includes(root)) return refuse("create.root", `${root} is already a team's repository: one team per root`);
  return undefined;
}

/**
 * The decision on one create (§9 "create (execute)", §10, §8): refused naming the bound it passes,
 * or allowed with the child's runtime deadline. `bound` undefined: no bound is on the machine.
 */
export function checkCreate(bound: CreateBound | undefined, request: CreateRequest, facts: CreateFacts, now: number): Refusal | CreateAllowed {
  const standing = checkCreator(bound, request.seat, request.root, facts);
  if (standing !== undefined) return standing;
  if (bound === undefined) return refuse("create.bound", "no create-bound is written on this machine for the seat");
  const child = request.child.team;
  if (facts.teamNames.includes(child))
    return refuse("create.name", `a team named '${child}' is already registered on this machine; name the child another way`);
  for (const key of OWNER_ONLY_KEYS)
    if (request.data[key] !== undefined)
      return refuse(
        "create.owner-only",
        `a created team may not carry '${key}': it acts under the owner's identity or credentials, which create does not give (§3, §10)`,
      );
  const declared = isPlainObject(request.data.declare) ? request.data.declare : {};
  if (Array.isArray(declared.accounts) && declared.accounts.length > 0)
    return refuse("create.owner-only", "a created team may not declare accounts: an account is the owner's identity, which create does not give (§3)");
  for (const seat of Object.values(request.child.seats)) {
    const start = seat.start;
    if (start !== undefined) {
      if (!bound.starts.some((s) => s.length === start.command.length && s.every((w, i) => w === start.command[i])))
        return refuse(
          "create.start",
          `seat ${seat.name}'s start command ${JSON.stringify(start.command)} is not one the bound lets a child pin (${bound.starts.map((s) => JSON.stringify(s)).join(", ") || "none"})`,
        );
      if (start.containment === "none") return refuse("create.start", `seat ${seat.name} asks to run uncontained; a created team's seats run contained`);
      // Reach and size are the owner's to give (§8): a child's seat gets no egress and no limits of its own until the owner applies its file.
      if (start.network !== undefined)
        return refuse("create.start", `seat ${seat.name} asks for egress; a created team's seats reach no network until the owner applies its file with one`);
      // The environment is part of what runs (BASH_ENV, LD_PRELOAD, PATH…): the bound pins the argv, and the rest is the owner's to give.
      if (Object.keys(start.env).length > 0)
        return refuse(
          "create.start",
          `seat ${seat.name} sets its own environment; a created team's seats run the bound's commands with none until the owner applies its file`,
        );
      if (start.limits !== undefined)
        return refuse(
          "create.start",
          `seat ${seat.name} sets its own limits; a created team's seats run under teamd's defaults until the owner applies its file`,
        );
    }
    // create is never issued onward (§10): a child's seat holds it only once the owner applies the child's file with it.
    if ((seat.admin ?? []).includes("create"))
      return refuse(
        "create.grant",
        `seat ${seat.name} holds create; create is never issued onward (§10) — the owner gives it by applying the child's file, and writes its bound`,
      );
    if (!bound.grant && (seat.admin ?? []).some((a) => a === "grant" || a === "agree"))
      return refuse(
        "create.grant",
        `seat ${seat.name} holds ${(seat.admin ?? []).join(", ")}; the bound does not let a child's seat be given grant or agree (§10: off unless given)`,
      );
  }
  const boundLabs = Object.keys(bound.labs);
  // The child's seats, per lab, against the lab's seat allowance in the slice.
  const perLab = new Map<string, string[]>();
  for (const seat of Object.values(request.child.seats)) {
    if (boundLabs.length === 0) continue;
    if (seat.lab === undefined || !boundLabs.includes(seat.lab))
      return refuse(
        "create.seats",
        `seat ${seat.name}'s lab (${seat.lab ?? "none"}) is not one the bound names (${boundLabs.join(", ")}); a child's seats are in the labs of its slice`,
      );
    perLab.set(seat.lab, [...(perLab.get(seat.lab) ?? []), seat.name]);
  }
  for (const [lab, seats] of perLab) {
    const allowance = bound.labs[lab]?.seats;
    if (allowance !== undefined && seats.length > allowance)
      return refuse("create.seats", `the child declares ${seats.length} seat(s) in lab ${lab}, and its slice allows ${allowance}`);
  }
  // Every lab the creator's seats are capped in (its own ceiling, or the slice it was itself given) carves the
  // child's seats there from its allowance: a bound naming no seat count for such a lab would leave them uncounted.
  const capped = Object.keys(facts.policy.ceiling?.seats ?? {}).length > 0 || facts.ownSlice !== undefined;
  for (const [lab, seats] of perLabOf(request.child)) {
    if (lab === "" && capped)
      return refuse(
        "create.seats",
        `the child declares ${seats} seat(s) with no lab, and ${facts.policy.team}'s seats are capped per lab: a seat with no lab would be counted nowhere`,
      );
    const mine = facts.policy.ceiling?.seats?.[lab];
    const sliced = facts.ownSlice === undefined ? undefined : Object.prototype.hasOwnProperty.call(facts.ownSlice, lab) ? facts.ownSlice[lab] : 0;
    if ((mine !== undefined || sliced !== undefined) && bound.labs[lab]?.seats === undefined)
      return refuse(
        "create.seats",
        `the child declares ${seats} seat(s) in lab ${lab}, where ${facts.policy.team}'s seats are capped, and the bound names no seat allowance for it there: nothing to carve them from (§8); the owner writes --lab ${lab}:seats=N`,
      );
  }
  // Carved from the creator's seat allowance (§8): its cap less its live seats less what it carved before.
  for (const [lab, slice] of Object.entries(bound.labs)) {
    const mine = facts.policy.ceiling?.seats?.[lab];
    const sliced = facts.ownSlice === undefined ? undefined : Object.prototype.hasOwnProperty.call(facts.ownSlice, lab) ? facts.ownSlice[lab] : 0;
    const caps = [mine, sliced].filter((c): c is number => c !== undefined);
    if (caps.length === 0 || slice.seats === undefined) continue;
    const cap = Math.min(...caps);
    const live = facts.live.filter((s) => s.lab === lab).length;
    const left = cap - live - (facts.carvedSeats[lab] ?? 0);
    if (slice.seats > left)
      return refuse(
        "create.slice",
        `the slice's ${slice.seats} seat(s) in lab ${lab} do not fit what ${facts.policy.team} has left there (${left}: its cap ${cap}, ${live} live, ${facts.carvedSeats[lab] ?? 0} carved before)`,
      );
  }
  const spend = checkSpendSlice(bound, request, facts);
  if (spend !== undefined) return spend;
  // The child's clock (§8): the bound's window, or the creator's remainder — never a fresh window.
  const deadline = bound.runtimeMs !== undefined ? now + bound.runtimeMs : facts.deadline;
  if (deadline !== undefined && deadline <= now)
    return refuse("envelope.runtime", `${facts.policy.team} has no unattended runtime left to give a child; the owner renews it`);
  return deadline === undefined ? { decision: "allow" } : { decision: "allow", deadline };
}

/** A child's seats counted per lab (a seat with no lab is counted under ""). */
function perLabOf(child: Pick<Policy, "seats">): Map<string, number> {
  const out = new Map<string, number>();
  for (const seat of Object.values(child.seats)) out.set(seat.lab ?? "", (out.get(seat.lab ?? "") ?? 0) + 1);
  return out;
}

/** The spend slice against the creator's remainders, aggregate and per lab, net of its in-flight reservations and earlier carves (§8). */
function checkSpendSlice(bound: CreateBound, request: CreateRequest, facts: CreateFacts): Refusal | undefined {
  const parentSpend = facts.policy.ceiling?.spend;
  const childSpend = request.child.ceiling?.spend;
  if (parentSpend === undefined) {
    return undefined;
  }
  if (bound.spend === undefined)
    return refuse("create.slice", `${facts.policy.team} has a spend ceiling, and the bound names no slice: a child would spend outside it (§8 conservation)`);
  if (childSpend === undefined)
    return refuse(
      "create.slice",
      "the child's file has no spend ceiling; write `ceiling.spend` with the creator's currency and period (its caps are bounded by the slice)",
    );
  if (childSpend.currency !== parentSpend.currency || JSON.stringify(childSpend.period) !== JSON.stringify(parentSpend.period))
    return refuse(
      "create.slice",
      `the child's spend is in ${childSpend.currency} over another period; a slice keeps the creator's currency (${parentSpend.currency}) and period`,
    );
  for (const lab of Object.keys(childSpend.labs))
    if (bound.labs[lab]?.spend === undefined) return refuse("create.slice", `the child's spend names lab ${lab}, which its slice does not`);
  const tree = facts.spendTree;
  if (tree === undefined) return refuse("create.slice", `${facts.policy.team}'s spend cannot be established now; a create that cannot be debited is refused`);
  const node = facts.policy.team;
  const short = (need: number, dimension: string, lab: string): Refusal | undefined => {
    const all = spendBounds(tree, node, lab);
    // A creator that is itself a child dispatches (and carves) only in the labs its own slice names.
    if (all === undefined) return refuse("create.slice", `${node}'s own slice names no amount in lab ${lab}; it can carve no slice there`);
    const bounds = all.filter((b) => b.dimension === dimension);
    if (bounds.length === 0) return undefined;
    const least = bounds.reduce((a, b) => (b.left < a.left ? b : a));
    if (need <= least.left) return undefined;
    return refuse(
      "create.slice",
      `the slice's ${showAmount(need, parentSpend.currency)} ${dimension === "total" ? "in all" : `in lab ${dimension}`} does not fit ${least.node}'s ${least.kind === "own" ? "own remainder" : "tree budget"} there (${showAmount(Math.max(0, least.left), parentSpend.currency)}: its cap less its spend, reservations and carved slices)`,
    );
  };
  // The aggregate's bounds are the same whichever lab is asked about: ask in one the creator's node can dispatch in.
  const self = tree.nodes[node];
  const anyLab = self?.parent === undefined ? "" : (Object.keys(self.caps.labs)[0] ?? "");
  const total = short(bound.spend, "total", anyLab);
  if (total !== undefined) return total;
  for (const [lab, slice] of Object.entries(bound.labs)) {
    if (slice.spend === undefined) continue;
    const inLab = short(slice.spend, lab, lab);
    if (inLab !== undefined) return inLab;
  }
  return undefined;
}

/** A child's spend caps as the tree counts them: its slice, tightened by its own file's ceiling where lower. */
export function childCaps(
  bound: Pick<CreateBound, "spend" | "labs">,
  own: { readonly total: number; readonly labs: Readonly<Record<string, number>> } | undefined,
) {
  const labs: Record<string, number> = {};
  for (const [lab, slice] of Object.entries(bound.labs)) {
    if (slice.spend === undefined) continue;
    const mine = own !== undefined && Object.prototype.hasOwnProperty.call(own.labs, lab) ? own.labs[lab] : undefined;
    labs[lab] = mine === undefined ? slice.spend : Math.min(mine, slice.spend);
  }
  const total = Math.min(bound.spend ?? 0, own?.total ?? Number.MAX_SAFE_INTEGER);
  return { total, labs };
}

/**
 * What create did to a team's seat allowance (§8): per lab, the allowances it carved to the
 * teams it created, and — for a created team — its own slice's allowance (a lab its bound named
 * with no seat count is not capped by it; one its bound did not name gets none).
 */
export function seatCarve(
  teams: readonly { readonly team: string; readonly created?: { readonly parent: string; readonly bound: string } }[],
  team: string,
): { carved: Record<string, number>; slice?: Record<string, number | undefined> } {
  const carved: Record<string, number> = {};
  let slice: Record<string, number | undefined> | undefined;
  for (const t of teams) {
    if (t.created === undefined) continue;
    const bound = readBound(t.created.bound);
    if (typeof bound === "string") continue;
    if (t.created.parent === team) for (const [lab, s] of Object.entries(bound.labs)) if (s.seats !== undefined) carved[lab] = (carved[lab] ?? 0) + s.seats;
    if (t.team === team && Object.keys(bound.labs).length > 0) slice = Object.fromEntries(Object.entries(bound.labs).map(([lab, s]) => [lab, s.seats]));
  }
  return slice === undefined ? { carved } : { carved, slice };
}
