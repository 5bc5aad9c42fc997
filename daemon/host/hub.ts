import { existsSync } from "node:fs";
import { chmod, chown, lstat, mkdir, readdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { git, gitSucceeds } from "../../src/effects/git.js";

/**
 * The hub (DESIGN.md "Repositories"): a bare clone of the owner's repository under
 * TEAMD_HOME, added to the owner's repository as the remote `teamd`. Gates protect its
 * trunk and the daemon merges there; the owner's working tree is never touched.
 */
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

/**
 * git run by the daemon's user on the owner's repository: in system mode that is root on a
 * repository the owner owns, which git refuses as of "dubious ownership" unless told that
 * this one directory is trusted (on the command line, which git treats as protected
 * configuration). Only the owner's registered repository is ever named.
 */
function trusting(repoRoot: string): string[] {
  return ["-c", `safe.directory=${repoRoot}`];
}

/**
 * Make the team's hub: a bare clone of the owner's repository. In system mode the daemon
 * makes it (the CLI of a non-root owner cannot write TEAMD_HOME) and opens it to group teamd
 * (`sharedGid`): the owner fetches the gated trunk from it and pushes their own work to it;
 * the seat user is not in the group and never reaches it.
 */
export async function createHub(
  teamdHome: string,
  team: string,
  repoRoot: string,
  options: { sharedGid?: number } = {},
): Promise<{ path: string; created: boolean }> {
  const path = hubPath(teamdHome, team);
  if (existsSync(path)) {
    if (!(await gitSucceeds(["rev-parse", "--is-bare-repository"], { gitDir: path }))) {
      throw new Error(`${path} exists but is not a git repository; move it away, then run teamd init again`);
    }
    return { path, created: false };
  }
  if (!(await gitSucceeds([...trusting(repoRoot), "rev-parse", "--verify", "--quiet", "HEAD"], { cwd: repoRoot }))) {
    throw new Error(`${repoRoot} has no commit yet: commit something first, then run teamd init again`);
  }
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const shared = options.sharedGid !== undefined;
  if (shared) {
    await chown(dirname(path), 0, options.sharedGid as number);
    await chmod(dirname(path), 0o2750);
  }
  // --no-hardlinks: the hub shares no inode with the owner's .git (both are reserved,
  // and identity is by inode).
  // The clone reads the owner's repository through a separate upload-pack, which does not
  // take safe.directory from this command line: it gets its own (a fixed string, no path
  // interpolated into the shell command git runs it with).
  await git([
    ...trusting(repoRoot),
    ...trusting(`${repoRoot}/.git`),
    "clone",
    "--bare",
    "--no-hardlinks",
    "--quiet",
    "--upload-pack=git -c 'safe.directory=*' upload-pack",
    ...(shared ? ["--config", "core.sharedRepository=group"] : []),
    repoRoot,
    path,
  ]);
  if (shared) await shareTree(path, options.sharedGid as number);
  return { path, created: true };
}

/** chgrp -R and group read/write (setgid on folders), as core.sharedRepository=group keeps it from now on. */
async function shareTree(path: string, gid: number): Promise<void> {
  const info = await lstat(path);
  if (info.isSymbolicLink()) return;
  await chown(path, 0, gid);
  if (info.isDirectory()) {
    await chmod(path, 0o2770);
    for (const name of await readdir(path)) await shareTree(join(path, name), gid);
  } else {
    await chmod(path, (info.mode & 0o700) | ((info.mode & 0o700) >> 3));
  }
}

/** One word for the shell git runs an upload-pack or receive-pack command with. */
function shellWord(value: string): string {
  return `'${value.replace(/'/g, "'\\''")}'`;
}

/**
 * The owner's repository gets the remote `teamd` naming the hub (the owner's side of init).
 * A hub owned by root (system mode) is one git refuses to read for another user ("dubious
 * ownership"); rather than trust it in the owner's global configuration, the remote's own
 * upload-pack and receive-pack commands trust exactly that hub, in this repository only.
 */
export async function ensureRemote(repoRoot: string, path: string, options: { foreignHub?: boolean } = {}): Promise<"added" | "present"> {
  const trustHub = async () => {
    if (!options.foreignHub) return;
    for (const [key, program] of [
      ["remote.teamd.uploadpack", "upload-pack"],
      ["remote.teamd.receivepack", "receive-pack"],
    ] as const) {
      await git(["config", key, `git -c safe.directory=${shellWord(path)} ${program}`], { cwd: repoRoot });
    }
  };
  const current = await git(["remote", "get-url", "teamd"], { cwd: repoRoot }).then(
    (r) => r.stdout.trim(),
    () => undefined,
  );
  if (current === undefined) {
    await git(["remote", "add", "teamd", path], { cwd: repoRoot });
    await trustHub();
    return "added";
  }
  if (resolve(current) !== path) {
    throw new Error(
      `the repository already has a remote 'teamd' pointing at ${current}, not at this team's hub ${path}: ` +
        `remove it (git remote remove teamd) or use the TEAMD_HOME it belongs to`,
    );
  }
  await trustHub();
  return "present";
}
