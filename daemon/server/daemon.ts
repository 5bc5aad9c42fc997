import { mkdir, chmod, chown } from "node:fs/promises";
import { ControlService } from "../../src/gen/teamd/v1/control_pb.js";
import { ShimService } from "../../src/gen/teamd/v1/shim_pb.js";
import { createRpcServer, type RpcServer } from "../../src/rpc/server.js";
import { seatSocketPath, type TeamdHome } from "../host/home.js";
import { REAL_AMBIENT, type Ambient } from "../host/ambient.js";
import { createInternalErrorLog } from "./internal-errors.js";
import { RefusalError } from "../../src/rpc/errors.js";
import { START_CHANGED_REMOVED } from "../../src/rpc/protocol.js";
import { createControlService } from "./control-service.js";
import { handleStopAll } from "./stop-all-handler.js";
import { openToOwnerGroup } from "./owner-group.js";
import { watchStopFlags, type StopWatch } from "./stop-watch.js";
import { createShimService, type SeatIdentity } from "../seat/shim-service.js";
import { createSeatLeases } from "../seat/leases.js";
import { createSeatAdmin } from "../seat/administer.js";
import { createSeatCreate } from "../seat/create-team.js";
import { refuseAll } from "../../src/rpc/refuse-all.js";
import { daemonKey, ledgerLayout, openHostLedger } from "../host/ledger-host.js";
import type { Ledger } from "../../src/ledger/index.js";
import { readyLedger, startableSeat } from "../../src/ledger/policy-in-force.js";
import { TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { refuse } from "../../src/kernel/index.js";
import { createNoticeService } from "./notices.js";
import { watchFloors, type FloorWatch } from "./floor-watch.js";
import { watchRuntime, type RuntimeWatch } from "./runtime-watch.js";
import { watchMeters, type MeterWatch } from "./meter-watch.js";
import { createSpendBook } from "./spend-book.js";
import { loadMeters, type MeterConfig } from "../../src/meters/index.js";
import { unmetFloors } from "../owner/leases.js";
import { loadNotifyHook, type NotifyHook } from "../host/notify-config.js";
import { createLauncher, type Launcher } from "../../src/sandbox/launcher.js";
import { createSeatManager, DAEMON_STOPPING, type SeatManager } from "../lifecycle/manager.js";
import { seatCgroupProcs } from "../lifecycle/cgroup.js";
import { stopRefusal } from "../../src/ledger/stop-state.js";
import { createSeatPipeline, type ActBudget, type RefusalBudget } from "../seat/pipeline.js";
import type { Rate } from "../seat/token-buckets.js";
import { createSeatGit, parseSeatGitBounds } from "../seat/git.js";
import { createSeatFiles } from "../seat/files.js";
import { createSeatTrunk } from "../seat/trunk.js";
import { createSeatDeploy } from "../seat/deploy.js";
import { createSeatBroker } from "../seat/broker.js";
import { createBroker } from "../../src/broker/index.js";
import { resolveMergeOutcomes } from "./merge-recovery.js";
import { gitWorkDir, seatLayout } from "../host/seat-layout.js";
import { sweepQuarantineRoot } from "../../src/effects/push-replay.js";
import { openEgressServer, type EgressServer } from "../seat/egress.js";
import { egressSocketPath } from "../host/seat-layout.js";
import { createEgressResolver, hostAddresses } from "../../src/effects/egress-resolve.js";

export interface DaemonOptions {
  readonly home: TeamdHome;
  /** Seats to open sockets for at start (the containment issue opens them per launch). */
  readonly seats?: readonly SeatIdentity[];
  readonly log?: (line: string) => void;
  /** The containment launcher (default: this platform's). */
  readonly launcher?: Launcher;
  /** The clock and the id source every part of the daemon uses (default: the real ones, host/ambient.ts). */
  readonly ambient?: Ambient;
  /** Test seam: fail a seat's prepare at a named step (TEAMD_TEST_FAIL_AT), to prove the unwind. */
  readonly failPrepareAt?: string;
  /** Test seam (TEAMD_TEST_HOLD_START=FOLDER): a seat's start waits after its reservation while FOLDER/TEAM.SEAT exists (start-hold.ts). */
  readonly holdStart?: (team: string, seat: string) => Promise<void>;
  /** Test seam (TEAMD_TEST_CRASH_AFTER_MERGE=1): SIGKILL the daemon after a merge moved the trunk, before its outcome. */
  readonly crashAfterMerge?: boolean;
  /** Test seam (TEAMD_TEST_CRASH_IN_DEPLOY=1): SIGKILL the daemon once a deploy's intent is durable, before its command runs. */
  readonly crashInDeploy?: boolean;
  /** Each seat's refusal budget (default DEFAULT_REFUSAL_BUDGET in daemon/seat/pipeline.ts; `teamd serve` reads TEAMD_REFUSAL_BUDGET=BURST/PER_MINUTE). */
  readonly refusalBudget?: RefusalBudget;
  /** Each seat's act budget in bytes of records (default DEFAULT_ACT_BUDGET in daemon/seat/pipeline.ts; `teamd serve` reads TEAMD_ACT_BUDGET=BURST_MIB/PER_MINUTE_MIB). */
  readonly actBudget?: ActBudget;
  /** Each seat's served-read rate (default DEFAULT_SERVED_RATE in daemon/seat/pipeline.ts; `teamd serve` reads TEAMD_SERVED_RATE=BURST/PER_MINUTE). */
  readonly servedRate?: Rate;
  /** The owner's bounds on a seat's git work, as `teamd serve` reads them from TEAMD_SEAT_GIT_BOUNDS (parseSeatGitBounds in daemon/seat/git.ts); unset, the defaults. */
  readonly seatGitBounds?: string;
  /** How long `teamd start` watches a seat's command (`teamd serve` reads TEAMD_START_SETTLE_MS); unset, START_SETTLE_MS. */
  readonly startSettleMs?: number;
}

export interface Daemon {
  readonly instance: string;
  start(): Promise<void>;
  /** Open a socket for a seat (at `at`, default run/seats/); its identity is that socket. `egress`: its egress socket beside it. */
  openSeat(identity: SeatIdentity, at?: string, options?: { egress?: boolean }): Promise<string>;
  /** Close a seat's socket (and remove it); a no-op when it has none. */
  closeSeat(identity: SeatIdentity): Promise<void>;
  stop(): Promise<void>;
  /** SIGHUP: reload the daemon's own configuration (the notice hook) — never a team file. */
  reload(): void;
}

/**
 * The daemon's composition root: one control socket for the owner and one socket per
 * seat. Start composes privately and publishes the sockets last; stop tears down in
 * reverse (seats first, the control socket last) and removes every socket it made.
 */
export function createDaemon(options: DaemonOptions): Daemon {
  const { home } = options;
  const log = options.log ?? (() => undefined);
  // The handlers' id source (scratch index and replay folder names, lease ids, egress
  // connections, seat runs) and the decision clock: injected, so a test can fix them.
  const { now, newId } = options.ambient ?? REAL_AMBIENT;
  const instance = newId();
  const seatServers = new Map<string, { identity: SeatIdentity; server: RpcServer; egress?: EgressServer }>();
  let control: RpcServer | undefined;
  let seats: SeatManager | undefined;
  let stopWatch: StopWatch | undefined;
  let floorWatch: FloorWatch | undefined;
  let runtimeWatch: RuntimeWatch | undefined;
  let meterWatch: MeterWatch | undefined;
  // The owner's meters (TEAMD_HOME/meters.json), read at start: a file that cannot be read leaves
  // none, so every team with a spend ceiling refuses its dispatches (its usage cannot be established).
  let meterConfigs: readonly MeterConfig[] = [];
  const meters = () => meterConfigs;
  const spendBook = createSpendBook({ ledger: () => ledger, meters });
  // The machine's ledger: absent until teamd init makes it (through this daemon or, with the
  // daemon down, by the owner's CLI), then opened once and kept.
  let ledger: Ledger | undefined;
  // The owner's notice hook, loaded at start and on SIGHUP; notices follow whichever ledger is open.
  let hook: NotifyHook | undefined;
  const reloadHook = () => {
    const loaded = loadNotifyHook(home);
    hook = loaded.ok ? loaded.hook : undefined;
    log(loaded.ok ? (loaded.hook ? `notice hook: ${JSON.stringify(loaded.hook.command)}` : "no notice hook") : `notice hook refused: ${loaded.reason}`);
  };
  const notices = createNoticeService({
    hook: () => hook,
    log,
    unmetFloors: (l, team) => {
      try {
        return unmetFloors(l, team, now());
      } catch {
        return []; // the policy cannot be read now: the notice still says it was applied
      }
    },
  });
  const slot = {
    serving: true,
    get: () => ledger,
    set: (l: Ledger) => {
      ledger = l;
      notices.attach(l);
      // A ledger made now (teamd init through this daemon): open it to the owner group too.
      openToOwnerGroup(home).catch((error: unknown) => log(`cannot open the new ledger to group teamd: ${String(error)}`));
    },
  };
  // Seats stopped for their refusal budget, until their next run: `teamd status` shows them (a run state of their own).
  const halted = new Map<
    string,
    {
      team: string;
      seat: string;
      state: string;
      runId: string;
      startedAt: string;
      uid: number;
      containment: string;
      socket: string;
      initPid: number;
      limits: string;
      repository: string;
      cgroup: string;
    }
  >();
  const haltForBudget = (identity: SeatIdentity, why: string) => {
    const key = `${identity.team}.${identity.seat}`;
    const view = seats?.list().find((v) => v.team === identity.team && v.seat === identity.seat);
    log(`seat ${identity.seat} (team ${identity.team}): ${why}; stopping it`);
    if (view === undefined) return;
    halted.set(key, { ...view, state: "halted: refusal budget", socket: "", initPid: 0 });
    // The seat_stop record carries `why`, and its notice tells the owner once (notices.ts).
    seats
      ?.halt(identity.team, identity.seat, why)
      .catch((error: unknown) => log(`seat ${identity.seat} (team ${identity.team}): the halt failed: ${String(error)}`));
  };
  // Read at creation: a setting the daemon cannot read stops it before it serves a seat.
  const seatGitBounds = parseSeatGitBounds(options.seatGitBounds);
  // The running seat's own cgroups (found from its init): contained git for the seat joins them.
  const seatCgroups = async (identity: SeatIdentity) => {
    const view = seats?.list().find((v) => v.team === identity.team && v.seat === identity.seat);
    return view === undefined || view.initPid <= 0 ? undefined : seatCgroupProcs(home, identity.team, identity.seat, view.initPid);
  };
  const pipeline = createSeatPipeline({
    ledger: () => ledger,
    clock: now,
    onRefusalBudget: haltForBudget,
    log,
    ...(options.refusalBudget ? { refusalBudget: options.refusalBudget } : {}),
    ...(options.actBudget ? { actBudget: options.actBudget } : {}),
    ...(options.servedRate ? { servedRate: options.servedRate } : {}),
  });
  const egressDeps = { pipeline, resolve: createEgressResolver(), hostAddresses, log, newId };
  // The live run and home of each running seat: independence facts (O) and push authorship.
  const runs = (team: string) =>
    Object.fromEntries((seats?.list() ?? []).filter((v) => v.team === team).map((v) => [v.seat, { run: v.runId, home: seatLayout(home, team, v.seat).home }]));
  const seatGit = createSeatGit({ home, pipeline, runs, newId, bounds: seatGitBounds, seatCgroups, log });
  // The broker reads the owner's tracker and account credentials from TEAMD_HOME/broker/ (or the
  // files or variables the daemon's environment names); nothing of it reaches a seat. act-as
  // (a push, a comment) uses the same store: the daemon acts, the seat never holds the secret.
  const broker = createBroker({ teamdHome: home.root, env: process.env, ...(process.getuid ? { uid: process.getuid() } : {}) });
  const admin = createSeatAdmin({
    pipeline,
    newId,
    teamSeats: (team) => (seats?.list() ?? []).filter((v) => v.team === team).map((v) => v.seat),
    stopTeamSeats: async (team) => void (await seats?.stop(team, undefined)),
    // Every seat with a start that does not run yet, or the one named: the manager's own bounds (stop, runtime, seats, spend) hold.
    startTeamSeats: async (team, seat, by) => (seats === undefined ? [] : (await seats.start(team, seat, by)).map((v) => v.seat)),
  });
  const seatDeps = {
    daemonInstance: instance,
    admin,
    create: createSeatCreate({
      pipeline,
      home,
      spendTree: (team) => spendBook.tree(team, now()),
      liveSeats: (team) => (seats?.list() ?? []).filter((v) => v.team === team).map((v) => ({ seat: v.seat, lab: v.lab })),
      startTeam: async (team) => (await (seats?.start(team, undefined) ?? Promise.resolve([]))).map((v) => v.seat),
    }),
    pipeline,
    git: seatGit,
    files: createSeatFiles({
      home,
      pipeline,
      runs,
      newId,
      quota: { refs: seatGitBounds.refs, bytes: seatGitBounds.bytes, objects: seatGitBounds.objects },
      seatCgroups,
    }),
    trunk: createSeatTrunk({ pipeline, runs, ...(options.crashAfterMerge ? { afterMerge: () => process.kill(process.pid, "SIGKILL") } : {}) }),
    leases: createSeatLeases({ pipeline, newId, proposeLease: (ctx, lease) => admin.proposeLease(ctx, lease) }),
    deploy: createSeatDeploy({
      pipeline,
      runs,
      home: home.root,
      broker,
      ...(options.crashInDeploy ? { afterIntent: () => process.kill(process.pid, "SIGKILL") } : {}),
    }),
    broker: createSeatBroker({
      pipeline,
      broker,
      spend: (team, seat, dispatch) => spendBook.dispatch(team, seat, dispatch, now()),
      release: (team, seat, dispatch) => spendBook.release(team, seat, dispatch, now()),
      newId,
    }),
  };
  const access = home.mode === "system" && home.ownerGid !== undefined ? { mode: 0o660, gid: home.ownerGid } : { mode: 0o600 };
  const onInternalError = createInternalErrorLog(log, now);

  async function prepareDirs(): Promise<void> {
    await mkdir(home.root, { recursive: true, mode: 0o700 });
    await mkdir(home.seatSocketDir, { recursive: true, mode: 0o700 });
    // Narrow whatever was there before: only the daemon (and in system mode group teamd)
    // may enter the directories the sockets live in.
    const dirMode = access.gid !== undefined ? 0o750 : 0o700;
    for (const dir of [home.root, home.runDir, home.seatSocketDir]) {
      if (access.gid !== undefined) await chown(dir, 0, access.gid);
      await chmod(dir, dirMode);
    }
    // In system mode the seat user (teamd-seat) must traverse TEAMD_HOME — never list it —
    // to reach its own folders and socket when bwrap binds them (seat-layout.ts); run/ and
    // everything else in it stay the daemon's.
    if (home.mode === "system") await chmod(home.root, dirMode | 0o001);
  }

  async function openSeat(identity: SeatIdentity, at?: string, options: { egress?: boolean } = {}): Promise<string> {
    const key = `${identity.team}.${identity.seat}`;
    if (seatServers.has(key)) throw new Error(`seat ${identity.seat} of team ${identity.team} already has a socket`);
    const socketPath = at ?? seatSocketPath(home, identity.team, identity.seat);
    // A new run: its refusal budget starts full, and it is no longer shown halted.
    pipeline.openRun(identity);
    halted.delete(key);
    const server = createRpcServer({
      socketPath,
      access: { mode: 0o600 },
      channel: `seat:${key}`,
      onInternalError,
      // The socket's own bound (issue 20): the connection is closed on arrival; the owner sees it in the daemon's log.
      onConnectionDropped: (bound, dropped) =>
        log(`seat ${identity.seat} (team ${identity.team}): ${dropped} connection(s) past the socket's ${bound} closed on arrival (rpc.connections)`),
      // A call the rpc layer refuses before any handler (a wrong protocol version) is this seat's attempt: on record (§15).
      onRefusal: async (refusal, method) => {
        await pipeline.refuseCall(identity, refuse(refusal.rule, refusal.reason), `rpc.${method}`, { kind: TargetKind.SEAT, name: identity.seat });
      },
    });
    server.addService(ShimService, createShimService(identity, seatDeps));
    server.addService(
      ControlService,
      refuseAll(
        ControlService,
        "channel.control-on-seat",
        (m) => `${m} is an owner act; it is served only on the control socket, never on a seat's`,
        // An owner act arriving on a seat's socket is that seat's attempt: on record (§11), by the pipeline's one builder.
        async (method, refusal) => {
          await pipeline.refuseCall(identity, refuse(refusal.rule, refusal.reason), `control.${method}`, { kind: TargetKind.SEAT, name: identity.seat });
        },
      ),
    );
    const entry: { identity: SeatIdentity; server: RpcServer; egress?: EgressServer } = { identity, server };
    seatServers.set(key, entry);
    try {
      await server.listen();
      // Beside it, for a seat that declares egress, its byte stream (daemon/seat/egress.ts): same identity, same access.
      if (options.egress) entry.egress = await openEgressServer(identity, egressSocketPath(socketPath), { mode: 0o600 }, egressDeps);
    } catch (error) {
      seatServers.delete(key);
      await entry.egress?.close();
      await server.close(0);
      throw error;
    }
    log(`seat ${identity.seat} (team ${identity.team}) listening on ${socketPath}`);
    return socketPath;
  }

  async function closeSeat(identity: SeatIdentity): Promise<void> {
    const key = `${identity.team}.${identity.seat}`;
    const entry = seatServers.get(key);
    if (entry === undefined) return;
    seatServers.delete(key);
    await entry.egress?.close();
    await entry.server.close();
  }

  return {
    instance,
    async start() {
      await prepareDirs();
      const signer = await daemonKey(ledgerLayout(home));
      ledger = await openHostLedger(home, log, true);
      await openToOwnerGroup(home);
      reloadHook();
      notices.attach(ledger);
      if (ledger) log(`ledger ${ledger.state.status}${ledger.state.status === "ready" ? "" : `: ${ledger.state.reason}`}`);
      else log("no ledger yet (teamd init creates it)");
      // The owner's stop is read before anything is served (§11): the ledger opened on the flags.
      const stopped = stopRefusal(ledger, "");
      if (stopped) log(`${stopped.reason}: every start and owner act but teamd resume is refused`);
      const server = createRpcServer({ socketPath: home.controlSocket, access, channel: "control", onInternalError, limits: "control" });
      server.addService(
        ControlService,
        createControlService({
          daemonInstance: instance,
          mode: home.mode,
          home: home.root,
          teamdHome: home,
          ledger: slot,
          daemonPublicKey: signer.publicKey.raw,
          seats: async () => {
            const running = (await seats?.metered()) ?? [];
            const debug = [...seatServers.values()]
              .filter(({ identity }) => !running.some((r) => r.team === identity.team && r.seat === identity.seat))
              .map(({ identity, server: s }) => ({ ...identity, socket: s.socketPath, state: "socket" }));
            const stopped = [...halted.values()].filter((v) => !running.some((r) => r.team === v.team && r.seat === v.seat));
            return [...running.map((r) => ({ ...r, startChanged: startChanged(ledger, r) })), ...stopped, ...debug];
          },
          seatManager: () => {
            if (seats === undefined) throw new Error("the daemon is not started");
            return seats;
          },
          stopHandled: (flagId) => stopWatch?.handled(flagId),
          now,
          spend: (team) => spendBook.status(team, now()),
          log,
        }),
      );
      server.addService(
        ShimService,
        refuseAll(ShimService, "channel.seat-on-control", (m) => `${m} is a seat call; a seat speaks only on its own socket`),
      );
      try {
        await server.listen();
      } catch (error) {
        await ledger?.close();
        ledger = undefined;
        throw error;
      }
      control = server;
      const loadedMeters = await loadMeters(home.root, process.env);
      if (loadedMeters.ok) meterConfigs = loadedMeters.meters;
      else log(`meters: ${loadedMeters.reason}; no meter is read, and a team with a spend ceiling dispatches nothing`);
      seats = createSeatManager({
        home,
        ledger: () => ledger,
        launcher: options.launcher ?? createLauncher(),
        openSocket: (team, seat, at, egress) => openSeat({ team, seat }, at, { egress }),
        closeSocket: (team, seat) => closeSeat({ team, seat }),
        forward: (team, seat, port) => {
          const hub = seatServers.get(`${team}.${seat}`)?.egress?.forward;
          if (hub === undefined) return Promise.reject(new Error("this seat has no egress socket: a seat forwards only when its start declares start.network"));
          return hub.open(port);
        },
        log,
        now,
        newId,
        ...(options.failPrepareAt !== undefined ? { failAt: options.failPrepareAt } : {}),
        ...(options.holdStart !== undefined ? { holdStart: options.holdStart } : {}),
        ...(options.startSettleMs !== undefined ? { startSettleMs: options.startSettleMs } : {}),
        spend: (team, seat, runId) => spendBook.dispatch(team, seat, runId, now()),
      });
      try {
        for (const swept of await seats.sweep()) log(`swept what a previous run left of seat ${swept}`);
        // Merges a crash left unknown: ask the hub, and record what it says (§15).
        // A deploy a crash interrupted left its folder; its outcome is the ledger's business (unknown).
        for (const left of await seatDeps.deploy.sweep()) log(`removed the deploy folder ${left} a previous run left`);
        for (const left of await sweepQuarantineRoot(gitWorkDir(home).quarantine)) log(`removed ${left} a previous run left among pushes' quarantines`);
        if (ledger)
          await resolveMergeOutcomes(ledger, log).catch((error: unknown) =>
            log(`could not settle unknown merges: ${error instanceof Error ? error.message : String(error)}`),
          );
        for (const seat of options.seats ?? []) await openSeat(seat);
        // A stop flag the owner wrote while this daemon did not answer (hung): act on it.
        stopWatch = watchStopFlags({
          flagsDir: ledgerLayout(home).flagsDir,
          read: () => ledger?.readFlags(),
          now,
          onStop: async (flag) => {
            if (seats !== undefined) await handleStopAll(home, slot, seats, flag.bytes, (id) => stopWatch?.handled(id));
          },
          log,
        });
        // A floor a lease's expiry breaks pauses at the next decision; the owner is told once (§5, §11).
        floorWatch = watchFloors({ ledger: () => ledger, unmetFloors: (l, team) => unmetFloors(l, team, now()), log });
        // A team past its unattended runtime: told once, its seats frozen (or stopped), thawed when renewed (§8).
        runtimeWatch = watchRuntime({ ledger: () => ledger, seats: () => seats, now, log });
        // The spend envelope's meters: read now and every `every`; a seat whose reservation no longer fits is halted (§8).
        meterWatch = watchMeters({ meters: meters(), book: spendBook, ledger: () => ledger, seats: () => seats, now, log });
        void meterWatch.readAll().catch((error: unknown) => log(`meters: ${error instanceof Error ? error.message : String(error)}`));
      } catch (error) {
        await this.stop();
        throw error;
      }
      // Seats with a restart policy that the daemon's going down ended come back (a new run each,
      // obeying every stop flag): not awaited, so the daemon answers while they launch.
      const manager = seats;
      void manager
        .resumeRestartable()
        .catch((error: unknown) => log(`could not bring back restartable seats: ${error instanceof Error ? error.message : String(error)}`));
      log(`control socket ${home.controlSocket} (${home.mode} mode)`);
    },
    openSeat,
    closeSeat,
    reload: reloadHook,
    async stop() {
      // Seats first (their seat_stop records need the ledger), then sockets, then the ledger.
      stopWatch?.close();
      stopWatch = undefined;
      floorWatch?.close();
      floorWatch = undefined;
      runtimeWatch?.close();
      runtimeWatch = undefined;
      meterWatch?.close();
      meterWatch = undefined;
      await seats?.stopAll(DAEMON_STOPPING, "daemon");
      seats = undefined;
      for (const { server, egress } of [...seatServers.values()].reverse()) {
        await egress?.close();
        await server.close();
      }
      seatServers.clear();
      // A push answered before its quarantine was removed: removed before the daemon ends.
      await seatGit.idle();
      await control?.close();
      control = undefined;
      // Notices of the last records (the seats' stops) are recorded before the ledger closes.
      await notices.idle();
      notices.close();
      await ledger?.close();
      ledger = undefined;
    },
  };
}

/**
 * Why a running seat's start is not the one the policy in force pins, or "" (status and apply
 * name such seats). A seat the policy no longer has at all is START_CHANGED_REMOVED: it is not a
 * restart that it needs (its start would be refused), and every act it asks for is refused.
 */
function startChanged(ledger: Ledger | undefined, run: { team: string; seat: string; state: string; context?: string }): string {
  if (run.context === undefined || run.state !== "running" || ledger === undefined) return "";
  try {
    return startableSeat(readyLedger(ledger), run.team, run.seat).contextHash === run.context
      ? ""
      : "the policy in force pins another start for it (command, env, files, network, limits or restart)";
  } catch (error) {
    if (error instanceof RefusalError && error.rule === "seat.unknown") return START_CHANGED_REMOVED;
    return `the policy in force does not start it now (${error instanceof Error ? error.message : String(error)})`;
  }
}
