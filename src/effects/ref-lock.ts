import { setTimeout as sleep } from "node:timers/promises";
import { refConflict } from "../kernel/git-names.js";
import { git, GitError } from "./git.js";

/**
 * A ref update that loses a lock race (issue 20, §15): git refuses to move a ref another
 * process holds the lock of (`<ref>.lock`, or `packed-refs.lock` for a delete), and says so
 * without moving it. That is not "the effect may or may not have happened": the caller has
 * read the ref back and found it where it was, so the update is tried again, a bounded number
 * of times, and then refused (RefBusy) — never recorded as unknown.
 */

/** The ref stayed locked through every attempt; nothing moved. */
export class RefBusy extends Error {
  override readonly name = "RefBusy";
  constructor(
    readonly ref: string,
    readonly attempts: number,
  ) {
    super(`${ref} stayed locked by another update through ${attempts} attempts; nothing moved`);
  }
}

/** git could not make the ref beside one that exists (a ref and a folder of refs of the same name); nothing moved. */
export class RefConflict extends Error {
  override readonly name = "RefConflict";
  constructor(
    readonly ref: string,
    readonly detail: string,
  ) {
    super(`${ref} cannot be made beside the refs that exist: ${detail}`);
  }
}

/** How many times a locked ref update is tried in all, and the pause before the second (doubled each time after). */
export const REF_LOCK_ATTEMPTS = 5;
export const REF_LOCK_FIRST_PAUSE_MS = 25;

const LOCKED = /Unable to create '[^']*\.lock': File exists/;
/**
 * git's ways of saying a ref cannot be made beside another (`x` and `x/y`: a ref file and a
 * folder of refs of one name), which differ with the moment the other update is at — found by
 * an outside attack racing pushes of `x` and `x/y` (git 2.39): the exists/cannot-create message,
 * a non-empty folder blocking the ref, a lock that cannot be made under a ref file, a folder that
 * cannot be made for it.
 */
const CONFLICTS = [
  /cannot lock ref '[^']*': ('[^']*' exists; cannot create '[^']*')/,
  /(there is a non-empty directory '[^']*' blocking reference '[^']*')/,
  /(Unable to create '[^']*\.lock': Not a directory)/,
  /cannot lock ref '[^']*': (unable to create directory for [^\n]*)/,
];

/** What a failed ref update's git said: a lock another process held, a name beside an existing ref, or neither. */
export function refUpdateFailure(error: unknown): { readonly kind: "locked" } | { readonly kind: "conflict"; readonly detail: string } | undefined {
  if (!(error instanceof GitError)) return undefined;
  for (const pattern of CONFLICTS) {
    const conflict = pattern.exec(error.stderr);
    if (conflict !== null) return { kind: "conflict", detail: conflict[1] as string };
  }
  if (LOCKED.test(error.stderr)) return { kind: "locked" };
  return undefined;
}

/**
 * A ref update failed and the caller read the ref back where it was: if a ref now stands
 * beside it (a folder of refs of its name, or a ref at one of its folders), that is why —
 * whatever words git used — and the update is refused as a RefConflict, never unknown; else
 * git's own error, for the caller to judge.
 */
export async function explainRefFailure(repo: string, ref: string, error: unknown): Promise<Error> {
  if (!(error instanceof GitError) || refUpdateFailure(error) !== undefined) return error instanceof Error ? error : new Error(String(error));
  const { stdout } = await git(["for-each-ref", "--format=%(refname)", "refs/"], { gitDir: repo });
  const conflict = refConflict(
    ref,
    stdout.split("\n").filter((line) => line !== "" && line !== ref),
  );
  return conflict === undefined ? error : new RefConflict(ref, conflict);
}

/**
 * Run `update` — one ref update that, when git fails, has read the ref back and thrown git's
 * error only if the ref is where it was (else its own "moved" error) — trying it again while
 * git says the ref is locked. A lock held through every attempt is RefBusy; git's refusal to
 * make a ref beside an existing one is RefConflict. Either way nothing moved.
 */
export async function retryRefLock<T>(ref: string, update: () => Promise<T>, attempts = REF_LOCK_ATTEMPTS, firstPauseMs = REF_LOCK_FIRST_PAUSE_MS): Promise<T> {
  let pause = firstPauseMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await update();
    } catch (error) {
      if (error instanceof RefConflict) throw error;
      const failure = refUpdateFailure(error);
      if (failure === undefined) throw error;
      if (failure.kind === "conflict") throw new RefConflict(ref, failure.detail);
      if (attempt >= attempts) throw new RefBusy(ref, attempt);
    }
    await sleep(pause);
    pause *= 2;
  }
}
