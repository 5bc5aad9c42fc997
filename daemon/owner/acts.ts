import { RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { OwnerActKind } from "../../src/gen/teamd/v1/control_pb.js";
import { fromBinary } from "@bufbuild/protobuf";
import { OwnerActSchema, RecordPayloadSchema, type RecordPayload } from "../../src/gen/teamd/v1/ledger_pb.js";
import {
  checkOwnerAct,
  daemonPrincipal,
  initLedger,
  LedgerRefusal,
  loadDaemonKey,
  publicKeyFromRaw,
  type CheckedOwnerAct,
  type Ledger,
} from "../../src/ledger/index.js";
import { isRefusal } from "../../src/ledger/owner-act.js";
import { loadTeamFileData } from "../../src/teamfile/index.js";
import { RefusalError } from "../../src/rpc/errors.js";
import type { Refusal } from "../../src/kernel/decision.js";
import type { Policy } from "../../src/kernel/index.js";
import { canonicalBound, readBound } from "../../src/kernel/create-bound.js";
import { leaseRevocationDraft, type RecordDraft } from "../../src/ledger/index.js";
import { checkOwnerLease, checkOwnerRevoke, decideApply, ownerRevoke } from "./leases.js";
import { checkTombstone } from "./tombstone.js";
import { ownerArchive } from "./archive.js";
import { ledgerLayout, readPinnedOwnerKey, writePinnedOwnerKey } from "../host/ledger-host.js";
import type { TeamdHome } from "../host/home.js";
import { stopRefusal } from "../../src/ledger/stop-state.js";
import { createHub, hubPath } from "../host/hub.js";
import { realpathSync } from "node:fs";
import { basename, dirname, isAbsolute } from "node:path";

/**
 * The daemon's side of every owner act, whoever carries it: the control socket (the daemon
 * is up) or the owner's CLI holding the ledger itself (user mode, daemon down). One path,
 * so an act is checked the same way both times: the owner's signature against the key
 * pinned at genesis first; then what the act says (a policy that loads, a registered
 * team); then the record. A refused act is recorded as a refusal where the store is up.
 */
export interface LedgerSlot {
  get(): Ledger | undefined;
  set(ledger: Ledger): void;
  /** The daemon's slot: a ledger it creates writes on a worker thread, like the one it opens (ledger-host.ts). */
  readonly serving?: boolean;
}

export interface ActReceipt {
  readonly seq: number;
  readonly created: boolean;
  /** A revocation in force by its flag and not recorded yet: why (it is appended, marked late, when the store returns). */
  readonly notRecorded?: string;
}

function refusalError(refusal: Refusal): RefusalError {
  return new RefusalError(refusal.rule, refusal.reason);
}

/** Record that an act was refused (best effort: a refusal is reported even when it cannot be recorded, §15). */
async function recordRefusal(ledger: Ledger, team: string, action: string, refusal: Refusal): Promise<void> {
  if (ledger.state.status !== "ready") return;
  await ledger
    .append({
      type: RecordType.REFUSAL,
      team,
      actor: daemonPrincipal(),
      signer: daemonPrincipal(),
      claimedName: "owner",
      action,
      payload: { target: { kind: TargetKind.TEAM, name: team }, detail: { case: "refusal", value: { rule: refusal.rule, reason: refusal.reason } } },
    })
    .catch(() => undefined);
}

function hexOfHash(prefixed: string): string {
  return prefixed.startsWith("sha256:") ? prefixed.slice("sha256:".length) : prefixed;
}

/** The checks an apply needs beyond the signature: the canonical policy loads, hashes to what was signed, for a registered team. */
function checkPolicy(ledger: Ledger, team: string, act: CheckedOwnerAct): Refusal | Policy {
  const detail = act.payload.detail;
  if (detail.case !== "policy") return { decision: "refuse", rule: "owner.act-invalid", reason: "an apply act must carry a policy" };
  if (ledger.view.team(team) === undefined) {
    return { decision: "refuse", rule: "team.unknown", reason: `team '${team}' is not registered on this machine: run teamd init in its repository first` };
  }
  let data: unknown;
  try {
    data = JSON.parse(detail.value.canonical);
  } catch {
    return { decision: "refuse", rule: "owner.act-invalid", reason: "the policy's canonical form is not JSON" };
  }
  // The launch check (§5, static) is a team's first policy's: over a policy in force the
  // kernel decides the change with the live leases (decideApply), and the owner's narrowing
  // below a minimum commits and pauses rather than being refused here.
  const loaded = loadTeamFileData(data, { startFileHashes: detail.value.startFileHashes, proposal: ledger.view.policy(team) !== undefined });
  if (!loaded.ok) {
    const first = loaded.errors[0];
    return { decision: "refuse", rule: first?.rule ?? "teamfile.schema", reason: `the signed policy does not load: ${first?.message ?? "invalid"}` };
  }
  if (loaded.policy.team !== team)
    return { decision: "refuse", rule: "owner.act-invalid", reason: `the policy is for team '${loaded.policy.team}', the act for '${team}'` };
  if (hexOfHash(loaded.hashes.policy) !== Buffer.from(detail.value.teamFileHash).toString("hex")) {
    return { decision: "refuse", rule: "owner.act-invalid", reason: "the policy hash in the act does not match its canonical form" };
  }
  return loaded.policy;
}

function policyChanged(team: string): Refusal {
  return {
    decision: "refuse",
    rule: "grant.changed",
    reason: `the policy in force of team '${team}' changed while you applied (a delegate's grant or agreement, or another apply); run teamd apply again to see the difference over it`,
  };
}

/**
 * An apply names the policy record it showed its difference over (§10: between agreement and
 * act, the tool compares again). Another one in force now refuses it; an apply that names none
 * (an older CLI) is refused while delegated grants are in force, rather than dropping them unseen.
 */
function inForceOver(ledger: Ledger, team: string, act: CheckedOwnerAct): Refusal | undefined {
  const detail = act.payload.detail;
  const inForce = ledger.view.policy(team);
  if (detail.case !== "policy" || inForce === undefined) return undefined;
  const stated = Number(detail.value.inForceSeq);
  if (stated !== 0) return stated === inForce.seq ? undefined : policyChanged(team);
  return inForce.delegated.length === 0 ? undefined : policyChanged(team);
}

/** Is `hub` this home's hub of `team` (the same folder, however the path was spelled)? */
function isTeamHub(home: TeamdHome, team: string, hub: string): boolean {
  if (hub === hubPath(home.root, team)) return true;
  if (!isAbsolute(hub) || basename(hub) !== `${team}.git` || basename(dirname(hub)) !== "hubs") return false;
  try {
    return realpathSync(dirname(dirname(hub))) === realpathSync(home.root);
  } catch {
    return false;
  }
}

function checkTeam(home: TeamdHome, ledger: Ledger, team: string, detail: { case: string | undefined; value?: unknown }): Refusal | undefined {
  if (detail.case !== "team") return { decision: "refuse", rule: "owner.act-invalid", reason: "a team act must carry the team's repository and hub" };
  const { repository, hub } = detail.value as { repository: string; hub: string };
  // The hub is always TEAMD_HOME/hubs/<team>.git: the daemon makes it there (system mode) and
  // nowhere an act could name.
  if (!isTeamHub(home, team, hub)) {
    return { decision: "refuse", rule: "owner.act-invalid", reason: `a team's hub is ${hubPath(home.root, team)}, not ${hub}` };
  }
  if (!isAbsolute(repository)) return { decision: "refuse", rule: "owner.act-invalid", reason: `the repository must be an absolute path, not ${repository}` };
  const existing = ledger.view.team(team);
  if (existing && existing.repository !== repository) {
    return {
      decision: "refuse",
      rule: "team.conflict",
      reason: `team '${team}' is already registered for ${existing.repository}: choose another name with --team`,
    };
  }
  return undefined;
}

/** A create-bound (§10): for a registered team, its canonical form exactly what the daemon reads back, for the seat the record names. */
function checkCreateBound(ledger: Ledger, team: string, detail: RecordPayload["detail"]): Refusal | undefined {
  const bad = (reason: string): Refusal => ({ decision: "refuse", rule: "owner.act-invalid", reason });
  if (detail.case !== "createBound") return bad("a create-bound record carries the bound");
  if (ledger.view.team(team) === undefined) return { decision: "refuse", rule: "team.unknown", reason: `team '${team}' is not registered on this machine` };
  if (detail.value.canonical === "") return undefined;
  const bound = readBound(detail.value.canonical);
  if (typeof bound === "string") return bad(`the bound does not read: ${bound}`);
  if (canonicalBound(bound) !== detail.value.canonical) return bad("the bound is not in its canonical form");
  if (bound.team !== team || bound.seat !== detail.value.seat) return bad("the bound names another seat or team than its record");
  return undefined;
}

/**
 * An owner act, checked and recorded; `now` is the clock it is decided on (a lease is checked for its lifetime at it).
 * `progress`: lines on a long act's way (an archive), where the caller can show them.
 */
export async function handleOwnerAct(
  home: TeamdHome,
  slot: LedgerSlot,
  kind: OwnerActKind,
  act: Uint8Array,
  now: () => number,
  progress?: (line: string) => void,
): Promise<ActReceipt> {
  if (kind === OwnerActKind.GENESIS) return genesis(home, slot, act);
  const ledger = slot.get();
  if (ledger === undefined) throw new RefusalError("ledger.unavailable", "this machine has no ledger yet: run teamd init");
  const checked = checkOwnerAct(act, ledger.ownerKey);
  if (isRefusal(checked)) {
    await recordRefusal(ledger, "", "owner-act", checked);
    throw refusalError(checked);
  }
  const team = checked.proposal.team;
  const expected = {
    [OwnerActKind.TEAM]: RecordType.TEAM,
    [OwnerActKind.APPLY]: RecordType.POLICY,
    [OwnerActKind.RECONCILE]: RecordType.RECONCILE,
    [OwnerActKind.RESUME]: RecordType.RESUME,
    [OwnerActKind.LEASE]: RecordType.LEASE,
    [OwnerActKind.REVOKE]: RecordType.REVOCATION,
    [OwnerActKind.TOMBSTONE]: RecordType.TOMBSTONE,
    [OwnerActKind.RENEW]: RecordType.RENEW,
    [OwnerActKind.ARCHIVE]: RecordType.ARCHIVE,
    [OwnerActKind.CREATE_BOUND]: RecordType.CREATE_BOUND,
  }[kind as number];
  if (expected === undefined || checked.proposal.type !== expected) {
    throw new RefusalError("owner.act-invalid", `the act is a ${RecordType[checked.proposal.type]} record, not what ${OwnerActKind[kind]} submits`);
  }
  // While an owner's stop holds, only resume and reconcile pass (§11, §15).
  const stopped = kind === OwnerActKind.RESUME || kind === OwnerActKind.RECONCILE ? undefined : stopRefusal(ledger, team);
  if (stopped) {
    await recordRefusal(ledger, team, checked.proposal.action, stopped);
    throw new RefusalError(stopped.rule, `${stopped.reason}; run teamd resume to clear it`);
  }
  const before = ledger.view.ownerAct(checked.id);
  let companions: readonly RecordDraft[] = [];
  let problem: Refusal | undefined;
  let inForceCheck: RecordDraft["check"];
  if (kind === OwnerActKind.APPLY) {
    const policy = checkPolicy(ledger, team, checked);
    const over = policy !== undefined && !("decision" in policy) ? inForceOver(ledger, team, checked) : undefined;
    if ("decision" in policy) problem = policy;
    else if (over !== undefined && "decision" in over) problem = over;
    else if (before === undefined) {
      // §10: between the owner's look and the record, a delegate's grant may land; the record commits only over what it was decided on.
      const decidedOver = ledger.view.policy(team)?.seq;
      inForceCheck = (view) => (view.policy(team)?.seq === decidedOver ? undefined : policyChanged(team));
      // Over a policy in force, the kernel decides the change (§5, counting live leases): a
      // break refused, a floor left unmet committed and paused; and the cascade (§7), the
      // leases the change kills, revoked in the same transaction as the policy record.
      const decided = decideApply(ledger, team, policy, now());
      if (decided?.decision === "refuse") problem = decided;
      else if (decided !== undefined) companions = decided.revocations.map((r) => leaseRevocationDraft(team, r.lease, r.reason, daemonPrincipal()));
    }
  } else if (kind === OwnerActKind.TEAM) problem = checkTeam(home, ledger, team, checked.payload.detail);
  else if (kind === OwnerActKind.LEASE && before === undefined) problem = checkOwnerLease(ledger, team, checked, now());
  else if (kind === OwnerActKind.REVOKE) problem = checkOwnerRevoke(ledger, team, checked);
  else if (kind === OwnerActKind.TOMBSTONE && before === undefined) problem = checkTombstone(ledger, team, checked);
  else if (kind === OwnerActKind.CREATE_BOUND) problem = checkCreateBound(ledger, team, checked.payload.detail);
  else if (kind === OwnerActKind.RENEW && ledger.view.team(team) === undefined)
    problem = { decision: "refuse", rule: "team.unknown", reason: `team '${team}' is not registered on this machine; there is no runtime to renew` };
  if (problem) {
    await recordRefusal(ledger, team, checked.proposal.action, problem);
    throw refusalError(problem);
  }
  if (kind === OwnerActKind.TEAM && home.mode === "system" && checked.payload.detail.case === "team") {
    // System mode: the daemon makes the hub (the owner's CLI cannot write TEAMD_HOME), before
    // the team is recorded, so a team on record always has one.
    await createHub(home.root, team, checked.payload.detail.value.repository, home.ownerGid === undefined ? {} : { sharedGid: home.ownerGid });
  }
  try {
    if (kind === OwnerActKind.ARCHIVE) {
      const archived = await ownerArchive(ledger, act, progress).catch(async (error: unknown) => {
        if (error instanceof LedgerRefusal) await recordRefusal(ledger, team, checked.proposal.action, error.refusal);
        throw error;
      });
      return { seq: archived.seq, created: !archived.replayed };
    }
    if (kind === OwnerActKind.REVOKE) {
      const revoked = await ownerRevoke(ledger, team, checked, act);
      return { seq: revoked.seq, created: revoked.created, ...(revoked.recorded ? {} : { notRecorded: revoked.reason }) };
    }
    // A resume needs the store (§15: a team resumes only after the head is reconciled): look again now rather than wait for the next reopen.
    if (kind === OwnerActKind.RESUME && ledger.state.status === "unavailable") await ledger.reopen();
    const record =
      kind === OwnerActKind.RECONCILE
        ? await ledger.reconcile(act)
        : kind === OwnerActKind.RESUME
          ? await ledger.resume(act)
          : await ledger.appendOwnerAct(act, companions, inForceCheck);
    return { seq: record.seq, created: before === undefined };
  } catch (error) {
    if (error instanceof LedgerRefusal) throw RefusalError.from(error.refusal);
    throw error;
  }
}

async function genesis(home: TeamdHome, slot: LedgerSlot, act: Uint8Array): Promise<ActReceipt> {
  const existing = slot.get();
  if (existing) return { seq: 0, created: false };
  const layout = ledgerLayout(home);
  // Genesis is trust on first use: it pins the key that signed it. The pinned copy under
  // TEAMD_HOME/keys is what the daemon opens the ledger with afterwards; opening checks that
  // it equals what genesis pinned, so a swapped copy fails closed.
  let proposed: Uint8Array;
  try {
    const payload = fromBinary(RecordPayloadSchema, fromBinary(OwnerActSchema, act).payload);
    if (payload.detail.case !== "genesis") throw new Error("not a genesis");
    proposed = payload.detail.value.ownerPublicKey;
  } catch {
    throw new RefusalError("owner.act-invalid", "init needs a genesis act");
  }
  const pinned = readPinnedOwnerKey(layout);
  if (pinned !== undefined && Buffer.compare(Buffer.from(pinned), Buffer.from(proposed)) !== 0) {
    throw new RefusalError(
      "ledger.key-mismatch",
      `this TEAMD_HOME is pinned to another owner key (${layout.ownerPublicKey}); use that key (TEAMD_OWNER_KEY) or another TEAMD_HOME`,
    );
  }
  try {
    const daemonSigner = await loadDaemonKey(layout.daemonKey);
    const checked = checkOwnerAct(act, publicKeyFromRaw(proposed));
    if (isRefusal(checked)) throw refusalError(checked);
    if (pinned === undefined) await writePinnedOwnerKey(layout, proposed);
    const { ledger, created } = await initLedger({
      dir: layout.dir,
      flagsDir: layout.flagsDir,
      daemonSigner,
      ownerPublicKey: proposed,
      genesisAct: act,
      writeOnWorker: slot.serving === true,
    });
    slot.set(ledger);
    return { seq: 0, created };
  } catch (error) {
    if (error instanceof LedgerRefusal) throw RefusalError.from(error.refusal);
    throw error;
  }
}
