import { ScopeState } from "../gen/teamd/v1/ledger_pb.js";
import type { KernelFacts } from "../kernel/facts.js";
import type { Scope } from "../kernel/scope.js";
import { sha256 } from "./codec.js";
import type { CapabilityUseInit } from "./owner-act.js";

/**
 * The exact input state of an act (§15: "the tree hash, the team-file hash and the lease-set
 * hash, so two implementations agree on what the same act is"), and the capability with the
 * scope that covered it. Each is defined so another implementation recomputes it from the hub
 * and the ledger alone (test/integration/input-state.test.ts does):
 *
 * - lease-set hash: SHA-256 of the ids of the team's lease records the decision read — every
 *   lease recorded before the act's intent, less every one a revocation before it names —
 *   sorted by UTF-16 code unit, each followed by "\n". Expired leases stay in the set: whether
 *   one was live is decided by its expiry against the record's time, both on record.
 * - tree hash: the git tree of the hub's state the act was decided against (the caller's: a
 *   trunk act's destination trunk at its base, a push's or file write's ref before it); empty
 *   where the act is on no ref, or the ref did not exist.
 */
// eslint-disable-next-line teamd/module-state -- keyed by the projection's frozen lease objects: a function of its key, holding nothing alive
const memo = new WeakMap<object, WeakMap<object, Uint8Array>>();
const encoder = new TextEncoder();

export function leaseSetHash(facts: Pick<KernelFacts, "leases" | "revokedLeases">): Uint8Array {
  const leases = facts.leases ?? {};
  const revoked = facts.revokedLeases ?? [];
  // The projection hands out one frozen object per change (lease-records.ts): hash each once.
  const inner = memo.get(leases)?.get(revoked);
  if (inner !== undefined) return inner;
  const gone = new Set(revoked);
  const ids = Object.keys(leases)
    .filter((id) => !gone.has(id))
    .sort();
  const hash = sha256(encoder.encode(ids.map((id) => `${id}\n`).join("")));
  if (Object.isFrozen(leases) && Object.isFrozen(revoked)) {
    const byRevoked = memo.get(leases) ?? new WeakMap<object, Uint8Array>();
    byRevoked.set(revoked, hash);
    memo.set(leases, byRevoked);
  }
  return hash;
}

/** The capability used and the scope of the authority that covered the act, dimension by dimension (names sorted). */
export function capabilityUse(capability: string, scope: Scope | undefined): CapabilityUseInit {
  const dimensions = Object.entries(scope ?? {})
    .filter((entry): entry is [string, NonNullable<(typeof entry)[1]>] => entry[1] !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, d]) =>
      d.state === "bounded"
        ? { name, state: ScopeState.BOUNDED, values: [...d.values] }
        : { name, state: d.state === "empty" ? ScopeState.EMPTY : ScopeState.UNCONSTRAINED, values: [] },
    );
  return { capability, scope: dimensions };
}
