import type { Grant } from "./authority.js";
import type { Ceiling } from "./ceiling.js";
import type { ConstraintProgram } from "./constraint-program.js";
import type { DeclaredSets } from "./declared.js";
import type { LeadsInput } from "./delegation-input.js";
import type { DeployCommands, DeployPushes } from "./deploy-commands.js";
import type { PolicyProblem } from "./policy-input.js";
import type { ReservedSet } from "./reserved.js";
import type { RoleTemplate } from "./roles.js";
import type { StartContext } from "./start-context.js";
import type { TaskTrackers } from "./task-trackers.js";
import type { AccountIdentities } from "./account-identities.js";
import type { OperationalCapability, Vocabulary } from "./vocabulary.js";

/**
 * A team file compiled (policy-compile.ts) and not yet sealed with its hashes (sealPolicy,
 * policy.ts): each role and seat resolved, with the canonical texts the loader hashes. Its own
 * file because sealing reads it while compiling checks the constraint program over seats
 * that policy.ts defines: with the type beside the compiler, policy.ts and policy-compile.ts
 * were tied in one circle.
 */
export interface CompiledRole {
  readonly name: string;
  readonly builtIn: boolean;
  readonly template?: RoleTemplate;
  readonly grants: readonly Grant[];
  /** Canonical text of the resolved content; its hash identifies the role (§4, §10). */
  readonly content: string;
}

export interface CompiledSeat {
  readonly name: string;
  readonly lab?: string;
  readonly roles: readonly string[];
  readonly direct: readonly Grant[];
  /** Canonical text of the seat's resolved capability set (§10 same-copy, issue 5). */
  readonly capabilities: string;
  readonly start?: StartContext;
  /** grant and agree as the owner wrote them on this seat (§3, §10); never through a role. */
  readonly admin?: readonly ("grant" | "agree" | "create")[];
}

export interface CompiledPolicy {
  readonly vocabulary: Vocabulary;
  readonly team: string;
  readonly declared: DeclaredSets;
  readonly reserved: ReservedSet;
  readonly roles: Readonly<Record<string, CompiledRole>>;
  readonly seats: Readonly<Record<string, CompiledSeat>>;
  /** The owner-written constraint program and review mode (§5). */
  readonly constraints: ConstraintProgram;
  /** The delegation settings (§7–§10); each absent when the file does not write it. */
  readonly leads?: LeadsInput;
  readonly ceiling?: Ceiling;
  readonly deny?: readonly Grant[];
  readonly twoGranter?: readonly OperationalCapability[];
  readonly twoGranterLabs?: "distinct";
  /** The owner's deploy command per environment (§3, §10); absent when the file declares none. */
  readonly deploys?: DeployCommands;
  /** The owner's remotes a deploy pushes to under a declared account (§3 act-as); absent when none. */
  readonly pushes?: DeployPushes;
  /** The tracker of each task resource the file maps (§11); absent when it maps none. */
  readonly trackers?: TaskTrackers;
  readonly accountIdentities?: AccountIdentities;
  /** The canonical form of the team file: independent of formatting and key order. */
  readonly canonical: string;
}

export type CompileResult = { readonly ok: true; readonly policy: CompiledPolicy } | { readonly ok: false; readonly problems: readonly PolicyProblem[] };
