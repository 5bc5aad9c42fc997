import { createHash } from "node:crypto";
import { readScope, readScopeKey, type Policy, type Seat } from "../kernel/index.js";
import type { ReadFilter } from "./git-filter.js";

export { readIsUnbounded } from "../kernel/index.js";

/**
 * The seat's read filter for its filtered history (src/effects/git-filter.ts): the kernel's
 * per-path verdicts (src/kernel/read-scope.ts) and an id, the SHA-256 of everything those
 * verdicts depend on — a mirror made under another id is rebuilt. The hashing is here, not
 * in the kernel: the kernel does not hash.
 */
export function readFilter(policy: Policy, seat: Seat, now: number): ReadFilter {
  const scope = readScope(policy, seat, now);
  const id = createHash("sha256").update(readScopeKey(policy, seat)).digest("hex");
  return { id, file: (path) => scope.file(path), dir: (path) => scope.dir(path) };
}
