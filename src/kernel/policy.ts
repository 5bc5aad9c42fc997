import { type Authority, type AuthoritySource, type Grant, authorityId, grantKeys } from "./authority.js";
import type { Ceiling } from "./ceiling.js";
import type { ConstraintProgram } from "./constraint-program.js";
import type { DeclaredSets } from "./declared.js";
import type { DeployPushes } from "./deploy-commands.js";
import { deepFreeze } from "./freeze.js";
import type { CompiledPolicy, CompiledSeat } from "./compiled-policy.js";
import type { ReservedSet } from "./reserved.js";
import type { RoleTemplate } from "./roles.js";
import type { StartContext } from "./start-context.js";
import type { AdministrativeCapability, OperationalCapability, Vocabulary } from "./vocabulary.js";

/**
 * The policy in force, as the kernel decides with it: validated, resolved and deeply frozen.
 * It is built only by sealing a compiled team file with the content hashes the loader took
 * of its canonical texts — the kernel names hashes, it never computes them.
 */
export interface Policy {
  readonly vocabulary: Vocabulary;
  readonly team: string;
  /** Content hash of the canonical team file (`sha256:…`): the policy hash of §15. */
  readonly hash: string;
  readonly declared: DeclaredSets;
  readonly reserved: ReservedSet;
  /** Every role a seat may reference: the team's own and the built-in templates. */
  readonly roles: Readonly<Record<string, Role>>;
  readonly seats: Readonly<Record<string, Seat>>;
  /** The owner-written constraint program and review mode (§5). */
  readonly constraints: ConstraintProgram;
  /**
   * leads (§9): the one seat holding the delegation envelope, and the envelope as authorities
   * (`leads:envelope/…`). The envelope is a source of root leases only — leads never acts
   * under it (operational powers are never part of leads). Absent: no lease of any origin.
   */
  readonly leads?: Leads;
  /** The ceiling (§8): absent = no capability bound, the default lease-ttl. */
  readonly ceiling?: Ceiling;
  /** The explicit deny (§8): wins through every role, lease and envelope. */
  readonly deny?: readonly Grant[];
  /** Capabilities the owner put behind two-granter agreement (§10): leasable only co-signed. */
  readonly twoGranter?: readonly OperationalCapability[];
  /** The two granters must come from different labs (§10: the owner may require it). */
  readonly twoGranterLabs?: "distinct";
  /** The owner's hash-pinned deploy command per declared environment (§3, §10). */
  readonly deploys?: Readonly<Record<string, DeployCommand>>;
  /** The owner's remote per publishing environment: a deploy to it pushes under the declared account (§3 act-as). */
  readonly pushes?: DeployPushes;
  /** The owner-configured tracker of each task resource the team file maps (§11); others use the default. */
  readonly trackers?: Readonly<Record<string, string>>;
  /** What each declared account resolves to (its identity, never its secret; §3, §7), where the team file says. */
  readonly accountIdentities?: Readonly<Record<string, string>>;
}

/** A deploy command and the hash of its whole context (argv, workdir, env bindings, each file's content). */
export interface DeployCommand {
  readonly env: string;
  readonly context: StartContext;
  readonly hash: string;
}

export interface Leads {
  readonly seat: string;
  readonly envelope: readonly Authority[];
}

export interface Role {
  readonly name: string;
  /** Hash of the resolved content: an unchanged name can never silently widen (§4). */
  readonly hash: string;
  readonly builtIn: boolean;
  readonly template?: RoleTemplate;
  readonly grants: readonly Grant[];
}

export interface Seat {
  readonly name: string;
  readonly lab?: string;
  readonly roles: readonly string[];
  /** The seat's list resolved: one authority per grant of each role, then its direct grants. */
  readonly authorities: readonly Authority[];
  /** The same authorities by capability, in the same order (the decision's lookup). */
  readonly byCapability: Readonly<Partial<Record<OperationalCapability, readonly Authority[]>>>;
  /** Hash of the resolved capability set. */
  readonly capabilitiesHash: string;
  /** Hash of the execution context (lab, command, workdir, env, start files), when it starts. */
  readonly contextHash?: string;
  readonly start?: StartContext;
  /**
   * Administrative capabilities the seat holds (§3, §10): leads (top-level `leads:`), and grant
   * agree and create as the owner wrote them in the seat's own capabilities.
   */
  readonly admin?: readonly AdministrativeCapability[];
}

/** The hashes the loader computed over the compiled policy's canonical texts. */
export interface PolicyHashes {
  readonly policy: string;
  readonly roles: Readonly<Record<string, string>>;
  readonly seats: Readonly<Record<string, { readonly capabilities: string; readonly context?: string }>>;
  /** Each deploy command's context hash, by environment. */
  readonly deploys?: Readonly<Record<string, string>>;
}

export type SealResult = { readonly ok: true; readonly policy: Policy } | { readonly ok: false; readonly missing: readonly string[] };

function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;
}

/** The administrative capabilities a seat holds: leads (top-level `leads:`), then grant and agree as written on it. */
function adminOf(seat: CompiledSeat, leads: boolean): { admin?: readonly AdministrativeCapability[] } {
  const admin: AdministrativeCapability[] = [...(leads ? ["leads" as const] : []), ...(seat.admin ?? [])];
  return admin.length === 0 ? {} : { admin: Object.freeze(admin) };
}

/** Seal a compiled policy with its hashes; a hash the caller did not supply is named, not invented. */
export function sealPolicy(compiled: CompiledPolicy, hashes: PolicyHashes): SealResult {
  const missing: string[] = [];
  const roles: Record<string, Role> = {};
  for (const role of Object.values(compiled.roles)) {
    const hash = own(hashes.roles, role.name);
    if (hash === undefined) missing.push(`role ${role.name}`);
    roles[role.name] = {
      name: role.name,
      hash: hash ?? "",
      builtIn: role.builtIn,
      ...(role.template !== undefined ? { template: role.template } : {}),
      grants: role.grants,
    };
  }
  const seats: Record<string, Seat> = {};
  for (const seat of Object.values(compiled.seats)) {
    const seatHashes = own(hashes.seats, seat.name);
    if (seatHashes === undefined) missing.push(`seat ${seat.name}`);
    if (seat.start !== undefined && seatHashes?.context === undefined) missing.push(`seat ${seat.name} context`);
    const authorities: Authority[] = [];
    // Ids key each capability's grants within one source, never by position: `alice/role:docs/write/0`.
    const add = (source: AuthoritySource, grants: readonly Grant[]): void => {
      const keys = grantKeys(grants);
      for (const [i, grant] of grants.entries()) {
        authorities.push({
          id: authorityId(seat.name, source, grant.capability, keys[i] as string),
          seat: seat.name,
          capability: grant.capability,
          scope: grant.scope,
          source,
        });
      }
    };
    for (const name of seat.roles) {
      const role = own(roles, name);
      if (role === undefined) missing.push(`role ${name} of seat ${seat.name}`);
      else add({ kind: "role", role: name, roleHash: role.hash }, role.grants);
    }
    add({ kind: "direct" }, seat.direct);
    const byCapability: Partial<Record<OperationalCapability, Authority[]>> = {};
    for (const authority of authorities) (byCapability[authority.capability] ??= []).push(authority);
    seats[seat.name] = {
      name: seat.name,
      ...(seat.lab !== undefined ? { lab: seat.lab } : {}),
      roles: seat.roles,
      authorities,
      byCapability,
      capabilitiesHash: seatHashes?.capabilities ?? "",
      ...(seatHashes?.context !== undefined ? { contextHash: seatHashes.context } : {}),
      ...(seat.start !== undefined ? { start: seat.start } : {}),
      ...adminOf(seat, compiled.leads?.seat === seat.name),
    };
  }
  let leads: Leads | undefined;
  if (compiled.leads !== undefined) {
    const envelope: Authority[] = [];
    const keys = grantKeys(compiled.leads.envelope);
    for (const [i, grant] of compiled.leads.envelope.entries()) {
      const source: AuthoritySource = { kind: "envelope" };
      envelope.push({
        id: authorityId(compiled.leads.seat, source, grant.capability, keys[i] as string),
        seat: compiled.leads.seat,
        capability: grant.capability,
        scope: grant.scope,
        source,
      });
    }
    leads = { seat: compiled.leads.seat, envelope };
  }
  let deploys: Record<string, DeployCommand> | undefined;
  if (compiled.deploys !== undefined) {
    deploys = Object.create(null) as Record<string, DeployCommand>;
    for (const [env, context] of Object.entries(compiled.deploys)) {
      const hash = hashes.deploys !== undefined ? own(hashes.deploys, env) : undefined;
      if (hash === undefined) missing.push(`deploy ${env} context`);
      else deploys[env] = { env, context, hash };
    }
  }
  if (missing.length > 0) return { ok: false, missing };
  return {
    ok: true,
    policy: deepFreeze({
      vocabulary: compiled.vocabulary,
      team: compiled.team,
      hash: hashes.policy,
      declared: compiled.declared,
      reserved: compiled.reserved,
      roles,
      seats,
      constraints: compiled.constraints,
      ...(leads !== undefined ? { leads } : {}),
      ...(compiled.ceiling !== undefined ? { ceiling: compiled.ceiling } : {}),
      ...(compiled.deny !== undefined ? { deny: compiled.deny } : {}),
      ...(compiled.twoGranter !== undefined ? { twoGranter: compiled.twoGranter } : {}),
      ...(compiled.twoGranterLabs !== undefined ? { twoGranterLabs: compiled.twoGranterLabs } : {}),
      ...(deploys !== undefined ? { deploys } : {}),
      ...(compiled.pushes !== undefined ? { pushes: compiled.pushes } : {}),
      ...(compiled.trackers !== undefined ? { trackers: compiled.trackers } : {}),
      ...(compiled.accountIdentities !== undefined ? { accountIdentities: compiled.accountIdentities } : {}),
    }),
  };
}
