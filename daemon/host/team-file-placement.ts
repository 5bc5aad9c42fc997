import { readFile, appendFile, mkdir } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { git, gitSucceeds } from "../../src/effects/git.js";

/**
 * The team file sits at the owner's repository root, untracked, so no copy of it reaches
 * the hub or any seat (DESIGN.md "Repositories"). Init excludes it through
 * .git/info/exclude (local, never committed); a tracked team file is refused (fail closed):
 * it would travel with every clone.
 */
export const TEAM_FILE_NAME = "teamd.yaml";

export async function isTracked(repoRoot: string, name = TEAM_FILE_NAME): Promise<boolean> {
  return gitSucceeds(["ls-files", "--error-unmatch", "--", name], { cwd: repoRoot });
}

/** Is the team file in any commit of any branch? Then its contents already reached the hub. */
export async function inHistory(repoRoot: string, name = TEAM_FILE_NAME): Promise<boolean> {
  const { stdout } = await git(["log", "--all", "--format=%H", "-1", "--", name], { cwd: repoRoot });
  return stdout.trim() !== "";
}

export async function refuseTrackedTeamFile(repoRoot: string): Promise<void> {
  if (await isTracked(repoRoot)) {
    throw new Error(
      `${TEAM_FILE_NAME} is tracked by git in ${repoRoot}; the team file must stay untracked so no copy reaches a seat: ` +
        `run 'git rm --cached ${TEAM_FILE_NAME}' and commit, then run teamd init again`,
    );
  }
}

/** Add `/teamd.yaml` to .git/info/exclude if no line there excludes it yet. Returns true if added. */
export async function excludeTeamFile(repoRoot: string): Promise<boolean> {
  const { stdout } = await git(["rev-parse", "--git-path", "info/exclude"], { cwd: repoRoot });
  const excludePath = resolve(repoRoot, stdout.trim());
  const current = await readFile(excludePath, "utf8").catch(() => "");
  const line = `/${TEAM_FILE_NAME}`;
  if (current.split("\n").some((l) => l.trim() === line)) return false;
  await mkdir(dirname(excludePath), { recursive: true });
  const prefix = current === "" || current.endsWith("\n") ? "" : "\n";
  await appendFile(excludePath, `${prefix}# teamd: the team file is never committed (teamd init)\n${line}\n`);
  return true;
}
