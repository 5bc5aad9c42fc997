import { lstat, opendir } from "node:fs/promises";
import { canonicalize } from "./canonical.js";
import { isAtOrUnder } from "./paths.js";
import { identify, identityFailure, infoFromStats, type ObjectInfo, type ObjectKind } from "./identity.js";
import { objectKey, type ObjectId } from "./object-id.js";

/**
 * The tool-reserved set (§3) as objects on this machine: the team file, the hub's and the
 * owner's .git, the ledger and its head, the flags, the keys, the broker's credentials,
 * teamd's own installed code. Matching is by object identity, not name: a path is reserved
 * if it is or lies under a reserved path, or if the object it names is also reachable by a
 * reserved name (a hard link, or a folder seen again through a bind mount).
 */
export interface ReservedObject {
  /** Canonical path (canonical.ts). */
  readonly path: string;
  /** undefined when nothing exists at the path now: it stays reserved by name. */
  readonly id: ObjectId | undefined;
  readonly kind: ObjectKind | "absent";
  readonly nlink: bigint;
}

export interface ReservedSet {
  readonly objects: readonly ReservedObject[];
  /**
   * objectKey -> the reserved path it belongs to: every reserved object's own identity, and
   * the identity of every multiply-linked regular file found inside a reserved folder (the
   * hub's object files, say): another name of such a file is a way into a reserved object.
   */
  readonly keys: ReadonlyMap<string, string>;
  /** False when a reserved folder could not be walked completely (too large, unreadable). */
  readonly complete: boolean;
}

export type ReservedSetResult =
  { readonly ok: true; readonly set: ReservedSet } | { readonly ok: false; readonly rule: "object.identity"; readonly reason: string };

export interface BuildReservedSetOptions {
  /** Most entries walked inside reserved folders in all; beyond it the set is incomplete. */
  readonly walkLimit?: number;
}

const DEFAULT_WALK_LIMIT = 200_000;

/**
 * Build the reserved set from paths. A path that does not exist stays reserved by name; one
 * whose identity cannot be established (a permission error, a filesystem without inodes)
 * fails the whole set: a reserved set with a hole is worse than none (fail closed, §11).
 * Build it right before use: a hard link made afterwards to a file inside a reserved folder
 * is only known to a set built after it.
 */
export async function buildReservedSet(paths: readonly string[], options: BuildReservedSetOptions = {}): Promise<ReservedSetResult> {
  const objects: ReservedObject[] = [];
  const keys = new Map<string, string>();
  let budget = options.walkLimit ?? DEFAULT_WALK_LIMIT;
  let complete = true;
  for (const raw of paths) {
    const canonical = await canonicalize(raw, { allowMissing: true });
    if (!canonical.ok) return { ok: false, rule: "object.identity", reason: `reserved path ${raw}: ${canonical.reason}` };
    if (!canonical.exists) {
      objects.push(Object.freeze({ path: canonical.path, id: undefined, kind: "absent", nlink: 0n }));
      continue;
    }
    const found = await identify(canonical.path);
    if (!found.ok) return { ok: false, rule: "object.identity", reason: `reserved path ${raw}: ${found.reason}` };
    const { info } = found;
    objects.push(Object.freeze({ path: canonical.path, id: info.id, kind: info.kind, nlink: info.nlink }));
    keys.set(objectKey(info.id), canonical.path);
    if (info.kind === "dir") {
      const walked = await collectLinkedFiles(canonical.path, keys, budget);
      budget = walked.budget;
      complete &&= walked.complete;
    }
  }
  return { ok: true, set: Object.freeze({ objects: Object.freeze(objects), keys, complete }) };
}

/** Record every multiply-linked regular file under `dir` (symlinks are not followed). */
async function collectLinkedFiles(dir: string, keys: Map<string, string>, budget: number): Promise<{ budget: number; complete: boolean }> {
  const stack = [dir];
  while (stack.length > 0) {
    const current = stack.pop() as string;
    let handle;
    try {
      handle = await opendir(current);
    } catch {
      return { budget, complete: false };
    }
    for await (const entry of handle) {
      if (--budget < 0) return { budget: 0, complete: false };
      const path = `${current}/${entry.name}`;
      if (entry.isDirectory()) stack.push(path);
      else if (entry.isFile()) {
        let stats;
        try {
          stats = await lstat(path, { bigint: true });
        } catch {
          return { budget, complete: false };
        }
        if (stats.nlink > 1n) keys.set(objectKey({ dev: stats.dev, ino: stats.ino }), path);
      }
    }
  }
  return { budget, complete: true };
}

export type ReservedVerdict =
  | { readonly verdict: "free"; readonly canonical: string; readonly info: ObjectInfo | undefined }
  | { readonly verdict: "reserved"; readonly rule: "reserved.object"; readonly reason: string; readonly canonical: string }
  | { readonly verdict: "undecidable"; readonly rule: "object.identity" | "reserved.link-set"; readonly reason: string };

/**
 * Whether a path is reserved (§3): it is, or lies under, a reserved path; or its object is
 * a reserved object reached by another name; or it is a multiply-linked file whose other
 * name lies inside a reserved folder. Where this cannot be established it says so
 * ("undecidable"), and callers refuse (§11 fail closed). A path that does not exist yet is
 * judged by the canonical path it would have.
 */
export async function isReserved(path: string, set: ReservedSet): Promise<ReservedVerdict> {
  const canonical = await canonicalize(path, { allowMissing: true });
  if (!canonical.ok) return { verdict: "undecidable", rule: "object.identity", reason: canonical.reason };
  for (const object of set.objects) {
    if (isAtOrUnder(object.path, canonical.path)) {
      const how = object.path === canonical.path ? "is" : "lies under";
      return { verdict: "reserved", rule: "reserved.object", reason: `${canonical.path} ${how} the reserved ${object.path}`, canonical: canonical.path };
    }
  }
  if (!canonical.exists) return { verdict: "free", canonical: canonical.path, info: undefined };
  let info: ObjectInfo;
  try {
    const found = infoFromStats(await lstat(canonical.path, { bigint: true }), canonical.path);
    if (!found.ok) return { verdict: "undecidable", rule: "object.identity", reason: found.reason };
    info = found.info;
  } catch (error) {
    return { verdict: "undecidable", rule: "object.identity", reason: identityFailure(canonical.path, error).reason };
  }
  const owner = set.keys.get(objectKey(info.id));
  if (owner !== undefined) {
    return {
      verdict: "reserved",
      rule: "reserved.object",
      reason: `${canonical.path} is the same object as the reserved ${owner} (a hard link or another mount of it)`,
      canonical: canonical.path,
    };
  }
  if (info.kind === "file" && info.nlink > 1n && !set.complete) {
    return {
      verdict: "undecidable",
      rule: "reserved.link-set",
      reason: `${canonical.path} has ${info.nlink} names and the reserved folders could not be walked completely, so none of them can be ruled out`,
    };
  }
  return { verdict: "free", canonical: canonical.path, info };
}
