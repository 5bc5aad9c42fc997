import { existsSync } from "node:fs";
import { lstat, readdir, readlink, realpath } from "node:fs/promises";
import { canonicalize } from "../objects/canonical.js";
import { identify } from "../objects/identity.js";
import type { ReservedSet } from "../objects/reserved-set.js";
import { scanRoot, type ScanOptions } from "../objects/scan.js";
import { etcFoldersToList, LINUX_BASE } from "./linux-base.js";
import type { EtcEntry, HostFacts, HostRoot, ReservedFact, SystemEntry } from "./plan-types.js";
import { refuseContainment, type Checked } from "./refusal.js";

/**
 * Reading the host for the plan compiler: the one place besides the launcher that looks at
 * the machine, and it only looks (lstat, readlink, readdir, realpath). What it cannot read
 * it reports as a refusal naming the path, so the compiler never decides on a guess.
 */
export interface HostFactsRequest {
  /** The node binary seats run (normally process.execPath). */
  readonly node: string;
  readonly shimBundle?: string;
  /** The bundle's lazy part beside it (plan-types HostFacts.shimLazy). */
  readonly shimLazy?: string;
  /** The remote helper's front beside it (plan-types HostFacts.shimGitRemote). */
  readonly shimGitRemote?: string;
  /** The bundle's name on the seat's PATH (plan-types HostFacts.shimCommand). */
  readonly shimCommand?: string;
  /** teamd's /etc/profile for seats (plan-types HostFacts.seatProfile). */
  readonly seatProfile?: string;
  readonly seatSocket: string;
}

/** What a seat's /proc masks where the kernel has it (see HostFacts.procKeyFiles). */
export const PROC_KEY_FILES = Object.freeze(["/proc/keys", "/proc/key-users"]);

export async function gatherHostFacts(request: HostFactsRequest): Promise<Checked<HostFacts>> {
  const system: SystemEntry[] = [];
  for (const path of LINUX_BASE.system) {
    const entry = await describe(path);
    if (!entry.ok) return entry;
    system.push({ path, ...entry.value });
  }
  const etcRoot = "/etc";
  const etc: EtcEntry[] = [];
  const top = await list(etcRoot, "");
  if (!top.ok) return top;
  etc.push(...top.value);
  const etcListed: string[] = [];
  for (const folder of etcFoldersToList()) {
    if (top.value.find((entry) => entry.name === folder)?.kind !== "dir") continue;
    const children = await list(`${etcRoot}/${folder}`, `${folder}/`);
    if (!children.ok) return children;
    etc.push(...children.value);
    etcListed.push(folder);
  }
  const node = await canonicalize(request.node);
  if (!node.ok) return fail(`the node runtime: ${node.reason}`, "install node, or point teamd at it");
  let shimBundle: string | undefined;
  if (request.shimBundle !== undefined) {
    const shim = await canonicalize(request.shimBundle);
    if (!shim.ok) return fail(`the shim bundle: ${shim.reason}`, "build the shim bundle (npm run build)");
    shimBundle = shim.path;
  }
  let shimLazy: string | undefined;
  if (request.shimLazy !== undefined && shimBundle !== undefined) {
    const lazy = await canonicalize(request.shimLazy);
    if (!lazy.ok) return fail(`the shim's lazy part: ${lazy.reason}`, "build the shim bundle (npm run build)");
    shimLazy = lazy.path;
  }
  let shimGitRemote: string | undefined;
  if (request.shimGitRemote !== undefined && shimBundle !== undefined) {
    const front = await canonicalize(request.shimGitRemote);
    if (!front.ok) return fail(`the remote helper's front: ${front.reason}`, "build the shim bundle (npm run build)");
    shimGitRemote = front.path;
  }
  let seatProfile: string | undefined;
  if (request.seatProfile !== undefined) {
    const profile = await canonicalize(request.seatProfile);
    if (!profile.ok) return fail(`the seat profile: ${profile.reason}`, "let teamd write its seat profile into TEAMD_HOME/shim");
    seatProfile = profile.path;
  }
  const socket = await canonicalize(request.seatSocket);
  if (!socket.ok) return fail(`the seat socket: ${socket.reason}`, "open the seat's socket before planning its sandbox");
  const socketId = await identify(socket.path);
  if (!socketId.ok || socketId.info.kind !== "socket") {
    return fail(`the seat socket ${socket.path} is not a unix socket`, "open the seat's socket before planning its sandbox");
  }
  return {
    ok: true,
    value: {
      system,
      etc,
      etcListed,
      node: node.path,
      shimBundle,
      ...(shimLazy !== undefined ? { shimLazy } : {}),
      ...(shimGitRemote !== undefined ? { shimGitRemote } : {}),
      ...(request.shimCommand !== undefined && shimBundle !== undefined ? { shimCommand: request.shimCommand } : {}),
      ...(seatProfile !== undefined ? { seatProfile } : {}),
      seatSocket: { path: socket.path, id: socketId.info.id },
      procKeyFiles: PROC_KEY_FILES.filter((path) => existsSync(path)),
    },
  };
}

/**
 * A root as the plan wants it: canonical path, identity, and a complete scan (sockets,
 * other names of reserved objects, files linked from elsewhere).
 */
export async function describeRoot(path: string, reserved: ReservedSet, options: ScanOptions = {}): Promise<Checked<HostRoot>> {
  const canonical = await canonicalize(path);
  if (!canonical.ok) return fail(canonical.reason, `create ${path}, or leave it out of the seat`, "object.identity");
  const found = await identify(canonical.path);
  if (!found.ok) return fail(found.reason, `make ${path} readable by teamd`, "object.identity");
  if (found.info.kind !== "dir") return fail(`${canonical.path} is not a folder`, "a seat root must be a folder");
  const scan = await scanRoot(canonical.path, reserved.keys, options);
  return { ok: true, value: { path: canonical.path, id: found.info.id, scan } };
}

/** The reserved set as plan data. */
export function reservedFacts(set: ReservedSet): ReservedFact[] {
  return set.objects.map((object) => ({ path: object.path, id: object.id, kind: object.kind }));
}

async function describe(path: string): Promise<Checked<Omit<SystemEntry, "path">>> {
  try {
    const stats = await lstat(path);
    if (stats.isSymbolicLink()) return { ok: true, value: { kind: "symlink", target: await readlink(path) } };
    return { ok: true, value: { kind: stats.isDirectory() ? "dir" : "other" } };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { ok: true, value: { kind: "absent" } };
    return fail(`cannot examine ${path}: ${(error as Error).message}`, `make ${path} readable`);
  }
}

async function list(folder: string, prefix: string): Promise<Checked<EtcEntry[]>> {
  const entries: EtcEntry[] = [];
  try {
    const real = await realpath(folder);
    for (const entry of await readdir(real, { withFileTypes: true, encoding: "buffer" })) {
      const raw = Buffer.from(entry.name);
      const text = raw.toString("utf8");
      const name = `${prefix}${text}`;
      // A name that is not UTF-8 cannot be named to bwrap as it is: it is left out (never
      // bound), not bound under a decoded name that does not exist — which refused every seat
      // (found by an attack, round eight). Likewise a link whose text is not UTF-8.
      if (!Buffer.from(text, "utf8").equals(raw)) {
        entries.push({ name, kind: "other" });
        continue;
      }
      if (entry.isSymbolicLink()) {
        const target = await readlink(`${real}/${text}`, { encoding: "buffer" });
        const targetText = target.toString("utf8");
        entries.push(Buffer.from(targetText, "utf8").equals(target) ? { name, kind: "symlink", target: targetText } : { name, kind: "other" });
      } else if (entry.isDirectory()) entries.push({ name, kind: "dir" });
      else if (entry.isFile()) entries.push({ name, kind: "file" });
      else entries.push({ name, kind: "other" });
    }
  } catch (error) {
    return fail(`cannot list ${folder}: ${(error as Error).message}`, `make ${folder} readable by teamd`);
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { ok: true, value: entries };
}

function fail(reason: string, fix: string, rule: "containment.undecidable" | "object.identity" = "containment.undecidable") {
  return { ok: false as const, refusal: refuseContainment(rule, reason, fix) };
}
