import { execFileSync } from "node:child_process";
import { chmodSync, renameSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { makeTempHome, run, startDaemon, TEAMD, type DaemonProcess, type RunAs, type RunResult } from "./programs.js";
import { makeRepo } from "./repo.js";

/**
 * One `teamd` for integration tests: a runner bound to a temporary folder, a repository in it,
 * a `TEAMD_HOME` and an owner key, and the daemons it started (every one stopped, by its pid,
 * at cleanup, whatever a failed assertion left). Tests name only what is special to them
 * (extra environment, a timeout, the exit code they expect) through the options.
 */
export interface TeamdRunOptions {
  /** Default: the harness's (60 s unless created with another). */
  readonly timeoutMs?: number;
  /** Merged over the harness's environment. */
  readonly env?: NodeJS.ProcessEnv;
  /** Default: the repository. */
  readonly cwd?: string;
  /** The exit code `ok` and `json` expect (default 0). */
  readonly code?: number;
  /** Written to teamd's standard input, then closed. */
  readonly input?: string;
}

export interface DaemonOptions {
  /** Merged over the harness's daemon environment (HOME = the temporary folder, then `daemonEnv`). */
  readonly env?: NodeJS.ProcessEnv;
}

/** A ledger record as `teamd log --json` prints it. */
export interface LogRecord {
  type: string;
  action: string;
  seq: number;
  [key: string]: unknown;
}

export interface TeamdHarness {
  readonly tmp: { dir: string; remove(): Promise<void> };
  /** The temporary folder (also HOME for the CLI and the daemon). */
  readonly dir: string;
  readonly repo: string;
  readonly home: string;
  readonly ownerKey: string;
  /** The team's hub, `TEAMD_HOME/hubs/<team>.git`. */
  readonly hub: string;
  /** The environment every run gets: TEAMD_HOME, TEAMD_OWNER_KEY, HOME. */
  readonly env: NodeJS.ProcessEnv;
  /** The daemon started last (undefined before the first start and after `stopDaemon`). */
  readonly daemon: DaemonProcess | undefined;
  /** `teamd ARGS` to completion: its exit code and output. */
  run(args: readonly string[], options?: TeamdRunOptions): Promise<RunResult>;
  /** `teamd ARGS`, expecting its exit code (0 unless `options.code`): its stdout. */
  ok(args: readonly string[], options?: TeamdRunOptions): Promise<string>;
  /** `ok`, its stdout parsed as JSON (the caller adds `--json` where the command needs it). */
  json<T = unknown>(args: readonly string[], options?: TeamdRunOptions): Promise<T>;
  /** `teamd log --json EXTRA`, expecting exit 0: the records. */
  records<T = LogRecord>(...extra: string[]): Promise<T[]>;
  /** `teamd exec SEAT@TEAM -- ARGV`. */
  exec(seat: string, argv: readonly string[], options?: TeamdRunOptions): Promise<RunResult>;
  /** `teamd-shim ARGS` inside a seat. */
  shim(seat: string, ...args: string[]): Promise<RunResult>;
  /** A shell script inside a seat, in its repository. */
  sh(seat: string, script: string): Promise<RunResult>;
  /** `sh`, with a commit identity first (`SEAT`, `SEAT@seat.invalid`). */
  inSeat(seat: string, script: string): Promise<RunResult>;
  /** git on the team's hub: trimmed stdout, or a thrown error. */
  hubGit(...args: string[]): string;
  /** The hub's ref `ref` (its object id), or undefined where there is none. */
  hubRef(ref: string): string | undefined;
  /** A seat's socket: under `seat-sockets/` in system mode (as root), `run/seats/` otherwise. */
  seatSocket(seat: string): string;
  /** Start `teamd serve` on the harness's home and wait for its ready line. */
  startDaemon(options?: DaemonOptions): Promise<DaemonProcess>;
  /** Rename the ledger's database away (a store that is gone), until `ledgerBack` (or cleanup) puts it back. */
  ledgerAway(): void;
  ledgerBack(): void;
  /** Stop the current daemon (if any); its exit code. */
  stopDaemon(): Promise<number | null | undefined>;
  /**
   * Put the ledger back if it is away, `teamd stop --team proj` while the current daemon runs,
   * stop every daemon this harness started that still runs (SIGCONT first: a test may have
   * frozen it), then remove the folder.
   */
  cleanup(): Promise<void>;
}

export interface HarnessOptions {
  /** The repository's files (default: a README). */
  readonly files?: Record<string, string>;
  /** Default 60 s. */
  readonly timeoutMs?: number;
  /** Added to every daemon's environment. */
  readonly daemonEnv?: NodeJS.ProcessEnv;
  /** Told of every run's result (tests that search everything the run produced). */
  readonly onResult?: (result: RunResult) => void;
  /** The owner's uid and gid for every run and daemon (tests running as root use it to be an ordinary owner). */
  readonly owner?: Pick<RunAs, "uid" | "gid">;
}

const TEAM = "proj";

/**
 * A temporary folder (opened to traversal, 0711, as root: in system mode the seat user must
 * reach its folders under it) with a repository `proj`; no daemon yet. Files a test wants in
 * TEAMD_HOME before the daemon starts are written between this and `startDaemon`.
 */
export async function createHarness(prefix: string, options: HarnessOptions = {}): Promise<TeamdHarness> {
  const tmp = await makeTempHome(prefix);
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chmodSync(tmp.dir, 0o711);
  const repo = makeRepo(tmp.dir, TEAM, options.files);
  const home = join(tmp.dir, "home");
  const ownerKey = join(tmp.dir, "keys/owner.key");
  const hub = join(home, `hubs/${TEAM}.git`);
  const env: NodeJS.ProcessEnv = { TEAMD_HOME: home, TEAMD_OWNER_KEY: ownerKey, HOME: tmp.dir };
  const defaultTimeout = options.timeoutMs ?? 60_000;
  const started: DaemonProcess[] = [];
  const ledgerDb = join(home, "ledger/ledger.db");
  let ledgerIsAway = false;
  let current: DaemonProcess | undefined;

  const runTeamd = async (args: readonly string[], o: TeamdRunOptions = {}): Promise<RunResult> => {
    const as: RunAs = { ...options.owner, cwd: o.cwd ?? repo, ...(o.input !== undefined ? { input: o.input } : {}) };
    const result = await run(TEAMD, args, { ...env, ...o.env }, o.timeoutMs ?? defaultTimeout, as);
    options.onResult?.(result);
    return result;
  };
  const ok = async (args: readonly string[], o: TeamdRunOptions = {}): Promise<string> => {
    const r = await runTeamd(args, o);
    expect(r.code, `teamd ${args.join(" ")}: ${r.stderr}${r.stdout}`).toBe(o.code ?? 0);
    return r.stdout;
  };
  const running = (d: DaemonProcess) => d.child.exitCode === null && d.child.signalCode === null;

  const harness: TeamdHarness = {
    tmp,
    dir: tmp.dir,
    repo,
    home,
    ownerKey,
    hub,
    env,
    get daemon() {
      return current;
    },
    run: runTeamd,
    ok,
    json: async <T>(args: readonly string[], o?: TeamdRunOptions) => JSON.parse(await ok(args, o)) as T,
    records: async <T>(...extra: string[]) => {
      const out = (await ok(["log", "--json", ...extra])).trim();
      return out === "" ? [] : out.split("\n").map((l) => JSON.parse(l) as T);
    },
    exec: (seat, argv, o) => runTeamd(["exec", `${seat}@${TEAM}`, "--", ...argv], o),
    shim: (seat, ...args) => harness.exec(seat, ["teamd-shim", ...args]),
    sh: (seat, script) => harness.exec(seat, ["sh", "-c", script]),
    inSeat: (seat, script) => harness.sh(seat, `git config user.name ${seat} && git config user.email ${seat}@seat.invalid && ${script}`),
    hubGit: (...args) => execFileSync("git", ["--git-dir", hub, ...args], { encoding: "utf8" }).trim(),
    hubRef: (ref) => {
      try {
        return execFileSync("git", ["--git-dir", hub, "rev-parse", "--verify", "--quiet", ref], {
          encoding: "utf8",
          stdio: ["ignore", "pipe", "ignore"],
        }).trim();
      } catch {
        return undefined;
      }
    },
    seatSocket: (seat) => join(home, asRoot ? `seat-sockets/${TEAM}.${seat}.sock` : `run/seats/${TEAM}.${seat}.sock`),
    async startDaemon(o: DaemonOptions = {}) {
      current = await startDaemon(home, [], 15_000, { HOME: tmp.dir, ...options.daemonEnv, ...o.env }, options.owner);
      started.push(current);
      return current;
    },
    ledgerAway() {
      renameSync(ledgerDb, `${ledgerDb}.away`);
      ledgerIsAway = true;
    },
    ledgerBack() {
      renameSync(`${ledgerDb}.away`, ledgerDb);
      ledgerIsAway = false;
    },
    async stopDaemon() {
      const d = current;
      current = undefined;
      return d?.stop();
    },
    async cleanup() {
      try {
        if (ledgerIsAway) harness.ledgerBack();
        for (const d of started) if (running(d) && d.child.pid !== undefined) process.kill(d.child.pid, "SIGCONT");
        // The team's seats first, while the daemon that started them runs; what it answers is not the test's.
        if (current && running(current)) await runTeamd(["stop", "--team", TEAM], { timeoutMs: 20_000 });
        for (const d of started) if (running(d)) await d.stop();
      } finally {
        current = undefined;
        await tmp.remove();
      }
    },
  };
  return harness;
}

/**
 * `createHarness`, a daemon started and `teamd init --yes --json` run (expected to succeed):
 * a registered team with no policy applied. On a failure the daemon is stopped and the folder
 * removed before the error is thrown.
 */
export async function initTeam(prefix: string, options: HarnessOptions = {}): Promise<TeamdHarness> {
  const h = await createHarness(prefix, options);
  try {
    await h.startDaemon();
    await h.ok(["init", "--yes", "--json"]);
  } catch (error) {
    await h.cleanup();
    throw error;
  }
  return h;
}

/** The harness's `teamd` exited 3 with `refused by RULE` on stderr; the result, for more checks. */
export async function expectRefused(result: RunResult | Promise<RunResult>, rule: string): Promise<RunResult> {
  const r = await result;
  expect(r.code, r.stdout + r.stderr).toBe(3);
  expect(r.stderr).toContain(`refused by ${rule}`);
  return r;
}
