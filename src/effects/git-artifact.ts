import { realpath } from "node:fs/promises";
import { containedGit, hubReadContext } from "./contained-git.js";
import { git, gitSucceeds } from "./git.js";
import { parseNameStatus } from "./git-merge.js";
import { readRef } from "./git-receive.js";

/**
 * What a deploy ships, read from the hub (§3 deploy, §15): a commit the trunk holds, and the
 * change that made it, in the terms the gate's effect id was computed in — the first parent
 * as the base, the commit's tree as the destination tree, every path that tree changes from
 * the base (renames and copies on both sides). For a merge teamd made (parents base and the
 * gated head, tree exactly the gated merge tree) this gives the gated change's effect id; for
 * any other commit it gives an id no gate pass names, so the kernel refuses it (`pass.missing`).
 * Nothing a seat says about its artifact enters: only the commit id it names, checked here.
 */
export interface ArtifactSummary {
  readonly trunkRef: string;
  /** The artifact commit, full id. */
  readonly commit: string;
  /** Its first parent: the trunk the change was merged onto. */
  readonly base: string;
  /** Its second parent when it is a merge (the gated branch's tip), else the commit itself. */
  readonly head: string;
  readonly tree: string;
  readonly paths: readonly string[];
  /** The commits the change brought (a merge: the second parent's commits the base lacks), oldest first. */
  readonly commits: readonly string[];
}

/** The artifact is not one a deploy can ship (not on the trunk, a root commit, an unknown id). */
export class NotAnArtifact extends Error {
  override readonly name = "NotAnArtifact";
}

const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** A commit as a seat may name it: hex only, so no revision syntax (`main~3`, `:/text`, `@{...}`) is ever evaluated. */
const NAMED = /^[0-9a-f]{7,64}$/;

export async function summarizeArtifact(hub: string, trunkRef: string, named: string | undefined): Promise<ArtifactSummary> {
  const hubDir = await realpath(hub);
  const tip = await readRef(hubDir, trunkRef);
  if (tip === undefined) throw new NotAnArtifact(`${trunkRef} does not exist in the hub`);
  let commit = tip;
  if (named !== undefined && named !== "") {
    if (!NAMED.test(named)) throw new NotAnArtifact(`'${named}' is not a commit id (7 to 64 lowercase hex digits)`);
    const resolved = await git(["rev-parse", "--verify", "--quiet", "--end-of-options", `${named}^{commit}`], { gitDir: hubDir }).catch(() => undefined);
    commit = resolved?.stdout.trim() ?? "";
    if (!OID.test(commit)) throw new NotAnArtifact(`the hub holds no commit ${named}`);
    if (!(await gitSucceeds(["merge-base", "--is-ancestor", commit, tip], { gitDir: hubDir }))) {
      throw new NotAnArtifact(`${commit} is not on ${trunkRef.slice("refs/heads/".length)}: a deploy ships what the trunk holds`);
    }
  }
  const parents = (await git(["rev-list", "--parents", "-n", "1", commit], { gitDir: hubDir })).stdout.trim().split(" ").slice(1);
  const base = parents[0];
  if (base === undefined) throw new NotAnArtifact(`${commit} is a root commit: no gated change made it`);
  const head = parents.length === 2 ? (parents[1] as string) : commit;
  if (parents.length > 2) throw new NotAnArtifact(`${commit} has ${parents.length} parents: teamd merges one change at a time, so no gate named it`);
  const tree = (await git(["rev-parse", "--verify", `${commit}^{tree}`], { gitDir: hubDir })).stdout.trim();
  // Seat-written content is diffed inside the sandbox, as the merge's summary does.
  const context = await hubReadContext(hubDir);

  const diff = await containedGit(["diff-tree", "-r", "-M", "-C", "--name-status", "-z", base, tree, "--"], context);
  const listed = await containedGit(["rev-list", "--topo-order", "--reverse", head, "--not", base, "--"], context);
  const commits = listed.stdout
    .toString("utf8")
    .split("\n")
    .filter((line) => line.length > 0);
  return { trunkRef, commit, base, head, tree, paths: parseNameStatus(diff.stdout), commits };
}
