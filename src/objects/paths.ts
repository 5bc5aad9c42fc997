/**
 * Pure helpers over canonical absolute paths (what canonical.ts returns). No I/O here: the
 * plan compiler (src/sandbox/plan.ts) uses them and must stay pure.
 */

const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Whether a path has the lexical form realpath(3) returns: absolute, no empty, `.` or `..`
 * component, no trailing slash (except `/` itself), no control character. A path in any
 * other form was not canonicalized, and code that trusts canonical paths refuses it.
 */
export function isCanonicalAbsolute(path: string): boolean {
  if (!path.startsWith("/") || CONTROL.test(path)) return false;
  if (path === "/") return true;
  return path
    .slice(1)
    .split("/")
    .every((part) => part !== "" && part !== "." && part !== "..");
}

/**
 * Whether `path` is `prefix` or lies under it, as whole components: /a/b covers /a/b/c but
 * not /a/bc. Both must be canonical.
 */
export function isAtOrUnder(prefix: string, path: string): boolean {
  if (prefix === "/") return path.startsWith("/");
  return path === prefix || (path.startsWith(prefix) && path.charCodeAt(prefix.length) === 47); /* "/" */
}

/** Strictly under: at or under, and not equal. */
export function isStrictlyUnder(prefix: string, path: string): boolean {
  return path !== prefix && isAtOrUnder(prefix, path);
}

/** `path` moved from under `from` to under `to` (the caller checked isAtOrUnder(from, path)). */
export function rebase(from: string, to: string, path: string): string {
  if (path === from) return to;
  const rest = from === "/" ? path.slice(1) : path.slice(from.length + 1);
  return to === "/" ? `/${rest}` : `${to}/${rest}`;
}

/** Component-wise order: a parent sorts before everything under it, siblings by code unit. */
export function comparePaths(a: string, b: string): number {
  const pa = a.split("/");
  const pb = b.split("/");
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const x = pa[i] as string;
    const y = pb[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return pa.length - pb.length;
}
