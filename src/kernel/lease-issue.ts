import { type GranterSignature, checkTwoGranter, secondGranter } from "./agreement.js";
import type { Authority } from "./authority.js";
import { DEFAULT_LEASE_TTL_MS, TOOL_MAX_LEASE_TTL_MS } from "./ceiling.js";
import { leaseBoundaryRefusal } from "./ceiling-deny.js";
import { visibilityWidens } from "./envelope-visibility.js";
import { type HoldingSeat, violations } from "./constraints.js";
import { type Refusal, refuse } from "./decision.js";
import { showDuration } from "./delegation-input.js";
import type { LeaseFact } from "./facts.js";
import { chainSeats, heldSource, leaseList, liveLeases, walkLease } from "./lease-liveness.js";
import { showPath } from "./paths.js";
import type { PolicyProblem } from "./policy-input.js";
import { isPlainObject, ownValue } from "./records.js";
import { type Scope, type ScopeUniverse, canonicalDimension, formatScope, scopeWithin } from "./scope.js";
import { readScope } from "./scope-input.js";
import type { KernelView } from "./view.js";
import { type Dimension, type OperationalCapability, capabilitySpec } from "./vocabulary.js";

/**
 * Issuing a lease (§7, §9, §10), decided before its record is appended. Two origins: a root
 * lease names its `source` — a standing grant the issuer holds, or the leads envelope when
 * the issuer is leads; a re-lease names its `parent` — a live lease the issuer holds — and is
 * never wider than it nor outlives it. In order: the request's shape; only operational
 * capabilities; a present leads; the issuer and the recipient are member seats; the lifetime
 * (after now, within the ceiling's lease-ttl, under the tool maximum); the scope reads; the
 * source (a parentless lease from an issuer acting from a lease is refused); the whole-chain
 * ban; the deny and the ceiling over the whole lease; two-granter; §5 over standing plus live
 * leases with the new one counted. The result carries the lease record to append.
 */
export interface LeaseRequest {
  /** The new lease's id, minted outside the kernel. */
  readonly leaseId: string;
  /** The issuing seat: the socket the request arrived on. */
  readonly issuer: string;
  readonly recipient: string;
  readonly capability: string;
  /** Written as the team file writes a scope; an omitted dimension is unconstrained. */
  readonly scope: unknown;
  readonly expiresAt: number;
  /** A re-lease: the held lease it attenuates (mandatory when acting from a lease). */
  readonly parent?: string;
  /** A root lease: the authority id of its source (a standing grant, or `leads:envelope/…`). */
  readonly source?: string;
  /**
   * For a two-granter capability: both granters' confirmations of this issuance (§10), the
   * issuer's first, each made over the input state it names; `inputState` is the state now,
   * hashed by the daemon from the ledger at this decision — never a request's field.
   */
  readonly coSigned?: { readonly proposal: string; readonly inputState: string; readonly signatures: readonly GranterSignature[] };
}

/** A lease request waiting for its second granter (§10): the issuer's request, its lifetime not yet started. */
export type ProposedLease = Omit<LeaseRequest, "leaseId" | "expiresAt" | "coSigned"> & { readonly ttlMs: number };

export type LeaseDecision = { readonly decision: "issue"; readonly lease: LeaseFact } | Refusal;

/** Decide a lease issuance. Pure and total: it never throws. */
export function issueLease(view: KernelView, request: LeaseRequest, now: number): LeaseDecision {
  try {
    return decideLease(view, request as unknown, now);
  } catch (error) {
    return refuse(
      "kernel.fault",
      `the lease could not be evaluated (${error instanceof Error ? error.message : "a non-error value was thrown"}); refused (fail closed)`,
    );
  }
}

const FIELDS = ["leaseId", "issuer", "recipient", "capability", "scope", "expiresAt", "parent", "source", "coSigned"];

function readLeaseRequest(input: unknown): LeaseRequest | Refusal {
  if (!isPlainObject(input)) return refuse("request.malformed", "a lease request is an object");
  for (const k of Object.keys(input)) if (!FIELDS.includes(k)) return refuse("request.malformed", `a lease request has no field '${k}'`);
  for (const k of ["leaseId", "issuer", "recipient", "capability"])
    if (typeof input[k] !== "string" || input[k] === "") return refuse("request.malformed", `a lease request names its ${k}`);
  for (const k of ["parent", "source"])
    if (input[k] !== undefined && (typeof input[k] !== "string" || input[k] === ""))
      return refuse("request.malformed", `a lease request's ${k} is a non-empty id`);
  if (typeof input.expiresAt !== "number" || !Number.isFinite(input.expiresAt))
    return refuse("request.malformed", "a lease request names its hard expiry (epoch ms)");
  if (input.parent !== undefined && input.source !== undefined)
    return refuse("request.malformed", "a lease has one source: a parent lease (re-lease) or a standing grant or the envelope (root lease), not both");
  return input as unknown as LeaseRequest;
}

/** The scope in the record's written form: `*` or the canonical values (the root path as `.`). */
function writtenScope(scope: Scope, dimensions: readonly Dimension[]): Record<string, string | readonly string[]> {
  const out: Record<string, string | readonly string[]> = {};
  for (const d of dimensions) {
    const s = scope[d];
    if (s === undefined) continue;
    const value = canonicalDimension(s);
    out[d] = value === "*" ? "*" : d === "path" ? value.map(showPath) : [...value];
  }
  return out;
}

function decideLease(view: KernelView, input: unknown, now: number): LeaseDecision {
  if (typeof now !== "number" || !Number.isFinite(now)) return refuse("request.malformed", "the decision time is not a finite number");
  const request = readLeaseRequest(input);
  if ("decision" in request) return request;
  const policy = view.policy;
  const { leaseId, issuer, recipient, capability } = request;
  if (view.facts.leases !== undefined && ownValue(view.facts.leases, leaseId) !== undefined)
    return refuse("request.malformed", `lease id ${leaseId} is already used; ids are minted fresh`);
  const spec = capabilitySpec(policy.vocabulary, capability);
  if (spec === undefined) return refuse("vocab.unknown", `'${capability}' is not a capability in vocabulary version ${policy.vocabulary.version}`);
  if (spec.kind !== "operational")
    return refuse("lease.administrative", `${capability} is administrative; create, grant, agree and leads are never in a lease (§7)`);
  const cap = capability as OperationalCapability;
  if (policy.leads === undefined) return refuse("lease.no-leads", "the team has no leads; no lease of any origin issues without a present leads (§9)");
  if (ownValue(policy.seats, issuer) === undefined) return refuse("seat.unknown", `seat '${issuer}' is not in the policy in force`);
  if (ownValue(policy.seats, recipient) === undefined)
    return refuse("lease.recipient", `'${recipient}' is not a member seat; a lease binds to an existing seat's stable identity (§7)`);

  const ttl = Math.min(policy.ceiling?.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS, TOOL_MAX_LEASE_TTL_MS);
  if (request.expiresAt <= now) return refuse("lease.ttl", `the lease's expiry ${request.expiresAt} is not after its issue time ${now}`);
  if (request.expiresAt - now > ttl)
    return refuse(
      "lease.ttl",
      `the lease asks for ${showDuration(request.expiresAt - now)}, past the ceiling's lease-ttl of ${showDuration(ttl)}; a lease asking for more is refused, not shortened`,
    );

  const problems: PolicyProblem[] = [];
  const scope = readScope(cap, spec.dimensions, request.scope, ["scope"], {
    vocabulary: policy.vocabulary,
    declared: policy.declared,
    reserved: policy.reserved,
    problems,
  });
  const first = problems[0];
  if (scope === undefined || first !== undefined) return refuse(first?.rule ?? "request.malformed", `the lease's scope: ${first?.message ?? "unreadable"}`);
  const universe: ScopeUniverse = { declared: policy.declared };
  const shown = `${cap}${formatScope(scope, spec.dimensions)}`;

  let rootGrant: string;
  let chain: readonly LeaseFact[] = [];
  if (request.parent !== undefined) {
    const parent = walkLease(view, request.parent, now);
    if (!parent.live) return refuse(parent.refusal.rule, `the parent lease ${request.parent} is not live: ${parent.refusal.reason}`);
    if (parent.lease.holder !== issuer)
      return refuse(
        "lease.parent",
        `the parent ${request.parent} is held by ${parent.lease.holder}, not by ${issuer}; a re-lease attenuates a lease its issuer holds`,
      );
    if (parent.authority.capability !== cap || scopeWithin(scope, parent.authority.scope, universe) !== true) {
      return refuse(
        "lease.wider",
        `${shown} is wider than its parent ${request.parent} (${parent.authority.capability}${formatScope(parent.authority.scope, spec.dimensions)}); a re-lease only attenuates`,
      );
    }
    if (request.expiresAt > parent.lease.expiresAt)
      return refuse("lease.wider", `the re-lease would outlive its parent ${request.parent} (expiry ${parent.lease.expiresAt})`);
    rootGrant = parent.lease.rootGrant;
    chain = parent.chain;
  } else {
    const source = request.source;
    const actingFromLease =
      source === undefined
        ? liveLeases(view, issuer, cap, now).length > 0
        : source.startsWith("lease:") || (view.facts.leases !== undefined && ownValue(view.facts.leases, source) !== undefined);
    if (actingFromLease)
      return refuse(
        "lease.parent",
        `${issuer} acts from a lease, so the re-lease names that lease as its parent; a parentless lease from a lease is refused (§7)`,
      );
    if (source === undefined) return refuse("request.malformed", "a root lease names its source: the standing grant it is drawn from, or the leads envelope");
    const held = heldSource(view, issuer, source);
    if (held === undefined) {
      return refuse(
        "lease.source",
        source.startsWith("leads:")
          ? `only leads (${policy.leads.seat}) issues from the envelope, and ${source} is not in it unless named there`
          : `${issuer} does not hold the standing grant ${source} (or it is revoked)`,
      );
    }
    if (held.capability !== cap || scopeWithin(scope, held.scope, universe) !== true)
      return refuse("lease.wider", `${shown} is not within its source ${held.id}; a root lease confers only within the authority it is drawn from`);
    rootGrant = held.id;
  }

  // The whole-chain ban (§7): never leads, never the originating issuer, never an issuer or holder in the chain.
  const banned = chainSeats(chain);
  banned.add(issuer);
  if (recipient === policy.leads.seat) return refuse("lease.ancestor", `${recipient} is leads; no lease path of any length lands a capability on leads (§7)`);
  if (banned.has(recipient))
    return refuse("lease.ancestor", `${recipient} is already an issuer or holder in this lease's chain; a lease never returns authority upward (§7)`);

  const boundary = leaseBoundaryRefusal(policy, cap, spec.dimensions, scope, universe);
  if (boundary !== undefined) return boundary;
  // §8: a read lease may not widen what the recipient's lab sees past its cap.
  const widens = cap === "read" ? visibilityWidens(policy, recipient, scope, universe) : undefined;
  if (widens !== undefined) return widens;

  let coSigner: string | undefined;
  if ((policy.twoGranter ?? []).includes(cap)) {
    const signed = request.coSigned;
    if (signed === undefined)
      return refuse(
        "lease.two-granter",
        `${cap} is behind two-granter agreement; a single-issuer lease of it is refused — two granters co-sign the issuance (§10)`,
      );
    if (signed.signatures[0]?.signer !== issuer)
      return refuse("lease.two-granter", `the issuer ${issuer} must itself be one of the two granters, and the first (§10)`);
    // The issuer's authority is its source (above); the second is a granter: the owner or a grant holder, never leads (§9).
    const second = signed.signatures[1]?.signer ?? "";
    const void_ = secondGranter(view, issuer, second) ?? checkTwoGranter(signed.proposal, signed.inputState, signed.signatures);
    if (void_ !== undefined) return void_;
    coSigner = second;
  }

  const lease: LeaseFact = Object.freeze({
    id: leaseId,
    ...(request.parent !== undefined ? { parent: request.parent } : {}),
    rootGrant,
    issuer,
    holder: recipient,
    capability: cap,
    scope: writtenScope(scope, spec.dimensions),
    issuedAt: now,
    expiresAt: request.expiresAt,
    ...(coSigner !== undefined ? { coSigner } : {}),
  });
  const leased: Authority = { id: `lease:${leaseId}`, seat: recipient, capability: cap, scope, source: { kind: "lease", lease: leaseId, rootGrant, issuer } };
  const broken = constraintBreak(view, now, leased);
  if (broken !== undefined) return broken;
  return { decision: "issue", lease };
}

/**
 * The seats as §5 counts them: standing authority plus every live lease (effective authority,
 * §10), optionally with one more lease counted.
 */
export function effectiveSeats(view: KernelView, now: number, extra?: Authority): Record<string, HoldingSeat> {
  const byHolder = new Map<string, Authority[]>();
  for (const lease of leaseList(view.facts.leases)) {
    const l = walkLease(view, lease.id, now);
    if (!l.live) continue;
    const list = byHolder.get(lease.holder);
    if (list === undefined) byHolder.set(lease.holder, [l.authority]);
    else list.push(l.authority);
  }
  if (extra !== undefined) byHolder.set(extra.seat, [...(byHolder.get(extra.seat) ?? []), extra]);
  const out: Record<string, HoldingSeat> = {};
  for (const seat of Object.values(view.policy.seats)) {
    const leased = byHolder.get(seat.name) ?? [];
    if (leased.length === 0) {
      out[seat.name] = seat;
      continue;
    }
    const authorities = [...seat.authorities, ...leased];
    const byCapability: Partial<Record<OperationalCapability, Authority[]>> = {};
    for (const a of authorities) (byCapability[a.capability] ??= []).push(a);
    out[seat.name] = { name: seat.name, roles: seat.roles, authorities, byCapability };
  }
  return out;
}

/** §5 re-checked when a lease issues (§10): a maximum or exclusion the new lease would break. */
function constraintBreak(view: KernelView, now: number, leased: Authority): Refusal | undefined {
  const program = view.policy.constraints;
  if (program.constraints.length === 0) return undefined;
  const key = (v: { rule: string; index: number; message: string }): string => (v.rule === "constraint.exclusion" ? v.message : `${v.rule}:${v.index}`);
  const before = new Set(violations(program, effectiveSeats(view, now), view.facts).map(key));
  const fresh = violations(program, effectiveSeats(view, now, leased), view.facts).find((v) => v.rule !== "constraint.minimum" && !before.has(key(v)));
  return fresh === undefined
    ? undefined
    : refuse(fresh.rule, `${fresh.message}, counting the lease; leases count toward §5 like standing grants, so the lease is refused`);
}
