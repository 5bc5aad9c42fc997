import type { Refusal } from "./decision.js";
import { issueLease, type LeaseDecision, type LeaseRequest } from "./lease-issue.js";
import type { KernelView } from "./view.js";

/** A seat's lease request: a root lease may leave its source for the kernel to choose. */
export type SeatLeaseRequest = Omit<LeaseRequest, "source"> & { readonly source?: string };

/**
 * The lease issue choice (§7, §9): decide a lease with the source named, or — for a root lease
 * whose source is not named — with each source the issuer holds for the capability (its
 * standing grants, then the envelope when it is leads) until one issues. What is refused is the
 * first source's refusal; with no source at all, `issueLease`'s own refusal. Pure and total.
 */
export function decideLease(view: KernelView, request: SeatLeaseRequest, now: number): LeaseDecision {
  if (request.parent !== undefined || request.source !== undefined) return issueLease(view, request, now);
  const policy = view.policy;
  const own = Object.prototype.hasOwnProperty.call(policy.seats, request.issuer) ? (policy.seats[request.issuer]?.authorities ?? []) : [];
  const envelope = policy.leads?.seat === request.issuer ? policy.leads.envelope : [];
  const sources = [...own, ...envelope].filter((a) => a.capability === request.capability).map((a) => a.id);
  if (sources.length === 0) return issueLease(view, request, now);
  let first: Refusal | undefined;
  for (const source of sources) {
    const decided = issueLease(view, { ...request, source }, now);
    if (decided.decision === "issue") return decided;
    first ??= decided;
  }
  return first as Refusal;
}
