import { mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";

/**
 * The folders a seat's push passes through on the daemon's side (DESIGN.md "Repositories"),
 * all under one quarantine root in TEAMD_HOME, owner only: a pushed pack lands in a
 * quarantine there before anything reaches the hub (src/effects/git-receive.ts makes and
 * disposes of each), and a bounded seat's commits are replayed onto the hub's real base in a
 * replay folder there. No folder outlives its push: a replay folder is removed whether the
 * replay landed, was refused or failed.
 */

/**
 * At the daemon's start, before it takes a push: remove what a daemon stopped in the middle of
 * pushes left in the root — a pushed pack's quarantine (`push-*`), a replay folder (`replay-*`),
 * any other folder of work — so none outlives its push across a restart (found by an attack,
 * round eleven: a stalled 3 MB push's pack stayed through three restarts). Links are removed,
 * never followed. Returns the names removed.
 */
export async function sweepQuarantineRoot(root: string): Promise<string[]> {
  const left = await readdir(root).catch(() => [] as string[]);
  for (const name of left) await rm(join(root, name), { recursive: true, force: true });
  return left;
}

/** Make the quarantine root (0700, with its parents) if it is missing, before a pack is received into it. */
export async function prepareQuarantineRoot(root: string): Promise<void> {
  await mkdir(root, { recursive: true, mode: 0o700 });
}

/**
 * Run `work` with a fresh replay folder, `<root>/replay-<id>/` with an empty `pack/` (0700):
 * where a bounded seat's replayed commits are written as objects before they migrate into
 * the hub. The folder is removed when `work` settles, whatever it returned or threw. `id` is
 * the caller's (unique per push: the daemon's id source).
 */
export async function withReplayFolder<T>(root: string, id: string, work: (dir: string) => Promise<T>): Promise<T> {
  const out = join(root, `replay-${id}`);
  await mkdir(join(out, "pack"), { recursive: true, mode: 0o700 });
  try {
    return await work(out);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}
