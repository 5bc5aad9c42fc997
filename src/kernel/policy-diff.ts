import type { AuthoritySource, Grant } from "./authority.js";
import { canonicalJson } from "./canonical.js";
import type { CardinalityConstraint, ConstraintProgram, Selector } from "./constraint-program.js";
import { showSelector } from "./constraints.js";
import { type DeclaredSets, NO_DECLARED_SETS } from "./declared.js";
import { DEFAULT_LEASE_TTL_MS } from "./ceiling.js";
import { showDuration } from "./delegation-input.js";
import { compareStrings, showPath } from "./paths.js";
import type { Policy, Seat } from "./policy.js";
import { SEAT_BRANCHES } from "./policy-compile.js";
import { type Scope, canonicalDimension, dimensionOf, formatScope } from "./scope.js";
import type { StartContext } from "./start-context.js";
import { showLimits } from "./start-limits.js";
import { showContainment } from "./start-containment.js";
import { showRestart } from "./start-restart.js";
import type { OperationalCapability, Vocabulary } from "./vocabulary.js";

/**
 * What applying a team file changes against the policy in force, as the owner reads it before
 * confirming (`teamd apply`): per seat, the authorities it gains and loses, and the team-wide
 * settings that move. Authorities compare as a set of (capability, canonical scope): the same
 * grant held twice, or moved from a role to a direct grant, is neither gained nor lost — what
 * a seat may do is the union of its alternatives, not their count or their origin.
 */
export interface SeatChange {
  readonly seat: string;
  readonly status: "added" | "removed" | "changed";
  /** Human lines, e.g. "write {path: [src]}  (role executor)". Sorted. */
  readonly gains: readonly string[];
  readonly losses: readonly string[];
  /** Other changes of the seat: lab, roles list, start context (command/env/workdir/files hash). */
  readonly other: readonly string[];
}

export interface PolicyDiff {
  /** No policy in force before: every seat is added, team settings are read against the defaults. */
  readonly first: boolean;
  /** Only seats with some change, sorted by name. */
  readonly seats: readonly SeatChange[];
  /** Team-level lines: declared sets, roles defined, review, constraints, leads, ceiling, deny, two-granter. */
  readonly team: readonly string[];
  /** Nothing differs at all: the same canonical form, and every seat's context hash the same. */
  readonly unchanged: boolean;
}

interface Held {
  readonly text: string;
  readonly sources: string[];
}

/** The grant's identity: its capability and its canonical scope on the dimensions it takes. */
function grantKey(grant: Grant, vocabulary: Vocabulary): string {
  const dims = vocabulary.capabilities[grant.capability].dimensions;
  return canonicalJson({ capability: grant.capability, scope: dims.map((d) => [d, canonicalDimension(dimensionOf(grant.scope, d))]) });
}

function showGrant(grant: Grant, vocabulary: Vocabulary): string {
  return `${grant.capability} ${formatScope(grant.scope, vocabulary.capabilities[grant.capability].dimensions)}`;
}

function showSource(source: AuthoritySource): string {
  switch (source.kind) {
    case "role":
      return `role ${source.role}`;
    case "direct":
      return "direct";
    case "envelope":
      return "envelope";
    case "lease":
      return `lease ${source.lease}`;
  }
}

/** Roles before direct grants, as a seat's list resolves them. */
function compareSources(a: string, b: string): number {
  const rank = (s: string): number => (s.startsWith("role ") ? 0 : 1);
  return rank(a) - rank(b) || compareStrings(a, b);
}

function heldBy(seat: Seat | undefined, vocabulary: Vocabulary): Map<string, Held> {
  const out = new Map<string, Held>();
  for (const authority of seat?.authorities ?? []) {
    const key = grantKey(authority, vocabulary);
    let held = out.get(key);
    if (held === undefined) out.set(key, (held = { text: showGrant(authority, vocabulary), sources: [] }));
    const source = showSource(authority.source);
    if (!held.sources.includes(source)) held.sources.push(source);
  }
  for (const held of out.values()) held.sources.sort(compareSources);
  return out;
}

function sorted(lines: Iterable<string>): string[] {
  return [...lines].sort(compareStrings);
}

function list(values: readonly string[]): string {
  return `[${values.join(", ")}]`;
}

function same(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function showStart(start: StartContext): string {
  const env = Object.entries(start.env).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  const network =
    start.network === undefined
      ? ""
      : `, egress ${list([...start.network.allow])}${start.network.private.length > 0 ? `, private ${list([...start.network.private])}` : ""}`;
  const limits = start.limits === undefined ? "" : `, limits ${showLimits(start.limits)}`;
  const containment = start.containment === undefined ? "" : `, containment ${start.containment} (UNCONTAINED: against a mistake only)`;
  const restart = start.restart === undefined ? "" : `, restart ${showRestart(start.restart)}`;
  return `command ${list(start.command.map((a) => JSON.stringify(a)))}, workdir ${showPath(start.workdir)}, env ${list(env)}, files ${list(start.files.map(showPath))}${network}${limits}${containment}${restart}`;
}

/** Egress is the owner's to see widen (§10, §12): every host:port and range added or removed. */
function egressLines(before: StartContext, after: StartContext): string[] {
  const out: string[] = [];
  if (before.network === undefined && after.network === undefined) return out;
  if (before.network === undefined)
    return [
      `start egress: none -> ${list([...(after.network?.allow ?? [])])}${after.network?.private.length ? `, private ${list([...after.network.private])}` : ""}`,
    ];
  if (after.network === undefined) return [`start egress: ${list([...before.network.allow])} -> none`];
  for (const [what, was, now] of [
    ["egress", before.network.allow, after.network.allow],
    ["egress private range", before.network.private, after.network.private],
  ] as const) {
    for (const item of now) if (!was.includes(item)) out.push(`start ${what} added: ${item}`);
    for (const item of was) if (!now.includes(item)) out.push(`start ${what} removed: ${item}`);
  }
  return out;
}

function startLines(before: StartContext | undefined, after: StartContext | undefined): string[] {
  if (before === undefined && after === undefined) return [];
  if (before === undefined) return [`start: (none) -> ${showStart(after as StartContext)}`];
  if (after === undefined) return [`start: ${showStart(before)} -> (none)`];
  const out: string[] = [];
  if (!same(before.command, after.command))
    out.push(`start command: ${list(before.command.map((a) => JSON.stringify(a)))} -> ${list(after.command.map((a) => JSON.stringify(a)))}`);
  if (before.workdir !== after.workdir) out.push(`start workdir: ${showPath(before.workdir)} -> ${showPath(after.workdir)}`);
  for (const name of sorted(new Set([...Object.keys(before.env), ...Object.keys(after.env)]))) {
    const was = Object.prototype.hasOwnProperty.call(before.env, name) ? before.env[name] : undefined;
    const now = Object.prototype.hasOwnProperty.call(after.env, name) ? after.env[name] : undefined;
    if (was === now) continue;
    if (was === undefined) out.push(`start env ${name} added: ${JSON.stringify(now)}`);
    else if (now === undefined) out.push(`start env ${name} removed (was ${JSON.stringify(was)})`);
    else out.push(`start env ${name}: ${JSON.stringify(was)} -> ${JSON.stringify(now)}`);
  }
  if (!same(before.files, after.files)) out.push(`start files: ${list(before.files.map(showPath))} -> ${list(after.files.map(showPath))}`);
  out.push(...egressLines(before, after));
  const limitsWas = showLimits(before.limits);
  const limitsNow = showLimits(after.limits);
  if (limitsWas !== limitsNow) out.push(`start limits: ${limitsWas} -> ${limitsNow}`);
  // Dropping containment is the widest change a seat can get: the owner sees it in words.
  const containmentWas = showContainment(before.containment);
  const containmentNow = showContainment(after.containment);
  if (containmentWas !== containmentNow)
    out.push(
      `start containment: ${containmentWas} -> ${containmentNow}${containmentNow === "none" ? " (the seat runs UNCONTAINED: it can read and write everything its host user can; refusals hold against a mistake only)" : ""}`,
    );
  const restartWas = showRestart(before.restart);
  const restartNow = showRestart(after.restart);
  if (restartWas !== restartNow) out.push(`start restart: ${restartWas} -> ${restartNow}`);
  return out;
}

function seatChange(
  name: string,
  before: Seat | undefined,
  beforeVocabulary: Vocabulary | undefined,
  after: Seat | undefined,
  afterVocabulary: Vocabulary,
): SeatChange | undefined {
  const was = heldBy(before, beforeVocabulary ?? afterVocabulary);
  const now = heldBy(after, afterVocabulary);
  const gains: string[] = [];
  const losses: string[] = [];
  const other: string[] = [];
  for (const [key, held] of now) if (!was.has(key)) gains.push(`${held.text}  (${held.sources.join(", ")})`);
  for (const [key, held] of was) if (!now.has(key)) losses.push(`${held.text}  (${held.sources.join(", ")})`);
  // Administrative capabilities have no scope: held or not (only leads, from the team file, today).
  const adminBefore = before?.admin ?? [];
  const adminAfter = after?.admin ?? [];
  for (const a of adminAfter) if (!adminBefore.includes(a)) gains.push(`${a}  (administrative)`);
  for (const a of adminBefore) if (!adminAfter.includes(a)) losses.push(`${a}  (administrative)`);

  if (before?.lab !== after?.lab) other.push(`lab: ${before?.lab ?? "(none)"} -> ${after?.lab ?? "(none)"}`);
  if (!same(before?.roles ?? [], after?.roles ?? [])) other.push(`roles: ${list(before?.roles ?? [])} -> ${list(after?.roles ?? [])}`);
  if (before !== undefined && after !== undefined) {
    for (const [key, held] of now) {
      const prior = was.get(key);
      if (prior !== undefined && !same(prior.sources, held.sources))
        other.push(`source of ${held.text}: ${prior.sources.join(", ")} -> ${held.sources.join(", ")}`);
    }
  }
  other.push(...startLines(before?.start, after?.start));
  // The context hash also pins every start file's content, which no other line shows.
  if (before?.contextHash !== after?.contextHash) other.push(`context hash: ${before?.contextHash ?? "(none)"} -> ${after?.contextHash ?? "(none)"}`);

  if (before !== undefined && after !== undefined && gains.length === 0 && losses.length === 0 && other.length === 0) return undefined;
  return {
    seat: name,
    status: before === undefined ? "added" : after === undefined ? "removed" : "changed",
    gains: sorted(gains),
    losses: sorted(losses),
    other,
  };
}

/** The team-wide part of a policy, so the first apply reads against the same shape as any other. */
interface TeamSettings {
  readonly team?: string;
  readonly vocabulary?: number;
  readonly declared: DeclaredSets;
  readonly roles: Readonly<Record<string, { readonly hash: string; readonly builtIn: boolean }>>;
  readonly constraints?: ConstraintProgram;
  readonly leads?: Policy["leads"];
  readonly ceiling?: Policy["ceiling"];
  readonly deny?: Policy["deny"];
  readonly twoGranter?: Policy["twoGranter"];
  readonly twoGranterLabs?: Policy["twoGranterLabs"];
  readonly deploys?: Policy["deploys"];
  readonly pushes?: Policy["pushes"];
  readonly trackers?: Policy["trackers"];
}

/** No policy in force reads as nothing declared but the seat branches (always there), and every default. */
const NONE_IN_FORCE: TeamSettings = { declared: { ...NO_DECLARED_SETS, branches: [SEAT_BRANCHES] }, roles: {} };

const DECLARED_NAMES: readonly (readonly [keyof DeclaredSets, string])[] = [
  ["branches", "branch"],
  ["envs", "env"],
  ["accounts", "account"],
  ["tasks", "task"],
  ["labs", "lab"],
];

function setLines(before: readonly string[], after: readonly string[], what: string): string[] {
  return [
    ...after.filter((v) => !before.includes(v)).map((v) => `${what} added: ${v}`),
    ...before.filter((v) => !after.includes(v)).map((v) => `${what} removed: ${v}`),
  ];
}

function showConstraint(c: CardinalityConstraint): string {
  switch (c.kind) {
    case "minimum":
      return `minimum ${c.count} of ${showSelector(c.of)} (pauses ${c.pauses.join(", ")})`;
    case "maximum":
      return `maximum ${c.count} of ${showSelector(c.of)}`;
    case "exclusion":
      return `exclusive ${list(c.of.map((s: Selector) => showSelector(s)).sort(compareStrings))}`;
  }
}

function constraintTexts(program: ConstraintProgram | undefined): string[] {
  if (program === undefined) return [];
  const out = program.constraints.map(showConstraint);
  if (program.deployAuthorInequality) out.push("author-inequality deploy");
  return [...new Set(out)];
}

/** Grant lists compared as sets of (capability, canonical scope), shown one line per grant. */
function grantLines(before: readonly Grant[], beforeVocabulary: Vocabulary, after: readonly Grant[], afterVocabulary: Vocabulary, what: string): string[] {
  const index = (grants: readonly Grant[], vocabulary: Vocabulary): Map<string, string> =>
    new Map(grants.map((g) => [grantKey(g, vocabulary), showGrant(g, vocabulary)]));
  const was = index(before, beforeVocabulary);
  const now = index(after, afterVocabulary);
  return [
    ...sorted([...now].filter(([k]) => !was.has(k)).map(([, text]) => `${what} added: ${text}`)),
    ...sorted([...was].filter(([k]) => !now.has(k)).map(([, text]) => `${what} removed: ${text}`)),
  ];
}

function ceilingGrants(ceiling: Policy["ceiling"]): Grant[] {
  const out: Grant[] = [];
  for (const [capability, scopes] of Object.entries(ceiling?.capabilities ?? {})) {
    for (const scope of (scopes ?? []) as readonly Scope[]) out.push({ capability: capability as OperationalCapability, scope });
  }
  return out;
}

function teamLines(before: TeamSettings, beforeVocabulary: Vocabulary, after: Policy): string[] {
  const out: string[] = [];
  if (before.team !== undefined && before.team !== after.team) out.push(`team: ${before.team} -> ${after.team}`);
  if (before.vocabulary !== undefined && before.vocabulary !== after.vocabulary.version)
    out.push(`vocabulary version: ${before.vocabulary} -> ${after.vocabulary.version}`);
  for (const [key, what] of DECLARED_NAMES) out.push(...setLines(before.declared[key], after.declared[key], `declared ${what}`));

  // A role's definition changing shows here even when no seat holds it; the seats that do show their gains and losses.
  const own = (roles: TeamSettings["roles"]): string[] => sorted(Object.keys(roles).filter((r) => roles[r]?.builtIn !== true));
  const rolesBefore = own(before.roles);
  const rolesAfter = own(after.roles);
  out.push(...setLines(rolesBefore, rolesAfter, "role"));
  for (const r of rolesAfter)
    if (rolesBefore.includes(r) && before.roles[r]?.hash !== after.roles[r]?.hash)
      out.push(`role changed: ${r} (${before.roles[r]?.hash ?? ""} -> ${after.roles[r]?.hash ?? ""})`);

  const reviewBefore = before.constraints?.review ?? { mode: "distinct-seat", floor: 0 };
  const reviewAfter = after.constraints.review;
  if (reviewBefore.mode !== reviewAfter.mode) out.push(`review mode: ${reviewBefore.mode} -> ${reviewAfter.mode}`);
  if (reviewBefore.floor !== reviewAfter.floor) out.push(`review floor: ${reviewBefore.floor} -> ${reviewAfter.floor}`);
  out.push(...setLines(constraintTexts(before.constraints), constraintTexts(after.constraints), "constraint"));

  if (before.leads?.seat !== after.leads?.seat) out.push(`leads: ${before.leads?.seat ?? "(none)"} -> ${after.leads?.seat ?? "(none)"}`);
  out.push(...grantLines(before.leads?.envelope ?? [], beforeVocabulary, after.leads?.envelope ?? [], after.vocabulary, "leads envelope"));

  const ttlBefore = before.ceiling?.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
  const ttlAfter = after.ceiling?.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
  if (ttlBefore !== ttlAfter) out.push(`ceiling lease-ttl: ${showDuration(ttlBefore)} -> ${showDuration(ttlAfter)}`);
  // Absent capabilities bound nothing; present, a capability they do not name is unreachable.
  const boundBefore = before.ceiling?.capabilities !== undefined;
  const boundAfter = after.ceiling?.capabilities !== undefined;
  if (boundBefore !== boundAfter)
    out.push(boundAfter ? "ceiling now bounds capabilities: what it does not name is unreachable" : "ceiling no longer bounds capabilities");
  out.push(...grantLines(ceilingGrants(before.ceiling), beforeVocabulary, ceilingGrants(after.ceiling), after.vocabulary, "ceiling"));

  out.push(...grantLines(before.deny ?? [], beforeVocabulary, after.deny ?? [], after.vocabulary, "deny"));
  out.push(...setLines(before.twoGranter ?? [], after.twoGranter ?? [], "two-granter"));
  if (before.twoGranterLabs !== after.twoGranterLabs)
    out.push(
      after.twoGranterLabs === "distinct" ? "two-granter: the two granters now from different labs" : "two-granter: the two granters may now share a lab",
    );

  // A deploy command runs outside every sandbox: a new pin of its script is a change the owner confirms.
  const deploysBefore = before.deploys ?? {};
  const deploysAfter = after.deploys ?? {};
  out.push(...setLines(sorted(Object.keys(deploysBefore)), sorted(Object.keys(deploysAfter)), "deploy command"));
  for (const env of sorted(Object.keys(deploysAfter))) {
    const was = Object.prototype.hasOwnProperty.call(deploysBefore, env) ? deploysBefore[env] : undefined;
    const now = deploysAfter[env];
    if (was !== undefined && now !== undefined && was.hash !== now.hash) out.push(`deploy command changed: ${env} (${was.hash} -> ${now.hash})`);
  }
  // A push runs under the owner's account, to the owner's remote: where and as whom are the owner's to confirm.
  const pushesBefore = before.pushes ?? {};
  const pushesAfter = after.pushes ?? {};
  const pushLine = (p: { url: string; branch: string; account: string }) => `${p.url} ${p.branch} as ${p.account}`;
  for (const env of sorted(new Set([...Object.keys(pushesBefore), ...Object.keys(pushesAfter)]))) {
    const was = Object.prototype.hasOwnProperty.call(pushesBefore, env) ? pushesBefore[env] : undefined;
    const now = Object.prototype.hasOwnProperty.call(pushesAfter, env) ? pushesAfter[env] : undefined;
    const a = was === undefined ? undefined : pushLine(was);
    const b = now === undefined ? undefined : pushLine(now);
    if (a !== b)
      out.push(
        b === undefined ? `deploy push removed: ${env}` : a === undefined ? `deploy push added: ${env} -> ${b}` : `deploy push changed: ${env}: ${a} -> ${b}`,
      );
  }
  // Which tracker serves a task resource decides where a seat's broker calls go (§11).
  const trackersBefore = before.trackers ?? {};
  const trackersAfter = after.trackers ?? {};
  const DEFAULT_TRACKER = "the default file tracker";
  for (const task of sorted(new Set([...Object.keys(trackersBefore), ...Object.keys(trackersAfter)]))) {
    const was = Object.prototype.hasOwnProperty.call(trackersBefore, task) ? trackersBefore[task] : undefined;
    const now = Object.prototype.hasOwnProperty.call(trackersAfter, task) ? trackersAfter[task] : undefined;
    if (was !== now) out.push(`tracker of task ${task}: ${was ?? DEFAULT_TRACKER} -> ${now ?? DEFAULT_TRACKER}`);
  }
  return out;
}

/**
 * The difference between the policy in force (`before`, undefined on the first apply) and the
 * one about to be applied. Pure and exact: a narrowed or widened scope is one loss and one gain,
 * never a vague "changed", so the owner confirms exactly what moves.
 */
export function diffPolicies(before: Policy | undefined, after: Policy): PolicyDiff {
  const beforeVocabulary = before?.vocabulary ?? after.vocabulary;
  const seats: SeatChange[] = [];
  const names = sorted(new Set([...Object.keys(before?.seats ?? {}), ...Object.keys(after.seats)]));
  const seatOf = (policy: Policy | undefined, name: string): Seat | undefined =>
    policy !== undefined && Object.prototype.hasOwnProperty.call(policy.seats, name) ? policy.seats[name] : undefined;
  for (const name of names) {
    const change = seatChange(name, seatOf(before, name), before?.vocabulary, seatOf(after, name), after.vocabulary);
    if (change !== undefined) seats.push(change);
  }
  const settings: TeamSettings =
    before === undefined
      ? NONE_IN_FORCE
      : {
          team: before.team,
          vocabulary: before.vocabulary.version,
          declared: before.declared,
          roles: before.roles,
          constraints: before.constraints,
          leads: before.leads,
          ceiling: before.ceiling,
          deny: before.deny,
          twoGranter: before.twoGranter,
          twoGranterLabs: before.twoGranterLabs,
          deploys: before.deploys,
          pushes: before.pushes,
          trackers: before.trackers,
        };
  const team = teamLines(settings, beforeVocabulary, after);
  const unchanged = before !== undefined && before.hash === after.hash && seats.length === 0 && team.length === 0;
  return { first: before === undefined, seats, team, unchanged };
}
