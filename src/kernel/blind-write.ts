import { authorize, authorizeNamesOnly } from "./authorize.js";
import { leaseBoundaryRefusal } from "./ceiling-deny.js";
import { type Refusal, refuse } from "./decision.js";
import { canonicalPath } from "./paths.js";
import { boundedScope } from "./scope.js";
import type { KernelView } from "./view.js";

/**
 * A write over what the seat may not see (§3: read is distinct from write). A seat that sets a
 * name at a path it may not read all of cannot know what the hub holds there; whatever it is
 * goes. As a "folder" the one name goes (a file of that name), so write over that name is
 * enough (authorizeNamesOnly); as a "file" the name and all under it go (a folder of that name, whole), so the write
 * must reach the whole of it: the point allowed (the kernel's decision, reserved objects under
 * it included), and no deny or ceiling narrowing anywhere inside it — the test a lease's scope
 * passes (§8), since deny and ceiling are pointwise and one deeper than the point would not
 * otherwise be met.
 *
 * Decided from the view and the path alone, never from what the hub holds: the answer a seat
 * gets must be the same whether something is there or not, or it learns names it may not read.
 */
export function blindWriteRefusal(view: KernelView, seat: string, path: string, as: "file" | "folder", now: number): Refusal | undefined {
  const request = { seat, capability: "write", effect: { paths: [path] } };
  if (as === "folder") {
    // Only a file of that name can go: a reserved object the policy places under the path is
    // no bar (were the hub to hold it, the path would be a folder there, and nothing goes).
    const point = authorizeNamesOnly(view, request, now);
    return point.decision === "refuse" ? point : undefined;
  }
  const point = authorize(view, request, now);
  if (point.decision === "refuse") return point;
  const canonical = canonicalPath(path);
  // authorize made the path canonical to allow it: this cannot fail after an allow.
  if (!canonical.ok) return refuse("request.malformed", canonical.reason);
  return leaseBoundaryRefusal(
    view.policy,
    "write",
    ["path"],
    { path: boundedScope("path", [canonical.path]) },
    { declared: view.policy.declared },
    "a blind write over all of the path",
  );
}
