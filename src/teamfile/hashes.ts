import { createHash } from "node:crypto";
import type { CompiledPolicy } from "../kernel/compiled-policy.js";
import type { PolicyHashes } from "../kernel/policy.js";
import { startContextCanonical } from "../kernel/start-context.js";

/**
 * Content hashes, computed here because the kernel computes none (its inputs are data). Every
 * hash is sha-256 over a canonical text the kernel produced, written `sha256:<hex>`: the whole
 * team file's canonical form (the policy hash §15 binds into effect ids), each role's resolved
 * content (§4), each seat's resolved capability set and execution context (§10), and each
 * environment's deploy command (§3).
 */
export function sha256(data: string | Uint8Array): string {
  return `sha256:${createHash("sha256").update(data).digest("hex")}`;
}

/** A pinned file that could not be read: a seat's start file, or an environment's deploy file. */
export type Unreadable =
  { readonly seat: string; readonly index: number; readonly path: string } | { readonly deploy: string; readonly index: number; readonly path: string };

export interface HashResult {
  readonly hashes: PolicyHashes;
  /** Each pinned start file's content hash, by repo-relative path. */
  readonly startFiles: Readonly<Record<string, string>>;
  /** Start files that could not be read: they cannot be pinned, so the load fails. */
  readonly unreadable: readonly Unreadable[];
}

/**
 * Hash a compiled policy. Each start file's hash comes from `startFileHash`: the loader reads
 * and hashes the file on disk, or — restoring a policy from its ledger record — returns the
 * hash recorded when it was applied (the files on disk may have changed since; the record
 * is what is in force).
 */
export function hashPolicy(compiled: CompiledPolicy, startFileHash: (path: string) => string | undefined): HashResult {
  // Keyed by paths from the file: no prototype, so `__proto__` or `constructor` is just a name.
  const startFiles = Object.create(null) as Record<string, string>;
  const unreadable: Unreadable[] = [];
  const roles: Record<string, string> = {};
  for (const role of Object.values(compiled.roles)) roles[role.name] = sha256(role.content);
  const seats: Record<string, { capabilities: string; context?: string }> = {};
  for (const seat of Object.values(compiled.seats)) {
    let context: string | undefined;
    if (seat.start !== undefined) {
      seat.start.files.forEach((path, index) => {
        if (Object.prototype.hasOwnProperty.call(startFiles, path)) return;
        const hash = startFileHash(path);
        if (hash === undefined) unreadable.push({ seat: seat.name, index, path });
        else startFiles[path] = hash;
      });
      const text = startContextCanonical(seat.lab, seat.start, startFiles);
      if (text !== undefined) context = sha256(text);
    }
    seats[seat.name] = { capabilities: sha256(seat.capabilities), ...(context !== undefined ? { context } : {}) };
  }
  // A deploy command is pinned as a start is: its files join the same pinned set, and its
  // context hash covers the argv, the working root, the bindings and each file's content.
  let deploys: Record<string, string> | undefined;
  if (compiled.deploys !== undefined) {
    deploys = Object.create(null) as Record<string, string>;
    for (const [env, context] of Object.entries(compiled.deploys)) {
      context.files.forEach((path, index) => {
        if (Object.prototype.hasOwnProperty.call(startFiles, path)) return;
        const hash = startFileHash(path);
        if (hash === undefined) unreadable.push({ deploy: env, index, path });
        else startFiles[path] = hash;
      });
      const text = startContextCanonical(undefined, context, startFiles);
      if (text !== undefined) deploys[env] = sha256(text);
    }
  }
  return { hashes: { policy: sha256(compiled.canonical), roles, seats, ...(deploys !== undefined ? { deploys } : {}) }, startFiles, unreadable };
}
