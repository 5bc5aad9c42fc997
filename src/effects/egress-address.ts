import { BlockList, isIP } from "node:net";
import { canonicalCidr } from "../kernel/egress-context.js";

/**
 * Where a resolved address lies (§12): a seat's egress reaches the public internet only,
 * unless the owner declared a range explicitly. Refused by default: unspecified, loopback,
 * link-local, private (RFC 1918, unique-local, shared CGNAT space), multicast, reserved and
 * broadcast ranges, IPv4-mapped forms of those, and every address of the host itself (the
 * daemon's machine: its services listen there). A name that resolves to one of these — a
 * DNS rebinding, a `localhost.example.com` — is refused the same as the literal.
 */
export type AddressClass = "public" | "unspecified" | "loopback" | "link-local" | "private" | "multicast" | "reserved" | "host";

const RANGES: ReadonlyArray<readonly [string, number, "ipv4" | "ipv6", Exclude<AddressClass, "public" | "host">]> = [
  ["0.0.0.0", 8, "ipv4", "unspecified"],
  ["127.0.0.0", 8, "ipv4", "loopback"],
  ["10.0.0.0", 8, "ipv4", "private"],
  ["172.16.0.0", 12, "ipv4", "private"],
  ["192.168.0.0", 16, "ipv4", "private"],
  ["100.64.0.0", 10, "ipv4", "private"],
  ["169.254.0.0", 16, "ipv4", "link-local"],
  ["192.0.0.0", 24, "ipv4", "reserved"],
  ["198.18.0.0", 15, "ipv4", "reserved"],
  ["224.0.0.0", 4, "ipv4", "multicast"],
  ["240.0.0.0", 4, "ipv4", "reserved"],
  ["::", 128, "ipv6", "unspecified"],
  ["::1", 128, "ipv6", "loopback"],
  ["fc00::", 7, "ipv6", "private"],
  ["fe80::", 10, "ipv6", "link-local"],
  ["fec0::", 10, "ipv6", "private"],
  ["ff00::", 8, "ipv6", "multicast"],
  ["64:ff9b::", 96, "ipv6", "reserved"],
  ["100::", 64, "ipv6", "reserved"],
];

/** One block list per class, in the order the table first names it; built once, never written after. */
const LISTS: ReadonlyMap<Exclude<AddressClass, "public" | "host">, BlockList> = blockLists(RANGES);

function blockLists(ranges: typeof RANGES): ReadonlyMap<Exclude<AddressClass, "public" | "host">, BlockList> {
  const lists = new Map<Exclude<AddressClass, "public" | "host">, BlockList>();
  for (const [network, prefix, family, kind] of ranges) {
    let list = lists.get(kind);
    if (list === undefined) lists.set(kind, (list = new BlockList()));
    list.addSubnet(network, prefix, family);
  }
  return lists;
}

/** The address's class; an IPv4-mapped IPv6 address is classed as its IPv4 address. */
export function classifyAddress(address: string, hostAddresses: readonly string[] = []): AddressClass {
  const family = isIP(address);
  if (family === 0) return "reserved";
  const mapped = family === 6 ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] : undefined;
  const plain = mapped ?? address;
  const type = mapped !== undefined || family === 4 ? "ipv4" : "ipv6";
  for (const [kind, list] of LISTS) if (list.check(plain, type)) return kind;
  if (hostAddresses.some((own) => sameAddress(own, plain))) return "host";
  return "public";
}

/** Is the address inside one of the declared CIDRs (canonical, from the execution context)? */
export function declaredRange(address: string, declared: readonly string[]): string | undefined {
  const family = isIP(address);
  if (family === 0) return undefined;
  const mapped = family === 6 ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] : undefined;
  const plain = mapped ?? address;
  const type = mapped !== undefined || family === 4 ? "ipv4" : "ipv6";
  for (const cidr of declared) {
    const canonical = canonicalCidr(cidr);
    if (canonical === undefined) continue;
    const [network = "", bits = ""] = canonical.split("/");
    const list = new BlockList();
    list.addSubnet(network, Number(bits), network.includes(":") ? "ipv6" : "ipv4");
    if (list.check(plain, type)) return canonical;
  }
  return undefined;
}

/** May a connection go to this address? Public ones yes; any other only inside a declared range. */
export function addressAllowed(
  address: string,
  declared: readonly string[],
  hostAddresses: readonly string[],
): { ok: true; class: AddressClass; range?: string } | { ok: false; class: AddressClass } {
  const kind = classifyAddress(address, hostAddresses);
  if (kind === "public") return { ok: true, class: kind };
  const range = declaredRange(address, declared);
  return range !== undefined ? { ok: true, class: kind, range } : { ok: false, class: kind };
}

function sameAddress(a: string, b: string): boolean {
  const family = isIP(a);
  if (family === 0 || family !== isIP(b)) return false;
  const list = new BlockList();
  list.addAddress(a, family === 4 ? "ipv4" : "ipv6");
  return list.check(b, family === 4 ? "ipv4" : "ipv6");
}
