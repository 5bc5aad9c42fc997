import { comparePaths, isStrictlyUnder, rebase } from "../objects/paths.js";
import type { MountOp, ReservedFact, SeatRoot } from "./plan-types.js";

/** A mask the plan adds (pure), before it becomes a MountOp. */
export interface Mask {
  readonly dest: string;
  readonly kind: "file" | "dir";
  readonly why: string;
}

/**
 * Masks: reserved objects under a read-only bind; other names of reserved objects, sockets
 * and files linked from outside the seat, under any root. A mask under a masked folder is
 * dropped (the folder is already empty).
 */
export function collectMasks(
  reservedObjects: readonly ReservedFact[],
  readOnlyBinds: readonly Extract<MountOp, { op: "ro-bind" }>[],
  roots: readonly SeatRoot[],
): Mask[] {
  const masks = new Map<string, Mask>();
  const add = (mask: Mask) => {
    if (!masks.has(mask.dest)) masks.set(mask.dest, mask);
  };
  for (const object of reservedObjects) {
    if (object.kind === "absent") continue;
    for (const bind of readOnlyBinds) {
      if (isStrictlyUnder(bind.src, object.path)) {
        add({ dest: rebase(bind.src, bind.dest, object.path), kind: object.kind === "dir" ? "dir" : "file", why: `reserved ${object.path}` });
      }
    }
  }
  const kindOf = (of: string) => (reservedObjects.find((o) => o.path === of)?.kind === "dir" ? "dir" : "file");
  const names = new Map<string, { nlink: number; paths: Set<string> }>();
  for (const { root } of roots) {
    for (const alias of root.scan.aliases) add({ dest: alias.path, kind: kindOf(alias.of), why: `another name of reserved ${alias.of}` });
    for (const socket of root.scan.sockets) add({ dest: socket, kind: "file", why: "unix socket" });
    for (const link of root.scan.linked) {
      const entry = names.get(link.key) ?? { nlink: link.nlink, paths: new Set<string>() };
      entry.paths.add(link.path);
      names.set(link.key, entry);
    }
  }
  for (const { nlink, paths } of names.values()) {
    if (nlink <= paths.size) continue;
    for (const path of paths) add({ dest: path, kind: "file", why: `${nlink} names, ${paths.size} inside the seat` });
  }
  const all = [...masks.values()];
  return all
    .filter((mask) => !all.some((other) => other.kind === "dir" && isStrictlyUnder(other.dest, mask.dest)))
    .sort((a, b) => comparePaths(a.dest, b.dest));
}
