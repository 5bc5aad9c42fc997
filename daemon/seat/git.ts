import { warmCgroupMoves } from "../../src/sandbox/cgroup-warm.js";
import { createHash } from "node:crypto";
import { TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PushHeader, PushRequest, PushResponseSchema, RefResultSchema, RefUpdate } from "../../src/gen/teamd/v1/shim_pb.js";
import { blindWriteRefusal, refuse, type Refusal } from "../../src/kernel/index.js";
import { noteRule } from "../../src/kernel/rules.js";
import { gitPathProblem, refConflict } from "../../src/kernel/git-names.js";
import type { EffectResult } from "../../src/ledger/index.js";
import { RefBusy, RefConflict, retryRefLock } from "../../src/effects/ref-lock.js";
import { destination, mayFetch } from "../../src/kernel/seat-refs.js";
import { symbolicHead, treeOfCommit } from "../../src/effects/git.js";
import {
  DEFAULT_PACK_BOUNDS,
  migrateAndUpdate,
  PackRejected,
  checkPushSelfContained,
  readRef,
  receivePack,
  RefMoved,
  pushedCommits,
  commitAncestry,
  servedCommit,
  type FilledPack,
  type Quarantine,
  type ReceiveStart,
} from "../../src/effects/git-receive.js";
import { listRefs, servePack, startReadyPack, type ReadyPack } from "../../src/effects/git-serve.js";
import { seatStorage, type SeatStorage } from "../../src/effects/git-storage.js";
import type { StoreUsage } from "../../src/effects/store-usage.js";
import { seatGitLimits, type ContainedGitLimits } from "../../src/effects/contained-git.js";
import type { PackBounds } from "../../src/effects/pack-scan.js";
import { openFilteredMirror, ReplayRefused, type BlindWrite, type FilteredMirror } from "../../src/effects/git-filter.js";
import { prepareQuarantineRoot, withReplayFolder } from "../../src/effects/push-replay.js";
import { RefusalError } from "../../src/rpc/errors.js";
import type { TeamdHome } from "../host/home.js";
import { gitWorkDir, seatLayout } from "../host/seat-layout.js";
import { openSeatPackFile } from "../../src/effects/seat-pack-file.js";
import { receiveShape, startReadyReceive, type ReadyReceive } from "../../src/effects/ready-receive.js";
import { PACK_FILE_NAME } from "../../src/effects/pack-file-name.js";
import { requestBytes, runFields, type SeatContext, type SeatPipeline, type SeatIdentity, type ServedRead } from "./pipeline.js";
import { boundText, RECORD_NAME_BYTES } from "../../src/ledger/bounded-text.js";
import { readFilter, readIsUnbounded } from "../../src/effects/read-filter.js";

/**
 * Seat git (DESIGN.md "Repositories"): what `git fetch teamd` and `git push teamd` do on
 * the daemon's side of the seat socket.
 *
 * - Fetch is a read (§3): the trunk, the seat's own seat/<name>/ branches, and another
 *   seat's branch when it holds review or gate over it — every object served filtered to
 *   its read scope (a bounded seat fetches from its filtered mirror, never the hub).
 * - Push is the seat's write (§3): the pack lands in a quarantine, is checked there in
 *   containment, and every path every new commit changes is decided by the kernel before
 *   one ref in the seat's own namespace moves (compare-and-swap). Intent and outcome are
 *   recorded around the move, with the seat as author of what it brought.
 */
/** How many tips a served-read record names one by one; the rest are in its count and digest. */
const SERVED_TIPS_NAMED = 8;

/** A served ref listing or fetch, as its record states it: the tips' count and digest, and the first few. */
function tipsServed(refs: readonly { name: string; oid: string }[]): Omit<ServedRead, "action"> {
  const lines = refs.map((r) => `${r.oid} ${r.name}\n`).sort();
  const digest = createHash("sha256").update(lines.join("")).digest("hex");
  return {
    subject: digest,
    target: { kind: TargetKind.REF, name: refs.length === 1 ? boundText(refs[0]?.name ?? "", RECORD_NAME_BYTES) : "" },
    fields: [
      { key: "tips", value: String(refs.length) },
      { key: "tips_sha256", value: digest },
      ...refs.slice(0, SERVED_TIPS_NAMED).map((r) => ({ key: "tip", value: `${r.oid} ${boundText(r.name, RECORD_NAME_BYTES)}` })),
    ],
  };
}

export const MAX_PACK_BYTES = 256 * 1024 * 1024;

/**
 * A refused push of a pack file takes one more of the seat's refusal budget for every this many
 * bytes the daemon copied of it (at most MAX_PACK_BYTES): a file of holes, or one file pushed again
 * and again, costs the seat nothing, while the daemon copies and scans it each time (found by an
 * attack, round twenty: stored deflate blocks over holes, 256 MiB copied a push for ~16 MiB of
 * the seat's disk, written once). A 256 MiB refusal takes 33 of the 300 at once.
 */
export const FILE_BYTES_A_REFUSAL = 8 * 1024 * 1024;
/** A push's changed paths checked in one turn of the daemon's thread (a few milliseconds). */
const PATHS_A_TURN = 8192;

/**
 * What the daemon's git work for one seat is held to (DESIGN.md "The daemon never works for a
 * seat unbounded"); each crossing is refused with its own rule, recorded, before the work.
 * - `concurrent`: fetches and pushes of the seat running at once (`git.concurrent`): each is a
 *   few contained processes that live as long as the seat leaves its stream unread;
 * - `refUpdates`: ref updates one push may name (`push.ref-updates`);
 * - `refs`, `bytes`, `objects`: the seat's storage quota in the hub (`push.quota`) — the refs
 *   of its namespace, and the objects only its branches reach (what it holds there now: a
 *   merged or deleted branch frees its share) plus the pack being pushed;
 * - `pack`: what one pack may declare, read before git sees it (pack-scan.ts).
 */
export interface SeatGitBounds {
  readonly concurrent: number;
  readonly refUpdates: number;
  readonly refs: number;
  readonly bytes: number;
  readonly objects: number;
  readonly pack: PackBounds;
}

export const SEAT_GIT_BOUNDS: SeatGitBounds = Object.freeze({
  concurrent: 4,
  refUpdates: 32,
  refs: 512,
  bytes: 2 * 1024 * 1024 * 1024,
  objects: 1_000_000,
  pack: DEFAULT_PACK_BOUNDS,
});

const BOUND_KEYS: Readonly<Record<string, (b: SeatGitBounds, n: number) => SeatGitBounds>> = Object.freeze({
  concurrent: (b, n) => ({ ...b, concurrent: n }),
  "ref-updates": (b, n) => ({ ...b, refUpdates: n }),
  refs: (b, n) => ({ ...b, refs: n }),
  bytes: (b, n) => ({ ...b, bytes: n }),
  objects: (b, n) => ({ ...b, objects: n }),
  "pack-objects": (b, n) => ({ ...b, pack: { ...b.pack, maxObjects: n } }),
  "object-bytes": (b, n) => ({ ...b, pack: { ...b.pack, maxObjectBytes: n } }),
  "pack-expand-bytes": (b, n) => ({ ...b, pack: { ...b.pack, maxTotalBytes: n } }),
});

/**
 * The owner's setting of the bounds (`teamd serve` reads TEAMD_SEAT_GIT_BOUNDS):
 * `key=N,key=N` over concurrent, ref-updates, refs, bytes, objects, pack-objects,
 * object-bytes, pack-expand-bytes; unnamed keys keep their defaults. Anything else throws
 * (the daemon does not start on a setting it cannot read).
 */
export function parseSeatGitBounds(text: string | undefined): SeatGitBounds {
  let bounds = SEAT_GIT_BOUNDS;
  if (text === undefined || text.trim() === "") return bounds;
  for (const item of text.split(",")) {
    const match = /^\s*([a-z-]+)=(\d+)\s*$/.exec(item);
    const set = match === null ? undefined : Object.prototype.hasOwnProperty.call(BOUND_KEYS, match[1] as string) ? BOUND_KEYS[match[1] as string] : undefined;
    const n = match === null ? NaN : Number(match[2]);
    if (match === null || set === undefined || !Number.isSafeInteger(n) || n < 1) {
      throw new Error(`TEAMD_SEAT_GIT_BOUNDS: '${item}' is not KEY=N (N at least 1) with KEY one of ${Object.keys(BOUND_KEYS).join(", ")}`);
    }
    bounds = set(bounds, n);
  }
  return Object.freeze(bounds);
}

type RefResultInit = MessageInitShape<typeof RefResultSchema>;

export interface SeatGit {
  listRefs(identity: SeatIdentity, forPush: boolean): Promise<{ refs: { name: string; oid: string }[]; head: string }>;
  fetch(identity: SeatIdentity, wants: readonly string[], haves: readonly string[]): AsyncIterable<Uint8Array>;
  /** `signal`: the call's, aborted when the seat hangs up: a pack file's copy and scan stop then. */
  push(identity: SeatIdentity, parts: AsyncIterable<PushRequest>, signal?: AbortSignal): Promise<MessageInitShape<typeof PushResponseSchema>>;
  /** Settles once no push's quarantine is still being removed after its reply (the daemon's stop waits for it). */
  idle(): Promise<void>;
}

export interface SeatGitDeps {
  readonly home: TeamdHome;
  readonly pipeline: SeatPipeline;
  /** The live run and home of each running seat: a push records the pusher's (authorship facts, O). */
  runs(team: string): Readonly<Record<string, { readonly run: string; readonly home: string }>>;
  /** A fresh unique id (the composition root's): names a bounded push's replay folder. */
  readonly newId: () => string;
  /** Default SEAT_GIT_BOUNDS. */
  readonly bounds?: SeatGitBounds;
  /** The `cgroup.procs` files of the seat's own cgroups while it runs with them: contained git run for it joins them. */
  seatCgroups?(identity: SeatIdentity): Promise<readonly string[] | undefined>;
  /** The daemon's log: what failed after a reply had gone (a quarantine not removed). */
  readonly log?: (line: string) => void;
}

/** Where a seat reads from: the hub itself, or its filtered mirror. */
interface Source {
  readonly repo: string;
  readonly mirror: FilteredMirror | undefined;
}

/**
 * How long a pack-objects started at a seat's listing waits for the fetch that follows (git asks
 * within milliseconds): past it, it is killed. Held short, as it runs in the seat's cgroups.
 */
const READY_PACK_IDLE_MS = 2_000;

/**
 * How long a receive started at a seat's listing for a push waits for the push (git asks within
 * milliseconds, before its pack is made): past it, it is stopped. Its sandboxes run in the
 * seat's cgroups, and a seat has at most one.
 */
const READY_RECEIVE_IDLE_MS = 2_000;

export function createSeatGit(deps: SeatGitDeps): SeatGit {
  const work = gitWorkDir(deps.home);
  const bounds = deps.bounds ?? SEAT_GIT_BOUNDS;
  /** Quarantines being removed after their push's reply. */
  const cleanups = new Set<Promise<void>>();
  /** Fetches and pushes running now, by seat. */
  const running = new Map<string, number>();
  /** The pack-objects started at each seat's last listing for a fetch (startReadyPack): at most one a seat. */
  const readyPacks = new Map<string, Promise<ReadyPack | undefined>>();
  /** The receive started at each seat's last listing for a push (startReadyReceive): at most one a seat. */
  const readyReceives = new Map<string, Promise<ReadyReceive | undefined>>();
  /** Seats whose last such receive no push took: none is started for them until a push takes a pack in. */
  const unusedReceive = new Set<string>();

  /**
   * After a listing for a fetch: the fetch's contained pack-objects starts now, while git
   * decides what to ask for (issue 26). Only for a seat that reads the hub itself (a bounded
   * seat's mirror is made again as its filter changes). A seat listing again keeps the one it
   * has, and gets none while the last one's process has not ended; one that cannot start is no
   * matter (the fetch starts its own, and says why if that fails too).
   */
  function prepareFetch(ctx: SeatContext, src: Source): void {
    if (src.mirror !== undefined) return;
    const key = seatKey(ctx);
    const before = readyPacks.get(key);
    const next = (async () => {
      const kept = await before;
      if (kept?.state === "ready") return kept;
      // The last one's stop still under way (a stop can wait on bubblewrap): none beside it.
      if (kept !== undefined && !kept.exited) return kept;
      return startReadyPack(src.repo, { ...(await limitsFor(ctx)), idleMs: READY_PACK_IDLE_MS });
    })().catch(() => undefined);
    readyPacks.set(key, next);
    void next.then((ready) => {
      if (ready === undefined && readyPacks.get(key) === next) readyPacks.delete(key);
    });
  }

  /**
   * After a listing for a push: the push's quarantine, index-pack and read sandbox start now,
   * while the seat's git makes the pack (issue 26), under the seat's limits as the push's own
   * would. As with a fetch's ready pack: a seat listing again keeps the one it has and gets none
   * beside one still being stopped, and one that cannot start is no matter (the push starts its
   * own, and says why if that fails too). A seat whose last one no push took (it listed and did
   * not push, or pushed no pack) gets none until a push of its takes a pack in: a listing and a
   * push of nothing, in a loop, had the daemon start and stop two sandboxes a turn for the seat
   * (found by an attack on this change: 25-28 ms a turn against 4).
   */
  function preparePush(ctx: SeatContext, src: Source): void {
    const key = seatKey(ctx);
    if (unusedReceive.has(key)) return;
    const before = readyReceives.get(key);
    const next = (async () => {
      const kept = await before;
      if (kept !== undefined && kept.state !== "taken") {
        if (kept.state === "ready") return kept;
        // Stopped untaken at its idle time.
        unusedReceive.add(key);
        await kept.ended;
        return undefined;
      }
      const [, limits] = await Promise.all([prepareQuarantineRoot(work.quarantine), limitsFor(ctx)]);
      return startReadyReceive(src.repo, { ...receiveStart(limits), idleMs: READY_RECEIVE_IDLE_MS });
    })().catch(() => undefined);
    readyReceives.set(key, next);
    void next.then((ready) => {
      if (ready === undefined && readyReceives.get(key) === next) readyReceives.delete(key);
    });
  }

  /** The seat's holding in the hub, for its storage quota (git-storage.ts); `enough`: an upper bound that settles the question. */
  function holdingOf(ctx: SeatContext, limits: { limits: ContainedGitLimits }, enough?: (atMost: StoreUsage) => boolean): Promise<SeatStorage> {
    return seatStorage(ctx.team.hub, `refs/heads/seat/${ctx.identity.seat}/`, { ...limits, ...(enough !== undefined ? { enough } : {}) });
  }

  /**
   * The holding a push of a pack of at most `packAtMost` bytes is admitted on: where the whole
   * hub is small enough that even all of it would be under the quota with such a pack (and the
   * most objects a pack may carry), the walks are not run (store-usage.ts).
   */
  function admission(ctx: SeatContext, limits: { limits: ContainedGitLimits }, packAtMost: number): Promise<SeatStorage> {
    return holdingOf(ctx, limits, (atMost) => atMost.bytes + packAtMost <= bounds.bytes && atMost.objects + bounds.pack.maxObjects <= bounds.objects);
  }

  /** A push's receive, started as receivePack would start it: the most any pack may carry, as a streamed one or a pack file may. */
  function receiveStart(limits: { limits: ContainedGitLimits }): ReceiveStart {
    return { quarantineRoot: work.quarantine, maxBytes: MAX_PACK_BYTES, ...limits };
  }

  /** The seat's ready receive, taken (no other push gets it). */
  async function takeReadyReceive(ctx: SeatContext): Promise<ReadyReceive | undefined> {
    const key = seatKey(ctx);
    const entry = readyReceives.get(key);
    readyReceives.delete(key);
    return entry;
  }

  /** The seat's ready pack, taken (no other fetch gets it). */
  async function takeReadyPack(ctx: SeatContext): Promise<ReadyPack | undefined> {
    const key = seatKey(ctx);
    const entry = readyPacks.get(key);
    readyPacks.delete(key);
    return entry;
  }

  /** A seat's key in this module's maps. */
  function seatKey(ctx: SeatContext): string {
    return `${ctx.identity.team}\0${ctx.identity.seat}`;
  }

  /** Take one of the seat's concurrent git slots, or a recorded refusal thrown; the release is idempotent. */
  async function slot(ctx: SeatContext, action: string): Promise<() => void> {
    const key = seatKey(ctx);
    const now = running.get(key) ?? 0;
    if (now >= bounds.concurrent) {
      throw await deps.pipeline.refuse(
        ctx,
        refuse("git.concurrent", `${now} fetches and pushes of yours are running (at most ${bounds.concurrent}); finish or close one first`),
        action,
      );
    }
    running.set(key, now + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (running.get(key) ?? 1) - 1;
      if (left <= 0) running.delete(key);
      else running.set(key, left);
    };
  }

  /**
   * Contained git for the seat runs in the seat's own cgroups (its memory and pids count
   * against the seat), and under a memory rlimit wherever no cgroup holds its memory
   * (seatGitLimits: the seat's own limit, or the daemon's bound for a seat without one).
   * Not its process limit as RLIMIT_NPROC: that counts every process of the daemon's uid (and
   * root ignores it), so the process bound is `concurrent` runs of a few processes each.
   */
  async function limitsFor(ctx: SeatContext): Promise<{ limits: ContainedGitLimits }> {
    const cgroupProcs = (await deps.seatCgroups?.(ctx.identity)) ?? [];
    const limits = ctx.seat.start?.limits;
    return { limits: seatGitLimits(cgroupProcs, limits === undefined || limits === "none" ? undefined : limits.memoryBytes) };
  }

  function trunkOf(hub: string): Promise<string> {
    return symbolicHead(hub);
  }

  async function source(ctx: SeatContext): Promise<Source> {
    if (readIsUnbounded(ctx.policy.policy, ctx.seat)) return { repo: ctx.team.hub, mirror: undefined };
    const dir = work.filteredMirror(ctx.identity.team, ctx.identity.seat);
    const mirror = await openFilteredMirror(dir, ctx.team.hub, readFilter(ctx.policy.policy, ctx.seat, deps.pipeline.clock()));
    return { repo: dir, mirror };
  }

  /** The refs the seat may read, as it sees them (filtered images for a bounded seat). */
  async function visibleRefs(ctx: SeatContext, src: Source): Promise<{ refs: { name: string; oid: string }[]; head: string }> {
    // Both questions at once: two git processes in line were ~5 ms of every listing and fetch (issue 26).
    const [trunk, all] = await Promise.all([trunkOf(ctx.team.hub), listRefs(ctx.team.hub, ["refs/heads/"])]);
    const hubRefs = all.filter((r) => mayFetch(ctx.policy.policy, ctx.seat, r.name, trunk));
    if (src.mirror === undefined) return { refs: hubRefs, head: trunk };
    const refs: { name: string; oid: string }[] = [];
    for (const r of hubRefs) {
      const oid = await src.mirror.syncRef(r.name, r.oid);
      if (oid !== undefined) refs.push({ name: r.name, oid });
    }
    return { refs, head: trunk };
  }

  return {
    async idle() {
      await Promise.all([...cleanups]);
    },

    async listRefs(identity, forPush) {
      const ctx = await deps.pipeline.context(identity, "git.list");
      const src = await source(ctx);
      // A push's receive first: its two sandboxes are spawned from this thread (a few ms each),
      // here, while the listing's record is made durable off it — not after the answer, where
      // the spawns held up the push's header and pack (issue 26: the helper's front has the
      // pack made by the time the listing is answered; push 149.5 -> 138.8 ms, 15 pushes each).
      if (forPush) preparePush(ctx, src);
      const shown = await visibleRefs(ctx, src);
      // What it was shown (§3): the refs and their tips, as a count and a digest, the first few by name.
      await deps.pipeline.served(ctx, { action: "git.list", ...tipsServed(shown.refs) });
      if (!forPush) prepareFetch(ctx, src);
      return shown;
    },

    async *fetch(identity, wants, haves) {
      const ctx = await deps.pipeline.context(identity, "git.fetch");
      // Held until the stream ends or the seat goes away (the RPC edge returns this generator),
      // and its end is on record.
      const ready = await takeReadyPack(ctx);
      let release: () => void;
      try {
        release = await slot(ctx, "git.fetch");
      } catch (error) {
        ready?.discard();
        throw error;
      }
      let ending: Promise<void> | undefined;
      try {
        const src = await source(ctx);
        const { refs } = await visibleRefs(ctx, src);
        const tips = new Set(refs.map((r) => r.oid));
        for (const want of wants) {
          if (!tips.has(want)) {
            throw await deps.pipeline.refuse(
              ctx,
              refuse("fetch.ref", `${want} is not the tip of a ref you may fetch (it moved, or it is not yours to read); run git fetch teamd again`),
              "git.fetch",
            );
          }
        }
        // On record before the pack leaves (§3): the tips it serves; the pack's bytes once it has
        // left, also of a pack cut short — a stream held open is already on record by its tips.
        const shown = tipsServed(refs.filter((r) => wants.includes(r.oid)));
        // The pack's contained git starts while that record is made durable (issue 26); its first
        // bytes wait for it, and a record that cannot be made stops it.
        const stopPack = new AbortController();
        const pack = servePack(src.repo, wants, haves, {
          ...(await limitsFor(ctx)),
          tips,
          signal: stopPack.signal,
          ...(ready !== undefined && src.mirror === undefined ? { ready } : {}),
        })[Symbol.asyncIterator]();
        const head = pack.next();
        head.catch(() => undefined);
        let first: Awaited<ReturnType<typeof deps.pipeline.served>>;
        try {
          first = await deps.pipeline.served(ctx, { action: "git.fetch", ...shown });
        } catch (error) {
          // Refused (the served rate, the act budget) or unrecorded: git stops now, not once the
          // pack's first bytes are made (a whole pack's work for a refusal, found by review).
          stopPack.abort();
          await head.catch(() => undefined);
          await pack.return?.(undefined);
          throw error;
        }
        let bytes = 0;
        try {
          for (let next = await head; next.done !== true; next = await pack.next()) {
            bytes += next.value.byteLength;
            yield next.value;
          }
        } finally {
          await pack.return?.(undefined);
          // The pack's bytes once it has left, made durable after the stream's end: what it
          // serves was on record before its first byte (above), and git waited for this record
          // (~10-18 ms of every fetch, issue 26). The seat's slot is held until it is written;
          // servedEnd never throws (a record it cannot make is in the daemon's log).
          if (bytes > 0)
            ending = deps.pipeline.servedEnd(ctx, { action: "git.fetch", target: shown.target }, first, [{ key: "pack_bytes", value: String(bytes) }]);
        }
      } finally {
        // Not fed (refused before the pack, or another run was needed): killed now.
        ready?.discard();
        if (ending === undefined) release();
        else void ending.then(release, release);
      }
    },

    async push(identity, parts, signal) {
      const iterator = parts[Symbol.asyncIterator]();
      const first = await iterator.next();
      // The context first: a malformed push is a refused attempt, on record like any other (§15).
      const ctx = await deps.pipeline.context(identity, "git.push");
      if (first.done || first.value.part.case !== "header") {
        throw await deps.pipeline.refuse(ctx, refuse("rpc.malformed", "a push starts with its header (request id and ref updates)"), "git.push");
      }
      const header = first.value.part.value;
      // A push of nothing is no push git makes: answered OK, it cost the seat nothing while the
      // daemon asked its holding each time (found by an attack on issue 26's twenty-fourth round:
      // ~15 a second from one seat, in a loop, none recorded).
      if (header.updates.length === 0) {
        throw await deps.pipeline.refuse(ctx, refuse("rpc.malformed", "a push names at least one ref update"), "git.push");
      }
      if (header.updates.length > bounds.refUpdates) {
        throw await deps.pipeline.refuse(
          ctx,
          refuse(
            "push.ref-updates",
            `the push names ${header.updates.length} ref updates; one push may make at most ${bounds.refUpdates} (push in smaller steps)`,
          ),
          "git.push",
        );
      }
      const release = await slot(ctx, "git.push");
      // A push that answered before its quarantine was removed holds the seat's slot until it is.
      let cleanup: Promise<void> | undefined;
      try {
        return await pushWith(ctx, header, iterator, (removing) => (cleanup = removing), signal);
      } finally {
        if (cleanup === undefined) release();
        else {
          const removing = cleanup;
          cleanups.add(removing);
          void removing.then(() => {
            cleanups.delete(removing);
            release();
          });
        }
      }
    },
  };

  async function pushWith(
    ctx: SeatContext,
    header: PushHeader,
    iterator: AsyncIterator<PushRequest>,
    afterReply: (cleanup: Promise<void>) => void,
    signal: AbortSignal | undefined,
  ): Promise<MessageInitShape<typeof PushResponseSchema>> {
    // The receive started at the seat's listing is this push's to take; one it did not take
    // (a push refused before its pack, or with none) is stopped before the push answers.
    const ready = takeReadyReceive(ctx);
    try {
      // A streamed pack (the helper sends it as its pack-objects writes it) declares no size:
      // it is held to the quota and to MAX_PACK_BYTES as it arrives (receivePack's room). So is
      // a pack the seat's git wrote to a file in the seat's tmp (seat-pack-file.ts), read as it
      // would have arrived.
      const fromFile = header.packFile !== "";
      const streamed = header.packStreamed || fromFile;
      // The most this push's pack may be: its declared size, or for a streamed pack all it may carry.
      const packAtMost = streamed ? Math.min(MAX_PACK_BYTES, bounds.bytes) : Number(header.packBytes);
      // What the push needs that depends on nothing it sent, asked at once rather than one after
      // another (issue 26: the hub's HEAD, the seat's cgroups, then its holding, ~7 ms in line on a
      // busy host): its holding only for a header none of the checks below refuses, so a push
      // refused for its header still costs the daemon no walk.
      const limitsNow = limitsFor(ctx);
      limitsNow.catch(() => undefined);
      const headerRefused =
        (streamed && header.packBytes !== 0n) ||
        (fromFile && (header.packStreamed || !PACK_FILE_NAME.test(header.packFile))) ||
        header.packBytes > BigInt(MAX_PACK_BYTES) ||
        Number(header.packBytes) > bounds.bytes;
      const holding = headerRefused ? undefined : limitsNow.then((limits) => admission(ctx, limits, packAtMost));
      holding?.catch(() => undefined);
      const [src, trunk] = await Promise.all([source(ctx), trunkOf(ctx.team.hub)]);
      const results: RefResultInit[] = [];
      const accepted: { update: RefUpdate; hubRef: string }[] = [];
      for (const update of header.updates) {
        const dest = destination(ctx.identity.seat, update.ref, trunk);
        if ("decision" in dest) {
          await deps.pipeline.refuse(ctx, dest, "git.push", { kind: TargetKind.REF, name: update.ref });
          results.push({ ref: update.ref, ok: false, rule: dest.rule, reason: dest.reason });
        } else accepted.push({ update, hubRef: dest.hubRef });
      }
      if (streamed && header.packBytes !== 0n) {
        throw await deps.pipeline.refuse(ctx, refuse("rpc.malformed", "a streamed pack declares no size (pack_bytes 0)"), "git.push");
      }
      if (fromFile && (header.packStreamed || !PACK_FILE_NAME.test(header.packFile))) {
        throw await deps.pipeline.refuse(
          ctx,
          refuse("rpc.malformed", "a pack file is named .teamd-pack-UUID.pack and is not also streamed (pack_streamed false)"),
          "git.push",
        );
      }
      if (header.packBytes > BigInt(MAX_PACK_BYTES)) {
        throw await deps.pipeline.refuse(
          ctx,
          refuse("push.pack", `the pack is ${header.packBytes} bytes; a push may carry at most ${MAX_PACK_BYTES / 1024 / 1024} MiB (push in smaller steps)`),
          "git.push",
        );
      }
      // The seat's storage quota: what only its branches hold now, and this pack. Its walks
      // (two contained runs, ~60-80 ms here) run while the pack arrives (issue 26): the pack is
      // written to the quarantine — no more than it declared, which is held to the quota alone
      // first, or a streamed pack no more than the quota alone until the seat's room is known,
      // then no more than the room — and nothing of it is read until the quota admits it; a
      // refusal stops the write.
      const limits = await limitsNow;
      const quota = (what: string) =>
        deps.pipeline.refuse(
          ctx,
          refuse(
            "push.quota",
            `${what}; delete branches you no longer need (git push teamd --delete seat/${ctx.identity.seat}/BRANCH: git knows them by the hub's names)`,
          ),
          "git.push",
        );
      if (Number(header.packBytes) > bounds.bytes) throw await quota(`this pack is ${header.packBytes} bytes; a seat may hold at most ${bounds.bytes}`);
      const admitted = (holding ?? admission(ctx, limits, packAtMost)).then(async (storage) => {
        // Only what adds to the seat's holding is refused: a seat over its quota (pushes that
        // raced each other) can still delete its branches to come back under it (found by an
        // attack, round eleven: the delete the refusal told it to make was refused).
        const creates = accepted.filter((a) => a.update.newOid !== "" && !storage.refNames.has(a.hubRef)).length;
        if (creates > 0 && storage.refs + creates > bounds.refs)
          throw await quota(`your branches would number ${storage.refs + creates}; a seat may hold at most ${bounds.refs}`);
        if (header.packBytes > 0n && storage.bytes + Number(header.packBytes) > bounds.bytes)
          throw await quota(
            `your branches hold ${storage.bytes} bytes in the hub and this pack is ${header.packBytes}; a seat may hold at most ${bounds.bytes}`,
          );
        return storage;
      });
      admitted.catch(() => undefined);
      const digest = createHash("sha256");
      // A part that is not data is answered once the quota is (below): a push refused by the
      // quota is refused for that, as when the quota was decided before the pack was read.
      let malformed = false;
      let firstSeen = false;
      const warm = (limits.limits.cgroupProcs?.length ?? 0) > 0;
      const firstData = () => {
        if (firstSeen) return;
        firstSeen = true;
        // The kernel's wait before the push's contained runs may join the seat's cgroups,
        // begun as the pack starts to arrive (cgroup-warm.ts): the first of them, index-pack,
        // is on the push's path. Not sooner: a streamed pack's header comes while the seat's
        // git still compresses, and the lock is cold again ~20 ms after a warm write. Not at all
        // where the receive started at the listing is there: its runs joined the cgroups then,
        // and a warm write holds every fork on the machine while the kernel waits.
        if (warm) void ready.then((started) => (started === undefined || started.state === "gone" ? warmCgroupMoves() : undefined));
      };
      /** What a refusal of this push takes of the seat's refusal budget: with a pack file, one more for every 8 MiB the daemon copied of it. */
      const refusalWeight = async () => 1 + Math.floor(((await file?.catch(() => undefined))?.copiedBytes ?? 0) / FILE_BYTES_A_REFUSAL);
      /** A pack file's size, once the seat says it is whole: one PackWritten, then the end of the call. */
      async function packWritten(): Promise<bigint> {
        const written = await iterator.next();
        if (written.done || written.value.part.case !== "written" || !(await iterator.next()).done) {
          malformed = true;
          throw new Error("malformed push");
        }
        return written.value.part.value.bytes;
      }
      /** The seat's pack file, opened once it is whole (seat-pack-file.ts): copied as the scan reads it. */
      const packFile = async (): Promise<FilledPack> => {
        const bytes = await packWritten();
        firstData();
        return openSeatPackFile(seatLayout(deps.home, ctx.identity.team, ctx.identity.seat).tmp, header.packFile, bytes, digest, signal);
      };
      /** The pack's bytes as they come over the socket (none for a pack file: its part is taken, the file not read). */
      async function* pack(): AsyncIterable<Uint8Array> {
        if (fromFile) {
          await packWritten();
          return;
        }
        for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
          if (next.value.part.case !== "data") {
            malformed = true;
            throw new Error("malformed push");
          }
          firstData();
          digest.update(next.value.part.value);
          yield next.value.part.value;
        }
      }
      const unreadable = async (error: unknown): Promise<never> => {
        await admitted;
        if (malformed) {
          const carries = fromFile ? "one header, then one PackWritten" : "one header, then pack data only";
          throw await deps.pipeline.refuse(ctx, refuse("rpc.malformed", `a push carries ${carries}`), "git.push");
        }
        if (!(error instanceof PackRejected)) throw error;
        const reason = error.reason.endsWith("; nothing reached the hub") ? error.reason : `${error.reason}; nothing reached the hub`;
        throw await deps.pipeline.refuse(ctx, refuse(error.rule, reason), "git.push", undefined, await refusalWeight());
      };
      let quarantine: Quarantine | undefined;
      /** The seat's pack file, when the push has one: closed whatever became of the receive. */
      let file: Promise<FilledPack> | undefined;
      let landed = false;
      try {
        if ((header.packBytes > 0n || streamed) && accepted.some((a) => a.update.newOid !== "")) {
          await prepareQuarantineRoot(work.quarantine);
          try {
            // At most the size the header declared (and the quota counted): a pack longer than it is refused.
            file = fromFile ? packFile() : undefined;
            file?.catch(() => undefined);
            const maxBytes = streamed ? MAX_PACK_BYTES : Number(header.packBytes);
            // The receive started at the seat's listing for this push, if it is the one this would start.
            const started = (await ready)?.take(receiveShape(src.repo, { ...receiveStart(limits), maxBytes }));
            unusedReceive.delete(seatKey(ctx));
            quarantine = await receivePack(
              src.repo,
              file !== undefined ? { file } : pack(),
              {
                quarantineRoot: work.quarantine,
                maxBytes,
                // A streamed pack: stopped at the chunk that takes the seat past its quota.
                ...(streamed
                  ? {
                      room: {
                        atMost: bounds.bytes,
                        bytes: admitted.then((storage) => Math.max(0, bounds.bytes - storage.bytes)),
                        over: async (size: number): Promise<never> => {
                          const storage = await admitted;
                          throw await quota(
                            `your branches hold ${storage.bytes} bytes in the hub and this pack is at least ${size}; a seat may hold at most ${bounds.bytes}`,
                          );
                        },
                      },
                    }
                  : {}),
                // A bounded seat's pack has the same bounds as any: its replay copies the blobs with
                // contained git, never through the daemon's memory (git-filter.ts; it was read
                // whole there, so such a pack was held to 128 MiB expanded).
                bounds: bounds.pack,
                admitted,
                // The objects the pack's header declares, against the quota, before any of it is
                // read further: a push past the objects quota is refused for that, whatever its
                // objects are (found by an attack, round eleven: a corrupt one was push.pack).
                admitObjects: async (objects) => {
                  let storage = await admitted;
                  // Refused only on the exact figures (the bound above makes this walk all but unreachable).
                  if (storage.objects + objects > bounds.objects && !storage.exact) storage = await holdingOf(ctx, limits);
                  if (storage.objects + objects > bounds.objects)
                    throw await quota(
                      `your branches hold ${storage.objects} objects in the hub and this pack carries ${objects}; a seat may hold at most ${bounds.objects}`,
                    );
                },
                ...limits,
              },
              started,
            );
          } catch (error) {
            await unreadable(error);
          }
        } else {
          await admitted;
          // Drain what was sent so the call completes; a push with nothing to receive ignores
          // it — but no more of it than was declared (found by an attack, round eleven: a push
          // declaring 0 bytes streamed 2 GB, every byte read and hashed).
          try {
            let drained = 0;
            for await (const chunk of pack()) {
              drained += chunk.byteLength;
              if (drained > packAtMost)
                throw new PackRejected(`the push sent more than the ${packAtMost} bytes ${streamed ? "a push may carry" : "it declared"}`);
            }
          } catch (error) {
            await unreadable(error);
          }
        }
        const packDigest = digest.digest("hex");
        // What the seat was (or could have been) served: any object beyond these must travel
        // in its pack — naming an unread blob by id never lands it on a branch (git-receive.ts).
        const readable = (await visibleRefs(ctx, src)).refs.map((r) => r.oid);
        // Several moves: an object named but not sent refuses the whole push, before any ref
        // lands, as when the hub lacks it (checkPushSelfContained). One move needs no walk more.
        const moves = accepted.map((a) => a.update.newOid).filter((oid) => oid !== "");
        if (quarantine !== undefined && moves.length > 1) {
          await checkPushSelfContained(src.repo, quarantine, moves, readable, await limitsFor(ctx)).catch(unreadable);
        }
        // The refs one by one over the one quarantine, which each ref's move leaves whole
        // (migrateAndUpdate): a later ref built on an earlier one is checked against what the
        // pack carried, as the first was, not against what the first ref's move left behind.
        for (const { update, hubRef } of accepted) {
          const result = await pushOne(ctx, src, header.requestId, packDigest, update, hubRef, quarantine, readable);
          results.push(result);
          // What this push landed the seat may read from now on: a later ref built on it lists
          // as new only its own commits (the new commits are those the readable tips do not
          // reach: git-receive.ts; they were those no ref of the hub reached).
          if (result.ok && update.newOid !== "") readable.push(update.newOid);
        }
        landed = results.every((r) => r.ok === true);
      } finally {
        // A receive that failed before it took the file in leaves it open: closed here, once (it may still be opening).
        void file?.then(
          (opened) => opened.close(),
          () => undefined,
        );
        if (landed && quarantine !== undefined) {
          // Every ref landed and is on record: the reply goes now, and the quarantine (its read
          // sandbox, the pack) is removed after it (issue 26: ~2 ms of every push), the seat's
          // git slot held until it is. A push with a refusal still waits: it leaves nothing behind.
          const q = quarantine;
          afterReply(
            q
              .dispose()
              .catch((error: unknown) =>
                deps.log?.(
                  `a push quarantine of ${ctx.identity.team}/${ctx.identity.seat} was not removed: ${error instanceof Error ? error.message : String(error)}`,
                ),
              ),
          );
        } else await quarantine?.dispose();
      }
      const ordered = header.updates.map(
        (u) => results.find((r) => r.ref === u.ref) ?? { ref: u.ref, ok: false, rule: "rpc.malformed", reason: "not processed" },
      );
      return { results: ordered };
    } finally {
      const untaken = await ready;
      if (untaken !== undefined && untaken.state !== "taken") {
        unusedReceive.add(seatKey(ctx));
        untaken.discard();
        await untaken.ended;
      }
    }
  }

  async function pushOne(
    ctx: SeatContext,
    src: Source,
    requestId: string,
    packDigest: string,
    update: RefUpdate,
    hubRef: string,
    q: Quarantine | undefined,
    readable: readonly string[],
  ): Promise<RefResultInit> {
    const target = { kind: TargetKind.REF, name: hubRef } as const;
    const fail = async (refusal: Refusal): Promise<RefResultInit> => {
      await deps.pipeline.refuse(ctx, refusal, "git.push", target);
      return { ref: update.ref, hubRef, ok: false, rule: refusal.rule, reason: refusal.reason };
    };
    // What the seat's side of the ref is now: in a bounded seat's terms, the filtered image.
    const currentHub = await readRef(ctx.team.hub, hubRef);
    // The hub's tree at the ref (for the record), read while the checks below run: it reads
    // only what the hub holds, nothing the seat sent (issue 26: ~11 ms in line).
    const treeHash = treeOfCommit(ctx.team.hub, currentHub);
    treeHash.catch(() => undefined);
    const currentSeen = src.mirror === undefined || currentHub === undefined ? currentHub : await src.mirror.syncRef(hubRef, currentHub);
    if (!update.force && (update.oldOid || undefined) !== currentSeen) {
      return fail(
        refuse(
          "push.stale",
          `${hubRef} is at ${currentSeen ?? "nothing"}, not ${update.oldOid || "nothing"} as you believed; git fetch teamd, then push again (or --force: allowed in your own namespace)`,
        ),
      );
    }
    const request = requestBytes([hubRef, update.oldOid, update.newOid, update.force ? "force" : "", packDigest]);
    if (update.newOid === "") {
      if (currentHub === undefined) return { ref: update.ref, hubRef, ok: true };
      const reply = await deps.pipeline.act(
        ctx,
        undefined,
        {
          action: "git.delete",
          target,
          requestId: `${requestId}:${hubRef}`,
          request,
          treeHash: await treeHash,
          payload: { before: { identity: { case: "gitCommit", value: currentHub } } },
        },
        async () =>
          refusedOutcome(hubRef, async () => {
            await retryRefLock(hubRef, () => migrateAndUpdate(ctx.team.hub, undefined, hubRef, "", currentHub));
            await src.mirror?.syncRef(hubRef, undefined);
            return { result: "done" };
          }),
      );
      return replyResult(update, hubRef, reply.status, reply.note, "");
    }
    if (!/^[0-9a-f]{40}$/.test(update.newOid)) return fail(refuse("rpc.malformed", `${update.newOid} is not an object name`));
    let commits: string[];
    let paths: readonly string[];
    // Whether the push is a fast-forward: asked of contained git beside the checks below, under
    // the seat's limits — the walk reads history the seat wrote (it was plain git, on the
    // daemon's own account). Settled before this returns, as the checks are: the quarantine is
    // disposed next.
    const checkedLimits = await limitsFor(ctx);
    const ancestry = !update.force && currentSeen !== undefined ? commitAncestry(src.repo, q, currentSeen, update.newOid, checkedLimits) : undefined;
    ancestry?.catch(() => undefined);
    let fastForward: boolean | undefined;
    try {
      if (q === undefined) {
        // Nothing sent: the new tip must be a commit the seat may already read (one it was
        // served), never one it merely knows the name of.
        if (!(await servedCommit(src.repo, update.newOid, readable, checkedLimits))) {
          return fail(refuse("push.pack", `${update.newOid} was not sent and is not a commit you were served; push again with its objects`));
        }
        commits = [];
        paths = [];
      } else {
        // The new commits (checked connected and self-contained), their text and the paths they
        // change: newCommits, checkCommitText and changedPaths, their contained reads at once (issue 26).
        ({ commits, paths } = await pushedCommits(src.repo, q, update.newOid, { readable, ...checkedLimits }));
      }
      fastForward = await ancestry;
    } catch (error) {
      await ancestry?.catch(() => undefined);
      if (error instanceof PackRejected) return fail(refuse(error.rule, error.reason));
      throw error;
    }
    if (!update.force && currentSeen !== undefined && fastForward !== true) {
      return fail(
        refuse("push.stale", `${update.ref} is not a fast-forward of ${hubRef}; fetch and rebase, or push with --force (allowed in your own namespace)`),
      );
    }
    // What git would refuse inside the effect is refused here, before the intent (§15: unknown
    // is only for an effect that may or may not have happened): a path git's verify_path
    // refuses, a new ref that cannot live beside the refs that exist.
    // In turns, the daemon's one thread given back between them: a push may change 200,000 paths.
    for (let at = 0; at < paths.length; at += PATHS_A_TURN) {
      if (at > 0) await new Promise((resolve) => setImmediate(resolve));
      for (const path of paths.slice(at, at + PATHS_A_TURN)) {
        const problem = gitPathProblem(path);
        if (problem !== undefined) return fail(refuse("git.path", `${JSON.stringify(path)}: ${problem}`));
      }
    }
    if (currentHub === undefined) {
      const conflict = refConflict(
        hubRef,
        (await listRefs(ctx.team.hub, ["refs/"])).map((r) => r.name),
      );
      if (conflict !== undefined) return fail(refuse("git.ref-name", conflict));
    }
    // No changed path (a branch made at a commit the hub has): no content is written.
    const kernel = paths.length === 0 ? undefined : { capability: "write", effect: { paths } };
    const reply = await deps.pipeline
      .act(
        ctx,
        kernel,
        {
          action: "git.push",
          target,
          requestId: `${requestId}:${hubRef}`,
          request,
          treeHash: await treeHash,
          payload: {
            ...(currentHub ? { before: { identity: { case: "gitCommit", value: currentHub } } } : {}),
            fields: [
              ...commits.map((c) => ({ key: "commit", value: c })),
              { key: "paths", value: String(paths.length) },
              ...runFields(deps.runs(ctx.identity.team)[ctx.identity.seat]),
            ],
          },
        },
        async () =>
          refusedOutcome(hubRef, async () => {
            if (src.mirror === undefined) {
              // No new commit: the tip is one the hub has, and nothing of the pack is needed —
              // none of it lands (a seat, one without write too, landed packs of objects no ref
              // reaches with pushes that moved nothing: found by an attack, round eleven).
              // The new tip is a commit the hub holds once migrated (the walk checked it, or it was
              // served): its ref may be written in line (ref-write.ts).
              await retryRefLock(hubRef, () =>
                migrateAndUpdate(ctx.team.hub, commits.length === 0 ? undefined : q, hubRef, update.newOid, currentHub ?? "", { inLine: true }),
              );
              return { result: "done", reply: new TextEncoder().encode(update.newOid) };
            }
            // A bounded seat: its commits are replayed onto the real base as new hub commits.
            const mirror = src.mirror;
            return withReplayFolder(work.quarantine, deps.newId(), async (out) => {
              const tip =
                commits.length === 0
                  ? await mirror.hubCommitOf(update.newOid)
                  : (await mirror.replay(commits, q?.env ?? {}, out, checkedLimits.limits, blindWriteOf(deps.pipeline, ctx))).tip;
              if (tip === undefined) return { result: "refused", note: `${update.newOid} does not stand for a hub commit` };
              await retryRefLock(hubRef, () =>
                migrateAndUpdate(ctx.team.hub, { dir: out, objects: out, env: {}, dispose: async () => undefined }, hubRef, tip, currentHub ?? ""),
              );
              const seen = await mirror.syncRef(hubRef, tip);
              return { result: "done", reply: new TextEncoder().encode(seen ?? "") };
            });
          }),
      )
      .catch(async (error: unknown) => {
        if (error instanceof ReplayRefused) return fail(refuse("push.bounded-merge", error.reason));
        if (error instanceof RefMoved) return fail(refuse("push.stale", `${hubRef} moved while this push ran; fetch and push again`));
        if (error instanceof RefusalError) return { ref: update.ref, hubRef, ok: false, rule: error.rule, reason: error.reason } satisfies RefResultInit;
        throw error;
      });
    if (!("status" in reply)) return reply;
    return replyResult(update, hubRef, reply.status, reply.note, new TextDecoder().decode(reply.reply));
  }
}

/**
 * An effect whose input git refuses deterministically, or whose ref lost a race, is a refused
 * outcome naming its rule (`<rule>: <reason>`) — nothing moved, so it is never unknown (§15).
 * Anything else the effect throws is left to the ledger: it may or may not have happened.
 */
async function refusedOutcome(hubRef: string, effect: () => Promise<EffectResult>): Promise<EffectResult> {
  try {
    return await effect();
  } catch (error) {
    if (error instanceof RefMoved) return { result: "refused", note: `push.stale: ${hubRef} moved while this push ran; fetch and push again` };
    if (error instanceof RefBusy) return { result: "refused", note: `git.ref-busy: ${error.message}; push again` };
    if (error instanceof RefConflict) return { result: "refused", note: `git.ref-name: ${error.message}` };
    if (error instanceof ReplayRefused) return { result: "refused", note: `push.bounded-merge: ${error.reason}` };
    // The replay's contained reads, past the seat's limits: nothing was written to the hub.
    if (error instanceof PackRejected) return { result: "refused", note: `${error.rule}: ${error.reason}` };
    throw error;
  }
}

function replyResult(update: RefUpdate, hubRef: string, status: "done" | "refused" | "unknown", note: string, oid: string): RefResultInit {
  if (status === "done") return { ref: update.ref, hubRef, ok: true, oid };
  if (status === "unknown") return { ref: update.ref, hubRef, ok: false, rule: "ledger.unknown-outcome", reason: note || "the push's outcome is unknown" };
  const named = noteRule(note);
  return { ref: update.ref, hubRef, ok: false, rule: named?.rule ?? "push.pack", reason: named?.reason ?? (note || `the push's outcome is ${status}`) };
}

/**
 * What the seat may write over unseen, for its replay: the kernel's answer over the view the act
 * was decided on (its leases read once), the policy's alone (blindWriteRefusal).
 */
function blindWriteOf(pipeline: SeatPipeline, ctx: SeatContext): BlindWrite {
  const { view, now } = pipeline.decisionInputs(ctx);
  return (path, as) => {
    const refusal = blindWriteRefusal(view, ctx.identity.seat, path, as, now);
    return refusal === undefined ? undefined : `${refusal.reason} (${refusal.rule})`;
  };
}
