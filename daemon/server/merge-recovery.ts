import type { Ledger } from "../../src/ledger/index.js";
import { git, gitSucceeds } from "../../src/effects/git.js";
import { readRef } from "../../src/effects/git-receive.js";

/**
 * §15 "the tool asks the external service where it can": a merge whose outcome is unknown (the
 * daemon died between its intent and its outcome) is settled by asking the hub. The merge the
 * intent names is a two-parent commit of exactly (base, head) on the trunk: if the trunk's
 * history holds one, the merge happened; if the branch's head is nowhere in the trunk, it did
 * not. Anything else (the head reached the trunk another way) stays unknown for the owner's
 * `teamd ledger resolve`. The answer is recorded by the daemon as a resolution, so a retry
 * with the same request id returns it and never merges again.
 */
export async function resolveMergeOutcomes(ledger: Ledger, log: (line: string) => void): Promise<number> {
  if (ledger.state.status !== "ready") return 0;
  let resolved = 0;
  for (const state of ledger.view.unresolvedUnknowns()) {
    const [entry] = ledger.entries(state.intentSeq, 1);
    if (entry === undefined || entry.type !== "intent" || entry.action !== "merge") continue;
    const field = (key: string) => entry.payload?.fields.find((f) => f.key === key)?.value ?? "";
    const base = field("base");
    const head = field("head");
    const trunkRef = entry.payload?.target?.name ?? "";
    const hub = ledger.view.team(state.team)?.hub;
    if (hub === undefined || !/^[0-9a-f]{40,64}$/.test(base) || !/^[0-9a-f]{40,64}$/.test(head) || !trunkRef.startsWith("refs/heads/")) continue;
    const trunk = await readRef(hub, trunkRef);
    if (trunk === undefined) continue;
    const lines = (await git(["rev-list", "--parents", trunk, "--not", base], { gitDir: hub })).stdout.split("\n");
    const merge = lines.map((l) => l.split(" ")).find((parts) => parts.length === 3 && parts[1] === base && parts[2] === head);
    if (merge !== undefined) {
      await ledger.resolveUnknown(state.intentSeq, true, `the hub's ${trunkRef} holds the merge commit ${merge[0]} of ${base} and ${head}`);
      log(`merge intent ${state.intentSeq}: the hub holds its merge commit; recorded as done`);
      resolved++;
    } else if (!(await gitSucceeds(["merge-base", "--is-ancestor", head, trunk], { gitDir: hub }))) {
      await ledger.resolveUnknown(state.intentSeq, false, `the hub's ${trunkRef} (${trunk}) does not contain ${head}: the merge did not happen`);
      log(`merge intent ${state.intentSeq}: the hub never received it; recorded as not done`);
      resolved++;
    }
  }
  return resolved;
}
