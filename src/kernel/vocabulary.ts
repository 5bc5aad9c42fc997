/**
 * The capability vocabulary of §3: closed, enumerated and release-versioned. A team file
 * pins the version it was written against; a name this release does not know is refused,
 * never honoured, and a pinned version that no longer resolves fails closed. A new version
 * is added beside the old one, never by editing it: a release that widens what an existing
 * name means is a new version (§3), so version 1 below is frozen once released.
 */

/** The scope dimensions of §6. `task` is the broker's declared task-resource set. */
export const DIMENSIONS = ["path", "branch", "env", "account", "task"] as const;
export type Dimension = (typeof DIMENSIONS)[number];

export const OPERATIONAL_CAPABILITIES = ["write", "read", "review", "gate", "merge", "deploy", "use-broker", "act-as"] as const;
export type OperationalCapability = (typeof OPERATIONAL_CAPABILITIES)[number];

/** No project scope; each is its own gate and none is ever leased or copied (§3, §7, §10). */
export const ADMINISTRATIVE_CAPABILITIES = ["create", "grant", "agree", "leads"] as const;
export type AdministrativeCapability = (typeof ADMINISTRATIVE_CAPABILITIES)[number];

export type Capability = OperationalCapability | AdministrativeCapability;

/**
 * The all-capabilities word (§10). It means the vocabulary as agreed and never includes
 * grant, leads or create; it is not a capability itself, so it has no scope of its own.
 */
export const ALL_WORD = "all";

export interface OperationalSpec {
  readonly kind: "operational";
  /** The dimensions this capability's scope takes; any other is rejected, not ignored. */
  readonly dimensions: readonly Dimension[];
  /** The dimensions every request for it must name (deploy's branch is optional, §3). */
  readonly required: readonly Dimension[];
}

export interface AdministrativeSpec {
  readonly kind: "administrative";
  readonly dimensions: readonly [];
  readonly required: readonly [];
}

export type CapabilitySpec = OperationalSpec | AdministrativeSpec;

export interface Vocabulary {
  readonly version: number;
  readonly capabilities: Readonly<Record<Capability, CapabilitySpec>>;
}

function operational(dimensions: readonly Dimension[], required: readonly Dimension[] = dimensions): OperationalSpec {
  return Object.freeze({ kind: "operational", dimensions: Object.freeze([...dimensions]), required: Object.freeze([...required]) });
}

const ADMINISTRATIVE: AdministrativeSpec = Object.freeze({
  kind: "administrative",
  dimensions: Object.freeze([]) as readonly [],
  required: Object.freeze([]) as readonly [],
});

const VERSION_1: Vocabulary = Object.freeze({
  version: 1,
  capabilities: Object.freeze({
    write: operational(["path"]),
    read: operational(["path"]),
    review: operational(["path", "branch"]),
    gate: operational(["path", "branch"]),
    merge: operational(["path", "branch"]),
    deploy: operational(["env", "branch"], ["env"]),
    "use-broker": operational(["task"]),
    "act-as": operational(["account"]),
    create: ADMINISTRATIVE,
    grant: ADMINISTRATIVE,
    agree: ADMINISTRATIVE,
    leads: ADMINISTRATIVE,
  }),
});

/** Every vocabulary this release can resolve, by pinned version. */
const VOCABULARIES: readonly Vocabulary[] = Object.freeze([VERSION_1]);

export const CURRENT_VOCABULARY_VERSION = 1;

export const KNOWN_VOCABULARY_VERSIONS: readonly number[] = Object.freeze(VOCABULARIES.map((v) => v.version));

/** The vocabulary a team file pinned, or undefined: the caller refuses (fails closed). */
export function resolveVocabulary(version: unknown): Vocabulary | undefined {
  return VOCABULARIES.find((v) => v.version === version);
}

/** The spec of a capability name in a vocabulary, or undefined for a name it does not know. */
export function capabilitySpec(vocabulary: Vocabulary, name: string): CapabilitySpec | undefined {
  return Object.prototype.hasOwnProperty.call(vocabulary.capabilities, name) ? vocabulary.capabilities[name as Capability] : undefined;
}

export function isOperational(vocabulary: Vocabulary, name: string): name is OperationalCapability {
  return capabilitySpec(vocabulary, name)?.kind === "operational";
}

export function isDimension(name: string): name is Dimension {
  return (DIMENSIONS as readonly string[]).includes(name);
}

/**
 * What the all-capabilities word expands to in a vocabulary: every capability except
 * grant, leads and create (§10). It therefore includes agree.
 */
export function allCapabilities(vocabulary: Vocabulary): readonly Capability[] {
  const excluded: readonly string[] = ["grant", "leads", "create"];
  return Object.freeze((Object.keys(vocabulary.capabilities) as Capability[]).filter((name) => !excluded.includes(name)));
}
