/**
 * The kernel's public surface: pure policy (§3–§10). Everything is data in, data out; the
 * loader (src/teamfile/) builds a Policy, the daemon wraps it in a view, and `authorize`
 * decides every gated act.
 */
export { authorize } from "./authorize.js";
export { type Allow, type Decision, type Refusal, allow, refuse } from "./decision.js";
export { RULES, type RuleId, isRuleId } from "./rules.js";
export { type Authority, type AuthoritySource, type Grant, describeAuthority } from "./authority.js";
export { type KernelRequest, type Effect } from "./request.js";
export { type KernelView, createKernelView } from "./view.js";
export {
  type AuthorFact,
  type GateRecordFact,
  type GatedAct,
  type IntentFact,
  type KernelFacts,
  type OutcomeFact,
  type ReviewRecordFact,
  type RunFact,
  NO_FACTS,
  readFacts,
} from "./facts.js";
export { type CardinalityConstraint, type ConstraintProgram, type ReviewMode, type Selector, NO_CONSTRAINTS } from "./constraint-program.js";
export { type Violation, lostMinimums, violations } from "./constraints.js";
export { type Ceiling, DEFAULT_LEASE_TTL_MS, TOOL_MAX_LEASE_TTL_MS } from "./ceiling.js";
export { boundaryRefusal, leaseBoundaryRefusal, leaseShadow } from "./ceiling-deny.js";
export { type LeaseFact } from "./facts.js";
export { type Liveness, leaseAuthority, leaseLiveness } from "./lease-liveness.js";
export { type LeaseDecision, type LeaseRequest, effectiveSeats, issueLease } from "./lease-issue.js";
export { type LeaseRevocation, cascade, revokeLease } from "./cascade.js";
export { parseDuration, showDuration } from "./delegation-input.js";
export { type AuthorityChange, type ChangeDecision, checkAuthorityChange, sovereignChanges } from "./authority-change.js";
export { type Principal } from "./principal.js";
export { type GranterSignature, type SameCopy, checkGranters, checkTwoGranter, sameCopy, secondGranter } from "./agreement.js";
export {
  type DelegatedChange,
  type DelegatedRequest,
  type NeedsSecond,
  applyDelegatedChange,
  checkDelegatedChange,
  describeChange,
} from "./delegated-change.js";
export { type DeployCommand, type Leads, type Policy, type PolicyHashes, type Role, type Seat, type SealResult, sealPolicy } from "./policy.js";
export { type PolicyDiff, type SeatChange, diffPolicies } from "./policy-diff.js";
export { type CompiledPolicy, type CompiledRole, type CompiledSeat, type CompileResult } from "./compiled-policy.js";
export { compilePolicy } from "./policy-compile.js";
export type { CapabilityInput, DeclareInput, InputPath, PolicyInput, PolicyProblem, RoleInput, ScopeInput, SeatInput, StartInput } from "./policy-input.js";
export { type StartContext, startContextCanonical } from "./start-context.js";
export { type DeployCommands, type DeployPush, type DeployPushes } from "./deploy-commands.js";
export { type TaskTrackers, TRACKER_NAME } from "./task-trackers.js";
export { type DeclaredSets, NO_DECLARED_SETS, isDeclared } from "./declared.js";
export { type ReservedSet, effectReservedReason, reservedReason } from "./reserved.js";
export { ROLE_TEMPLATES, type RoleTemplate } from "./roles.js";
export {
  type DimensionScope,
  type Scope,
  type ScopeUniverse,
  EMPTY,
  UNCONSTRAINED,
  boundedScope,
  dimensionCovers,
  dimensionIntersect,
  dimensionWithin,
  formatScope,
  scopeCovers,
  scopeIntersect,
  scopeVoid,
  scopeWithin,
} from "./scope.js";
export { type Tri, globIntersection, globMatch, globsIncluded } from "./glob.js";
export { canonicalPath, pathCovers } from "./paths.js";
export { readIsUnbounded, readScope, readScopeKey, type ReadScope } from "./read-scope.js";
export { blindWriteRefusal } from "./blind-write.js";
export { normalizeBranch } from "./refs.js";
export { canonicalJson, type CanonicalValue } from "./canonical.js";
export { deepFreeze } from "./freeze.js";
export {
  ADMINISTRATIVE_CAPABILITIES,
  ALL_WORD,
  CURRENT_VOCABULARY_VERSION,
  DIMENSIONS,
  OPERATIONAL_CAPABILITIES,
  type Capability,
  type Dimension,
  type OperationalCapability,
  type Vocabulary,
  allCapabilities,
  resolveVocabulary,
} from "./vocabulary.js";
export { accountIdentity } from "./account-identities.js";
export {
  type CreateAllowed,
  type CreateBound,
  type CreateFacts,
  type CreateRequest,
  type LabSlice,
  canonicalBound,
  checkCreate,
  checkCreator,
  childCaps,
  readBound,
  seatCarve,
} from "./create-bound.js";
