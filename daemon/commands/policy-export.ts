import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { stringify } from "yaml";
import { loadTeamFileData } from "../../src/teamfile/index.js";
import { RefusalError } from "../../src/rpc/errors.js";
import { resolveHome } from "../host/home.js";
import { repositoryRoot } from "../host/hub.js";
import { TEAM_FILE_NAME } from "../host/team-file-placement.js";
import { openOwnerChannel } from "../owner/channel.js";
import type { Ambient } from "../host/ambient.js";
import { delegatedInForce } from "./apply-delegated.js";

/**
 * `teamd policy export [FILE]` (§10): write the policy in force — the owner's last apply with
 * every delegated grant and agreement since — to the team file, so the owner's file says what is
 * in force again; applying it then makes the delegated changes the owner's own. The file is
 * written in the canonical form (YAML of the recorded JSON; comments are not kept), through a
 * temporary file and a rename; the file it replaces is kept beside it as FILE.before-export.
 */
export async function policyExport(file: string | undefined, options: { team?: string; json?: boolean }, ambient: Ambient): Promise<void> {
  const root = await repositoryRoot(process.cwd()).catch(() => process.cwd());
  const path = resolve(file ?? join(root, TEAM_FILE_NAME));
  const team = options.team ?? teamOfFile(path);
  if (team === undefined) throw new RefusalError("team.unknown", `name the team (--team): ${path} does not name one`);
  const channel = await openOwnerChannel(resolveHome(), ambient.now);
  try {
    const inForce = await channel.policyInForce(team);
    if (!inForce.applied) throw new RefusalError("policy.unapplied", `team '${team}' has no applied policy to export`);
    const data = JSON.parse(inForce.canonical) as unknown;
    // What is written must load as what is in force: checked before the owner's file is touched.
    const again = loadTeamFileData(data, { startFileHashes: { ...inForce.startFileHashes }, proposal: true });
    if (!again.ok || `${again.hashes.policy}` !== inForce.teamFileHash)
      throw new RefusalError("policy.unapplied", `the policy in force (record ${inForce.seq}) does not load back to itself here; nothing was written`);
    const delegated = delegatedInForce(inForce);
    const header = [
      `# teamd.yaml — the policy in force of team ${team}, exported from record ${inForce.seq} (${inForce.teamFileHash}).`,
      ...(delegated.length > 0 ? [`# It includes ${delegated.length} delegated change(s) since your apply of record ${inForce.ownerSeq}:`] : []),
      ...delegated.map((d) => `#   ${d.words.replace(/[\r\n]/g, " ")}`),
      "# teamd apply signs it as yours. Canonical form: your comments and key order are not kept.",
      "",
    ].join("\n");
    const backup = `${path}.before-export`;
    const had = existsSync(path);
    const temp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
    writeFileSync(temp, `${header}\n${stringify(data)}`, { mode: 0o600, flag: "wx" });
    if (had) writeFileSync(backup, readFileSync(path), { mode: 0o600 });
    renameSync(temp, path);
    const result = {
      exported: true,
      team,
      seq: Number(inForce.seq),
      policy: inForce.teamFileHash,
      file: path,
      delegated: delegated.length,
      ...(had ? { backup } : {}),
    };
    if (options.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else
      process.stdout.write(
        `exported: the policy in force of team '${team}' (record ${inForce.seq}, ${delegated.length} delegated change(s)) to ${path}${had ? `; the file it replaced is ${backup}` : ""}\n` +
          "teamd apply makes it yours (no change to what is in force)\n",
      );
  } finally {
    await channel.close();
  }
}

function teamOfFile(path: string): string | undefined {
  try {
    const match = /^team:\s*["']?([a-z][a-z0-9-]*)["']?\s*$/m.exec(readFileSync(path, "utf8"));
    return match?.[1];
  } catch {
    return undefined;
  }
}
