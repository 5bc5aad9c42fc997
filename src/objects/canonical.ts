import { realpath } from "node:fs/promises";
import { isAbsolute } from "node:path";

/**
 * Canonical absolute paths (§6): every symlink resolved, `.` and `..` removed, by the
 * operating system's own realpath(3) — so `..` after a symlink means what the kernel means
 * by it, not what a string edit would guess. Case and Unicode are folded only as the target
 * filesystem folds: realpath returns the names as the filesystem stores them, and nothing
 * here folds more broadly.
 */
export type CanonicalResult =
  { readonly ok: true; readonly path: string; readonly exists: boolean } | { readonly ok: false; readonly rule: "object.identity"; readonly reason: string };

export interface CanonicalizeOptions {
  /**
   * Accept a path whose last components do not exist yet (a file about to be created): the
   * longest existing prefix is resolved and the missing rest appended. The rest may not
   * hold `.` or `..`, since what they would mean depends on objects that are not there.
   */
  readonly allowMissing?: boolean;
}

const NUL = /\u0000/;

function fail(reason: string): CanonicalResult {
  return { ok: false, rule: "object.identity", reason };
}

/** Canonicalize an absolute path, or say why it has no canonical form. */
export async function canonicalize(path: string, options: CanonicalizeOptions = {}): Promise<CanonicalResult> {
  if (!isAbsolute(path)) return fail(`'${path}' is not absolute; a relative path has no single object`);
  if (NUL.test(path)) return fail("the path contains a NUL byte");
  try {
    return { ok: true, path: await realpath(path), exists: true };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" || !options.allowMissing) {
      return fail(`cannot resolve ${path}: ${code === "ENOENT" ? "no such file or directory" : `${code ?? "error"}: ${(error as Error).message}`}`);
    }
  }
  // Walk up to the longest existing prefix; everything after it must be plain names.
  const parts = path.split("/");
  for (let cut = parts.length - 1; cut >= 1; cut--) {
    const rest = parts.slice(cut).filter((part) => part !== "");
    if (rest.some((part) => part === "." || part === "..")) {
      return fail(`${path} names '.' or '..' below a folder that does not exist; what it means cannot be decided`);
    }
    const prefix = parts.slice(0, cut).join("/") || "/";
    try {
      const base = await realpath(prefix);
      return { ok: true, path: rest.length === 0 ? base : `${base === "/" ? "" : base}/${rest.join("/")}`, exists: false };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOENT") return fail(`cannot resolve ${prefix}: ${code ?? "error"}`);
    }
  }
  return fail(`no part of ${path} exists`);
}
