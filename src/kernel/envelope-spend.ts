import { refuse, type Refusal } from "./decision.js";

/**
 * The resource envelope's spend (§8), the arithmetic alone: one module, pure, in integer minor
 * units of the provider's billing currency (cents: no float ever rounds a cap).
 *
 * A spend tree is a team and the teams it carved (create, §10), each a node with its caps — the
 * owner's for the root, the named slice for a child: an aggregate amount and, per lab, an amount
 * — its reported spend this period (per lab), its in-flight reservations (per lab), and whether
 * its meter's report is fresh. A dispatch of `amount` at node N in lab L is allowed only while
 * every one of these holds, in the aggregate and in L:
 *
 * - **N's own remainder**: N's cap − N's reported spend − N's in-flight − the slices N carved to
 *   its children (carved slices are not refunded at a period roll: a child keeps its slice);
 * - **the one tree budget, per level**: for N and each ancestor A, A's cap − everything reported
 *   and in flight in A's whole subtree. Every refill and dispatch anywhere below A draws down the
 *   same budget, in the one serialized order the daemon decides in — so a lowered cap shadows the
 *   slices below it at use time (it revokes nothing, and tightens only), and the whole branch
 *   commits at most the cap as it stands now, never a cap per node.
 *
 * A child dispatching in a lab its slice does not name is refused; a root with no cap for a lab
 * is bounded there by its aggregate alone. Usage a node cannot establish — a lab whose meter's
 * report is stale or missing — counts as spent: the lab's whole cap, or the node's whole aggregate
 * where the lab has none (fail closed).
 * What is already reported or reserved stands (the shadow is prospective): a cap lowered below
 * it shows an overage and authorizes nothing more.
 */

export type Lab = string;

/** An aggregate amount and per-lab amounts (minor units, integers ≥ 0). */
export interface SpendCaps {
  readonly total: number;
  readonly labs: Readonly<Record<Lab, number>>;
}

export interface SpendNode {
  readonly id: string;
  /** The node it was carved from; absent for the root (the owner's team). */
  readonly parent?: string;
  /** The owner's caps (root), or the slice the create named (child). */
  readonly caps: SpendCaps;
  /** Reported spend this period, per lab. */
  readonly spent: Readonly<Record<Lab, number>>;
  /** In-flight reservations, per lab: dispatched, not yet covered by a report. */
  readonly reserved: Readonly<Record<Lab, number>>;
  /**
   * Per lab whose usage counts here, whether its meter's last report is within the owner's
   * staleness limit ("unknown": no report this period, or no meter maps to it). A lab not listed
   * is taken as reported by its `spent` alone.
   */
  readonly meters: Readonly<Record<Lab, MeterState>>;
}

export type MeterState = "fresh" | "stale" | "unknown";

export interface SpendTree {
  readonly currency: string;
  readonly nodes: Readonly<Record<string, SpendNode>>;
}

/** A dimension: the aggregate, or one lab. */
type Dimension = { readonly kind: "total" } | { readonly kind: "lab"; readonly lab: Lab };

const has = (record: Readonly<Record<string, number>>, key: string): boolean => Object.prototype.hasOwnProperty.call(record, key);

function capIn(node: SpendNode, d: Dimension): number | undefined {
  if (d.kind === "total") return node.caps.total;
  return has(node.caps.labs, d.lab) ? node.caps.labs[d.lab] : undefined;
}

const meterOf = (node: SpendNode, lab: Lab): MeterState => (Object.prototype.hasOwnProperty.call(node.meters, lab) ? (node.meters[lab] ?? "unknown") : "fresh");

/** What a node has used in one lab: reported plus in flight — or, when its usage cannot be established, all it may spend there (fail closed). */
function usedInLab(node: SpendNode, lab: Lab): number {
  if (meterOf(node, lab) !== "fresh") return has(node.caps.labs, lab) ? (node.caps.labs[lab] ?? 0) : node.caps.total;
  return (node.spent[lab] ?? 0) + (node.reserved[lab] ?? 0);
}

function usedIn(node: SpendNode, d: Dimension): number {
  if (d.kind === "lab") return usedInLab(node, d.lab);
  const labs = new Set([...Object.keys(node.spent), ...Object.keys(node.reserved), ...Object.keys(node.meters)]);
  return [...labs].reduce((a, lab) => a + usedInLab(node, lab), 0);
}

function childrenOf(tree: SpendTree, id: string): SpendNode[] {
  return Object.values(tree.nodes).filter((n) => n.parent === id);
}

function subtree(tree: SpendTree, id: string): SpendNode[] {
  const node = tree.nodes[id];
  if (node === undefined) return [];
  return [node, ...childrenOf(tree, id).flatMap((c) => subtree(tree, c.id))];
}

/** N's ancestors from its parent up to the root (a cycle or a missing parent ends the walk: the caller validated the tree). */
function ancestors(tree: SpendTree, id: string): SpendNode[] {
  const out: SpendNode[] = [];
  const seen = new Set<string>([id]);
  for (let at = tree.nodes[id]?.parent; at !== undefined && !seen.has(at); at = tree.nodes[at]?.parent) {
    const node = tree.nodes[at];
    if (node === undefined) break;
    seen.add(at);
    out.push(node);
  }
  return out;
}

/** One bound on a dispatch: where it is, in which dimension, and what it leaves. */
export interface SpendBound {
  readonly node: string;
  readonly dimension: "total" | Lab;
  readonly kind: "own" | "tree";
  readonly left: number;
}

/**
 * Every bound a dispatch at `node` in `lab` meets, each with what it leaves now; the dispatch's
 * room is the least of them. `undefined` when the dispatch cannot be made at all (an unknown
 * node, or a child's lab its slice does not name).
 */
export function spendBounds(tree: SpendTree, node: string, lab: Lab): SpendBound[] | undefined {
  const self = tree.nodes[node];
  if (self === undefined) return undefined;
  if (self.parent !== undefined && !has(self.caps.labs, lab)) return undefined;
  const bounds: SpendBound[] = [];
  for (const d of [{ kind: "total" }, { kind: "lab", lab }] as const) {
    const dimension = d.kind === "total" ? "total" : d.lab;
    const own = capIn(self, d);
    if (own !== undefined) {
      const carved = childrenOf(tree, node).reduce((a, c) => a + (capIn(c, d) ?? 0), 0);
      bounds.push({ node, dimension, kind: "own", left: own - usedIn(self, d) - carved });
    }
    for (const level of [self, ...ancestors(tree, node)]) {
      const cap = capIn(level, d);
      if (cap === undefined) continue;
      bounds.push({ node: level.id, dimension, kind: "tree", left: cap - subtree(tree, level.id).reduce((a, x) => a + usedIn(x, d), 0) });
    }
  }
  return bounds;
}

/** The most a dispatch at `node` in `lab` may reserve now (≤ 0: none); -Infinity when it cannot dispatch at all. */
export function spendRemainder(tree: SpendTree, node: string, lab: Lab): number {
  const bounds = spendBounds(tree, node, lab);
  if (bounds === undefined) return -Infinity;
  return Math.min(...bounds.map((b) => b.left));
}

/** What a node's subtree has committed past its cap as it stands now (a cap lowered below what is already spent): 0 when none. */
export function spendOverage(tree: SpendTree, node: string): number {
  const self = tree.nodes[node];
  if (self === undefined) return 0;
  const used = subtree(tree, node).reduce((a, x) => a + usedIn(x, { kind: "total" }), 0);
  return Math.max(0, used - self.caps.total);
}

export function showAmount(amount: number, currency: string): string {
  const sign = amount < 0 ? "-" : "";
  const abs = Math.abs(amount);
  return `${sign}${currency} ${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}

/**
 * A dispatch (a seat's launch, a broker task claim) reserving `amount` at `node` in `lab`:
 * refused (`envelope.spend`) unless every bound covers it. The caller records the reservation
 * under the same serialization it decided in, so two dispatches cannot together pass a bound.
 */
export function checkDispatch(tree: SpendTree, node: string, lab: Lab, amount: number): Refusal | undefined {
  const self = tree.nodes[node];
  if (self === undefined) return refuse("envelope.spend", `no spend envelope is known for ${node}; nothing dispatches against a budget it cannot read`);
  const meter = meterOf(self, lab);
  if (meter !== "fresh") {
    return refuse(
      "envelope.spend",
      `the spend of ${node} in lab ${lab} cannot be established (its meter's report is ${meter === "stale" ? "older than the staleness limit" : "missing"}), so it counts as spent; fix the meter (teamd status shows it), or raise the limit (an owner act)`,
    );
  }
  const bounds = spendBounds(tree, node, lab);
  if (bounds === undefined)
    return refuse("envelope.spend", `${node}'s spend slice names no amount for lab ${lab}; it dispatches in the labs its bound names only`);
  const short = bounds.filter((b) => b.left < amount).sort((a, b) => a.left - b.left)[0];
  if (short === undefined) return undefined;
  const where = short.dimension === "total" ? "in total" : `for lab ${short.dimension}`;
  const what =
    short.kind === "own"
      ? `${short.node}'s own remainder ${where} (its cap less its spend, reservations and carved slices)`
      : `the budget of ${short.node}'s whole tree ${where}`;
  const unknown = Object.values(tree.nodes).flatMap((n) =>
    Object.keys(n.meters)
      .filter((l) => meterOf(n, l) !== "fresh")
      .map((l) => `${n.id}/${l}`),
  );
  return refuse(
    "envelope.spend",
    `a dispatch reserves ${showAmount(amount, tree.currency)} and ${what} has ${showAmount(Math.max(0, short.left), tree.currency)} left this period${
      unknown.length > 0 ? ` (the usage of ${unknown.join(", ")} cannot be established and counts as spent)` : ""
    }; wait for the next period, or raise the cap (an owner act)`,
  );
}

/**
 * At a period roll or a lowered cap: the in-flight reservations, re-validated in their serialized
 * order against the caps as they stand — each that no longer fits is listed (its seat halts at the
 * boundary); the others stand. Reported spend is not re-validated: it is spent.
 */
export function revalidate(
  tree: SpendTree,
  reservations: readonly { readonly id: string; readonly node: string; readonly lab: Lab; readonly amount: number }[],
): string[] {
  const cleared: Record<string, SpendNode> = {};
  for (const [id, n] of Object.entries(tree.nodes)) cleared[id] = { ...n, reserved: {} };
  let at: SpendTree = { ...tree, nodes: cleared };
  const dropped: string[] = [];
  for (const r of reservations) {
    if (checkDispatch(at, r.node, r.lab, r.amount) !== undefined) {
      dropped.push(r.id);
      continue;
    }
    at = reserve(at, r.node, r.lab, r.amount);
  }
  return dropped;
}

/** The tree with `amount` more in flight at `node` in `lab` (after checkDispatch allowed it). */
export function reserve(tree: SpendTree, node: string, lab: Lab, amount: number): SpendTree {
  const self = tree.nodes[node];
  if (self === undefined) return tree;
  return { ...tree, nodes: { ...tree.nodes, [node]: { ...self, reserved: { ...self.reserved, [lab]: (self.reserved[lab] ?? 0) + amount } } } };
}

/** The spend period `now` falls in: a calendar month (UTC), or a fixed length aligned to the unix epoch (UTC). */
export function spendPeriod(period: { readonly kind: "month" } | { readonly kind: "fixed"; readonly ms: number }, now: number): { start: number; end: number } {
  if (period.kind === "fixed") {
    const start = Math.floor(now / period.ms) * period.ms;
    return { start, end: start + period.ms };
  }
  const { year, month } = civilFromDays(Math.floor(now / DAY_MS));
  const next = month === 12 ? { year: year + 1, month: 1 } : { year, month: month + 1 };
  return { start: daysFromCivil(year, month, 1) * DAY_MS, end: daysFromCivil(next.year, next.month, 1) * DAY_MS };
}

const DAY_MS = 86_400_000;

/*
 * The proleptic Gregorian calendar by arithmetic alone (the kernel reads no clock and no Date):
 * days since 1970-01-01 to and from a civil date, by the well-known era algorithm (eras of
 * 400 years, 146,097 days; the year counted from March so the leap day falls last).
 */
function civilFromDays(days: number): { year: number; month: number } {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month };
}

function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}
