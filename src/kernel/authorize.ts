import { actAsAccount } from "./act-as.js";
import { actTime } from "./act-time.js";
import { candidateAuthorities } from "./authorities.js";
import type { Authority } from "./authority.js";
import { boundaryRefusal } from "./ceiling-deny.js";
import { visibilityRefusal } from "./envelope-visibility.js";
import { type CanonicalEffect, SCOPE_RULES, coverByOne } from "./coverage.js";
import { type Decision, type Refusal, allow, refuse } from "./decision.js";
import { isDeclared } from "./declared.js";
import { deadLeases } from "./lease-liveness.js";
import { canonicalPath } from "./paths.js";
import type { Policy, Seat } from "./policy.js";
import { type KernelRequest, readRequest, type ReadRequest } from "./request.js";
import { normalizeBranch } from "./refs.js";
import { type ReservedSet, effectReservedReason, reservedReason } from "./reserved.js";
import type { ScopeUniverse } from "./scope.js";
import type { KernelView } from "./view.js";
import { DIMENSIONS, type OperationalCapability, type OperationalSpec, capabilitySpec, resolveVocabulary } from "./vocabulary.js";

/**
 * The one decision function. Every gated act a seat requests is decided here, from the view
 * (the policy in force and the ledger's facts), the request, and the time — all data. It is
 * total: it always returns, never throws (a fault inside refuses with `kernel.fault`), and its
 * default is refuse — an allow is reached only when one single authority covers the whole
 * effect and every stage after it passes. Each refusal names its rule id.
 *
 * Stages, in order: the request's shape; the vocabulary (unknown capability, administrative
 * capability not decided yet, dimension not taken); the seat; the effect made canonical; the
 * reserved set; the use-broker operation list; the seat's authorities for the capability —
 * its standing list and its live leases (authorities.ts); the declared sets; the owner's deny
 * and ceiling (§8, ceiling-deny.ts: deny wins over every grant and lease, outside the ceiling
 * is unreachable); coverage by one authority (§6); act-as when the effect runs under the
 * owner's identity (§3); the act-time stage (act-time.ts, issue 5). An allow under a lease
 * names it (`lease:<id>`); where nothing covers the effect but a lease the seat holds would
 * have, had it been live, the refusal names why that lease is dead (`lease.revoked`,
 * `lease.source`, …), so a seat learns which lease ended rather than only that it holds none.
 *
 * `now` is the decision time in epoch milliseconds, supplied by the caller (the kernel reads
 * no clock): lease liveness (expiry) is read against it. The ledger's facts (view.facts) are
 * read by the act-time stage, the revocation filter and the lease walk.
 */
export function authorize(view: KernelView, request: KernelRequest, now: number): Decision {
  return decideTotally(view, request, now, effectReservedReason);
}

/**
 * `authorize` for effects that reach only the named paths themselves, never anything under
 * them: a reserved object below a path is no bar (reservedReason, not effectReservedReason).
 * Asked where a folder made blind goes over a file of its name (blind-write.ts), which is all
 * such a write can take away; every other stage is authorize's own.
 */
export function authorizeNamesOnly(view: KernelView, request: KernelRequest, now: number): Decision {
  return decideTotally(view, request, now, reservedReason);
}

function decideTotally(view: KernelView, request: KernelRequest, now: number, reservedOf: ReservedOf): Decision {
  try {
    // Typed for callers; read as unknown, because a total function answers anything it is given.
    return decide(view, request as unknown, now, reservedOf);
  } catch (error) {
    const what = error instanceof Error ? error.message : "a non-error value was thrown";
    return refuse("kernel.fault", `the decision could not be evaluated (${what}); refused (fail closed)`);
  }
}

/** The broker operations use-broker decides (§11): the one list, the broker handler reads it too. */
export const BROKER_OPERATIONS: readonly string[] = Object.freeze(["pull", "claim", "read", "comment"]);

type ReservedOf = (reserved: ReservedSet, path: string) => string | undefined;

function decide(view: KernelView, input: unknown, now: number, reservedOf: ReservedOf): Decision {
  if (typeof now !== "number" || !Number.isFinite(now)) return refuse("request.malformed", "the decision time is not a finite number");
  const request = readRequest(input);
  if ("decision" in request) return request;
  const policy = view.policy;
  // Every later stage sees the decision time: leases are live only at a time.
  const at: KernelView = { policy, facts: view.facts, now };
  const vocabulary = resolveVocabulary(policy.vocabulary.version);
  if (vocabulary === undefined)
    return refuse("vocab.version", `the policy pins capability vocabulary ${policy.vocabulary.version}, which this release does not resolve`);
  const spec = capabilitySpec(vocabulary, request.capability);
  if (spec === undefined) return refuse("vocab.unknown", `'${request.capability}' is not a capability in vocabulary version ${vocabulary.version}`);
  if (spec.kind === "administrative") {
    return refuse("vocab.unsupported", `${request.capability} is an administrative capability; its operations (§9, §10) are not decided by this release`);
  }
  const capability = request.capability as OperationalCapability;
  for (const d of DIMENSIONS) {
    if (request.values[d] !== undefined && !spec.dimensions.includes(d)) {
      return refuse("vocab.dimension", `${capability} does not take the ${d} dimension (it takes ${spec.dimensions.join(", ")})`);
    }
  }
  for (const d of spec.required) {
    if (request.values[d] === undefined)
      return refuse("request.malformed", `a ${capability} request must name its ${d === "path" ? "paths (effect.paths)" : `${d} (effect.${d})`}`);
  }
  const seat = Object.prototype.hasOwnProperty.call(policy.seats, request.seat) ? policy.seats[request.seat] : undefined;
  if (seat === undefined) return refuse("seat.unknown", `seat '${request.seat}' is not in the policy in force (${policy.hash})`);

  const effect = canonicalEffect(request);
  if ("decision" in effect) return effect;
  for (const path of effect.path ?? []) {
    const why = reservedOf(policy.reserved, path);
    if (why !== undefined) return refuse("reserved.object", `${why}; no scope opens a reserved object to a seat's ${capability}`);
  }
  const broker = checkBroker(policy, capability, request);
  if (broker !== undefined) return broker;
  const underAccount = accountOf(policy, capability, request);
  if ("decision" in underAccount) return underAccount;

  const universe: ScopeUniverse = { declared: policy.declared };
  const candidates = candidateAuthorities(at, seat, capability);
  if (candidates.length === 0)
    return deadLease(at, seat, capability, spec, effect, universe) ?? refuse("authority.none", `seat ${seat.name} holds no ${capability} capability`);
  const undeclared = outsideDeclared(spec, effect, universe);
  if (undeclared !== undefined) return undeclared;
  const boundary = boundaryRefusal(policy, capability, spec.dimensions, effect, universe);
  if (boundary !== undefined) return boundary;
  const unseen = capability === "read" ? visibilityRefusal(policy, seat.name, effect.path ?? [], universe) : undefined;
  if (unseen !== undefined) return unseen;

  const covering = coverByOne(capability, spec.dimensions, candidates, effect, universe);
  if ("decision" in covering) return deadLease(at, seat, capability, spec, effect, universe) ?? covering;
  const actAs = coverActAs(at, seat, capability, underAccount.account, universe);
  if (actAs !== undefined && "decision" in actAs) return actAs;
  return actTime(at, allow(capability, covering, actAs), { seat, effect, effectId: request.effectId });
}

/**
 * When nothing live covers the effect: the refusal of a dead lease the seat holds that would
 * have covered it, so the seat is told which lease ended and why (§7).
 */
function deadLease(
  view: KernelView,
  seat: Seat,
  capability: OperationalCapability,
  spec: OperationalSpec,
  effect: CanonicalEffect,
  universe: ScopeUniverse,
): Refusal | undefined {
  if (view.now === undefined || view.facts.leases === undefined) return undefined;
  for (const d of deadLeases(view, seat.name, capability, view.now)) {
    if (d.live || d.authority === undefined) continue;
    const one: Authority[] = [d.authority];
    if (!("decision" in coverByOne(capability, spec.dimensions, one, effect, universe)))
      return refuse(d.refusal.rule, `seat ${seat.name}'s lease would cover this ${capability}, and it is not live: ${d.refusal.reason}`);
  }
  return undefined;
}

/** The effect's values in canonical form: paths lexically canonical, refs as short names. */
function canonicalEffect(request: ReadRequest): CanonicalEffect | Refusal {
  const { path: rawPaths, branch: rawBranch, env, account, task } = request.values;
  let paths: string[] | undefined;
  if (rawPaths !== undefined) {
    // A set, not a search of the list: a push may name 200,000 paths, and a search per path
    // held the daemon's one thread for 68 s (found by an attack, round eleven).
    const seen = new Set<string>();
    for (const p of rawPaths) {
      const canonical = canonicalPath(p);
      if (!canonical.ok) return refuse(canonical.undecidable ? "scope.undecidable" : "scope.path", `path '${p}': ${canonical.reason}`);
      if (canonical.path === "") return refuse("request.malformed", "the effect names the repository root itself; name the files it touches");
      seen.add(canonical.path);
    }
    paths = [...seen];
  }
  let branch: string[] | undefined;
  if (rawBranch !== undefined) {
    const normalized = normalizeBranch(rawBranch, { pattern: false });
    if (!normalized.ok) return refuse("scope.branch", normalized.reason);
    branch = [normalized.name];
  }
  return {
    path: paths,
    branch,
    env: env === undefined ? undefined : [env],
    account: account === undefined ? undefined : [account],
    task: task === undefined ? undefined : [task],
  };
}

/** A name outside its declared set is outside every scope, unconstrained or globbed (§6). */
function outsideDeclared(spec: OperationalSpec, effect: CanonicalEffect, universe: ScopeUniverse): Refusal | undefined {
  for (const d of spec.dimensions) {
    if (d === "path") continue;
    for (const value of effect[d] ?? []) {
      if (!isDeclared(universe.declared, d, value)) {
        return refuse(SCOPE_RULES[d], `${d} '${value}' is not in the declared ${d} set, so it is outside every scope (declaring it is an owner act)`);
      }
    }
  }
  return undefined;
}

function checkBroker(policy: Policy, capability: OperationalCapability, request: ReadRequest): Refusal | undefined {
  if (capability !== "use-broker") {
    return request.brokerOperation === undefined ? undefined : refuse("request.malformed", `brokerOperation belongs to use-broker, not ${capability}`);
  }
  if (request.brokerOperation === undefined) return refuse("request.malformed", "a use-broker request must name its operation (pull, claim, read or comment)");
  if (!BROKER_OPERATIONS.includes(request.brokerOperation)) {
    return refuse(
      "broker.operation",
      `'${request.brokerOperation}' is not a broker operation; a holder may pull a task, claim a task, read its non-secret fields, or comment on it under the owner's account, and nothing else`,
    );
  }
  // A comment is the owner's speech (§3): it needs act-as in addition to use-broker. pull, read
  // and claim run under the tracker's credential, so an account named there is refused rather
  // than decided and then ignored (act-as.ts decides which, for the broker and deploy alike).
  const underAccount = actAsAccount(policy, { act: "broker", operation: request.brokerOperation }, request.asAccount);
  return "decision" in underAccount ? underAccount : undefined;
}

/**
 * The account the act runs under (§3, §6: the account the operation resolves to, not the one
 * the request names): a deploy's is the one the policy declares for its environment's push,
 * whether or not the request names it (act-as.ts); any other act's is the one it names.
 */
function accountOf(policy: Policy, capability: OperationalCapability, request: ReadRequest): { readonly account: string | undefined } | Refusal {
  if (capability !== "deploy" || request.values.env === undefined) return { account: request.asAccount };
  return actAsAccount(policy, { act: "deploy", env: request.values.env }, request.asAccount);
}

/** act-as over the owner's account, required in addition to the operational capability (§3). */
function coverActAs(
  view: KernelView,
  seat: Seat,
  capability: OperationalCapability,
  account: string | undefined,
  universe: ScopeUniverse,
): ReturnType<typeof coverByOne> | Refusal | undefined {
  if (account === undefined) return undefined;
  if (capability === "act-as") return refuse("request.malformed", "an act-as request names its account in effect.account, not asAccount");
  if (!isDeclared(universe.declared, "account", account)) {
    return refuse("scope.account", `account '${account}' is not in the declared account set, so it is outside every scope`);
  }
  const candidates = candidateAuthorities(view, seat, "act-as");
  if (candidates.length === 0) {
    return refuse(
      "authority.none",
      `the ${capability} runs under the owner's account '${account}', and seat ${seat.name} holds no act-as; act-as is required in addition to ${capability}`,
    );
  }
  const boundary = boundaryRefusal(view.policy, "act-as", ["account"], { account: [account] }, universe);
  if (boundary !== undefined) return boundary;
  return coverByOne("act-as", ["account"], candidates, { account: [account] }, universe);
}
