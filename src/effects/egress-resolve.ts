import { lookup } from "node:dns/promises";
import { networkInterfaces } from "node:os";

/**
 * The daemon resolves a seat's target itself (§12): the seat never chooses the address, and
 * the connection goes to the address that was checked (no second lookup a rebinding could
 * change). Production uses the system resolver (getaddrinfo: /etc/hosts, then DNS). Tests
 * point it at loopback without touching the machine's resolver: TEAMD_TEST_EGRESS_HOSTS, a
 * JSON map of name → address or [addresses], is then the only resolver (a name not in it
 * does not resolve — no test query leaves the machine).
 */
export type EgressResolver = (host: string) => Promise<readonly string[]>;

export const TEST_HOSTS_ENV = "TEAMD_TEST_EGRESS_HOSTS";

export function createEgressResolver(env: NodeJS.ProcessEnv = process.env): EgressResolver {
  const map = env[TEST_HOSTS_ENV];
  if (map !== undefined && map !== "") return hostsMapResolver(parseHostsMap(map));
  return async (host) => (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
}

export function hostsMapResolver(map: ReadonlyMap<string, readonly string[]>): EgressResolver {
  return async (host) => {
    const found = map.get(host.toLowerCase());
    if (found === undefined || found.length === 0) throw Object.assign(new Error(`${host} is not in ${TEST_HOSTS_ENV}`), { code: "ENOTFOUND" });
    return found;
  };
}

function parseHostsMap(text: string): Map<string, readonly string[]> {
  const parsed = JSON.parse(text) as Record<string, string | string[]>;
  const map = new Map<string, readonly string[]>();
  for (const [name, value] of Object.entries(parsed)) map.set(name.toLowerCase(), Array.isArray(value) ? value : [value]);
  return map;
}

/** The host's own addresses (every interface's): a seat never reaches the daemon's machine unless declared. */
export function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((entries) => entries ?? [])
    .map((entry) => entry.address.replace(/%.*$/, ""));
}
