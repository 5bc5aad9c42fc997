import { RefusalError, UsageError } from "../../src/rpc/errors.js";
import { OwnerActKind, type LeasesResponse } from "../../src/gen/teamd/v1/control_pb.js";
import { RecordType, RevocationSubject } from "../../src/gen/teamd/v1/ledger_pb.js";
import type { LeaseEntry } from "../../src/gen/teamd/v1/lease_pb.js";
import { leaseJson, leaseLine } from "../../src/rpc/lease-view.js";
import { parseDuration, type LeaseFact } from "../../src/kernel/index.js";
import { createFlags, LedgerRefusal, leasePayload, publicKeyFromRaw, revocationDraft, signOwnerAct } from "../../src/ledger/index.js";
import { loadTeamFileData } from "../../src/teamfile/index.js";
import { resolveHome } from "../host/home.js";
import { ledgerLayout, readPinnedOwnerKey } from "../host/ledger-host.js";
import { parseLeaseScope } from "../../src/kernel/lease-scope.js";
import { checkName, parseSeatSpec } from "../host/names.js";
import { openOwnerChannel } from "../owner/channel.js";
import { ownerKeyForAct } from "./owner-session.js";
import type { Ambient } from "../host/ambient.js";
import { terminalJson, terminalLines } from "../host/terminal-text.js";
import { redactCredentials } from "../../src/teamfile/credentials.js";

/**
 * The owner's lease commands (§7, §9): `teamd lease issue | list | revoke` and `teamd revoke`.
 * An owner-issued lease is a root lease from the leads envelope, issued as leads and signed
 * by the owner; the daemon decides it with the kernel as it decides leads' own. A revocation
 * is written as an owner-signed flag by this CLI first — in force at once, whatever state the
 * daemon or the store is in — and then recorded through the daemon (or, with the store down,
 * appended marked late when it returns).
 */

const showEntry = (l: LeaseEntry) => leaseLine(leaseJson(l));

export async function leaseListCommand(options: { team: string; json?: boolean }, ambient: Ambient): Promise<void> {
  const team = checkName("team", options.team);
  const channel = await openOwnerChannel(resolveHome(), ambient.now);
  let reply: LeasesResponse;
  try {
    reply = await channel.leases(team);
  } finally {
    await channel.close();
  }
  // A lease's id and scope are a seat's words: through the one renderer.
  if (options.json) process.stdout.write(terminalJson(JSON.stringify({ team, leases: reply.leases.map(leaseJson) })) + "\n");
  else process.stdout.write(reply.leases.length === 0 ? `no lease in team '${team}'\n` : terminalLines(`${reply.leases.map(showEntry).join("\n")}\n`));
}

export async function leaseIssueCommand(
  recipientSpec: string,
  capability: string,
  scopeText: string,
  options: { ttl: string; team?: string; source?: string; json?: boolean },
  ambient: Ambient,
): Promise<void> {
  const spec = recipientSpec.includes("@")
    ? parseSeatSpec(recipientSpec)
    : { seat: checkName("seat", recipientSpec), team: options.team ? checkName("team", options.team) : "" };
  if (!spec.team) throw new UsageError("name the team: SEAT@TEAM or --team TEAM");
  const ttl = parseDuration(options.ttl);
  if (typeof ttl !== "number") throw new UsageError(`--ttl '${options.ttl}' is not a duration (e.g. 30m, 2h, 1d)`);
  const parsed = parseLeaseScope(scopeText);
  if (!("ok" in parsed)) throw new RefusalError(parsed.rule, parsed.reason);
  const scope = parsed.scope;
  const key = await ownerKeyForAct();
  const channel = await openOwnerChannel(resolveHome(), ambient.now);
  try {
    const inForce = await channel.policyInForce(spec.team);
    if (!inForce.applied) throw new RefusalError("policy.unapplied", `team '${spec.team}' has no applied policy: run teamd apply first`);
    const loaded = loadTeamFileData(JSON.parse(inForce.canonical), { startFileHashes: { ...inForce.startFileHashes }, proposal: true });
    if (!loaded.ok) throw new Error("the policy in force cannot be read by this release");
    const leads = loaded.policy.leads;
    if (leads === undefined)
      throw new RefusalError("lease.no-leads", `team '${spec.team}' has no leads; no lease of any origin issues without one (§9): name one in the team file`);
    const source = options.source ?? leads.envelope.find((a) => a.capability === capability)?.id;
    if (source === undefined)
      throw new RefusalError(
        "lease.source",
        `the leads envelope of team '${spec.team}' holds no ${capability}; the owner's leases are drawn from it (write it under leads.envelope and apply)`,
      );
    const now = ambient.now();
    const lease: LeaseFact = {
      id: ambient.newId(),
      rootGrant: source,
      issuer: leads.seat,
      holder: spec.seat,
      capability,
      scope,
      issuedAt: now,
      expiresAt: now + ttl,
    };
    const act = await signOwnerAct(
      { type: RecordType.LEASE, team: spec.team, action: "lease.issue", capability: { capability }, payload: leasePayload(spec.team, lease, ambient.newId()) },
      key.seed,
    );
    const receipt = await channel.submit(OwnerActKind.LEASE, act);
    const value = {
      leaseId: lease.id,
      team: spec.team,
      issuer: leads.seat,
      holder: spec.seat,
      capability,
      rootGrant: source,
      expiresUnixMs: lease.expiresAt,
      seq: receipt.seq,
    };
    if (options.json) process.stdout.write(JSON.stringify(value) + "\n");
    else
      process.stdout.write(
        `lease ${lease.id} issued as leads ${leads.seat} to ${spec.seat}: ${capability} from ${source}, until ${new Date(lease.expiresAt).toISOString()} (record ${receipt.seq})\n`,
      );
  } finally {
    await channel.close();
  }
}

/** `teamd revoke LEASE` / `teamd lease revoke LEASE`: the flag at once, the record when the store allows. */
export async function revokeCommand(leaseId: string, options: { team: string; reason?: string; json?: boolean }, ambient: Ambient): Promise<void> {
  const team = checkName("team", options.team);
  const home = resolveHome();
  const layout = ledgerLayout(home);
  const pinned = readPinnedOwnerKey(layout);
  if (pinned === undefined) throw new Error(`no owner key is pinned under ${layout.keysDir}: this TEAMD_HOME was never initialised (teamd init)`);
  const key = await ownerKeyForAct();
  const act = await signOwnerAct(
    // A reason is owner-typed text that goes on record: a credential in it is kept only as its shape, length and hash (issue 22).
    revocationDraft({ team, subject: RevocationSubject.LEASE, subjectId: leaseId, reason: redactCredentials(options.reason ?? "revoked by the owner") }),
    key.seed,
  );
  let flagId: string;
  try {
    flagId = (await createFlags({ dir: layout.flagsDir, ownerKey: publicKeyFromRaw(pinned) }).raise(act)).id;
  } catch (error) {
    if (error instanceof LedgerRefusal) throw RefusalError.from(error.refusal);
    throw error;
  }
  let recorded: { seq: number } | undefined;
  let why = "";
  try {
    const channel = await openOwnerChannel(home, ambient.now);
    try {
      const receipt = await channel.submit(OwnerActKind.REVOKE, act);
      if (receipt.seq > 0) recorded = { seq: receipt.seq };
      else why = "the store is not writable";
    } finally {
      await channel.close();
    }
  } catch (error) {
    if (error instanceof RefusalError && error.rule === "lease.unknown") throw error;
    why = error instanceof Error ? error.message : String(error);
  }
  if (options.json)
    process.stdout.write(JSON.stringify({ leaseId, team, flagId, recorded: recorded !== undefined, seq: recorded?.seq ?? null, reason: why || null }) + "\n");
  else {
    process.stdout.write(
      `lease ${leaseId} revoked: in force now (flag ${flagId.slice(0, 12)}); ${recorded ? `recorded: record ${recorded.seq}` : `not recorded yet (${why}); it is appended, marked late, when the store returns`}\n`,
    );
  }
}
