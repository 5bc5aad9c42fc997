import type { Refusal } from "../kernel/decision.js";
import { objectKey } from "../objects/object-id.js";
import { comparePaths, isAtOrUnder, isCanonicalAbsolute, isStrictlyUnder } from "../objects/paths.js";
import { etcMounts } from "./etc-filter.js";
import { SEAT_PROFILE_INSIDE } from "./seat-profile.js";
import { LINUX_BASE, SHIM_BIN } from "./linux-base.js";
import { buildEnv } from "./plan-env.js";
import { collectMasks } from "./plan-masks.js";
import { egressEnv, egressMounts } from "./plan-egress.js";
import { checkLimits } from "./plan-limits.js";
import type { HostRoot, MountOp, PlanInput, ReservedFact, SandboxPlan, SeatRoot } from "./plan-types.js";
import { refuseContainment } from "./refusal.js";

/**
 * The plan compiler (pure): from a seat's roots, the reserved set, the host's facts and its
 * execution context, the data plan of its sandbox — or the rule that refuses one. It reads
 * nothing itself (no filesystem, clock or environment): what it needs comes in as data, and
 * what it cannot decide from that data it refuses (§11 fail closed), naming the rule.
 *
 * The seat sees: the system paths programs need (read-only), /etc without its secrets, its
 * own /proc, a minimal /dev, fresh /tmp and /run, its repository, home and tmp (writable),
 * the other roots its read scope covers (read-only), the shim and its own socket at
 * /run/teamd/shim.sock. Nothing else of the host exists inside. Reserved objects (§3) are
 * never bound: a writable root that is, holds or lies under one is refused; one inside a
 * read-only folder is masked, as is every unix socket found under a bound root (a read-only
 * bind does not stop connect(2)) and every file whose other names lie outside the seat.
 */
export type PlanResult = { readonly decision: "plan"; readonly plan: SandboxPlan } | Refusal;

export type LinuxBase = typeof LINUX_BASE;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
/** /run holds only teamd's mount points; a small tmpfs keeps it from being a memory sink. */
const RUN_TMPFS_BYTES = 1024 * 1024;
/**
 * The name git runs for a `teamd::` remote: the remote helper's front (shim/git-remote-front.sh),
 * which runs the shim as the helper (shim/git-remote.ts); where the plan has no front, the bundle
 * itself, which, seeing that name, speaks git's remote-helper protocol.
 */
export const GIT_REMOTE_HELPER = "git-remote-teamd";

export function compilePlan(input: PlanInput, base: LinuxBase = LINUX_BASE): PlanResult {
  try {
    return compile(input, base);
  } catch (error) {
    // Malformed input (a missing field) is a plan that cannot be decided, never a crash.
    return undecidable(`the plan input could not be read (${error instanceof Error ? error.message : String(error)})`);
  }
}

function compile(input: PlanInput, base: LinuxBase): PlanResult {
  const { seat, user, host } = input;
  for (const [what, name] of [
    ["team", seat.team],
    ["seat", seat.seat],
  ] as const) {
    if (!NAME.test(name)) return undecidable(`the ${what} name '${name}' is not a plain name`);
  }
  if (![user.uid, user.gid, user.inside?.uid ?? 1, user.inside?.gid ?? 1].every((id) => Number.isSafeInteger(id) && id >= 0 && id < 2 ** 32 - 1)) {
    return undecidable(`the seat's uid ${user.uid} / gid ${user.gid} are not user ids`);
  }
  if (user.uid === 0 || user.gid === 0 || user.inside?.uid === 0 || user.inside?.gid === 0) {
    return refuseContainment(
      "containment.host-root",
      `the seat would run with uid ${user.uid} and gid ${user.gid} on the host; a seat never runs as root`,
      "run teamd as an ordinary user, or in system mode give seats the dedicated unprivileged user that setup creates",
    );
  }
  const checkedLimits = checkLimits(input.limits);
  if (!checkedLimits.ok) return checkedLimits.refusal;
  const limits = checkedLimits.value;

  const roots: SeatRoot[] = [
    { role: "seat repository", writable: true, root: input.writable.repository },
    { role: "seat home", writable: true, root: input.writable.home },
    { role: "seat tmp", writable: true, root: input.writable.tmp },
    ...input.readOnly.map((root) => ({ role: "read-only root", writable: false, root })),
  ];
  const named: Array<[string, string]> = [
    ...roots.map((r): [string, string] => [r.role, r.root.path]),
    ...input.reserved.map((o): [string, string] => ["reserved object", o.path]),
    ["node runtime", host.node],
    ["seat socket", host.seatSocket.path],
    ...(host.shimBundle === undefined ? [] : [["shim bundle", host.shimBundle] as [string, string]]),
    ...(host.shimLazy === undefined ? [] : [["shim's lazy part", host.shimLazy] as [string, string]]),
    ...(host.shimGitRemote === undefined ? [] : [["remote helper's front", host.shimGitRemote] as [string, string]]),
    ...(host.seatProfile === undefined ? [] : [["seat profile", host.seatProfile] as [string, string]]),
  ];
  for (const [what, path] of named) {
    if (!isCanonicalAbsolute(path)) return undecidable(`the ${what} path '${path}' is not canonical (canonicalize it with src/objects first)`);
  }
  for (const object of input.reserved) {
    if (object.kind === "symlink") return undecidable(`the reserved object ${object.path} is a symlink; a canonical path names its target`);
  }

  const system = systemMounts(input, base);
  if (!Array.isArray(system)) return system;
  const placed = placeRoots(roots, input, base);
  if (placed !== undefined) return placed;
  const reservedIds = new Map<string, string>();
  for (const object of input.reserved) if (object.id !== undefined) reservedIds.set(objectKey(object.id), object.path);
  for (const { role, writable, root } of roots) {
    const refused = checkRootAgainstReserved(role, writable, root, input.reserved, reservedIds);
    if (refused) return refused;
  }
  const writablePaths = new Set(roots.filter((r) => r.writable).map((r) => r.root.path));
  const boundRoots = roots.filter((r) => r.writable || !writablePaths.has(r.root.path)).sort((a, b) => comparePaths(a.root.path, b.root.path));

  const hostEtc = etcMounts(host.etc, host.etcListed, base.etcDeny, input.reserved);
  if (!Array.isArray(hostEtc)) return hostEtc;
  // teamd's login profile in place of the host's, which would reset PATH (seat-profile.ts).
  const etc: MountOp[] = host.seatProfile === undefined ? hostEtc : hostEtc.filter((op) => !("dest" in op) || op.dest !== SEAT_PROFILE_INSIDE);
  if (host.seatProfile !== undefined) {
    const refused = checkPlainSource("seat profile", host.seatProfile, input.reserved, base);
    if (refused) return refused;
    etc.push({ op: "ro-bind", src: host.seatProfile, dest: SEAT_PROFILE_INSIDE });
  }

  const extra: MountOp[] = [];
  const covered = (path: string) =>
    system.some((op) => op.op === "ro-bind" && isAtOrUnder(op.src, path)) || boundRoots.some((r) => isAtOrUnder(r.root.path, path));
  if (!covered(host.node)) {
    const refused = checkPlainSource("node runtime", host.node, input.reserved, base);
    if (refused) return refused;
    extra.push({ op: "ro-bind", src: host.node, dest: host.node });
  }
  const late: MountOp[] = [];
  if (host.shimBundle !== undefined) {
    const refused = checkPlainSource("shim bundle", host.shimBundle, input.reserved, base);
    if (refused) return refused;
    late.push({ op: "ro-bind", src: host.shimBundle, dest: base.inside.shim });
    if (host.shimLazy !== undefined) {
      const lazyRefused = checkPlainSource("shim's lazy part", host.shimLazy, input.reserved, base);
      if (lazyRefused) return lazyRefused;
      late.push({ op: "ro-bind", src: host.shimLazy, dest: base.inside.shimLazy });
    }
    if (host.shimGitRemote !== undefined) {
      const frontRefused = checkPlainSource("remote helper's front", host.shimGitRemote, input.reserved, base);
      if (frontRefused) return frontRefused;
      late.push({ op: "ro-bind", src: host.shimGitRemote, dest: base.inside.gitRemote });
    }
    if (host.shimCommand !== undefined) {
      if (!NAME.test(host.shimCommand)) return undecidable(`the shim command name '${host.shimCommand}' is not a plain name`);
      late.push({ op: "symlink", target: base.inside.shim, dest: `${SHIM_BIN}/${host.shimCommand}` });
      // git's helper is the front where there is one (it runs the bundle itself), else the bundle.
      late.push({
        op: "symlink",
        target: host.shimGitRemote !== undefined ? base.inside.gitRemote : base.inside.shim,
        dest: `${SHIM_BIN}/${GIT_REMOTE_HELPER}`,
      });
    }
  }
  const socketOwner = reservedIds.get(objectKey(host.seatSocket.id));
  const socketReserved = input.reserved.find((o) => o.path === host.seatSocket.path);
  if (socketOwner !== undefined || socketReserved !== undefined) {
    return reserved(`the seat socket ${host.seatSocket.path} is the reserved ${socketOwner ?? host.seatSocket.path}`, "give the seat its own socket");
  }
  late.push({ op: "bind", src: host.seatSocket.path, dest: base.inside.socket });
  if (input.handoff !== undefined) {
    const refused = checkPlainSource("handoff checkpoint", input.handoff, input.reserved, base);
    if (refused) return refused;
    late.push({ op: "ro-bind", src: input.handoff, dest: base.inside.handoff });
  }
  // The start's pinned files over the seat's repository (bound before these, so after it here).
  // Each folder between the repository and a pin is bound onto itself first: a mount point cannot
  // be renamed or removed (EBUSY), so while the seat runs no folder of the path can be swapped for
  // a link and no file put in the pin's place — which a `teamd exec`'s bwrap, mounting again
  // while the seat runs, would follow (found by an attack: a link through /oldroot had it create
  // a file on the host). The pin itself is a mount point for the same reason.
  const repository = input.writable.repository.path;
  const folders = new Set<string>();
  const pinOps: MountOp[] = [];
  for (const pin of input.pins ?? []) {
    if (!isCanonicalAbsolute(pin.dest) || !isCanonicalAbsolute(pin.src)) return undecidable(`the pinned start file ${pin.dest} is not a canonical path`);
    if (!isStrictlyUnder(repository, pin.dest)) return undecidable(`the pinned start file ${pin.dest} is not inside the seat's repository ${repository}`);
    const refused = checkPlainSource("pinned start file", pin.src, input.reserved, base);
    if (refused) return refused;
    for (let at = pin.dest.lastIndexOf("/"); at > repository.length; at = pin.dest.lastIndexOf("/", at - 1)) folders.add(pin.dest.slice(0, at));
    pinOps.push({ op: "ro-bind", src: pin.src, dest: pin.dest });
  }
  for (const folder of [...folders].sort(comparePaths)) late.push({ op: "bind", src: folder, dest: folder });
  late.push(...pinOps);
  const egress = input.egress === undefined ? undefined : egressMounts(input.egress, host.node, input.reserved);
  if (egress !== undefined && "decision" in egress) return egress;
  if (egress !== undefined) late.push(...egress.mounts);

  const rootOps: MountOp[] = boundRoots.map(({ writable, root }) =>
    writable ? { op: "bind", src: root.path, dest: root.path } : { op: "ro-bind", src: root.path, dest: root.path },
  );
  const readOnlyBinds = [...system, ...etc, ...extra, ...rootOps, ...late].filter((op): op is Extract<MountOp, { op: "ro-bind" }> => op.op === "ro-bind");
  const masks = collectMasks(input.reserved, readOnlyBinds, boundRoots);

  const nodeDir = host.node.slice(0, host.node.lastIndexOf("/")) || "/";
  const basePath = (base.path as readonly string[]).includes(nodeDir) ? base.path.join(":") : [nodeDir, ...base.path].join(":");
  // teamd's own programs after the system's, so a system program of the same name is never
  // shadowed by teamd's; then, last, the seat's own ~/.local/bin, where an agent installed into
  // the seat's home lands (npm's --prefix ~/.local, Claude Code's native installer): last, so
  // nothing the seat puts there shadows a system program or teamd's own `teamd-shim` and
  // `git-remote-teamd` (before them, it did: found by an attack).
  const withShim = host.shimBundle !== undefined && host.shimCommand !== undefined ? `${basePath}:${SHIM_BIN}` : basePath;
  const path = `${withShim}:${input.writable.home.path}/.local/bin`;
  const fixed: Record<string, string> = {
    HOME: input.writable.home.path,
    PATH: path,
    // bwrap sets PWD itself when it changes into --chdir; the plan says so rather than hide it.
    PWD: input.writable.repository.path,
    TEAMD_SEAT: seat.seat,
    TEAMD_SOCKET: base.inside.socket,
    TEAMD_TEAM: seat.team,
    TMPDIR: input.writable.tmp.path,
    // The same folder by a name a seat's own tools do not change: where `git push teamd` writes
    // its pack for the daemon to read (src/effects/seat-pack-file.ts).
    TEAMD_TMP: input.writable.tmp.path,
    ...(host.shimBundle === undefined ? {} : { TEAMD_SHIM: base.inside.shim }),
    ...(input.handoff === undefined ? {} : { TEAMD_HANDOFF: base.inside.handoff }),
    ...(egress === undefined ? {} : egressEnv()),
  };
  const checkedEnv = buildEnv(fixed, input.env);
  if (!checkedEnv.ok) return checkedEnv.refusal;
  const env = checkedEnv.value;

  const mounts: MountOp[] = [
    ...system,
    ...etc,
    { op: "proc", dest: base.inside.proc },
    // The key listings of the uid the seat runs as (the owner's, in user mode): not the seat's to read.
    ...(host.procKeyFiles ?? [])
      .filter((path) => /^\/proc\/key(s|-users)$/.test(path))
      .map((path): MountOp => ({ op: "mask", dest: path, kind: "file", why: "the kernel's key listings of the seat's uid" })),
    { op: "dev", dest: base.inside.dev },
    // /tmp is the run's own tmp folder (made at start, removed at stop), not a tmpfs per launch:
    // the seat's command and every `teamd exec` into it see one /tmp (issue 22).
    { op: "bind", src: input.writable.tmp.path, dest: base.inside.tmp },
    { op: "tmpfs", dest: "/run", size: RUN_TMPFS_BYTES },
    ...extra,
    ...rootOps,
    ...late,
    ...masks.map((m): MountOp => ({ op: "mask", dest: m.dest, kind: m.kind, why: m.why })),
    // The root itself is bwrap's tmpfs; nothing the seat writes should land there.
    { op: "remount-ro", dest: "/" },
  ];
  const sources = [...new Set(mounts.flatMap((op) => (op.op === "ro-bind" || op.op === "bind" ? [op.src] : [])))].sort(comparePaths);
  const plan: SandboxPlan = {
    version: 1,
    seat: { team: seat.team, seat: seat.seat },
    hostname: seat.seat,
    uid: user.uid,
    gid: user.gid,
    ...(user.inside === undefined || (user.inside.uid === user.uid && user.inside.gid === user.gid)
      ? {}
      : { inside: { uid: user.inside.uid, gid: user.inside.gid } }),
    network: "loopback-only",
    mounts,
    env,
    cwd: input.writable.repository.path,
    limits,
    sources,
    socket: { host: host.seatSocket.path, inside: base.inside.socket },
    ...(egress === undefined ? {} : { egress: egress.egress }),
  };
  return { decision: "plan", plan: deepFreeze(plan) };
}

/** /usr, /bin, /lib*: bound read-only when a folder, recreated when a symlink, refused when odd or reserved. */
function systemMounts(input: PlanInput, base: LinuxBase): MountOp[] | Refusal {
  const ops: MountOp[] = [];
  for (const path of base.system) {
    const fact = input.host.system.find((entry) => entry.path === path);
    if (fact === undefined) return undecidable(`the host facts do not say whether ${path} exists`);
    if (fact.kind === "absent") {
      if ((base.required as readonly string[]).includes(path)) return undecidable(`${path} does not exist on this host; programs cannot run without it`);
      continue;
    }
    if (fact.kind === "other") return undecidable(`${path} is neither a folder nor a symlink`);
    if (fact.kind === "symlink") {
      if (fact.target === undefined || fact.target.length === 0) return undecidable(`${path} is a symlink whose target is not known`);
      ops.push({ op: "symlink", target: fact.target, dest: path });
      continue;
    }
    const covering = input.reserved.find((object) => isAtOrUnder(object.path, path));
    if (covering) return reserved(`the system path ${path} is or lies under the reserved ${covering.path}`, "reserve teamd's own files, not a system folder");
    ops.push({ op: "ro-bind", src: path, dest: path });
  }
  return ops;
}

/** Where a root may be: not /, not over what the plan builds itself, not over a system path, complete scan. */
function placeRoots(roots: readonly SeatRoot[], input: PlanInput, base: LinuxBase): Refusal | undefined {
  const fix = "keep seat folders and read roots in ordinary folders (e.g. under TEAMD_HOME or the owner's projects)";
  for (const { role, root } of roots) {
    if (root.path === "/") return refuseContainment("containment.undecidable", `the ${role} is /, which would bind the whole host`, fix);
    for (const forbidden of base.forbiddenRoots) {
      if (isAtOrUnder(forbidden, root.path) || isAtOrUnder(root.path, forbidden)) {
        return refuseContainment("containment.undecidable", `the ${role} ${root.path} overlaps ${forbidden}, which the plan builds itself`, fix);
      }
    }
    for (const entry of input.host.system) {
      if (isAtOrUnder(root.path, entry.path)) {
        return refuseContainment("containment.undecidable", `the ${role} ${root.path} would cover the system path ${entry.path}`, fix);
      }
      if (entry.kind === "symlink" && isStrictlyUnder(entry.path, root.path)) {
        return undecidable(`the ${role} ${root.path} lies under the symlink ${entry.path}, so it is not canonical`);
      }
    }
    if (root.scan.root !== root.path) return undecidable(`the scan given for the ${role} ${root.path} is of ${root.scan.root}`);
    if (!root.scan.complete) {
      return refuseContainment(
        "reserved.link-set",
        `the ${role} ${root.path} could not be scanned completely (${root.scan.incomplete ?? "no reason given"}), so a socket or a hard link inside it cannot be ruled out`,
        "make the folder readable by teamd and smaller than the scan limit, or leave it out of the read scope",
      );
    }
  }
  const writable = roots.filter((r) => r.writable);
  for (let i = 0; i < writable.length; i++) {
    for (const other of writable.slice(i + 1)) {
      if ((writable[i] as SeatRoot).root.path === other.root.path) {
        return refuseContainment(
          "containment.undecidable",
          `the ${(writable[i] as SeatRoot).role} and the ${other.role} are the same folder ${other.root.path}`,
          fix,
        );
      }
    }
  }
  return undefined;
}

function checkRootAgainstReserved(
  role: string,
  writable: boolean,
  root: HostRoot,
  reservedObjects: readonly ReservedFact[],
  reservedIds: ReadonlyMap<string, string>,
): Refusal | undefined {
  for (const object of reservedObjects) {
    if (isAtOrUnder(object.path, root.path)) {
      return reserved(
        `the ${role} ${root.path} ${object.path === root.path ? "is" : "lies under"} the reserved ${object.path}`,
        "move the seat's folders out of reserved ones",
      );
    }
    if (writable && isStrictlyUnder(root.path, object.path)) {
      return reserved(`the writable ${role} ${root.path} contains the reserved ${object.path}`, "move the reserved object out of the seat's folders");
    }
  }
  const owner = reservedIds.get(objectKey(root.id));
  if (owner !== undefined)
    return reserved(`the ${role} ${root.path} is the same object as the reserved ${owner}`, "remove the bind mount or link that aliases it");
  if (writable) {
    const alias = root.scan.aliases[0];
    if (alias !== undefined) {
      return reserved(
        `${alias.path} in the writable ${role} is another name of the reserved ${alias.of}`,
        `remove ${alias.path} (a hard link or mount of a reserved object)`,
      );
    }
  }
  return undefined;
}

/** The node binary or the shim bundle: an ordinary host path, never reserved, never a system-built one. */
function checkPlainSource(what: string, path: string, reservedObjects: readonly ReservedFact[], base: LinuxBase): Refusal | undefined {
  for (const forbidden of base.forbiddenRoots) {
    if (isAtOrUnder(forbidden, path)) return undecidable(`the ${what} ${path} lies under ${forbidden}, which the plan builds itself`);
  }
  for (const object of reservedObjects) {
    if (isAtOrUnder(object.path, path) || isAtOrUnder(path, object.path)) {
      return reserved(`the ${what} ${path} overlaps the reserved ${object.path}`, `install the ${what} outside teamd's reserved folders`);
    }
  }
  return undefined;
}

function undecidable(reason: string): Refusal {
  return refuseContainment("containment.undecidable", reason, "give the plan canonical paths and complete host facts (src/sandbox/host-facts.ts gathers them)");
}

function reserved(reason: string, fix: string): Refusal {
  return refuseContainment("reserved.object", reason, fix);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as Record<string, unknown>)) deepFreeze(child);
  }
  return value;
}
