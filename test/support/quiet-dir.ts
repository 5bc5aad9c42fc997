import { afterAll, beforeAll, beforeEach } from "vitest";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { chmod, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Folders for tests of what is keyed by a folder's change time (src/sandbox/etc-readable.ts: a
 * seat uid's answer holds while the file and every folder above it are unchanged). Under /tmp,
 * every other test file's temp folders move /tmp's change time all the time, as /etc's would
 * move only when an entry of /etc changes; and a folder shared by test files moves whenever one
 * of them makes its own. So the global setup makes, once, one folder per test file that uses
 * this (QUIET_NAMES) under a root in /var/tmp, and nothing but that file's own tests changes
 * anything under it. 0755 all the way: a seat's uid may pass.
 */
export const QUIET_NAMES = ["etc-readable", "etc-copies", "escape-etc-copies"] as const;
export const QUIET_ROOT_ENV = "TEAMD_TEST_QUIET_ROOT";

/** The global setup's half: the root and each file's folder, made before any test runs; returns the teardown. */
export function makeQuietRoot(): () => void {
  const root = join(existsSync("/var/tmp") ? "/var/tmp" : tmpdir(), `teamd-quiet-${process.pid}`);
  mkdirSync(root, { mode: 0o755 });
  for (const name of QUIET_NAMES) mkdirSync(join(root, name), { mode: 0o755 });
  process.env[QUIET_ROOT_ENV] = root;
  return () => rmSync(root, { recursive: true, force: true });
}

export interface QuietDirs {
  /** A new empty folder for one test. */
  next(): Promise<string>;
  /** Empties the file's folder (the folder itself is the global setup's). */
  remove(): Promise<void>;
}

export async function quietDirs(name: (typeof QUIET_NAMES)[number]): Promise<QuietDirs> {
  const root = process.env[QUIET_ROOT_ENV];
  if (root === undefined) throw new Error(`${QUIET_ROOT_ENV} is not set: the global setup (test/support/global-setup.ts) makes it`);
  const base = join(root, name);
  return {
    async next() {
      const dir = await mkdtemp(join(base, "t-"));
      await chmod(dir, 0o755);
      return dir;
    },
    async remove() {
      for (const entry of await readdir(base)) await rm(join(base, entry), { recursive: true, force: true });
    },
  };
}

/**
 * A fresh quiet folder for each test of the calling file: registers the file's hooks and
 * returns what gives this test's folder (call it in a test or a later beforeEach).
 */
export function quietDirPerTest(name: (typeof QUIET_NAMES)[number]): () => string {
  let dirs: QuietDirs | undefined;
  let dir: string | undefined;
  beforeAll(async () => {
    dirs = await quietDirs(name);
  });
  afterAll(async () => {
    await dirs?.remove();
  });
  beforeEach(async () => {
    dir = await dirs?.next();
  });
  return () => {
    if (dir === undefined) throw new Error("no quiet folder: quietDirPerTest's hooks have not run");
    return dir;
  };
}
