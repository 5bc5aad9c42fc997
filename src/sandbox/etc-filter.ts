import type { Refusal } from "../kernel/decision.js";
import type { EtcEntry, MountOp, ReservedFact } from "./plan-types.js";
import { matchesName } from "./linux-base.js";
import { isAtOrUnder } from "../objects/paths.js";
import { refuseContainment } from "./refusal.js";

/**
 * /etc without its secrets (pure). Programs need /etc (passwd for names, resolv.conf, ssl
 * certificates, ld.so.cache), but /etc also holds password hashes, sudo rules and host keys.
 * Rather than bind /etc and mask what is secret — which leaves each name visible and a new
 * secret exposed until someone lists it — each allowed entry is bound on its own: a denied
 * entry does not exist inside at all. Inside a folder that holds a denied child (/etc/ssh,
 * /etc/ssl) the children are bound one by one. Sockets, FIFOs and devices are never bound.
 * An entry that is reserved (§3) is left out like a secret. A file's bind is marked copyable:
 * a pipes launch gives a small world-readable one as a read-only copy (etc-copies.ts), which is
 * what the seat could read through the bind, without a mount.
 */
export function etcMounts(
  entries: readonly EtcEntry[],
  listed: readonly string[],
  deny: readonly string[],
  reserved: readonly ReservedFact[],
): MountOp[] | Refusal {
  const topDeny = deny.filter((pattern) => !pattern.includes("/"));
  const childDeny = new Map<string, string[]>();
  for (const pattern of deny.filter((p) => p.includes("/"))) {
    const folder = pattern.slice(0, pattern.indexOf("/"));
    childDeny.set(folder, [...(childDeny.get(folder) ?? []), pattern.slice(folder.length + 1)]);
  }
  for (const entry of entries) {
    const parts = entry.name.split("/");
    if (parts.length > 2 || parts.some((part) => part === "" || part === "." || part === "..")) {
      return undecidable(`the /etc entry '${entry.name}' is not a plain name or folder/name`);
    }
  }
  const isReserved = (path: string) => reserved.some((object) => isAtOrUnder(object.path, path));
  const ops: MountOp[] = [];
  const top = entries.filter((entry) => !entry.name.includes("/")).sort((a, b) => cmp(a.name, b.name));
  for (const entry of top) {
    if (topDeny.some((pattern) => matchesName(pattern, entry.name))) continue;
    const path = `/etc/${entry.name}`;
    if (isReserved(path)) continue;
    const patterns = childDeny.get(entry.name);
    if (patterns === undefined || entry.kind !== "dir") {
      if (patterns !== undefined && entry.kind === "symlink") {
        return undecidable(`${path} is a symlink, so the secrets inside it (${patterns.join(", ")}) cannot be filtered`);
      }
      const op = entryOp(entry, path);
      if (op === "refuse") return undecidable(`${path} is a symlink whose target is not known`);
      if (op) ops.push(op);
      continue;
    }
    if (!listed.includes(entry.name)) {
      return undecidable(`${path} holds entries that must be left out (${patterns.join(", ")}) but its children were not listed`);
    }
    const children = entries.filter((child) => child.name.startsWith(`${entry.name}/`)).sort((a, b) => cmp(a.name, b.name));
    for (const child of children) {
      const name = child.name.slice(entry.name.length + 1);
      if (patterns.some((pattern) => matchesName(pattern, name))) continue;
      const childPath = `/etc/${child.name}`;
      if (isReserved(childPath)) continue;
      const op = entryOp(child, childPath);
      if (op === "refuse") return undecidable(`${childPath} is a symlink whose target is not known`);
      if (op) ops.push(op);
    }
  }
  return ops;
}

function entryOp(entry: EtcEntry, path: string): MountOp | undefined | "refuse" {
  switch (entry.kind) {
    case "file":
      return { op: "ro-bind", src: path, dest: path, copyable: true };
    case "dir":
      return { op: "ro-bind", src: path, dest: path };
    case "symlink":
      // Recreated, not bound: the link resolves inside the seat, where only the plan exists.
      return entry.target === undefined || entry.target.length === 0 ? "refuse" : { op: "symlink", target: entry.target, dest: path };
    case "other":
      return undefined;
  }
}

function undecidable(reason: string): Refusal {
  return refuseContainment("containment.undecidable", reason, "report the host's /etc layout to teamd's maintainers, or list the folder in the host facts");
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
