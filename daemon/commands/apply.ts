import { existsSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { ControlService, OwnerActKind } from "../../src/gen/teamd/v1/control_pb.js";
import { signOwnerAct } from "../../src/ledger/index.js";
import { formatTeamFileErrors, loadTeamFile, type TeamFileError } from "../../src/teamfile/index.js";
import { EXIT } from "../../src/rpc/cli-outcome.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { RefusalError } from "../../src/rpc/errors.js";
import { resolveHome, type TeamdHome } from "../host/home.js";
import { repositoryRoot } from "../host/hub.js";
import { openOwnerChannel } from "../owner/channel.js";
import { ownerKeyForAct } from "./owner-session.js";
import { askYesNo } from "./prompt.js";
import { formatPolicyDiff, ownerChange, policyDiff } from "./apply-diff.js";
import { withDelegated } from "./apply-delegated.js";
import { isTracked, TEAM_FILE_NAME } from "../host/team-file-placement.js";
import type { Ambient } from "../host/ambient.js";
import type { Ceiling } from "../../src/kernel/ceiling.js";
import { showDuration } from "../../src/kernel/duration.js";
import { showAmount } from "../../src/kernel/envelope-spend.js";
import { START_CHANGED_REMOVED } from "../../src/rpc/protocol.js";

function hashBytes(prefixed: string): Uint8Array {
  return Uint8Array.from(Buffer.from(prefixed.replace(/^sha256:/, ""), "hex"));
}

/**
 * `teamd apply [FILE]`: the owner signs the team file's canonical form and submits it; the
 * daemon checks the signature against the key pinned at genesis, loads the signed canonical
 * form again (the launch-time checks), and records the policy. The policy in force is the
 * last applied one — a file edited on disk but not applied is never in force. An invalid
 * file prints every error with its line and fix, and nothing is signed or sent.
 */
export async function apply(
  file: string | undefined,
  options: { yes?: boolean; json?: boolean; keepDelegated?: boolean; dropDelegated?: boolean },
  ambient: Ambient,
): Promise<void> {
  const path = resolve(file ?? join(await repositoryRoot(process.cwd()), TEAM_FILE_NAME));
  const repoRoot = dirname(path);
  if (!existsSync(path)) throw new Error(`no team file at ${path}: run teamd init (it writes one), or name the file`);
  if (await isTracked(repoRoot, basename(path)).catch(() => false)) {
    throw new RefusalError(
      "teamfile.tracked",
      `${path} is tracked by git: run 'git rm --cached ${basename(path)}' and commit; the team file never travels with the repository`,
    );
  }
  // As a proposal first: over a policy in force the kernel decides the change against it
  // (ownerChange); a team's first policy gets the launch check (§5, static) below.
  const fromFile = await loadTeamFile(path, { proposal: true });
  const invalid = (errors: readonly TeamFileError[]) => {
    if (options.json) process.stdout.write(JSON.stringify({ error: "invalid", file: path, errors }) + "\n");
    else process.stderr.write(formatTeamFileErrors(errors, path) + "\nteamd apply: nothing was applied\n");
    process.exitCode = EXIT.failure;
  };
  if (!fromFile.ok) return invalid(fromFile.errors);
  const team = fromFile.policy.team;
  const home = resolveHome();
  const key = await ownerKeyForAct();
  const channel = await openOwnerChannel(home, ambient.now);
  try {
    const inForce = await channel.policyInForce(team);
    // §10: delegated grants in force are kept, or taken back, only when the owner says which.
    const { applied: loaded, kept, dropped } = withDelegated(inForce, fromFile, options);
    const { diff, against, before } = policyDiff(inForce, loaded.policy);
    const decided = ownerChange(before, loaded.policy, await channel.leases(team), ambient.now());
    if (decided === undefined) {
      const launch = await loadTeamFile(path);
      if (!launch.ok) return invalid(launch.errors);
    } else if (decided.decision === "refuse") {
      throw new RefusalError(decided.rule, `${decided.reason}; nothing was applied`);
    }
    const revocations = decided?.revocations ?? [];
    const paused = decided?.paused ?? [];
    if (!options.json) {
      process.stderr.write(formatPolicyDiff(diff, against, revocations, paused));
      if (kept > 0)
        process.stderr.write(`Kept ${kept} delegated change(s) over your file; it does not say them: teamd policy export writes the policy in force to it.\n`);
      for (const words of dropped) process.stderr.write(`Taking back: ${words}\n`);
    }
    if (!options.yes && !(await askYesNo(`Apply ${path} as the policy of team '${team}' (${loaded.hashes.policy})?`))) {
      throw new Error("cancelled; nothing was applied");
    }
    const act = await signOwnerAct(
      {
        type: RecordType.POLICY,
        team,
        action: "policy.apply",
        payload: {
          domain: { team, repositoryRoot: repoRoot },
          target: { kind: TargetKind.TEAM, name: team },
          after: { identity: { case: "contentSha256", value: hashBytes(loaded.hashes.policy) } },
          // A fresh request id: applying the same file again later is a new act, so the
          // policy in force is always the last one applied.
          requestId: ambient.newId(),
          detail: {
            case: "policy",
            value: {
              teamFileHash: hashBytes(loaded.hashes.policy),
              canonical: loaded.canonical,
              startFileHashes: { ...loaded.startFiles },
              // The record it was shown against (§10: compared again at commit; a grant landing meanwhile refuses it).
              inForceSeq: inForce.applied ? inForce.seq : 0n,
            },
          },
        },
      },
      key.seed,
    );
    const receipt = await channel.submit(OwnerActKind.APPLY, act);
    const seats = Object.keys(loaded.policy.seats).length;
    // A start changed by this apply takes effect at the seat's next start: name the running seats it concerns.
    const { restartNeeded, removedRunning, spendNow } = await afterApply(home, team);
    if (options.json)
      process.stdout.write(
        JSON.stringify({
          applied: true,
          team,
          policy: loaded.hashes.policy,
          seq: receipt.seq,
          seats,
          via: channel.via,
          diff,
          revokedLeases: revocations,
          pausedFloors: paused.map((v) => v.message),
          restartNeeded,
          removedRunning,
          delegatedKept: kept,
          delegatedDropped: dropped,
          envelope: envelopeWords(loaded.policy.ceiling),
          spendNow: spendNow ?? null,
        }) + "\n",
      );
    else {
      process.stdout.write(`applied: team '${team}' policy ${loaded.hashes.policy} (${seats} seat${seats === 1 ? "" : "s"}), record ${receipt.seq}\n`);
      for (const line of envelopeWords(loaded.policy.ceiling)) process.stdout.write(`envelope: ${line}\n`);
      if (spendNow !== undefined) process.stdout.write(`spend now: ${spendNow}\n`);
      for (const seat of restartNeeded)
        process.stdout.write(
          `restart needed: ${seat}@${team} runs the start it had; teamd stop ${seat}@${team} && teamd start ${seat}@${team} runs the new one\n`,
        );
      for (const seat of removedRunning)
        process.stdout.write(`removed: ${seat}@${team} still runs; teamd refuses its every act, and teamd stop ${seat}@${team} ends it\n`);
    }
  } finally {
    await channel.close();
  }
}

/**
 * The resource envelope the applied file sets, each dimension in words (§8: apply prints each),
 * and for spend what it is: a soft bound, counted from meter reports.
 */
function envelopeWords(ceiling: Ceiling | undefined): string[] {
  const out: string[] = [];
  if (ceiling?.runtimeMs !== undefined) out.push(`runtime ${showDuration(ceiling.runtimeMs)} unattended, from this apply (teamd renew --team renews it)`);
  for (const [lab, cap] of Object.entries(ceiling?.seats ?? {})) out.push(`lab ${lab}: at most ${cap} live seat(s)`);
  for (const lab of Object.keys(ceiling?.visibility ?? {})) out.push(`lab ${lab}: its reads capped (ceiling.visibility)`);
  const spend = ceiling?.spend;
  if (spend !== undefined) {
    const period = spend.period.kind === "month" ? "calendar month (UTC)" : showDuration(spend.period.ms);
    const labs = Object.entries(spend.labs).map(([lab, minor]) => `, lab ${lab} ${showAmount(minor, spend.currency)}`);
    out.push(
      `spend ${showAmount(spend.total, spend.currency)} per ${period}${labs.join("")}; each launch reserves ${showAmount(spend.perDispatch, spend.currency)}. ` +
        "A soft bound: counted from the meters' reports (TEAMD_HOME/meters.json), so an agent spending on its own credential between two reports is stopped only at the next",
    );
  }
  return out;
}

/**
 * After the apply, from the daemon when it runs (none when it is down): the team's running seats
 * whose start the policy in force no longer pins (status's startChanged), and its spend this
 * period in words (reported, reserved, left: the limit itself is in the envelope's words).
 */
async function afterApply(home: TeamdHome, team: string): Promise<{ restartNeeded: string[]; removedRunning: string[]; spendNow: string | undefined }> {
  const client = createRpcClient(ControlService, home.controlSocket, { deadlineMs: 5000 });
  try {
    const reply = await client.status();
    const spend = reply.teams.find((t) => t.team === team)?.spend;
    const amount = (minor: bigint) => showAmount(Number(minor), spend?.currency ?? "");
    return {
      restartNeeded: reply.seats.filter((s) => s.team === team && s.startChanged !== "" && s.startChanged !== START_CHANGED_REMOVED).map((s) => s.seat),
      // A running seat the file no longer has: no restart brings it back; only a stop ends it.
      removedRunning: reply.seats.filter((s) => s.team === team && s.startChanged === START_CHANGED_REMOVED).map((s) => s.seat),
      spendNow:
        spend === undefined
          ? undefined
          : `reported ${amount(spend.reported)}, reserved ${amount(spend.reserved)}, ${amount(spend.remainder)} left of ${amount(spend.limit)} this period (teamd status shows each lab and meter)`,
    };
  } catch {
    return { restartNeeded: [], removedRunning: [], spendNow: undefined };
  } finally {
    client.close();
  }
}
