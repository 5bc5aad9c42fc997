import type { LeaseEntry } from "../gen/teamd/v1/lease_pb.js";

/**
 * How a lease (§7) reads on the command line, the same for the owner (`teamd lease list`) and
 * a seat (`teamd-shim lease …`, `whoami`): one JSON shape for scripts and one line for people.
 */
export type LeaseFields = Pick<
  LeaseEntry,
  "leaseId" | "parent" | "rootGrant" | "issuer" | "holder" | "capability" | "scope" | "issuedUnixMs" | "expiresUnixMs" | "live" | "deadRule" | "deadReason"
>;

export function leaseJson(l: LeaseFields) {
  return {
    leaseId: l.leaseId,
    parent: l.parent || null,
    rootGrant: l.rootGrant,
    issuer: l.issuer,
    holder: l.holder,
    capability: l.capability,
    scope: l.scope,
    issuedUnixMs: Number(l.issuedUnixMs),
    expiresUnixMs: Number(l.expiresUnixMs),
    live: l.live,
    dead: l.live ? null : { rule: l.deadRule, reason: l.deadReason },
  };
}

export type LeaseJson = ReturnType<typeof leaseJson>;

export function leaseLine(l: LeaseJson): string {
  const origin = l.parent ? ` (re-lease of ${l.parent})` : ` (from ${l.rootGrant})`;
  const state = l.live ? `live until ${new Date(l.expiresUnixMs).toISOString()}` : `not live: ${l.dead?.rule}`;
  return `${l.leaseId}  ${l.capability} ${l.scope}  ${l.issuer} -> ${l.holder}${origin}  ${state}`;
}
