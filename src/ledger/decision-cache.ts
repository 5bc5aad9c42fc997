import type { Policy } from "../kernel/index.js";

/** A team's policy in force, rebuilt from its record (policy-in-force.ts). */
export interface PolicyInForce {
  readonly policy: Policy;
  readonly seq: number;
  readonly teamFileHash: string;
  /** The same hash as bytes, as every gated act's intent records it (its input state, §15). */
  readonly teamFileHashBytes: Uint8Array;
}

/**
 * What the decision view keeps between requests, owned by one ledger instance (each
 * openLedger makes its own): never by a module, so two ledgers in one process — a daemon and
 * a test's, or two tests' — never see each other's loads.
 *
 * A policy record is immutable, so its load is kept by (team, seq): a seat request pays for
 * the canonical parse (and the deep freeze) once per applied policy, not once per call. The
 * lease facts and flagged revocations need no cache of their own: the ledger's view holds the
 * facts frozen once per change, and its flags are read at most once per event-loop turn.
 */
export interface DecisionCache {
  /** The policy record `seq` of `team`, loaded by `load` the first time it is asked for. */
  policy(team: string, seq: number, load: () => PolicyInForce): PolicyInForce;
}

export function createDecisionCache(): DecisionCache {
  const policies = new Map<string, PolicyInForce>();
  return {
    policy(team, seq, load) {
      const key = `${team}\0${seq}`;
      const known = policies.get(key);
      if (known !== undefined) return known;
      const loaded = load();
      policies.set(key, loaded);
      return loaded;
    },
  };
}
