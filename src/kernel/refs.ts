/**
 * Branch names over the normalized ref namespace (§6): `main` and `refs/heads/main` are one
 * branch, and a glob matches the short name. Anything that is not a branch ref (a tag, a
 * remote-tracking ref, a symbolic `HEAD` the caller did not resolve) is no branch at all, so
 * it lies outside every branch scope. Names follow git's check-ref-format rules, so a name the
 * kernel accepts is one git could have created; `*` is allowed only in patterns.
 */

const HEADS = "refs/heads/";

export type BranchName = { readonly ok: true; readonly name: string } | { readonly ok: false; readonly reason: string };

/** With the `u` flag a surrogate class matches only a surrogate that is not half of a pair. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

const FORBIDDEN = /[\u0000-\u0020\u007f~^:?[\\]/;

/**
 * The short branch name of a ref or a branch pattern, or why it is not one. In a pattern,
 * runs of `*` collapse to one (they match the same names).
 */
export function normalizeBranch(input: string, options: { readonly pattern: boolean }): BranchName {
  let name = input;
  if (name.startsWith(HEADS)) name = name.slice(HEADS.length);
  else if (name.startsWith("refs/")) return { ok: false, reason: `'${input}' is not a branch: only refs/heads/… names a branch` };
  if (name === "HEAD" || name === "@") return { ok: false, reason: `'${input}' is symbolic; name the branch it resolves to` };
  if (name.length === 0) return { ok: false, reason: "the branch name is empty" };
  if (FORBIDDEN.test(name)) return { ok: false, reason: `'${input}' contains a character git does not allow in a ref name` };
  if (LONE_SURROGATE.test(name)) return { ok: false, reason: `'${input}' is not well-formed text` };
  if (!options.pattern && name.includes("*")) return { ok: false, reason: `'${input}' contains '*', which only a pattern may` };
  if (name.includes("..") || name.includes("@{") || name.includes("//")) {
    return { ok: false, reason: `'${input}' contains '..', '@{' or '//', which git does not allow in a ref name` };
  }
  if (name.startsWith("/") || name.endsWith("/") || name.endsWith(".") || name.startsWith("-")) {
    return { ok: false, reason: `'${input}' starts or ends with a character git does not allow there` };
  }
  for (const component of name.split("/")) {
    if (component.startsWith(".") || component.endsWith(".lock")) {
      return { ok: false, reason: `'${input}' has a component starting with '.' or ending in '.lock'` };
    }
  }
  if (options.pattern) name = name.replace(/\*+/g, "*");
  return { ok: true, name };
}
