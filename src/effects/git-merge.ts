import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { realpath } from "node:fs/promises";
import { containedGit, hubReadContext } from "./contained-git.js";
import { git, GitError, gitEnv, HARDENING, splitNul } from "./git.js";
import { readRef, RefMoved } from "./git-receive.js";
import { retryRefLock } from "./ref-lock.js";
import { DURABLE_GIT, syncNewObjects, syncRefFolders } from "./durable-git.js";

/**
 * The daemon's merge of a seat's branch into the trunk. What a merge would change is read
 * from the hub itself — the refs' tips now, the tree git's merge gives, the paths that tree
 * changes — never from anything a seat says about its change, and the merge that is finally
 * made is exactly that summary: the same base, the same head, the same tree, or none.
 */

/** What a merge of `branch` into `trunk` would do, computed from the hub itself (never from labels a seat supplies). */
export interface ChangeSummary {
  readonly trunkRef: string;
  readonly branchRef: string;
  /** The trunk's tip when the summary was made. */
  readonly base: string;
  /** The branch's tip when the summary was made. */
  readonly head: string;
  /** The tree the merge gives (git merge-tree --write-tree base head). */
  readonly tree: string;
  /** Every path whose content differs between base's tree and `tree`; for renames and copies both paths. Sorted, unique. */
  readonly paths: readonly string[];
  /** The branch's commits the trunk lacks, oldest first. */
  readonly commits: readonly string[];
}

/** The branch does not merge cleanly into the trunk; `paths` are the conflicted files. */
export class MergeConflict extends Error {
  override readonly name = "MergeConflict";
  constructor(
    readonly trunkRef: string,
    readonly branchRef: string,
    readonly paths: readonly string[],
  ) {
    super(`${branchRef} does not merge cleanly into ${trunkRef}: conflicts in ${paths.length > 0 ? paths.join(", ") : "(no file named)"}`);
  }
}

/** The trunk already contains the branch's tip: there is no change to gate or merge. */
export class NothingToMerge extends Error {
  override readonly name = "NothingToMerge";
  constructor(
    readonly trunkRef: string,
    readonly branchRef: string,
  ) {
    super(`${trunkRef} already contains ${branchRef}: nothing to merge`);
  }
}

const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const BRANCH_PREFIX = "refs/heads/";
/** Names the encoding, so a later change of it can never yield an id equal to one of this one's. */
const EFFECT_ID_VERSION = "teamd.effect-id.v1";

/**
 * Read both tips once and compute everything from those two ids, so the summary is
 * consistent even while pushes move the refs meanwhile (the merge then refuses: RefMoved).
 */
export async function summarizeChange(hub: string, trunkRef: string, branchRef: string): Promise<ChangeSummary> {
  await checkRefs(hub, trunkRef, branchRef);
  const hubDir = await realpath(hub);
  const base = await tipOf(hubDir, trunkRef);
  const head = await tipOf(hubDir, branchRef);
  const context = await hubReadContext(hubDir);

  // First, while nothing has been written: a branch the trunk already holds is no change.
  const listed = await containedGit(["rev-list", "--topo-order", "--reverse", head, "--not", base, "--"], context);
  const commits = listed.stdout
    .toString("utf8")
    .split("\n")
    .filter((line) => line.length > 0);
  if (commits.length === 0) throw new NothingToMerge(trunkRef, branchRef);

  const tree = await mergeTree(hubDir, trunkRef, branchRef, base, head);

  const diff = await containedGit(["diff-tree", "-r", "-M", "-C", "--name-status", "-z", base, tree, "--"], context);
  return { trunkRef, branchRef, base, head, tree, paths: parseNameStatus(diff.stdout), commits };
}

/**
 * §15's effect id: sha-256 (hex) over a canonical encoding of the changed-path set, the
 * destination tree, the destination ref, the base and the policy hash. The encoding is a
 * JSON array in a fixed order: JSON escapes every string, so no choice of paths or names
 * can make two different inputs encode alike (as concatenation with a separator could).
 * The paths are a set: sorted and deduplicated here, whatever order they come in.
 */
export function effectIdOf(summary: Pick<ChangeSummary, "paths" | "tree" | "base">, destinationRef: string, policyHash: string): string {
  if (!destinationRef.startsWith(BRANCH_PREFIX)) throw new Error(`${JSON.stringify(destinationRef)} is not a full branch name (refs/heads/...)`);
  for (const [what, oid] of [
    ["tree", summary.tree],
    ["base", summary.base],
  ] as const) {
    if (!OID.test(oid)) throw new Error(`the ${what} ${JSON.stringify(oid)} is not an object id`);
  }
  if (policyHash.length === 0) throw new Error("an effect id binds a policy hash, and none was given");
  const paths = [...new Set(summary.paths)].sort();
  const canonical = JSON.stringify([EFFECT_ID_VERSION, destinationRef, summary.base, summary.tree, policyHash, paths]);
  return createHash("sha256").update(canonical, "utf8").digest("hex");
}

/**
 * Make the merge the summary describes: a commit with parents base and head and the
 * summary's tree, then the trunk moved to it — in one ref transaction that also verifies
 * the branch is still at head, so neither a push to the trunk nor one to the branch since
 * the summary can slip through (RefMoved). The commit, written first, stays unreferenced
 * when the transaction fails; that costs an object, never a ref.
 */
export async function mergeInto(hub: string, summary: ChangeSummary, who: { readonly name: string; readonly email: string }, message: string): Promise<string> {
  const { trunkRef, branchRef, base, head, tree } = summary;
  await checkRefs(hub, trunkRef, branchRef);
  for (const [what, oid] of [
    ["base", base],
    ["head", head],
    ["tree", tree],
  ] as const) {
    if (!OID.test(oid)) throw new Error(`the summary's ${what} ${JSON.stringify(oid)} is not an object id`);
  }
  checkIdent(who);
  if (message.includes("\u0000")) throw new Error("a commit message cannot contain a NUL byte");
  const hubDir = await realpath(hub);

  // Early refusals, before anything is written; the transaction below is what decides.
  const trunkNow = await readRef(hubDir, trunkRef);
  if (trunkNow !== base) throw new RefMoved(trunkRef, base, trunkNow);
  const branchNow = await readRef(hubDir, branchRef);
  if (branchNow !== head) throw new RefMoved(branchRef, head, branchNow);

  // The summary is a plain object the caller may have kept anywhere between gate and
  // merge; the commit must be the merge of its parents, so its tree is computed again
  // rather than believed (deterministic: the same ids give the same tree).
  const merged = await mergeTree(hubDir, trunkRef, branchRef, base, head);
  if (merged !== tree) throw new Error(`the summary's tree ${tree} is not the merge of ${base} and ${head} (git gives ${merged})`);

  const { stdout } = await git([...DURABLE_GIT, "commit-tree", "-p", base, "-p", head, "-m", message, tree], {
    gitDir: hubDir,
    env: { GIT_AUTHOR_NAME: who.name, GIT_AUTHOR_EMAIL: who.email, GIT_COMMITTER_NAME: who.name, GIT_COMMITTER_EMAIL: who.email },
  });
  const commit = stdout.trim();
  if (!OID.test(commit)) throw new Error(`git commit-tree printed ${JSON.stringify(commit)}, not an object id`);
  // The merged trees and blobs (merge-tree wrote them, here or when the merge was gated) and the commit, on disk before the trunk names them.
  await syncNewObjects(hubDir, commit, [base, head]);

  // Without start/commit, update-ref --stdin runs every line as one transaction: all refs
  // locked and checked, then all changed, or none. The ref names passed check-ref-format,
  // which allows no whitespace, so no name can break a line.
  // A lock another update holds (a push to the branch, the owner's push to the trunk) fails the
  // transaction with both refs where they were: it is tried again, then refused (RefBusy) —
  // never an unknown outcome (ref-lock.ts).
  const transaction = `verify ${branchRef} ${head}\nupdate ${trunkRef} ${commit} ${base}\n`;
  await retryRefLock(trunkRef, async () => {
    const result = await runGit([...DURABLE_GIT, "update-ref", "--stdin"], hubDir, transaction);
    if (result.code !== 0) {
      const trunkAfter = await readRef(hubDir, trunkRef);
      // At the merge commit: the transaction landed though git said otherwise; the merge is made.
      if (trunkAfter === commit) return;
      if (trunkAfter !== base) throw new RefMoved(trunkRef, base, trunkAfter);
      const branchAfter = await readRef(hubDir, branchRef);
      if (branchAfter !== head) throw new RefMoved(branchRef, head, branchAfter);
      throw new GitError(["update-ref", "--stdin"], result.code, result.stderr);
    }
  });
  await syncRefFolders(hubDir, trunkRef);
  return commit;
}

/**
 * The tree merging head into base gives, or MergeConflict.
 *
 * Run with hardened git(), not contained: merge-tree --write-tree writes the merged blobs
 * and trees into the repository, and a contained git may only read the hub. The contained
 * alternative — a writable scratch object folder in front of the hub's — would leave those
 * objects to be carried into the hub afterwards, and a compromised contained git could put
 * anything in that folder under any name, so they would have to be packed and checked again
 * (index-pack and the walk) before the hub took them: a second receive path for one tree.
 * Here git reads objects that were all checked on their way in (fsck of each at receive, and
 * what each names by the walk from the pushed tip, git-receive.ts)
 * and adds objects only, no ref; the hardening keeps the hub's content from running
 * anything (no hooks, no external diff; a merge driver would need config, which a seat
 * cannot write). What remains is git's merge code parsing seat-written blobs outside the
 * sandbox — the accepted cost of this choice.
 */
async function mergeTree(hubDir: string, trunkRef: string, branchRef: string, base: string, head: string): Promise<string> {
  const args = ["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", base, head];
  // Its trees and merged blobs are written into the hub: durably, before a commit names them.
  const result = await runGit([...DURABLE_GIT, ...args], hubDir);
  // Exit 1 is git's "merged, with conflicts", the output still well formed; anything else is a failure.
  if (result.code !== 0 && result.code !== 1) throw new GitError(args, result.code, result.stderr);
  const fields = splitNul(result.stdout).map((field) => decodePath(field));
  const tree = fields[0] ?? "";
  if (!OID.test(tree)) throw new GitError(args, result.code, `unexpected output ${JSON.stringify(tree.slice(0, 80))}; ${result.stderr}`);
  if (result.code === 1) throw new MergeConflict(trunkRef, branchRef, [...new Set(fields.slice(1))].sort());
  return tree;
}

/** `diff-tree --name-status -z`: a status (R and C with a score, and two paths), then its paths. */
export function parseNameStatus(stdout: Buffer): string[] {
  const tokens = splitNul(stdout);
  const paths = new Set<string>();
  for (let i = 0; i < tokens.length;) {
    const status = (tokens[i] as Buffer).toString("latin1");
    if (!/^[A-Z][0-9]*$/.test(status)) throw new Error(`git diff-tree printed an unexpected status ${JSON.stringify(status)}`);
    const count = status[0] === "R" || status[0] === "C" ? 2 : 1;
    const names = tokens.slice(i + 1, i + 1 + count);
    if (names.length !== count) throw new Error("git diff-tree output ended inside an entry");
    for (const name of names) paths.add(decodePath(name));
    i += 1 + count;
  }
  return [...paths].sort();
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** Scopes and effect ids are over UTF-8 text; a name that is not cannot be matched or hashed faithfully. */
function decodePath(bytes: Buffer): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new Error(`a path of the change is not valid UTF-8: ${JSON.stringify(bytes.toString("latin1"))}`);
  }
}

async function tipOf(hubDir: string, ref: string): Promise<string> {
  const oid = await readRef(hubDir, ref);
  if (oid === undefined) throw new Error(`${ref} does not exist in the hub`);
  return oid;
}

async function checkRefs(hub: string, trunkRef: string, branchRef: string): Promise<void> {
  if (trunkRef === branchRef) throw new Error(`cannot merge ${trunkRef} into itself`);
  for (const ref of [trunkRef, branchRef]) {
    if (!ref.startsWith(BRANCH_PREFIX)) throw new Error(`${JSON.stringify(ref)} is not a full branch name (refs/heads/...)`);
    try {
      await git(["check-ref-format", ref], { gitDir: hub });
    } catch (error) {
      if (error instanceof GitError) throw new Error(`${JSON.stringify(ref)} is not a valid ref name`);
      throw error;
    }
  }
}

/** git would silently drop or mangle these in an ident; a merge must carry exactly who the caller named. */
function checkIdent(who: { readonly name: string; readonly email: string }): void {
  for (const [what, value] of [
    ["name", who.name],
    ["email", who.email],
  ] as const) {
    if (value.trim().length === 0 || /[<>\n\r\u0000]/.test(value))
      throw new Error(`the merge's ${what} ${JSON.stringify(value)} is empty or has a character an ident cannot carry`);
  }
}

interface RunResult {
  readonly code: number | string | null;
  readonly stdout: Buffer;
  readonly stderr: string;
}

/**
 * Hardened git as git() runs it, but a non-zero exit is returned, not thrown, with stdout
 * kept (merge-tree reports its conflicts on stdout with exit 1), and with input on stdin.
 */
function runGit(args: readonly string[], gitDir: string, input?: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      "git",
      [...HARDENING, "--git-dir", gitDir, ...args],
      { env: gitEnv({}), timeout: 120_000, maxBuffer: 64 * 1024 * 1024, encoding: "buffer" },
      (error, stdout, stderr) => {
        const text = stderr.toString("utf8");
        if (error === null) return resolve({ code: 0, stdout, stderr: text });
        const code = (error as NodeJS.ErrnoException & { code?: number | string }).code ?? null;
        if (code === "ENOENT") reject(new Error("git is not installed or not on PATH (scripts/setup.sh installs it)"));
        else if (typeof code === "number") resolve({ code, stdout, stderr: text });
        // Killed (the timeout) or output beyond maxBuffer: a failure, never an answer.
        else reject(new GitError(args, code ?? error.signal ?? null, text));
      },
    );
    child.stdin?.on("error", () => undefined);
    child.stdin?.end(input ?? "");
  });
}
