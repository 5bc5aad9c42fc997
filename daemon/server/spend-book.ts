import { RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import type { SpendCeiling } from "../../src/kernel/ceiling.js";
import {
  checkDispatch,
  revalidate,
  showAmount,
  spendOverage,
  spendPeriod,
  spendRemainder,
  type MeterState,
  type SpendNode,
  type SpendTree,
} from "../../src/kernel/envelope-spend.js";
import { childCaps, readBound } from "../../src/kernel/create-bound.js";
import { daemonPrincipal, type Ledger } from "../../src/ledger/index.js";
import { policyInForce } from "../../src/ledger/policy-in-force.js";
import type { MeterConfig, MeterReading } from "../../src/meters/index.js";
import { RefusalError } from "../../src/rpc/errors.js";

/**
 * The spend envelope's book (§8; issue 28): per team with `ceiling.spend`, what its meters
 * reported this period and what its dispatches hold in flight — the facts the kernel's
 * arithmetic (src/kernel/envelope-spend.ts) decides over. Everything in it is on record: a
 * report is a `meter` record, a reservation a `reserve` record; the daemon rebuilds the book from
 * them at start, so a restart neither forgets a reservation nor a report.
 *
 * - A dispatch (a seat's launch, each restart included) reserves the team's per-dispatch maximum
 *   in the seat's lab, decided and held in one turn of the event loop (two launches at once
 *   cannot together pass the remainder), then recorded; a launch that cannot be covered is
 *   refused `envelope.spend`. A reservation stays spent until a report covers it (its time is
 *   within the report's window), whether or not its run still lives.
 * - A report replaces the meter's previous reading for the period; the reservations it covers
 *   go, and each still-running seat of that team reserves again — in the order they launched —
 *   or, where the remainder no longer covers it, is halted into its handoff (the boundary).
 * - A lab's usage is established only while every meter mapped to it reported within the
 *   staleness limit this period; otherwise it counts as spent (the kernel's fail-closed rule).
 */
export interface SpendBook {
  /** The spend tree `team` is a node of, now (§8, §10: what a create carves from); undefined when the team has no spend ceiling. */
  tree(team: string, now: number): SpendTree | undefined;
  /** A launch of `seat` of `team` (run `runId`): undefined when the team has no spend ceiling; else a refusal, or the reservation's record to await. */
  dispatch(team: string, seat: string, runId: string, now: number): RefusalError | { readonly recorded: Promise<number> } | undefined;
  /** A meter's reading: recorded, counted; the running seats that must halt (their reservations no longer fit), in order. */
  report(meter: MeterConfig, reading: MeterReading, now: number, running: readonly RunningSeat[]): Promise<{ seat: string; why: string }[]>;
  /** A dispatch that turned out not to happen (a claim the tracker refused): its reservation goes, on record (amount 0, why "released"). */
  release(team: string, seat: string, runId: string, now: number): Promise<void>;
  /** A meter that could not be read this time: remembered for status (its last reading ages toward stale). */
  failed(meter: MeterConfig, reason: string, now: number): void;
  status(team: string, now: number): SpendStatus | undefined;
}

export interface RunningSeat {
  readonly team: string;
  readonly seat: string;
  readonly runId: string;
  readonly lab?: string;
}

export interface SpendStatus {
  readonly currency: string;
  readonly periodStart: number;
  readonly periodEnd: number;
  readonly limit: number;
  readonly reported: number;
  readonly reserved: number;
  readonly remainder: number;
  readonly overage: number;
  readonly perDispatch: number;
  readonly labs: readonly {
    readonly lab: string;
    readonly limit: number | null;
    readonly reported: number;
    readonly reserved: number;
    readonly remainder: number;
    readonly meter: MeterState;
    readonly meters: readonly { readonly name: string; readonly at: number | null; readonly error: string | null }[];
  }[];
}

interface Reading {
  readonly amount: number;
  readonly to: number;
  /** When it was recorded (the daemon's clock). */
  readonly at: number;
}

interface Held {
  readonly seat: string;
  readonly runId: string;
  readonly lab: string;
  readonly amount: number;
  readonly at: number;
}

interface TeamBook {
  periodStart: number;
  /** Per meter name: its lab and last reading this period. */
  readings: Map<string, { lab: string; reading: Reading }>;
  held: Held[];
  errors: Map<string, string>;
}

export function createSpendBook(options: { readonly ledger: () => Ledger | undefined; readonly meters: () => readonly MeterConfig[] }): SpendBook {
  const books = new Map<string, TeamBook>();

  const spendOf = (ledger: Ledger, team: string): SpendCeiling | undefined => {
    try {
      return policyInForce(ledger, team).policy.ceiling?.spend;
    } catch {
      return undefined;
    }
  };

  /** The team's book for the period `now` is in: rebuilt from the ledger's records when the period is new to it. */
  function bookOf(ledger: Ledger, team: string, spend: SpendCeiling, now: number): TeamBook {
    const { start } = spendPeriod(spend.period, now);
    const known = books.get(team);
    if (known !== undefined && known.periodStart === start) return known;
    const book: TeamBook = { periodStart: start, readings: new Map(), held: [], errors: known?.errors ?? new Map() };
    for (let at = 0; ;) {
      const page = ledger.entries(at, 500, RecordType.METER);
      if (page.length === 0) break;
      for (const e of page) {
        at = e.seq + 1;
        const d = e.payload?.detail;
        if (e.team !== team || d?.case !== "meter" || Number(d.value.periodStartUnixMs) !== start) continue;
        book.readings.set(d.value.meter, { lab: d.value.lab, reading: { amount: Number(d.value.amount), to: Number(d.value.toUnixMs), at: e.timeUnixMs } });
      }
    }
    // Reservations of this period and of the one before (a run that crossed the roll holds on
    // until a report of the new period covers it), less what a report already covers.
    for (let at = 0; ;) {
      const page = ledger.entries(at, 500, RecordType.RESERVE);
      if (page.length === 0) break;
      for (const e of page) {
        at = e.seq + 1;
        const d = e.payload?.detail;
        if (e.team !== team || d?.case !== "reserve" || Number(d.value.periodStartUnixMs) > start) continue;
        book.held.push({ seat: d.value.seat, runId: d.value.runId, lab: d.value.lab, amount: Number(d.value.amount), at: e.timeUnixMs });
      }
    }
    book.held = book.held.filter((h) => !covered(book, h, options.meters(), team));
    // Only the newest reservation of a run stands: a run's reservation again after a report replaces its last.
    const newest = new Map<string, Held>();
    for (const h of book.held) newest.set(h.runId, h);
    book.held = [...newest.values()].sort((a, b) => a.at - b.at);
    books.set(team, book);
    return book;
  }

  /** One team's node: its caps (the owner's ceiling, or a created team's slice tightened by its own ceiling) and what its book holds. */
  function nodeOf(ledger: Ledger, team: string, parent: string | undefined, now: number): SpendNode {
    const spend = spendOf(ledger, team);
    const created = ledger.view.team(team)?.created;
    const bound = created === undefined ? undefined : readBound(created.bound);
    const caps =
      parent === undefined || bound === undefined || typeof bound === "string"
        ? { total: spend?.total ?? 0, labs: spend?.labs ?? {} }
        : childCaps(bound, spend === undefined ? undefined : { total: spend.total, labs: spend.labs });
    const spent: Record<string, number> = {};
    const reserved: Record<string, number> = {};
    const meters: Record<string, MeterState> = {};
    if (spend === undefined) {
      // A created team without its own spend ceiling cannot establish its usage: all of its slice counts as spent (fail closed).
      for (const lab of Object.keys(caps.labs)) meters[lab] = "unknown";
      return { id: team, ...(parent !== undefined ? { parent } : {}), caps, spent, reserved, meters };
    }
    const book = bookOf(ledger, team, spend, now);
    for (const { lab, reading } of book.readings.values()) spent[lab] = (spent[lab] ?? 0) + reading.amount;
    for (const h of book.held) reserved[h.lab] = (reserved[h.lab] ?? 0) + h.amount;
    for (const lab of new Set([...labsOf(ledger, team), ...(parent !== undefined ? Object.keys(caps.labs) : [])]))
      meters[lab] = meterState(book, options.meters(), team, lab, spend, now);
    return { id: team, ...(parent !== undefined ? { parent } : {}), caps, spent, reserved, meters };
  }

  /**
   * The spend tree `team` is a node of (§8, §10): from the root of its line of creators (the
   * owner's team) down through every team created under it, so a dispatch or a create anywhere
   * in it is bounded by every level's remainder and the slices already carved.
   */
  function treeOf(ledger: Ledger, team: string, spend: SpendCeiling, _book: TeamBook, now: number): SpendTree {
    const root = rootOf(ledger, team);
    const rootSpend = root === team ? spend : (spendOf(ledger, root) ?? spend);
    const nodes: Record<string, SpendNode> = {};
    const children = new Map<string, string[]>();
    for (const t of ledger.view.teams()) {
      const parent = t.created?.parent;
      if (parent !== undefined) children.set(parent, [...(children.get(parent) ?? []), t.team]);
    }
    const walk = (at: string, parent: string | undefined) => {
      if (nodes[at] !== undefined) return;
      nodes[at] = nodeOf(ledger, at, parent, now);
      for (const child of children.get(at) ?? []) walk(child, at);
    };
    walk(root, undefined);
    return { currency: rootSpend.currency, nodes };
  }

  async function record(ledger: Ledger, team: string, held: Held, spend: SpendCeiling, periodStart: number, why: string): Promise<number> {
    const recorded = await ledger.append({
      type: RecordType.RESERVE,
      team,
      actor: daemonPrincipal(),
      signer: daemonPrincipal(),
      action: "spend.reserve",
      payload: {
        target: { kind: TargetKind.SEAT, name: held.seat },
        requestId: held.runId,
        detail: {
          case: "reserve",
          value: {
            seat: held.seat,
            runId: held.runId,
            lab: held.lab,
            amount: BigInt(held.amount),
            currency: spend.currency,
            periodStartUnixMs: BigInt(periodStart),
            why,
          },
        },
      },
    });
    return recorded.seq;
  }

  return {
    tree(team, now) {
      const ledger = options.ledger();
      if (ledger === undefined) return undefined;
      const spend = spendOf(ledger, team);
      if (spend === undefined) return undefined;
      return treeOf(ledger, team, spend, bookOf(ledger, team, spend, now), now);
    },
    dispatch(team, seat, runId, now) {
      const ledger = options.ledger();
      if (ledger === undefined) return undefined;
      const spend = spendOf(ledger, team);
      if (spend === undefined) {
        // A created team under a spend ceiling spends only from its slice: without a ceiling of its own it cannot reserve (fail closed).
        const root = rootOf(ledger, team);
        if (root !== team && spendOf(ledger, root) !== undefined)
          return new RefusalError(
            "envelope.spend",
            `team '${team}' was created under ${root}'s spend ceiling and has none of its own: it cannot reserve against its slice; the owner writes ceiling.spend in its file`,
          );
        return undefined;
      }
      const lab = labOf(ledger, team, seat);
      if (lab === undefined)
        return new RefusalError(
          "envelope.spend",
          `seat '${seat}' has no lab, and team '${team}' has a spend ceiling: spend is counted per lab; give the seat a lab (an owner act)`,
        );
      const book = bookOf(ledger, team, spend, now);
      const refusal = checkDispatch(treeOf(ledger, team, spend, book, now), team, lab, spend.perDispatch);
      if (refusal !== undefined) return new RefusalError(refusal.rule, refusal.reason);
      // Held now, in this turn: the next launch decides against it even before it is on record.
      const held: Held = { seat, runId, lab, amount: spend.perDispatch, at: now };
      book.held = [...book.held.filter((h) => h.runId !== runId), held];
      const recorded = record(ledger, team, held, spend, book.periodStart, "dispatch");
      // A reservation that cannot be recorded is not held: the launch fails with it (its caller awaits this).
      recorded.catch(() => (book.held = book.held.filter((h) => h !== held)));
      return { recorded };
    },
    async report(meter, reading, now, running) {
      const ledger = options.ledger();
      if (ledger === undefined) return [];
      const spend = spendOf(ledger, meter.team);
      const periodStart = spend === undefined ? reading.from : spendPeriod(spend.period, now).start;
      await ledger.append({
        type: RecordType.METER,
        team: meter.team,
        actor: daemonPrincipal(),
        signer: daemonPrincipal(),
        action: "spend.meter",
        payload: {
          target: { kind: TargetKind.TEAM, name: meter.team },
          detail: {
            case: "meter",
            value: {
              meter: meter.name,
              kind: meter.kind,
              lab: meter.lab,
              periodStartUnixMs: BigInt(periodStart),
              fromUnixMs: BigInt(reading.from),
              toUnixMs: BigInt(reading.to),
              amount: BigInt(reading.amount),
              currency: reading.currency,
            },
          },
        },
      });
      if (spend === undefined) return [];
      const book = bookOf(ledger, meter.team, spend, now);
      book.errors.delete(meter.name);
      book.readings.set(meter.name, { lab: meter.lab, reading: { amount: reading.amount, to: reading.to, at: now } });
      // What the report covers goes; each running seat of the team reserves again, in launch order.
      const alive = new Map(running.filter((r) => r.team === meter.team).map((r) => [r.runId, r]));
      const stillHeld = book.held.filter((h) => !covered(book, h, options.meters(), meter.team));
      const again = book.held.filter((h) => covered(book, h, options.meters(), meter.team) && alive.has(h.runId));
      // A running seat that holds nothing at all — it launched before the team had a spend ceiling
      // — is held from its first report on like the others (else no report would ever bound it).
      const unheld: Held[] = [...alive.values()]
        .filter((r) => !book.held.some((h) => h.runId === r.runId))
        .flatMap((r) => {
          const lab = r.lab ?? labOf(ledger, meter.team, r.seat);
          return lab === undefined ? [] : [{ seat: r.seat, runId: r.runId, lab, amount: spend.perDispatch, at: now }];
        });
      const renewed: Held[] = [...again.map((h) => ({ ...h, amount: spend.perDispatch, at: now })), ...unheld];
      // Re-validated in order: the reservations no report covers yet first (they are spent), then
      // the running seats again, in the order they launched.
      book.held = [...stillHeld.filter((h) => !again.some((a) => a.runId === h.runId)), ...renewed];
      const tree = treeOf(ledger, meter.team, spend, book, now);
      const dropped = new Set(
        revalidate(
          tree,
          book.held.map((h) => ({ id: h.runId, node: meter.team, lab: h.lab, amount: h.amount })),
        ),
      );
      const halts: { seat: string; why: string }[] = [];
      for (const h of book.held) {
        if (!dropped.has(h.runId) || !alive.has(h.runId)) continue;
        halts.push({
          seat: h.seat,
          why: `halted: spend (team ${meter.team}, lab ${h.lab}: the remainder no longer covers ${showAmount(spend.perDispatch, spend.currency)} after ${meter.name}'s report)`,
        });
      }
      // A seat halted here holds nothing new: what it spends until its halt lands is in the next report.
      book.held = book.held.filter((h) => !(dropped.has(h.runId) && renewed.includes(h)));
      // The halted seats' reservations stay spent until a report covers them; the others are held again, on record.
      for (const h of renewed) if (!dropped.has(h.runId)) await record(ledger, meter.team, h, spend, book.periodStart, "report");
      return halts;
    },
    async release(team, seat, runId, now) {
      const ledger = options.ledger();
      if (ledger === undefined) return;
      const spend = spendOf(ledger, team);
      if (spend === undefined) return;
      const book = bookOf(ledger, team, spend, now);
      const held = book.held.find((h) => h.runId === runId);
      if (held === undefined) return;
      book.held = book.held.filter((h) => h !== held);
      // The newest record of a dispatch is the one the book rebuilds from: this one holds nothing.
      await record(ledger, team, { ...held, seat, amount: 0, at: now }, spend, book.periodStart, "released");
    },
    failed(meter, reason, _now) {
      const ledger = options.ledger();
      if (ledger === undefined) return;
      const spend = spendOf(ledger, meter.team);
      if (spend === undefined) return;
      bookOf(ledger, meter.team, spend, _now).errors.set(meter.name, reason);
    },
    status(team, now) {
      const ledger = options.ledger();
      if (ledger === undefined) return undefined;
      const spend = spendOf(ledger, team);
      if (spend === undefined) return undefined;
      const book = bookOf(ledger, team, spend, now);
      const tree = treeOf(ledger, team, spend, book, now);
      const node = tree.nodes[team];
      const period = spendPeriod(spend.period, now);
      const sum = (r: Readonly<Record<string, number>> | undefined) => Object.values(r ?? {}).reduce((a, b) => a + b, 0);
      const labs = labsOf(ledger, team).map((lab) => ({
        lab,
        limit: spend.labs[lab] ?? null,
        reported: node?.spent[lab] ?? 0,
        reserved: node?.reserved[lab] ?? 0,
        remainder: Math.max(0, spendRemainder(tree, team, lab)),
        meter: node?.meters[lab] ?? ("unknown" as MeterState),
        meters: options
          .meters()
          .filter((m) => m.team === team && m.lab === lab)
          .map((m) => ({ name: m.name, at: book.readings.get(m.name)?.reading.at ?? null, error: book.errors.get(m.name) ?? null })),
      }));
      const reported = sum(node?.spent);
      const reserved = sum(node?.reserved);
      // What the team carved to the teams it created (§8): their slices stay theirs, out of this remainder.
      const carved = Object.values(tree.nodes)
        .filter((n) => n.parent === team)
        .reduce((a, n) => a + n.caps.total, 0);
      return {
        currency: spend.currency,
        periodStart: period.start,
        periodEnd: period.end,
        limit: spend.total,
        reported,
        reserved,
        remainder: Math.max(0, spend.total - reported - reserved - carved),
        overage: spendOverage(tree, team),
        perDispatch: spend.perDispatch,
        labs,
      };
    },
  };
}

/** A reservation a report covers: every meter of its lab has reported past the time it was made. */
/** The root of a team's line of creators: the owner's team it descends from (itself, for an owner's team). */
function rootOf(ledger: Ledger, team: string): string {
  const seen = new Set<string>([team]);
  let at = team;
  for (let parent = ledger.view.team(at)?.created?.parent; parent !== undefined && !seen.has(parent); parent = ledger.view.team(at)?.created?.parent) {
    seen.add(parent);
    at = parent;
  }
  return at;
}

function covered(book: TeamBook, held: Held, meters: readonly MeterConfig[], team: string): boolean {
  const mine = meters.filter((m) => m.team === team && m.lab === held.lab);
  if (mine.length === 0) return false;
  return mine.every((m) => {
    const r = book.readings.get(m.name);
    return r !== undefined && r.reading.to >= held.at;
  });
}

/** A lab's usage is established while every meter mapped to it reported this period within the staleness limit. */
function meterState(book: TeamBook, meters: readonly MeterConfig[], team: string, lab: string, spend: SpendCeiling, now: number): MeterState {
  const mine = meters.filter((m) => m.team === team && m.lab === lab);
  if (mine.length === 0) return "unknown";
  let state: MeterState = "fresh";
  for (const m of mine) {
    const r = book.readings.get(m.name);
    if (r === undefined) return "unknown";
    if (now - r.reading.at > spend.staleAfterMs) state = "stale";
  }
  return state;
}

/** The labs the team's seats belong to: the ones whose spend counts. */
function labsOf(ledger: Ledger, team: string): string[] {
  try {
    const { policy } = policyInForce(ledger, team);
    return [...new Set(Object.values(policy.seats).flatMap((s) => (s.lab === undefined ? [] : [s.lab])))].sort();
  } catch {
    return [];
  }
}

function labOf(ledger: Ledger, team: string, seat: string): string | undefined {
  try {
    const { policy } = policyInForce(ledger, team);
    return Object.prototype.hasOwnProperty.call(policy.seats, seat) ? policy.seats[seat]?.lab : undefined;
  } catch {
    return undefined;
  }
}
