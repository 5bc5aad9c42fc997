import { realpath } from "node:fs/promises";
import { containedGit, repoReadContext, type ContainedGitOptions } from "./contained-git.js";
import { listRefs } from "./git-serve.js";
import { storeUsage, type StoreUsage } from "./store-usage.js";

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
  /**
   * False when `objects` and `bytes` are the whole object store's, an upper bound of the
   * seat's share (store-usage.ts), given because the caller said that was enough.
   */
  readonly exact: boolean;
}

export interface SeatStorageOptions {
  readonly limits?: ContainedGitOptions["limits"];
  /**
   * Whether an upper bound of the seat's share settles the caller's question (it is under the
   * quota even at that bound): then the bound is returned and the contained walks are not run.
   * A caller that refuses must do so on exact figures (`exact`).
   */
  readonly enough?: (atMost: StoreUsage) => boolean;
}

export async function seatStorage(hub: string, prefix: string, options: SeatStorageOptions = {}): Promise<SeatStorage> {
  if (!/^refs\/heads\/[A-Za-z0-9._/-]+\/$/.test(prefix) || prefix.includes("..")) throw new Error(`${JSON.stringify(prefix)} is not a ref namespace`);
  const dir = await realpath(hub);
  const refs = await listRefs(dir, [prefix]);
  const held = { refs: refs.length, refNames: new Set(refs.map((r) => r.name)) };
  if (refs.length === 0) return { ...held, objects: 0, bytes: 0, exact: true };
  if (options.enough !== undefined) {
    const atMost = await storeUsage(dir);
    if (atMost !== undefined && options.enough(atMost)) return { ...held, ...atMost, exact: false };
  }
  const context = await repoReadContext(dir, options.limits);
  const range = ["--objects", `--glob=${prefix}*`, "--not", `--exclude=${prefix}*`, "--glob=refs/*"];
  const [count, usage] = await Promise.all([
    containedGit(["rev-list", "--count", ...range], context),
    containedGit(["rev-list", "--disk-usage", ...range], context),
  ]);
  return {
    ...held,
    objects: Number(count.stdout.toString("utf8").trim()) || 0,
    bytes: Number(usage.stdout.toString("utf8").trim()) || 0,
    exact: true,
  };
}
