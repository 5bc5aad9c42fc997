import { LAB_ENDPOINTS } from "./lab-presets.js";
import { compareStrings } from "./paths.js";
import { type InputPath, type PolicyProblem, problem } from "./policy-input.js";
import { isPlainObject } from "./records.js";

/**
 * A seat's allowed egress (§10, §12): part of its pinned execution context, so it is in the
 * start-context hash — a widened allowlist is a different seat, never a silent change.
 *
 * `start.network` in the team file:
 *   allow:   host:port patterns — `api.example.com:443`, `*.npmjs.org:443` (any name under
 *            npmjs.org, not npmjs.org itself), an IP literal `10.0.0.7:5432` or `[::1]:8080`;
 *   private: CIDR ranges (`10.0.0.0/8`, `127.0.0.1/32`) a target may resolve into although
 *            they are private, loopback, link-local or the host's own — only where declared;
 *   lab:     false to leave out the lab's endpoints (default: included).
 *
 * A seat without `start.network` has no egress at all (no proxy, nothing resolves). The lab's
 * endpoints come from src/kernel/lab-presets.ts (the needed hosts, never the optional ones); the effective list (lab endpoints + allow) is what is
 * hashed, so a release that changes the table changes the hash too. Pure: parsing only — the
 * daemon matches and classifies (src/effects/egress-*.ts).
 */
export interface EgressContext {
  /** Canonical `host:port` patterns, sorted, deduplicated (lab endpoints included). */
  readonly allow: readonly string[];
  /** Canonical CIDRs, sorted. */
  readonly private: readonly string[];
  /**
   * Present (false) only when the file said `lab: false`: the canonical form must carry it, or
   * reading that form back adds the lab's endpoints again and the policy's hash changes.
   */
  readonly lab?: false;
}

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** A host name (lower-case LDH labels), optionally `*.` + name. Returns the canonical form or a reason. */
export function canonicalHostPattern(host: string): { ok: true; host: string } | { ok: false; reason: string } {
  const lower = host.toLowerCase().replace(/\.$/, "");
  const ip = canonicalIp(lower.startsWith("[") && lower.endsWith("]") ? lower.slice(1, -1) : lower);
  if (ip !== undefined) return { ok: true, host: ip };
  const wildcard = lower.startsWith("*.");
  const name = wildcard ? lower.slice(2) : lower;
  if (name.length === 0 || name.length > 253) return { ok: false, reason: `'${host}' is not a host name` };
  const labels = name.split(".");
  if (labels.some((label) => !LABEL.test(label))) {
    return { ok: false, reason: `'${host}' is not a host name (letters, digits and inner dashes per label; a wildcard only as a leading '*.')` };
  }
  if (wildcard && labels.length < 2) return { ok: false, reason: `'${host}' would match every name under a top-level domain` };
  return { ok: true, host: wildcard ? `*.${name}` : name };
}

/** `host:port` or `[v6]:port` → canonical `host:port` (v6 bracketed), or a reason. */
export function canonicalEndpointPattern(text: string): { ok: true; pattern: string; host: string; port: number } | { ok: false; reason: string } {
  const match = /^(\[[^\]]+\]|[^:[\]]+):([0-9]{1,5})$/.exec(text.trim());
  if (match === null) return { ok: false, reason: `'${text}' is not host:port (a port is required; an IPv6 address in brackets)` };
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return { ok: false, reason: `the port of '${text}' is not between 1 and 65535` };
  const host = canonicalHostPattern(match[1] as string);
  if (!host.ok) return host;
  return { ok: true, pattern: `${host.host.includes(":") ? `[${host.host}]` : host.host}:${port}`, host: host.host, port };
}

/** A CIDR (`a.b.c.d/n`, `v6/n`; a bare address is /32 or /128) → canonical text with the network address, or undefined. */
export function canonicalCidr(text: string): string | undefined {
  const [address = "", bits, ...rest] = text.trim().toLowerCase().split("/");
  if (rest.length > 0) return undefined;
  const ip = canonicalIp(address);
  if (ip === undefined) return undefined;
  const v6 = ip.includes(":");
  const width = v6 ? 128 : 32;
  const prefix = bits === undefined ? width : /^[0-9]{1,3}$/.test(bits) ? Number(bits) : NaN;
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > width) return undefined;
  const value = v6 ? ipv6Value(ip) : ipv4Value(ip);
  if (value === undefined) return undefined;
  const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(width - prefix);
  const network = value & mask;
  return `${v6 ? formatV6(network) : formatV4(network)}/${prefix}`;
}

export function readEgress(input: unknown, lab: string | undefined, at: InputPath, problems: PolicyProblem[]): EgressContext | undefined {
  if (input === null) input = {};
  if (!isPlainObject(input)) {
    problems.push(problem("teamfile.schema", at, "network must be a map (allow, private, lab)", 'write `network: { allow: ["api.example.com:443"] }`'));
    return undefined;
  }
  const before = problems.length;
  for (const key of Object.keys(input)) {
    if (!["allow", "private", "lab"].includes(key)) {
      problems.push(problem("teamfile.schema", [...at, key], `unknown key '${key}' in network`, "network takes: allow, private, lab", "key"));
    }
  }
  const list = (key: "allow" | "private"): string[] => {
    const value = input[key];
    if (value === undefined) return [];
    if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) {
      problems.push(problem("teamfile.schema", [...at, key], `network.${key} must be a list of text`, `write \`${key}: ["…", "…"]\``));
      return [];
    }
    return value as string[];
  };
  const allow = new Set<string>();
  list("allow").forEach((text, index) => {
    const parsed = canonicalEndpointPattern(text);
    if (parsed.ok) allow.add(parsed.pattern);
    else
      problems.push(
        problem("teamfile.schema", [...at, "allow", index], `egress ${parsed.reason}`, "write host:port, e.g. api.example.com:443 or *.npmjs.org:443"),
      );
  });
  const ranges = new Set<string>();
  list("private").forEach((text, index) => {
    const cidr = canonicalCidr(text);
    if (cidr !== undefined) ranges.add(cidr);
    else
      problems.push(
        problem("teamfile.schema", [...at, "private", index], `'${text}' is not a CIDR range`, "write an address range, e.g. 10.0.0.0/8 or 127.0.0.1/32"),
      );
  });
  const withLab = input.lab;
  if (withLab !== undefined && typeof withLab !== "boolean") {
    problems.push(problem("teamfile.schema", [...at, "lab"], "network.lab must be true or false", "write `lab: false` to leave out the lab's endpoints"));
  }
  if (withLab !== false && lab !== undefined) for (const endpoint of LAB_ENDPOINTS[lab] ?? []) allow.add(endpoint);
  if (problems.length > before) return undefined;
  return Object.freeze({
    allow: Object.freeze([...allow].sort(compareStrings)),
    private: Object.freeze([...ranges].sort(compareStrings)),
    ...(withLab === false ? { lab: false as const } : {}),
  });
}

/** A canonical IP literal (v4 dotted quad; v6 in compressed lower-case form), or undefined. */
export function canonicalIp(text: string): string | undefined {
  if (/^[0-9.]+$/.test(text)) {
    const value = ipv4Value(text);
    return value === undefined ? undefined : formatV4(value);
  }
  if (!text.includes(":")) return undefined;
  const value = ipv6Value(text);
  return value === undefined ? undefined : formatV6(value);
}

export function ipv4Value(text: string): bigint | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || parts.some((p) => !/^(0|[1-9][0-9]{0,2})$/.test(p) || Number(p) > 255)) return undefined;
  return parts.reduce((acc, p) => (acc << 8n) | BigInt(p), 0n);
}

export function ipv6Value(text: string): bigint | undefined {
  let head = text;
  let v4Tail: bigint | undefined;
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    v4Tail = ipv4Value(text.slice(lastColon + 1));
    if (v4Tail === undefined) return undefined;
    head = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = head.split("::");
  if (halves.length > 2) return undefined;
  const groups = (s: string) => (s === "" ? [] : s.split(":"));
  const left = groups(halves[0] as string);
  const right = halves.length === 2 ? groups(halves[1] as string) : [];
  const missing = 8 - left.length - right.length;
  if ((halves.length === 2 && missing < 1) || (halves.length === 1 && missing !== 0)) return undefined;
  const all = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...right];
  if (all.some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return undefined;
  let value = all.reduce((acc, g) => (acc << 16n) | BigInt(`0x${g}`), 0n);
  if (v4Tail !== undefined) value = (value & ~0xffffffffn) | v4Tail;
  return value;
}

function formatV4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join(".");
}

function formatV6(value: bigint): string {
  const groups = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((shift) => ((value >> shift) & 0xffffn).toString(16));
  // The longest run of two or more zero groups becomes "::" (RFC 5952).
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== "0") {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === "0") j++;
    if (j - i > bestLength) {
      best = i;
      bestLength = j - i;
    }
    i = j;
  }
  if (best < 0) return groups.join(":");
  return `${groups.slice(0, best).join(":")}::${groups.slice(best + bestLength).join(":")}`;
}

/** A seat's egress in the policy's canonical form: reading it back yields the same context (`lab: false` kept). */
export function canonicalNetwork(network: EgressContext): { allow: readonly string[]; private: readonly string[]; lab?: false } {
  return { allow: network.allow, private: network.private, ...(network.lab === false ? { lab: false as const } : {}) };
}
