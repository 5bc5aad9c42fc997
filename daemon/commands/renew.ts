import { OwnerActKind } from "../../src/gen/teamd/v1/control_pb.js";
import { renewDraft, signOwnerAct } from "../../src/ledger/index.js";
import { resolveHome } from "../host/home.js";
import { checkName } from "../host/names.js";
import { openOwnerChannel } from "../owner/channel.js";
import { ownerKeyForAct } from "./owner-session.js";
import type { Ambient } from "../host/ambient.js";

/**
 * `teamd renew --team T`: the owner renews the team's unattended runtime (§8) — signed, recorded;
 * the only trusted renewal beside an apply of its file. A paused team's acts and starts are
 * allowed again, and the seats the pause froze thaw where they stood.
 */
export async function renewCommand(options: { team: string; json?: boolean }, ambient: Ambient): Promise<void> {
  const team = checkName("team", options.team);
  const key = await ownerKeyForAct();
  const channel = await openOwnerChannel(resolveHome(), ambient.now);
  try {
    const receipt = await channel.submit(OwnerActKind.RENEW, await signOwnerAct(renewDraft({ team }), key.seed));
    if (options.json) process.stdout.write(JSON.stringify({ renewed: team, seq: receipt.seq }) + "\n");
    else process.stdout.write(`team ${team} renewed: record ${receipt.seq}; its runtime starts again now\n`);
  } finally {
    await channel.close();
  }
}
