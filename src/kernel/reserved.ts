import { pathCovers } from "./paths.js";

/**
 * The reserved paths inside a tree (§3): the team file, any `.git` component, and the start
 * files the team file pins. No scope, role, lease or ceiling opens them to a seat-requested
 * effect — not write, not read, not merge. Together with the reserved objects matched by
 * inode (src/objects/, the containment issue) they make the tool-reserved set; this is the
 * by-name half the kernel can decide from a canonical path.
 *
 * Matching folds case: on a case-insensitive filesystem `.GIT` is `.git`, and reserving too
 * much fails closed where reserving too little would open the object.
 */
export interface ReservedSet {
  /** The team file's canonical repo-relative path (normally `teamd.yaml`). */
  readonly teamFile: string;
  /** Canonical repo-relative paths of the pinned start files. */
  readonly startFiles: readonly string[];
}

/** Case folded broadly (toLowerCase): folding more than the filesystem does only reserves more. */
function fold(path: string): string {
  return path.toLowerCase();
}

function hasGitComponent(folded: string): boolean {
  return folded === ".git" || folded.startsWith(".git/") || folded.endsWith("/.git") || folded.includes("/.git/");
}

/**
 * Why a canonical path is reserved — it is, or lies under, a reserved path — or undefined. A
 * scope value that is reserved opens nothing and is refused at load; a scope that merely
 * contains a reserved path (`.`, `prompts/`) is fine, because every effect is checked here.
 */
export function reservedReason(reserved: ReservedSet, path: string): string | undefined {
  const folded = fold(path);
  if (hasGitComponent(folded)) return `'${path}' is inside a .git directory`;
  if (pathCovers(fold(reserved.teamFile), folded)) return `'${path}' is the team file`;
  for (const start of reserved.startFiles) {
    if (pathCovers(fold(start), folded)) return `'${path}' is the pinned start file '${start}'`;
  }
  return undefined;
}

/**
 * Why an effect on a canonical path would reach a reserved object, or undefined: the path is
 * reserved, or it is a directory above a reserved file (an effect on the directory would
 * reach the file).
 */
export function effectReservedReason(reserved: ReservedSet, path: string): string | undefined {
  const direct = reservedReason(reserved, path);
  if (direct !== undefined) return direct;
  const folded = fold(path);
  if (pathCovers(folded, fold(reserved.teamFile))) return `'${path}' contains the team file`;
  for (const start of reserved.startFiles) {
    if (pathCovers(folded, fold(start))) return `'${path}' contains the pinned start file '${start}'`;
  }
  return undefined;
}
