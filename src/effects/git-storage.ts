import { realpath } from "node:fs/promises";
import { containedGit, repoReadContext, type ContainedGitOptions } from "./contained-git.js";
import { listRefs } from "./git-serve.js";

/**
 * What one seat holds in the hub, for its storage quota: the refs under its namespace, and
 * the objects only those refs reach (no other ref of the hub — the trunk, another seat's
 * branch — reaches them), counted and sized on disk. A branch merged to the trunk or deleted
 * frees its share. Objects a pack carried that no ref reaches are not counted here (see
 * docs/enforcement.md). The walk reads seat-written trees, so it runs contained.
 */
export interface SeatStorage {
  readonly refs: number;
  readonly refNames: ReadonlySet<string>;
  readonly objects: number;
  readonly bytes: number;
}

export async function seatStorage(hub: string, prefix: string, options: { readonly limits?: ContainedGitOptions["limits"] } = {}): Promise<SeatStorage> {
  if (!/^refs\/heads\/[A-Za-z0-9._/-]+\/$/.test(prefix) || prefix.includes("..")) throw new Error(`${JSON.stringify(prefix)} is not a ref namespace`);
  const dir = await realpath(hub);
  const refs = await listRefs(dir, [prefix]);
  if (refs.length === 0) return { refs: 0, refNames: new Set(), objects: 0, bytes: 0 };
  const context = await repoReadContext(dir, options.limits);
  const range = ["--objects", `--glob=${prefix}*`, "--not", `--exclude=${prefix}*`, "--glob=refs/*"];
  const [count, usage] = await Promise.all([
    containedGit(["rev-list", "--count", ...range], context),
    containedGit(["rev-list", "--disk-usage", ...range], context),
  ]);
  return {
    refs: refs.length,
    refNames: new Set(refs.map((r) => r.name)),
    objects: Number(count.stdout.toString("utf8").trim()) || 0,
    bytes: Number(usage.stdout.toString("utf8").trim()) || 0,
  };
}
