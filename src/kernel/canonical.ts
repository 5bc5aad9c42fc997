/**
 * The canonical text of policy data: JSON with object keys in code-unit order, no
 * whitespace, `undefined` members dropped. Two documents that mean the same thing — whatever
 * their YAML formatting, quoting or key order — serialize to the same text, so the hash the
 * loader takes of it (outside the kernel) names the content, not its spelling.
 */
export type CanonicalValue = null | boolean | number | string | readonly CanonicalValue[] | { readonly [key: string]: CanonicalValue | undefined };

export function canonicalJson(value: CanonicalValue): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    // Only integers appear in policy data; anything else has no single spelling.
    if (!Number.isSafeInteger(value)) throw new RangeError(`canonical form holds integers only, not ${value}`);
    return String(value);
  }
  if (Array.isArray(value)) return `[${value.map((v: CanonicalValue) => canonicalJson(v)).join(",")}]`;
  const record = value as { readonly [key: string]: CanonicalValue | undefined };
  const keys = Object.keys(record)
    .filter((k) => record[k] !== undefined)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k] as CanonicalValue)}`).join(",")}}`;
}
