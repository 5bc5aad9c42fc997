import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, chown, link, lstat, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildReservedSet } from "../objects/reserved-set.js";
import { describeRoot, gatherHostFacts, reservedFacts } from "../sandbox/host-facts.js";
import { createLinuxLauncher } from "../sandbox/launcher-linux.js";
import type { CgroupPlacement, Launcher, SeatExit, SeatProcess } from "../sandbox/launcher-types.js";
import { compilePlan } from "../sandbox/plan.js";
import type { Limits, PlanInput, SandboxPlan } from "../sandbox/plan-types.js";

/**
 * The selftest's throwaway world: one temporary folder holding a seat's repository, home and tmp,
 * a read-only root with reserved objects (a file, a hard link to it, a folder) and a live host
 * service socket, a folder outside every plan (a secret and a socket), the seat's own socket, an
 * abstract socket and a loopback service of the host, a victim process with a canary in its
 * environment. Seats are planned by the real compiler (src/sandbox/plan.ts) from the real host
 * facts and launched by the real launcher: what `teamd start` builds, less the daemon.
 *
 * Everything it makes it removes at close(): the seats (by their namespace init), the victim (by
 * pid), the servers, then the folder — without following a link a seat left (rm unlinks links),
 * after giving every real folder its owner's search and write bit back (a seat may chmod 000 its own).
 */
export const SEAT_REPLY = "selftest-seat-socket";
export const HOST_REPLY = "selftest-host-service";
/** A seat's stdout is read up to this; the rest is dropped (a hostile seat cannot flood the selftest). */
export const OUTPUT_CAP = 256 * 1024;

export interface WorldUser {
  readonly uid: number;
  readonly gid: number;
}

export interface SeatRun {
  readonly exit: SeatExit;
  readonly stdout: string;
  readonly timedOut: boolean;
}

export interface LiveSeat {
  readonly process: SeatProcess;
  /** Resolves with the first stdout line matching `pattern`, or undefined when the seat ends first. */
  waitFor(pattern: RegExp): Promise<string | undefined>;
  readonly done: Promise<SeatRun>;
}

/** The throwaway world's places and planted things, as the attacks name them (corpus.ts's Facts adds the runner's). */
export interface WorldPaths {
  readonly base: string;
  readonly repo: string;
  readonly home: string;
  readonly tmp: string;
  readonly shared: string;
  readonly outside: string;
  readonly secretFile: string;
  readonly reservedFile: string;
  readonly hardLink: string;
  readonly reservedDir: string;
  readonly sharedSocket: string;
  readonly outsideSocket: string;
  readonly abstractName: string;
  readonly loopbackPort: number;
  readonly victimPid: number;
  readonly canary: string;
}

export interface World extends WorldPaths {
  readonly user: WorldUser;
  /** The real plan (`production`), or the control's: every socket mask and the /proc key masks left out. */
  plan(variant: "production" | "unmasked", limits?: Limits): Promise<SandboxPlan>;
  /** Launch `argv` (pipes), its stdout bounded, killed at `timeoutMs`. */
  launch(plan: SandboxPlan, argv: readonly string[], options: { filtered: boolean; timeoutMs: number; cgroup?: CgroupPlacement }): Promise<LiveSeat>;
  /** Write a file the seat reads (0644), in its tmp. */
  put(name: string, content: string): Promise<string>;
  close(): Promise<string[]>;
}

export async function createWorld(user: WorldUser): Promise<World> {
  const base = await mkdtemp(join(tmpdir(), "teamd-selftest-"));
  const servers: Server[] = [];
  const seats = new Set<SeatProcess>();
  let victim: ChildProcess | undefined;
  const closeAll = async (): Promise<string[]> => {
    const left: string[] = [];
    for (const seat of seats) seat.kill();
    await Promise.all([...seats].map((seat) => seat.exit));
    if (victim?.pid !== undefined && victim.exitCode === null && victim.signalCode === null) {
      const gone = new Promise((resolve) => victim?.once("exit", resolve));
      process.kill(victim.pid, "SIGKILL");
      await gone;
    }
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
    await reopen(base);
    await rm(base, { recursive: true, force: true }).catch((error: Error) => left.push(`${base}: ${error.message}`));
    return left;
  };
  try {
    const repo = join(base, "repo");
    const home = join(base, "home");
    const tmp = join(base, "tmp");
    const shared = join(base, "shared");
    const outside = join(base, "outside");
    const run = join(base, "run");
    const reservedDir = join(shared, "hub.git");
    for (const dir of [repo, home, tmp, shared, outside, run, reservedDir]) await mkdir(dir, { recursive: true });
    const canary = `teamd-selftest-canary-${randomBytes(8).toString("hex")}`;
    await writeFile(join(repo, "README.md"), "selftest repository\n");
    await writeFile(join(shared, "notes.txt"), "shared notes\n");
    const reservedFile = join(shared, "owner.key");
    await writeFile(reservedFile, `${canary}-reserved\n`);
    const hardLink = join(shared, "innocent.txt");
    await link(reservedFile, hardLink);
    await writeFile(join(reservedDir, "HEAD"), `${canary}-hub\n`);
    const secretFile = join(outside, "secret.txt");
    await writeFile(secretFile, `${canary}-outside\n`);

    const listen = async (at: string | { port: number; host: string }, reply: string): Promise<Server> => {
      const server = createServer((socket) => socket.on("error", () => undefined).end(`${reply}\n`));
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        if (typeof at === "string") server.listen(at, () => resolve());
        else server.listen(at.port, at.host, () => resolve());
      });
      servers.push(server);
      if (typeof at === "string" && !at.startsWith("\0")) await chmod(at, 0o666);
      return server;
    };
    const seatSocket = join(run, "seat.sock");
    await listen(seatSocket, SEAT_REPLY);
    const sharedSocket = join(shared, "service.sock");
    await listen(sharedSocket, HOST_REPLY);
    const outsideSocket = join(outside, "decoy.sock");
    await listen(outsideSocket, HOST_REPLY);
    const abstractName = `teamd-selftest-${randomBytes(6).toString("hex")}`;
    await listen(`\0${abstractName}`, HOST_REPLY);
    const loopback = await listen({ port: 0, host: "127.0.0.1" }, HOST_REPLY);
    const loopbackPort = (loopback.address() as { port: number }).port;

    victim = spawn("/bin/sleep", ["120"], { stdio: "ignore", env: { TEAMD_SELFTEST_VICTIM: canary } });
    const victimPid = victim.pid;
    if (victimPid === undefined) throw new Error("the victim process did not start");
    victim.on("error", () => undefined);

    if (process.getuid?.() === 0) await chownTree(base, user.uid, user.gid);

    const launchers = new Map<boolean, Launcher>([
      [true, createLinuxLauncher()],
      // The control: the same seat with only the filter left out (the escape suite's control, too).
      [false, createLinuxLauncher({ withoutSeccompForControl: true })],
    ]);

    const plan = async (variant: "production" | "unmasked", limits: Limits = "none"): Promise<SandboxPlan> => {
      const set = await buildReservedSet([reservedFile, reservedDir]);
      if (!set.ok) throw new Error(set.reason);
      const root = async (path: string) => {
        const described = await describeRoot(path, set.set);
        if (!described.ok) throw new Error(described.refusal.reason);
        return described.value;
      };
      const facts = await gatherHostFacts({ node: process.execPath, seatSocket });
      if (!facts.ok) throw new Error(facts.refusal.reason);
      let input: PlanInput = {
        seat: { team: "selftest", seat: "probe" },
        user: { uid: user.uid, gid: user.gid },
        writable: { repository: await root(repo), home: await root(home), tmp: await root(tmp) },
        readOnly: [await root(shared)],
        reserved: reservedFacts(set.set),
        host: facts.value,
        env: { allowlist: ["LANG"], source: { LANG: "C.UTF-8" }, declared: {} },
        limits,
      };
      if (variant === "unmasked") {
        input = {
          ...input,
          readOnly: input.readOnly.map((r) => ({ ...r, scan: { ...r.scan, sockets: [] } })),
          host: { ...input.host, procKeyFiles: [] },
        };
      }
      const compiled = compilePlan(input);
      if (compiled.decision !== "plan") throw new Error(`plan refused: ${compiled.rule}: ${compiled.reason}`);
      return compiled.plan;
    };

    const launch: World["launch"] = async (p, argv, options) => {
      const launcher = launchers.get(options.filtered) as Launcher;
      const launched = await launcher.launch({ plan: p, command: argv, ...(options.cgroup ? { cgroup: options.cgroup } : {}) });
      if (!launched.ok) throw new Error(`${launched.refusal.rule}: ${launched.refusal.reason}`);
      const proc = launched.seat;
      seats.add(proc);
      const io = proc.io;
      if (io.kind !== "pipes") throw new Error("the selftest launches with pipes");
      io.stdin.end();
      io.stderr.resume();
      let stdout = "";
      const waiters: { pattern: RegExp; resolve: (line: string | undefined) => void }[] = [];
      io.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        if (stdout.length < OUTPUT_CAP) stdout += chunk.slice(0, OUTPUT_CAP - stdout.length);
        for (const w of [...waiters]) {
          const line = stdout.split("\n").find((l) => w.pattern.test(l));
          if (line !== undefined) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(line);
          }
        }
      });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        proc.kill();
      }, options.timeoutMs);
      const done = (async (): Promise<SeatRun> => {
        const exit = await proc.exit;
        clearTimeout(timer);
        await new Promise<void>((resolve) => {
          if (io.stdout.readableEnded) return resolve();
          io.stdout.once("end", () => resolve()).once("close", () => resolve());
        });
        seats.delete(proc);
        for (const w of waiters.splice(0)) w.resolve(undefined);
        return { exit, stdout, timedOut };
      })();
      return {
        process: proc,
        done,
        waitFor: (pattern) =>
          new Promise((resolve) => {
            const line = stdout.split("\n").find((l) => pattern.test(l));
            if (line !== undefined) return resolve(line);
            waiters.push({ pattern, resolve });
            void done.then(() => resolve(undefined));
          }),
      };
    };

    const put = async (name: string, content: string) => {
      const path = join(tmp, name);
      await writeFile(path, content, { mode: 0o644, flag: "wx" });
      return path;
    };

    return {
      base,
      repo,
      home,
      tmp,
      shared,
      outside,
      secretFile,
      reservedFile,
      hardLink,
      reservedDir,
      sharedSocket,
      outsideSocket,
      abstractName,
      loopbackPort,
      victimPid,
      canary,
      user,
      plan,
      launch,
      put,
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

async function chownTree(path: string, uid: number, gid: number): Promise<void> {
  const stats = await lstat(path);
  await chown(path, uid, gid);
  if (stats.isDirectory()) for (const entry of await readdir(path)) await chownTree(join(path, entry), uid, gid);
}

/**
 * Before removal, every real folder searchable and writable by us again (a seat may have taken the
 * bits away from its own folders); links are never followed: lstat decides, and a link is left to rm.
 */
async function reopen(path: string): Promise<void> {
  const stats = await lstat(path).catch(() => undefined);
  if (stats === undefined || !stats.isDirectory()) return;
  await chmod(path, 0o700).catch(() => undefined);
  const entries = await readdir(path).catch(() => [] as string[]);
  for (const entry of entries) await reopen(join(path, entry));
}
