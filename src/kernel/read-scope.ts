import { authorize } from "./authorize.js";
import { canonicalJson } from "./canonical.js";
import { pathCovers } from "./paths.js";
import type { Policy, Seat } from "./policy.js";
import { createKernelView } from "./view.js";
import { visibilityCap } from "./envelope-visibility.js";

/**
 * What a seat may read of its team's repository (§3 read, §6 paths), as the kernel decides it:
 * the read capability's path scopes, less the deny and the ceiling, less the reserved paths.
 *
 * A seat reads through its repository, so the repository holds only what it may read: a
 * full clone when the read is unbounded, a filtered history (src/effects/git-filter.ts) when
 * it is bounded. Unbounded means one read authority covers every path and neither the deny
 * nor the ceiling narrows read — anything less is bounded, and the filter asks the kernel,
 * path by path (readScope). The filter's id, a hash of readScopeKey, is made outside the
 * kernel (src/effects/read-filter.ts): the kernel does not hash.
 */
export function readIsUnbounded(policy: Policy, seat: Seat): boolean {
  const reads = seat.byCapability.read ?? [];
  const whole = reads.some((a) => (a.scope.path ?? { state: "unconstrained" }).state === "unconstrained");
  const denied = (policy.deny ?? []).some((grant) => grant.capability === "read");
  const ceiled = policy.ceiling?.capabilities?.read !== undefined;
  return whole && !denied && !ceiled && visibilityCap(policy, seat.name) === undefined;
}

/** The per-path verdicts of a seat's read scope. */
export interface ReadScope {
  /** May the seat read this file? The kernel's decision for it. */
  file(path: string): boolean;
  /** "all" when every path under dir/ is readable, "none" when none is, "some" otherwise. `path` has no trailing slash. */
  dir(path: string): "all" | "none" | "some";
}

const WHOLE = Object.freeze({ state: "unconstrained" } as const);

/** The seat's read scope: per file the kernel's verdict; per folder a fast answer where one is certain. */
export function readScope(policy: Policy, seat: Seat, now: number): ReadScope {
  const view = createKernelView(policy);
  const readable = (path: string) => authorize(view, { seat: seat.name, capability: "read", effect: { paths: [path] } }, now).decision === "allow";
  const prefixes = readPrefixes(seat);
  const denyPrefixes = (policy.deny ?? []).filter((g) => g.capability === "read").map((g) => g.scope.path ?? WHOLE);
  const ceiled = policy.ceiling?.capabilities?.read !== undefined || visibilityCap(policy, seat.name) !== undefined;
  const narrowedInside = (path: string) =>
    ceiled ||
    denyPrefixes.some((scope) => scope.state === "unconstrained" || (scope.state === "bounded" && scope.values.some((prefix) => pathCovers(path, prefix))));
  return {
    file: readable,
    dir(path) {
      // "all" only when the kernel allows the folder as a whole (a folder holding a reserved
      // file is refused as a whole) and nothing that narrows read — a deny, the ceiling —
      // could reach inside it; otherwise file by file. "none" when no read prefix lies above
      // or below it.
      if (readable(path) && !narrowedInside(path)) return "all";
      const touches = prefixes.some((scope) => {
        if (scope.state === "unconstrained") return true;
        if (scope.state === "empty") return false;
        return scope.values.some((prefix) => pathCovers(prefix, path) || pathCovers(path, prefix));
      });
      return touches ? "some" : "none";
    },
  };
}

/**
 * The canonical text of everything the read scope depends on — the seat's read prefixes, the
 * deny, the ceiling's read, the reserved set — so that two scopes with the same key filter
 * alike (the filter's id is its hash).
 */
export function readScopeKey(policy: Policy, seat: Seat): string {
  return canonicalJson({
    prefixes: readPrefixes(seat) as never,
    deny: (policy.deny ?? []) as never,
    ceiling: (policy.ceiling?.capabilities?.read ?? null) as never,
    // Only where a cap applies: a seat without one keeps the filter id it had.
    ...(visibilityCap(policy, seat.name) !== undefined ? { visibility: visibilityCap(policy, seat.name)?.cap as never } : {}),
    reserved: policy.reserved as never,
  });
}

function readPrefixes(seat: Seat) {
  return (seat.byCapability.read ?? []).map((a) => a.scope.path ?? WHOLE);
}
