import { isPlainObject } from "./records.js";

/**
 * What the ledger holds that an act-time decision reads (§5, §15, O), as plain data. The
 * ledger's projection (src/ledger/view.ts) supplies it: each list is a projection of one kind
 * of Kernel record — the author set of a change, gate and review records, intents and
 * outcomes keyed by effect id, revocations, consumed passes — plus each running seat's run
 * and home from the seat lifecycle. Nothing here is computed by the kernel: effect ids are
 * hashes made outside it, and a fact the ledger cannot establish is simply absent, which the
 * kernel reads as "unknown" and refuses (fail closed, §15).
 *
 * Every field is optional: a decision that needs a fact that is absent refuses; a decision
 * that does not need it never looks (write and read read no fact at all).
 */
export interface KernelFacts {
  /**
   * The full author set of each change, by its effect id: every seat that wrote a commit in
   * it, with the run (one launch of the seat) and the home it wrote from. An effect id with
   * no entry, or an empty one, is unknown authorship: gate, merge, review and a bound deploy
   * refuse (§5, §15).
   */
  readonly authors?: Readonly<Record<string, readonly AuthorFact[]>>;
  /** The live run and home of each running seat: the verifier side of independence (O). */
  readonly runs?: Readonly<Record<string, RunFact>>;
  /** Gate records (§15): a pass or a refusal, each bound to the effect id it gated. */
  readonly gates?: readonly GateRecordFact[];
  /** Review records: a verdict by a seat on one effect id (§5 review floor). */
  readonly reviews?: readonly ReviewRecordFact[];
  /** Intent records of gated acts; read only to say that an intent never authorizes (§15). */
  readonly intents?: readonly IntentFact[];
  /** Outcome records of gated acts; a refused or unknown one voids every pass for its effect id. */
  readonly outcomes?: readonly OutcomeFact[];
  /** Ids of gate records a merge has already consumed (each is consumed at most once). */
  readonly consumed?: readonly string[];
  /**
   * Authority ids revoked since the policy was applied (an owner's revocation is not a
   * request: it applies at once). A revoked authority covers nothing, counts toward no
   * minimum, and voids every pass its holder signed under it.
   */
  readonly revoked?: readonly string[];
  /** Seats stopped: they count toward no minimum until they start again (§5). */
  readonly stopped?: readonly string[];
  /**
   * Lease records (§7, §15) by lease id: immutable, as issued. The ledger's lease projection
   * supplies them (src/ledger/view.ts `lease(id)`: leaseId, parent, rootGrant, expiry,
   * holder — plus the issuer, capability, scope and issue time the record carries). Liveness
   * is never stored: it is walked at use time (lease-liveness.ts).
   */
  readonly leases?: Readonly<Record<string, LeaseFact>>;
  /**
   * Lease ids with a revocation record (subject lease). Monotonic: once here, a lease never
   * returns — a restored grant is a fresh grant (§7).
   */
  readonly revokedLeases?: readonly string[];
}

/**
 * One lease record (§7): who issued it to whom, what it confers, from which source, until
 * when. `parent` is mandatory for a re-lease and absent only for a root lease; `rootGrant` is
 * the id of the originating authority — a standing grant the originating issuer held
 * (`alice/role:merger/merge/0`) or the leads envelope (`leads:envelope/merge/0`) — carried
 * down every re-lease of the chain. `scope` is written as the team file writes a scope
 * (`{ path: [src/], branch: [main] }`, `*` unconstrained), so it is re-read against the
 * declared sets in force at every use: a name removed since never silently re-resolves.
 */
export interface LeaseFact {
  readonly id: string;
  readonly parent?: string;
  readonly rootGrant: string;
  readonly issuer: string;
  readonly holder: string;
  readonly capability: string;
  readonly scope: Readonly<Record<string, string | readonly string[]>>;
  readonly issuedAt: number;
  readonly expiresAt: number;
  /** For a two-granter capability: the second granter who co-signed the issuance (§10). */
  readonly coSigner?: string;
}

export interface AuthorFact {
  readonly seat: string;
  readonly run: string;
  readonly home: string;
}

export interface RunFact {
  readonly run: string;
  readonly home: string;
}

export interface GateRecordFact {
  /** The record's id in the ledger (its seq or hash): what a merge names when it consumes it. */
  readonly id: string;
  readonly effectId: string;
  /** The seat that signed the gate decision. */
  readonly signer: string;
  /** The authority id the gate was decided under (the allow's authority). */
  readonly authority: string;
  readonly result: "pass" | "refuse";
  /**
   * Where the gate decision stands in the ledger (its intent's seq): a voiding outcome voids
   * only the passes decided before it was on record (§3: promoting after a failed deploy
   * requires re-gating — and a re-gate is then valid). Absent: placed before every outcome.
   */
  readonly at?: number;
}

export interface ReviewRecordFact {
  readonly effectId: string;
  readonly seat: string;
  readonly verdict: "approve" | "reject";
}

export type GatedAct = "review" | "gate" | "merge" | "deploy";

export interface IntentFact {
  readonly effectId: string;
  readonly act: GatedAct;
  readonly seat: string;
}

export interface OutcomeFact {
  readonly effectId: string;
  readonly act: GatedAct;
  readonly result: "done" | "refused" | "unknown";
  /** For a deploy, where it went; a voiding outcome voids the artifact in every env (§3). */
  readonly env?: string;
  /**
   * Where the outcome first voided in the ledger (the seq of the record that made it refused
   * or unknown). Absent: after every pass — it voids them all.
   */
  readonly at?: number;
}

export const NO_FACTS: KernelFacts = Object.freeze({});

const ACTS: readonly string[] = ["review", "gate", "merge", "deploy"];

type Check = (value: unknown, at: string) => string | undefined;

const text: Check = (v, at) => (typeof v === "string" && v !== "" ? undefined : `${at} must be a non-empty string`);
const oneOf =
  (values: readonly string[]): Check =>
  (v, at) =>
    typeof v === "string" && values.includes(v) ? undefined : `${at} must be one of ${values.join(", ")}`;

function record(fields: Readonly<Record<string, Check>>, optional: readonly string[] = []): Check {
  return (v, at) => {
    if (!isPlainObject(v)) return `${at} must be an object`;
    for (const key of Object.keys(v)) if (!Object.prototype.hasOwnProperty.call(fields, key)) return `${at} has an unknown field '${key}'`;
    for (const [key, check] of Object.entries(fields)) {
      if (v[key] === undefined && optional.includes(key)) continue;
      const why = check(v[key], `${at}.${key}`);
      if (why !== undefined) return why;
    }
    return undefined;
  };
}

function list(item: Check): Check {
  return (v, at) => {
    if (!Array.isArray(v)) return `${at} must be a list`;
    for (let i = 0; i < v.length; i++) {
      const why = item(v[i], `${at}[${i}]`);
      if (why !== undefined) return why;
    }
    return undefined;
  };
}

function map(item: Check): Check {
  return (v, at) => {
    if (!isPlainObject(v)) return `${at} must be an object`;
    for (const [key, value] of Object.entries(v)) {
      const why = item(value, `${at}.${key}`);
      if (why !== undefined) return why;
    }
    return undefined;
  };
}

const run = record({ run: text, home: text });
const position: Check = (v, at) =>
  typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? undefined : `${at} must be a ledger position (a whole number)`;
const time: Check = (v, at) => (typeof v === "number" && Number.isFinite(v) ? undefined : `${at} must be a finite number (epoch milliseconds)`);
const scopeValue: Check = (v, at) => {
  if (!isPlainObject(v)) return `${at} must be a scope (a map of dimension → \`*\` or values)`;
  for (const [k, d] of Object.entries(v)) {
    if (d === "*") continue;
    if (!Array.isArray(d) || d.some((x) => typeof x !== "string")) return `${at}.${k} must be \`*\` or a list of values`;
  }
  return undefined;
};
const leaseFact = record(
  { id: text, parent: text, rootGrant: text, issuer: text, holder: text, capability: text, scope: scopeValue, issuedAt: time, expiresAt: time, coSigner: text },
  ["parent", "coSigner"],
);
const leaseMap: Check = (v, at) => {
  const why = map(leaseFact)(v, at);
  if (why !== undefined || !isPlainObject(v)) return why;
  for (const [key, l] of Object.entries(v))
    if ((l as { id: string }).id !== key) return `${at}.${key} is keyed by another id than its own (${(l as { id: string }).id})`;
  return undefined;
};
const FIELDS: Readonly<Record<keyof KernelFacts, Check>> = {
  authors: map(list(record({ seat: text, run: text, home: text }))),
  runs: map(run),
  gates: list(record({ id: text, effectId: text, signer: text, authority: text, result: oneOf(["pass", "refuse"]), at: position }, ["at"])),
  reviews: list(record({ effectId: text, seat: text, verdict: oneOf(["approve", "reject"]) })),
  intents: list(record({ effectId: text, act: oneOf(ACTS), seat: text })),
  outcomes: list(record({ effectId: text, act: oneOf(ACTS), result: oneOf(["done", "refused", "unknown"]), env: text, at: position }, ["env", "at"])),
  consumed: list(text),
  revoked: list(text),
  stopped: list(text),
  leases: leaseMap,
  revokedLeases: list(text),
};

/**
 * Read facts handed over as data (a case file, a projection): every field of its type, no
 * field unknown — a fact the kernel would not read is an error, never silently ignored.
 */
export function readFacts(value: unknown): KernelFacts | string {
  if (!isPlainObject(value)) return "facts must be an object";
  for (const [key, v] of Object.entries(value)) {
    if (!Object.prototype.hasOwnProperty.call(FIELDS, key)) return `facts.${key} is not a fact this kernel reads (it reads ${Object.keys(FIELDS).join(", ")})`;
    const why = FIELDS[key as keyof KernelFacts](v, `facts.${key}`);
    if (why !== undefined) return why;
  }
  return value as KernelFacts;
}
