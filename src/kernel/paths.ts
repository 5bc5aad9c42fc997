/**
 * Repository paths as the kernel compares them (§6): repo-root-relative, canonical, matched
 * component-wise. The kernel's canonicalization is lexical only — `.` and empty components
 * dropped, `..` resolved inside the root. Resolving symlinks, folding case and Unicode as the
 * target filesystem folds, and the object's link set belong to src/objects/, which hands the
 * kernel paths it has already canonicalized; what the kernel cannot place it refuses rather
 * than guesses (§11 fail closed).
 */

/** The root itself: the canonical form of `.`. A prefix of "" covers every path. */
export const ROOT = "";

export type CanonicalPath = { readonly ok: true; readonly path: string } | { readonly ok: false; readonly reason: string; readonly undecidable: boolean };

// Control characters (C0, DEL, C1): a name carrying one cannot be shown or compared reliably.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Canonical repo-root-relative form of a path, or why it has none. `docs/`, `./docs` and
 * `docs//` are all `docs`; `.` is the root (""). A path that climbs out of the root is not in
 * the repository at all; one with a control character or a backslash (a separator on
 * Windows, a character elsewhere) cannot be placed and is undecidable.
 */
export function canonicalPath(input: string): CanonicalPath {
  if (isAlreadyCanonical(input)) return { ok: true, path: input };
  if (input.length === 0) return { ok: false, reason: "the path is empty (write `.` for the root)", undecidable: false };
  if (CONTROL.test(input)) return { ok: false, reason: "the path contains a control character", undecidable: true };
  if (input.includes("\\")) {
    return { ok: false, reason: "the path contains a backslash, which is a separator on some filesystems and a character on others", undecidable: true };
  }
  if (input.startsWith("/")) return { ok: false, reason: "the path is absolute; paths are relative to the repository root", undecidable: false };
  if (/^[A-Za-z]:/.test(input)) return { ok: false, reason: "the path names a drive; paths are relative to the repository root", undecidable: false };
  const out: string[] = [];
  for (const component of input.split("/")) {
    if (component === "" || component === ".") continue;
    if (component === "..") {
      if (out.length === 0) return { ok: false, reason: "the path leaves the repository root", undecidable: false };
      out.pop();
      continue;
    }
    out.push(component);
  }
  return { ok: true, path: out.join("/") };
}

/**
 * The common case, decided in one pass without allocating: no control character, no
 * backslash, no leading, trailing or doubled `/`, no `.` or `..` component, no drive letter.
 * Anything else takes the full path above.
 */
function isAlreadyCanonical(input: string): boolean {
  const n = input.length;
  if (n === 0) return false;
  let start = 0;
  for (let i = 0; i <= n; i++) {
    const c = i < n ? input.charCodeAt(i) : 47;
    if (c < 32 || (c >= 127 && c <= 159) || c === 92 /* \\ */) return false;
    if (c === 58 /* : */ && i === 1) return false;
    if (c === 47 /* / */) {
      const length = i - start;
      if (length === 0) return false;
      if (input.charCodeAt(start) === 46 /* . */ && (length === 1 || (length === 2 && input.charCodeAt(start + 1) === 46))) return false;
      start = i + 1;
    }
  }
  return true;
}

/**
 * Whether a canonical prefix covers a canonical path: the path is at or under the prefix as
 * whole components, so `docs` covers `docs` and `docs/a.md` but not `docs-secret/a.md`.
 */
export function pathCovers(prefix: string, path: string): boolean {
  if (prefix === ROOT) return true;
  return path === prefix || (path.length > prefix.length && path.startsWith(prefix) && path.charCodeAt(prefix.length) === 47); /* "/" */
}

/** The deeper of two related prefixes, or undefined when neither covers the other. */
export function prefixMeet(a: string, b: string): string | undefined {
  if (pathCovers(a, b)) return b;
  if (pathCovers(b, a)) return a;
  return undefined;
}

/** The path as a person reads it: the root as `.`. */
export function showPath(path: string): string {
  return path === ROOT ? "." : path;
}

/**
 * Minimal sorted form of a set of prefixes: a prefix already covered by another adds
 * nothing, so `[docs, docs/a]` is `[docs]`. Two sets that cover the same paths get the same
 * form, which is what makes a role's hash independent of redundant spelling.
 */
export function minimalPrefixes(prefixes: readonly string[]): string[] {
  const sorted = [...new Set(prefixes)].sort(compareStrings);
  return sorted.filter((p) => !sorted.some((q) => q !== p && pathCovers(q, p)));
}

/** Code-unit order: locale-free, so every machine sorts the same way. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
