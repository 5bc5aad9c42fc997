import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { git, gitSucceeds } from "../src/effects/git.js";

/**
 * The hub (DESIGN.md "Repositories"): a bare clone of the owner's repository under
 * TEAMD_HOME, added to the owner's repository as the remote `teamd`. Gates protect its
 * trunk and the daemon merges there; the owner's working tree is never touched.
 */
export interface HubState {
  readonly path: string;
  /** What this call did: made the hub, found it, and the remote. */
  readonly created: boolean;
  readonly remote: "added" | "present";
}

export function hubPath(teamdHome: string, team: string): string {
  return join(teamdHome, "hubs", `${team}.git`);
}

/** The top of the owner's working tree, or a clear error when `dir` is not in one. */
export async function repositoryRoot(dir: string): Promise<string> {
  try {
    const { stdout } = await git(["rev-parse", "--show-toplevel"], { cwd: resolve(dir) });
    return stdout.trim();
  } catch {
    throw new Error(`${resolve(dir)} is not inside a git repository: run teamd init in your project (or pass --repo DIR)`);
  }
}

export async function ensureHub(teamdHome: string, team: string, repoRoot: string): Promise<HubState> {
  const path = hubPath(teamdHome, team);
  let created = false;
  if (!existsSync(path)) {
    if (!(await gitSucceeds(["rev-parse", "--verify", "--quiet", "HEAD"], { cwd: repoRoot }))) {
      throw new Error(`${repoRoot} has no commit yet: commit something first, then run teamd init again`);
    }
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    // --no-hardlinks: the hub shares no inode with the owner's .git (both are reserved,
    // and identity is by inode).
    await git(["clone", "--bare", "--no-hardlinks", "--quiet", repoRoot, path]);
    created = true;
  } else if (!(await gitSucceeds(["rev-parse", "--is-bare-repository"], { gitDir: path }))) {
    throw new Error(`${path} exists but is not a git repository; move it away, then run teamd init again`);
  }

  const current = await git(["remote", "get-url", "teamd"], { cwd: repoRoot }).then(
    (r) => r.stdout.trim(),
    () => undefined,
  );
  if (current === undefined) {
    await git(["remote", "add", "teamd", path], { cwd: repoRoot });
    return { path, created, remote: "added" };
  }
  if (resolve(current) !== path) {
    throw new Error(
      `the repository already has a remote 'teamd' pointing at ${current}, not at this team's hub ${path}: ` +
        `remove it (git remote remove teamd) or use the TEAMD_HOME it belongs to`,
    );
  }
  return { path, created, remote: "present" };
}
