import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, chown, lchown, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, extname, join } from "node:path";
import { git } from "../../src/effects/git.js";
import { buildReservedSet } from "../../src/objects/reserved-set.js";
import { describeRoot, gatherHostFacts, reservedFacts } from "../../src/sandbox/host-facts.js";
import { compilePlan } from "../../src/sandbox/plan.js";
import { SEAT_PROFILE } from "../../src/sandbox/seat-profile.js";
import type { EgressInput, SandboxPlan } from "../../src/sandbox/plan-types.js";
import { RefusalError } from "../../src/rpc/errors.js";
import type { Refusal } from "../../src/kernel/index.js";
import type { TeamdHome } from "../host/home.js";
import { ledgerLayout } from "../host/ledger-host.js";
import { openFilteredMirror } from "../../src/effects/git-filter.js";
import { egressSocketPath } from "../host/seat-layout.js";
import { builtEgressBundle, builtShimBundle, gitWorkDir, seatLayout, seatsRoot, shimCopyDir, teamdCodeRoot, type SeatLayout } from "../host/seat-layout.js";
import { SHIM_GIT_REMOTE_SUFFIX, SHIM_LAZY_SUFFIX } from "../../src/sandbox/linux-base.js";
import type { StartableSeat } from "../../src/ledger/policy-in-force.js";
import type { SeatUser } from "./user.js";
import { seatDefaultEnv, seatGitIdentity } from "./seat-defaults.js";
import { removeSeatTree } from "./remove-tree.js";
import { startPins } from "./start-pins.js";

/**
 * Prepare (DESIGN.md "Seat lifecycle"): everything a seat needs before it launches — its
 * repository (a clone of the hub's trunk only, `--single-branch --no-hardlinks`, its one
 * branch renamed under seat/<name>/ and no remote), its persistent home, a fresh tmp, its
 * socket, the shim bundle's copy, and the plan compiled against the reserved set. Each step
 * registers its undo; a failure runs the undos in reverse and rethrows, so a seat that does
 * not start leaves nothing behind (what persisted before — repository, home — persists).
 */
export interface PreparedSeat {
  readonly layout: SeatLayout;
  readonly plan: SandboxPlan;
  /** Undo this preparation in reverse order (idempotent): a start that failed. */
  unwind(): Promise<void>;
  /** End of a run: close the socket, remove tmp; the repository and home persist. */
  release(): Promise<void>;
}

export interface PrepareDeps {
  readonly home: TeamdHome;
  readonly user: SeatUser;
  /** Open the seat's socket at this path (the daemon's openSeat), and its egress socket when `egress`; returns its host path. */
  openSocket(at: string, egress: boolean): Promise<string>;
  closeSocket(): Promise<void>;
  /** Test seam: fail at a named step, to prove the unwind. */
  readonly failAt?: string;
  /** The seat's last handoff checkpoint (its JSON), handed read-only to this run (issue 27). */
  readonly handoff?: string;
}

/** Seat env names passed through from the daemon's environment when set (nothing else is). */
const ENV_ALLOWLIST = ["LANG", "LC_ALL", "TZ"];
export const SHIM_COMMAND = "teamd-shim";

export async function prepareSeat(target: StartableSeat, deps: PrepareDeps): Promise<PreparedSeat> {
  const { home, user } = deps;
  const layout = seatLayout(home, target.team, target.seat);
  const undo: Array<() => Promise<void>> = [];
  let unwound = false;
  const unwind = async () => {
    if (unwound) return;
    unwound = true;
    for (const step of undo.reverse()) await step().catch(() => undefined);
  };
  const system = home.mode === "system";
  const own = async (path: string) => {
    if (system) await chown(path, user.uid, user.gid);
  };
  const step = (name: string) => {
    if (deps.failAt === name) throw new Error(`injected failure at ${name} (test)`);
  };
  try {
    // Folders: seats/<team> is teamd's (traverse-only for the seat user in system mode);
    // seats/<team>/<seat> and what is in it belong to the seat's user.
    await mkdir(seatsRoot(home), { recursive: true, mode: 0o700 });
    await mkdir(join(seatsRoot(home), target.team), { recursive: true, mode: 0o700 });
    for (const dir of [seatsRoot(home), join(seatsRoot(home), target.team)]) await chmod(dir, system ? 0o711 : 0o700);
    if (!existsSync(layout.dir)) {
      await mkdir(layout.dir, { mode: 0o700 });
      undo.push(() => rm(layout.dir, { recursive: true, force: true }));
    }
    await own(layout.dir);
    step("dirs");

    if (!existsSync(layout.repo)) {
      undo.push(() => rm(layout.repo, { recursive: true, force: true }));
      await cloneTrunk(target, layout.repo, home);
      await ownTree(layout.repo, user, system);
    }
    // A seat made before seats had uids of their own (or under another range): each of its
    // trees moves to its uid now, while it does not run, entry by entry without following a link.
    for (const tree of [layout.repo, layout.home]) if (system && existsSync(tree) && (await lstat(tree)).uid !== user.uid) await ownTree(tree, user, system);
    step("repo");
    if (!existsSync(layout.home)) {
      undo.push(() => rm(layout.home, { recursive: true, force: true }));
      await mkdir(layout.home, { mode: 0o700 });
    }
    await own(layout.home);
    // tmp is per run: fresh now, removed at stop.
    await removeSeatTree(layout.tmp);
    undo.push(() => removeSeatTree(layout.tmp));
    await mkdir(layout.tmp, { mode: 0o700 });
    await own(layout.tmp);
    step("home");

    if (system) {
      // Traverse-only for the seat user, who must reach the socket when bwrap binds it.
      await mkdir(dirname(layout.socket), { recursive: true, mode: 0o711 });
      await chmod(dirname(layout.socket), 0o711);
    }
    undo.push(() => deps.closeSocket());
    const socket = await deps.openSocket(layout.socket, target.start.network !== undefined);
    if (system) await chown(socket, user.uid, user.gid);
    // The egress byte stream (opened with the socket) is bound in only where egress is declared.
    const egress =
      target.start.network === undefined
        ? undefined
        : { socket: egressSocketPath(socket), launcher: await installBuilt(home, builtEgressBundle(), "teamd-egress") };
    if (egress !== undefined && system) await chown(egress.socket, user.uid, user.gid);
    step("socket");

    const shim = await installShim(home);
    const handoff = deps.handoff === undefined ? undefined : await installHandoff(home, target, user, deps.handoff);
    const plan = await planSeat(target, layout, socket, shim, user, home, egress, handoff);
    step("plan");
    const release = async () => {
      await deps.closeSocket();
      await removeSeatTree(layout.tmp);
    };
    return { layout, plan, unwind, release };
  } catch (error) {
    await unwind();
    throw error;
  }
}

/**
 * The hub's trunk only — or, for a seat whose read is bounded, the trunk's filtered image
 * from its mirror (src/effects/git-filter.ts). `--no-local` makes git copy only what the
 * trunk reaches (a local clone copies every object file, other seats' branches included);
 * the branch lands under seat/<name>/; the only remote is `teamd`, served by
 * git-remote-teamd over the seat's socket. Configured here, once, on a fresh repository:
 * teamd never edits a repository the seat has had in its hands.
 */
async function cloneTrunk(target: StartableSeat, repo: string, home: TeamdHome): Promise<void> {
  const head = await git(["symbolic-ref", "HEAD"], { gitDir: target.hub });
  const trunkRef = head.stdout.trim();
  const trunk = trunkRef.replace(/^refs\/heads\//, "");
  let from = target.hub;
  if (target.readFilter !== undefined) {
    from = gitWorkDir(home).filteredMirror(target.team, target.seat);
    const mirror = await openFilteredMirror(from, target.hub, target.readFilter);
    const tip = (await git(["rev-parse", "--verify", trunkRef], { gitDir: target.hub })).stdout.trim();
    await mirror.syncRef(trunkRef, tip);
  }
  await git(["clone", "--quiet", "--no-local", "--single-branch", "--branch", trunk, from, repo]);
  await git(["branch", "--quiet", "-m", trunk, `seat/${target.seat}/${trunk}`], { cwd: repo });
  await git(["remote", "remove", "origin"], { cwd: repo });
  await git(["config", "remote.teamd.url", "teamd::seat"], { cwd: repo });
  // Exactly what the hub serves a seat (src/kernel/seat-refs.ts mayFetch): its trunk and seat
  // branches. Not refs/heads/*: after `git push teamd feature` (which lands at seat/NAME/feature)
  // git would record refs/remotes/teamd/feature, a branch the hub does not have (issue 22).
  await git(["config", "remote.teamd.fetch", `+${trunkRef}:refs/remotes/teamd/${trunk}`], { cwd: repo });
  await git(["config", "--add", "remote.teamd.fetch", "+refs/heads/seat/*:refs/remotes/teamd/seat/*"], { cwd: repo });
  // The seat's default git identity (daemon/lifecycle/seat-defaults.ts): the seat may change it.
  const identity = seatGitIdentity(target.team, target.seat);
  await git(["config", "user.name", identity.name], { cwd: repo });
  await git(["config", "user.email", identity.email], { cwd: repo });
}

/**
 * Hand a fresh clone to the seat user (system mode). Its symlinks are data a seat wrote (a
 * link pushed and merged is a blob on the trunk), so the walk changes the owner of each entry
 * itself — `lchown`, never `chown`, which follows a link and would hand its target, any host
 * path, to the seat user (issue 20, test/escape/daemon-links.test.ts) — and descends only into
 * real folders (`lstat`). No seat runs yet on this clone: nothing can swap an entry mid-walk.
 */
async function ownTree(path: string, user: SeatUser, system: boolean): Promise<void> {
  if (!system) return;
  const stats = await lstat(path);
  await lchown(path, user.uid, user.gid);
  if (stats.isDirectory()) for (const entry of await readdir(path)) await ownTree(join(path, entry), user, system);
}

/**
 * Copy a built bundle to TEAMD_HOME/shim (root-owned, world-readable): the seat binds the
 * copy, so teamd's installed code stays reserved and unbound, and a seat user in system
 * mode can reach it wherever teamd is installed.
 */
async function installBuilt(home: TeamdHome, built: string, name: string): Promise<string> {
  // Its own extension (.cjs, .mjs): what Node reads it as where the seat runs it by its host path (containment none).
  return installSeatFile(home, name, extname(built), await readBuilt(built), 0o755);
}

/**
 * The shim: its front, its lazy part and the remote helper's front beside it
 * (scripts/build-shim.ts), named by one digest of the three, so a front is only ever installed
 * beside its own parts — which are written first: a front on disk always has its parts.
 */
async function installShim(home: TeamdHome): Promise<{ bundle: string; lazy: string; gitRemote: string }> {
  const built = builtShimBundle();
  const front = await readBuilt(built);
  const lazyPart = await readBuilt(`${built}${SHIM_LAZY_SUFFIX}`);
  const helperFront = await readBuilt(`${built}${SHIM_GIT_REMOTE_SUFFIX}`);
  const digest = contentDigest(front, lazyPart, helperFront);
  const lazy = await installSeatFile(home, "teamd-shim", `${extname(built)}${SHIM_LAZY_SUFFIX}`, lazyPart, 0o644, digest);
  const gitRemote = await installSeatFile(home, "teamd-shim", `${extname(built)}${SHIM_GIT_REMOTE_SUFFIX}`, helperFront, 0o755, digest);
  return { bundle: await installSeatFile(home, "teamd-shim", extname(built), front, 0o755, digest), lazy, gitRemote };
}

async function readBuilt(built: string): Promise<Buffer> {
  try {
    return await readFile(built);
  } catch {
    throw new RefusalError("containment.failed", `the shim bundle ${built} is not built; fix: run npm run build (scripts/build-shim.ts)`);
  }
}

function contentDigest(...parts: readonly Buffer[]): string {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest("hex").slice(0, 16);
}

/**
 * A file every seat binds (a bundle, the login profile), in TEAMD_HOME/shim by its content's
 * digest: written once, whole (a temporary name, then a rename), never changed in place while
 * a seat binds it.
 */
async function installSeatFile(home: TeamdHome, name: string, extension: string, bytes: Buffer, mode: number, digest = contentDigest(bytes)): Promise<string> {
  const dir = shimCopyDir(home);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await chmod(dir, 0o755);
  const copy = join(dir, `${name}-${digest}${extension}`);
  if (!existsSync(copy)) {
    // In a folder of its own: two seats starting at once install the same file, and a shared
    // temporary name let one truncate what the other had just renamed into place.
    const staging = await mkdtemp(join(dir, ".install-"));
    try {
      const temp = join(staging, basename(copy));
      await writeFile(temp, bytes, { mode });
      await chmod(temp, mode);
      await rename(temp, copy);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
  return copy;
}

/**
 * The seat's last handoff checkpoint as a file its run binds read-only (issue 27), in
 * TEAMD_HOME/handoffs/TEAM/SEAT (teamd's; traverse-only for seat users in system mode), named by
 * its content's digest and written whole (a temporary name, then a rename), readable by the
 * seat's user alone: root's with the seat's group in system mode, the daemon's 0600 in user
 * mode. The seat's older handoff files go: it is not running (its slot is reserved), so no run binds them.
 */
async function installHandoff(home: TeamdHome, target: StartableSeat, user: SeatUser, text: string): Promise<string> {
  const system = home.mode === "system";
  const dir = join(home.root, "handoffs", target.team, target.seat);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  for (const folder of [join(home.root, "handoffs"), dirname(dir), dir]) await chmod(folder, system ? 0o711 : 0o700);
  const bytes = Buffer.from(text);
  const name = `${createHash("sha256").update(bytes).digest("hex").slice(0, 16)}.json`;
  for (const old of await readdir(dir)) if (old !== name) await rm(join(dir, old), { force: true });
  const file = join(dir, name);
  if (!existsSync(file)) {
    const temp = `${file}.${process.pid}.tmp`;
    await writeFile(temp, bytes, { mode: 0o600 });
    if (system) {
      await chown(temp, 0, user.gid);
      await chmod(temp, 0o640);
    }
    await rename(temp, file);
  }
  return file;
}

/** The reserved set (§3), the roots, the host facts — then the pure compiler. */
async function planSeat(
  target: StartableSeat,
  layout: SeatLayout,
  socket: string,
  shim: { readonly bundle: string; readonly lazy: string; readonly gitRemote: string },
  user: SeatUser,
  home: TeamdHome,
  egress?: EgressInput,
  handoff?: string,
): Promise<SandboxPlan> {
  const ledger = ledgerLayout(home);
  const reservedPaths = [
    join(target.repository, "teamd.yaml"),
    join(target.repository, ".git"),
    target.hub,
    ledger.dir,
    ledger.keysDir,
    ledger.flagsDir,
    home.controlSocket,
    teamdCodeRoot(),
  ];
  const set = await buildReservedSet(reservedPaths);
  if (!set.ok) throw new RefusalError(set.rule, `${set.reason}; fix: make the reserved paths readable by teamd`);
  if (!set.set.complete)
    throw new RefusalError(
      "reserved.link-set",
      "a reserved folder could not be walked completely, so another name of a reserved file cannot be ruled out; fix: make it readable and smaller",
    );
  const root = async (path: string) => {
    const described = await describeRoot(path, set.set);
    if (!described.ok) throw fromRefusal(described.refusal);
    return described.value;
  };
  const seatProfile = await installSeatFile(home, "seat-profile", ".sh", Buffer.from(SEAT_PROFILE), 0o644);
  const pins = await startPins(
    target,
    layout.repo,
    (bytes, mode) => installSeatFile(home, `pin-${mode.toString(8)}`, "", bytes, mode),
    home.mode === "system" ? user : undefined,
  );
  const facts = await gatherHostFacts({
    node: process.execPath,
    shimBundle: shim.bundle,
    shimLazy: shim.lazy,
    shimGitRemote: shim.gitRemote,
    shimCommand: SHIM_COMMAND,
    seatProfile,
    seatSocket: socket,
  });
  if (!facts.ok) throw fromRefusal(facts.refusal);
  const result = compilePlan({
    seat: { team: target.team, seat: target.seat },
    user: { uid: user.uid, gid: user.gid, ...(user.inside !== undefined ? { inside: user.inside } : {}) },
    writable: { repository: await root(layout.repo), home: await root(layout.home), tmp: await root(layout.tmp) },
    readOnly: [],
    reserved: reservedFacts(set.set),
    host: facts.value,
    // A git identity and TERM by default (daemon/lifecycle/seat-defaults.ts), the team file's start.env over them.
    env: { allowlist: ENV_ALLOWLIST, source: { ...process.env }, declared: { ...seatDefaultEnv(target.team, target.seat), ...target.start.env } },
    // start.limits from the hashed context; absent: none asked for (the seat still gets its cgroup where the host allows).
    limits: target.start.limits ?? {},
    ...(egress !== undefined ? { egress } : {}),
    pins,
    ...(handoff !== undefined ? { handoff } : {}),
  });
  if (result.decision !== "plan") throw fromRefusal(result);
  if (target.start.workdir === "") return result.plan;
  return { ...result.plan, cwd: join(result.plan.cwd, target.start.workdir) };
}

export function fromRefusal(refusal: Refusal & { fix?: string }): RefusalError {
  return new RefusalError(refusal.rule, refusal.fix ? `${refusal.reason}; fix: ${refusal.fix}` : refusal.reason);
}
