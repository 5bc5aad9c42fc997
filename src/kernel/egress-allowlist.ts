import { type Refusal, refuse } from "./decision.js";
import { canonicalEndpointPattern, canonicalIp, type EgressContext } from "./egress-context.js";

/**
 * Does a seat's declared egress allow this target? The target is what the connection asked
 * for — the CONNECT target or the request URL's host:port, as the shim forwarded it in the
 * stream's header — never a Host header. A pattern `*.example.com:443` matches any name
 * under example.com (not the apex); a name matches case-insensitively, without its trailing
 * dot; an IP literal matches only the same address written in any form.
 *
 * Pure policy over the seat's declared egress (egress-context.ts), so it lives in the kernel;
 * resolving a name and relaying the bytes are src/effects/'s (egress-resolve.ts, egress-relay.ts).
 */
export interface EgressTarget {
  /** Canonical: a lower-case name, or a canonical IP literal (v6 without brackets). */
  readonly host: string;
  readonly port: number;
  /** Whether the host is an IP literal (then no name is resolved). */
  readonly literal: boolean;
}

/** Parse the header's `host:port` (`[v6]:port`); a malformed one is refused. */
export function parseEgressTarget(text: string): EgressTarget | Refusal {
  const parsed = canonicalEndpointPattern(text);
  if (!parsed.ok || parsed.host.startsWith("*.")) {
    return refuse(
      "request.malformed",
      `the egress target '${text.slice(0, 300)}' is not host:port${parsed.ok ? " (a wildcard is a pattern, not a target)" : `: ${parsed.reason}`}`,
    );
  }
  return { host: parsed.host, port: parsed.port, literal: canonicalIp(parsed.host) !== undefined };
}

export function matchEgress(allow: readonly string[], target: EgressTarget): string | undefined {
  for (const pattern of allow) {
    const parsed = canonicalEndpointPattern(pattern);
    if (!parsed.ok || parsed.port !== target.port) continue;
    if (parsed.host === target.host) return pattern;
    if (parsed.host.startsWith("*.") && !target.literal && target.host.endsWith(parsed.host.slice(1))) return pattern;
  }
  return undefined;
}

/** The allowlist decision: the pattern that allows the target, or `egress.host` naming the fix. */
export function checkEgressHost(network: EgressContext | undefined, target: EgressTarget): { allowedBy: string } | Refusal {
  const shown = `${target.host.includes(":") ? `[${target.host}]` : target.host}:${target.port}`;
  if (network === undefined) {
    return refuse(
      "egress.host",
      `this seat declares no egress, so ${shown} is not reachable; the owner adds start.network.allow: ["${shown}"] to the seat in teamd.yaml and runs teamd apply`,
    );
  }
  const allowedBy = matchEgress(network.allow, target);
  if (allowedBy === undefined) {
    return refuse(
      "egress.host",
      `${shown} is not in this seat's egress allowlist; the owner adds it to start.network.allow in teamd.yaml and runs teamd apply`,
    );
  }
  return { allowedBy };
}
