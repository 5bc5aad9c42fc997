import { createHash } from "node:crypto";
import { authorize, canonicalJson, createKernelView, pathCovers, type Policy, type Seat } from "../kernel/index.js";
import type { ReadFilter } from "./git-filter.js";

/**
 * What a seat may read of its team's repository (§3 read, §6 paths), as the kernel decides it:
 * the read capability's path scopes, less the deny and the ceiling, less the reserved paths.
 *
 * A seat reads through its repository, so the repository holds only what it may read: a
 * full clone when the read is unbounded, a filtered history (src/effects/git-filter.ts) when
 * it is bounded. Unbounded means one read authority covers every path and neither the deny
 * nor the ceiling narrows read — anything less is bounded, and the filter asks the kernel,
 * path by path.
 */
export function readIsUnbounded(policy: Policy, seat: Seat): boolean {
  const reads = seat.byCapability.read ?? [];
  const whole = reads.some((a) => (a.scope.path ?? { state: "unconstrained" }).state === "unconstrained");
  const denied = (policy.deny ?? []).some((grant) => grant.capability === "read");
  const ceiled = policy.ceiling?.capabilities?.read !== undefined;
  return whole && !denied && !ceiled;
}

/** The seat's read filter: per file the kernel's verdict; per folder a fast answer where one is certain. */
export function readFilter(policy: Policy, seat: Seat, now: number): ReadFilter {
  const view = createKernelView(policy);
  const readable = (path: string) => authorize(view, { seat: seat.name, capability: "read", effect: { paths: [path] } }, now).decision === "allow";
  const prefixes = (seat.byCapability.read ?? []).map((a) => a.scope.path ?? { state: "unconstrained" as const });
  const id = createHash("sha256")
    .update(canonicalJson({ prefixes: prefixes as never, deny: (policy.deny ?? []) as never, ceiling: (policy.ceiling?.capabilities?.read ?? null) as never, reserved: policy.reserved as never }))
    .digest("hex");
  const denyPrefixes = (policy.deny ?? []).filter((g) => g.capability === "read").map((g) => g.scope.path ?? { state: "unconstrained" as const });
  const ceiled = policy.ceiling?.capabilities?.read !== undefined;
  const narrowedInside = (path: string) =>
    ceiled ||
    denyPrefixes.some((scope) => scope.state === "unconstrained" || (scope.state === "bounded" && scope.values.some((prefix) => pathCovers(path, prefix))));
  return {
    id,
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
