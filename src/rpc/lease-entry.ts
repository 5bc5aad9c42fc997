import { create } from "@bufbuild/protobuf";
import { LeaseEntrySchema, type LeaseEntry } from "../gen/teamd/v1/lease_pb.js";
import {
  canonicalJson,
  deepFreeze,
  formatScope,
  leaseLiveness,
  type Capability,
  type CanonicalValue,
  type KernelView,
  type LeaseFact,
} from "../kernel/index.js";

/** One lease as a seat or the owner reads it, with its liveness walked at `now`. */
export function leaseEntry(view: KernelView, lease: LeaseFact, now: number): LeaseEntry {
  const walked = leaseLiveness(view, lease.id, now);
  const caps = view.policy.vocabulary.capabilities;
  const spec = Object.prototype.hasOwnProperty.call(caps, lease.capability) ? caps[lease.capability as Capability] : undefined;
  const scope =
    walked.authority !== undefined && spec?.kind === "operational" ? formatScope(walked.authority.scope, spec.dimensions) : JSON.stringify(lease.scope);
  return create(LeaseEntrySchema, {
    leaseId: lease.id,
    parent: lease.parent ?? "",
    rootGrant: lease.rootGrant,
    issuer: lease.issuer,
    holder: lease.holder,
    capability: lease.capability,
    scope,
    scopeJson: canonicalJson(lease.scope as unknown as CanonicalValue),
    issuedUnixMs: BigInt(lease.issuedAt),
    expiresUnixMs: BigInt(lease.expiresAt),
    live: walked.live,
    deadRule: walked.live ? "" : walked.refusal.rule,
    deadReason: walked.live ? "" : walked.refusal.reason,
  });
}

/** Back from an entry to the kernel's fact (the owner's CLI computes apply's cascade from these). */
export function leaseFactOfEntry(entry: LeaseEntry): LeaseFact {
  return deepFreeze({
    id: entry.leaseId,
    ...(entry.parent ? { parent: entry.parent } : {}),
    rootGrant: entry.rootGrant,
    issuer: entry.issuer,
    holder: entry.holder,
    capability: entry.capability,
    scope: JSON.parse(entry.scopeJson) as LeaseFact["scope"],
    issuedAt: Number(entry.issuedUnixMs),
    expiresAt: Number(entry.expiresUnixMs),
  });
}
