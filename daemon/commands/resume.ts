import { OwnerActKind } from "../../src/gen/teamd/v1/control_pb.js";
import { createFlags, publicKeyFromRaw, resumeDraft, signOwnerAct } from "../../src/ledger/index.js";
import { resolveHome } from "../host/home.js";
import { ledgerLayout, readPinnedOwnerKey } from "../host/ledger-host.js";
import { openOwnerChannel } from "../owner/channel.js";
import { ownerKeyForAct } from "./owner-session.js";
import type { Ambient } from "../host/ambient.js";

/**
 * `teamd resume`: the owner act that clears a stop — the only one (§11, §15). It names every
 * stop whose flag is present under TEAMD_HOME/flags and goes through the daemon (or, in user
 * mode with the daemon down, the ledger directly): a stop held only by its flag is recorded
 * first, marked late, then cleared; the resume needs the store, so a stop outlives an outage.
 */
export async function resumeCommand(options: { json?: boolean; team?: string }, ambient: Ambient): Promise<void> {
  const home = resolveHome();
  const layout = ledgerLayout(home);
  const pinned = readPinnedOwnerKey(layout);
  if (pinned === undefined) throw new Error(`no owner key is pinned under ${layout.keysDir}: run teamd init first`);
  const read = createFlags({ dir: layout.flagsDir, ownerKey: publicKeyFromRaw(pinned) }).read();
  const bad = read.invalid[0];
  if (bad)
    throw new Error(
      `flag ${bad.file} cannot be verified (${bad.reason}); a stop whose flag is unreadable cannot be cleared by naming it: move the file away only if you did not write it`,
    );
  // --team: that team's stops only; a machine-wide stop is cleared by a plain resume.
  const mine = (scope: string | undefined, team: string) => options.team === undefined || (scope === "team" && team === options.team);
  const flagged = read.flags.filter((f) => f.kind === "stop" && mine(f.scope, f.team)).map((f) => f.id);
  const channel = await openOwnerChannel(home, ambient.now);
  try {
    // And leads's stops (§9), held by their records alone, named by seq: only an owner act clears a stop, whoever raised it.
    const flagIds = [...flagged, ...(await channel.recordedStops()).filter((s) => mine(s.scope, s.team)).map((s) => s.flagId)];
    if (flagIds.length === 0) {
      const none = options.team === undefined ? "no stop is in force" : `team ${options.team} has no stop of its own in force`;
      if (options.json) process.stdout.write(JSON.stringify({ resumed: false, flagIds: [], reason: none }) + "\n");
      else process.stdout.write(`resume: ${none}; nothing to clear\n`);
      return;
    }
    const key = await ownerKeyForAct();
    const act = await signOwnerAct(resumeDraft({ flagIds, ...(options.team !== undefined ? { team: options.team } : {}) }), key.seed);
    const receipt = await channel.submit(OwnerActKind.RESUME, act);
    if (options.json) process.stdout.write(JSON.stringify({ resumed: true, seq: receipt.seq, flagIds, via: channel.via }) + "\n");
    else process.stdout.write(`resumed: ${flagIds.length} stop(s) cleared (record ${receipt.seq})\n`);
  } finally {
    await channel.close();
  }
}
