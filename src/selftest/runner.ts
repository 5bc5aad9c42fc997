import { connect } from "node:net";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import { createSeatCgroup, readCgroupFacts, type SeatCgroup } from "../sandbox/cgroup-host.js";
import { planCgroups } from "../sandbox/cgroup-plan.js";
import type { Limits } from "../sandbox/plan-types.js";
import { balloonScript, batchScript, CORPUS, fanOutScript, HELPERS, parseProbeLines, type Attack, type Facts, type Probe } from "./corpus.js";
import { KEYRING_PROBE, NET_PROBE, PTRACE_PROBE } from "./probes.js";
import { SECCOMP_PROBE } from "./seccomp-probe.js";
import { createWorld, type LiveSeat, type SeatRun, type World, type WorldUser } from "./world.js";

/**
 * One run of the corpus on this machine: a throwaway world (world.ts), the batch attacks in one
 * seat with the real plan and filter and their controls in one control seat, the keyring between a
 * control seat and a peer, the limits in two seats with cgroups of their own where this host gives
 * seats cgroups — all at once, bounded by one deadline — then every attack judged. Nothing is left:
 * the world removes itself, and the cgroups are removed (what could not be is reported as left).
 *
 * `fault` breaks one defence of the main seat on purpose (the seccomp filter withheld, or the host
 * socket's mask dropped) so a test can see the matching attack fail. It can only make a run fail:
 * it changes the selftest's own seat, never a plan `teamd start` builds. The command refuses it
 * outside the test harness (daemon/commands/selftest.ts).
 */
export type Fault = "seccomp" | "host-socket";
export const FAULTS: readonly Fault[] = ["seccomp", "host-socket"];

export type Outcome = "held" | "broken" | "unproven" | "not-here";

export interface AttackResult {
  readonly id: string;
  readonly rows: readonly string[];
  readonly claim: string;
  readonly tried: string;
  readonly control: string;
  readonly outcome: Outcome;
  readonly detail: string;
  /** not-here: the documentation itself says this holds only where (e.g. "where the seat has its own cgroups"). */
  readonly documentedCondition?: string;
  readonly fix?: string;
}

export interface RunOptions {
  /** The host uid/gid the seats run as (never 0). */
  readonly user: WorldUser;
  readonly fault?: Fault;
  /** Attack ids or row ids to run (default: all). */
  readonly only?: readonly string[];
  /** The whole run's bound (default 50 s): a seat still running then is killed and its attacks are unproven. */
  readonly deadlineMs?: number;
}

export interface RunResult {
  readonly attacks: readonly AttackResult[];
  /** What could not be removed (a folder, a cgroup): the caller reports it. */
  readonly leftovers: readonly string[];
}

const PYTHON = "/usr/bin/python3";

/** The attacks `only` selects (every attack when empty): by attack id or by row id. */
export function selectAttacks(only: readonly string[] | undefined): Attack[] {
  if (only === undefined || only.length === 0) return [...CORPUS];
  return CORPUS.filter((a) => only.includes(a.id) || a.rows.some((r) => only.includes(r)));
}

export async function runCorpus(options: RunOptions): Promise<RunResult> {
  const attacks = selectAttacks(options.only);
  const deadline = Date.now() + (options.deadlineMs ?? 50_000);
  const remaining = () => Math.max(1_000, deadline - Date.now());
  const results = new Map<string, AttackResult>();
  const settle = (a: Attack, outcome: Outcome, detail: string, extra: Partial<AttackResult> = {}) =>
    results.set(a.id, { id: a.id, rows: a.rows, claim: a.claim, tried: a.tried, control: a.control, outcome, detail, ...extra });

  // What this host cannot run, decided before any seat.
  const python = existsSync(PYTHON);
  const runnable: Attack[] = [];
  for (const a of attacks) {
    if ((a.requires === "python3" || a.requires === "python3-x86_64") && !python) {
      settle(a, "unproven", `${PYTHON} is not installed: the probe cannot run`, { fix: "install python3 (the selftest's raw-syscall probes use its ctypes)" });
    } else if (a.requires === "python3-x86_64" && process.arch !== "x64") {
      settle(a, "not-here", `the filter is built for ${process.arch} but never attacked there`, {
        documentedCondition: "docs/enforcement.md claims A on x86_64 only (aarch64: M)",
      });
    } else runnable.push(a);
  }
  const limitsWanted = runnable.filter((a) => a.kind === "limits");
  const cgroupKey = `st${randomBytes(4).toString("hex")}`;
  const limited: Limits = { processes: 32, memoryBytes: 96 * 1024 ** 2 };
  const decided = limitsWanted.length
    ? planCgroups(await readCgroupFacts(), { home: cgroupKey, team: "selftest", seat: "limited", run: cgroupKey }, limited)
    : undefined;
  if (decided?.kind === "none") {
    for (const a of limitsWanted.splice(0)) {
      settle(a, "not-here", `no cgroup of its own for a seat here: ${decided.reason}; limits fall back to rlimits (partial)`, {
        documentedCondition: "docs/enforcement.md claims A for limits only where the seat has its own cgroups (the daemon as root, or a delegated subtree)",
        fix: "run teamd as root (system mode), or give it a delegated cgroup v2 subtree (systemd: Delegate=yes)",
      });
      runnable.splice(runnable.indexOf(a), 1);
    }
  }

  const leftovers: string[] = [];
  const cgroups: SeatCgroup[] = [];
  const world = await createWorld(options.user);
  const canaryVar = "TEAMD_SELFTEST_CANARY";
  const hadCanary = process.env[canaryVar];
  process.env[canaryVar] = world.canary; // the daemon's stand-in carries the canary too
  try {
    const facts: Facts = { ...world, selftestPid: process.pid, node: process.execPath };
    await world.put(HELPERS.net, NET_PROBE);
    await world.put(HELPERS.ptrace, PTRACE_PROBE);
    await world.put(HELPERS.keyring, KEYRING_PROBE);
    await world.put(HELPERS.seccomp, SECCOMP_PROBE);
    const host: Probe = {
      shared: await hostConnect(world.sharedSocket),
      outside: await hostConnect(world.outsideSocket),
      abstract: await hostConnect(`\0${world.abstractName}`),
      loopback: await hostConnect({ host: "127.0.0.1", port: world.loopbackPort }),
    };

    const batch = runnable.filter((a) => a.kind === "batch");
    const keyring = runnable.find((a) => a.kind === "keyring");
    const production = await world.plan(options.fault === "host-socket" ? "unmasked" : "production");
    const unmasked = await world.plan("unmasked");
    const sh = (script: string) => ["/bin/sh", "-c", script];
    const keyringMain = keyring
      ? `\n${PYTHON} ${join(world.tmp, HELPERS.keyring)} put ${world.canary}-main; ${PYTHON} ${join(world.tmp, HELPERS.keyring)} get\n`
      : "";
    const release = join(world.tmp, "keyring.release");
    const keyringControl = keyring ? `${PYTHON} ${join(world.tmp, HELPERS.keyring)} put ${world.canary}-key ${release} &\n` : "";

    const seats: Promise<void>[] = [];
    const lines = {
      main: new Map<string, Record<string, string>>(),
      control: new Map<string, Record<string, string>>(),
      peer: new Map<string, Record<string, string>>(),
    };
    const ended: Record<string, SeatRun | undefined> = {};
    const collect = (name: keyof typeof lines, seat: LiveSeat) =>
      seat.done.then((run) => {
        ended[name] = run;
        lines[name] = parseProbeLines(run.stdout);
      });

    const main = await world.launch(production, sh(batchScript(batch, facts, "main") + keyringMain), {
      filtered: options.fault !== "seccomp",
      timeoutMs: remaining(),
    });
    seats.push(collect("main", main));
    const control = await world.launch(unmasked, sh(keyringControl + batchScript(batch, facts, "control") + (keyring ? `wait\n` : "")), {
      filtered: false,
      timeoutMs: remaining(),
    });
    seats.push(collect("control", control));
    if (keyring) {
      seats.push(
        (async () => {
          const put = await control.waitFor(/^@keyring put=/);
          try {
            if (put === "@keyring put=ok") {
              const peer = await world.launch(unmasked, [PYTHON, join(world.tmp, HELPERS.keyring), "get"], { filtered: false, timeoutMs: remaining() });
              await collect("peer", peer);
            }
          } finally {
            await writeFile(release, "");
          }
        })(),
      );
    }
    const limits = new Map<string, Probe>();
    const limitsControl = new Map<string, Probe>();
    if (limitsWanted.length && decided?.kind === "cgroup") {
      const unlimitedPlan = planCgroups(await readCgroupFacts(), { home: cgroupKey, team: "selftest", seat: "unlimited", run: cgroupKey }, "none");
      if (unlimitedPlan.kind !== "cgroup") throw new Error(`the control seat's cgroup: ${unlimitedPlan.reason}`);
      const withLimit = await createSeatCgroup(decided.plan);
      cgroups.push(withLimit);
      const without = await createSeatCgroup(unlimitedPlan.plan);
      cgroups.push(without);
      const missing = limitsWanted.filter((a) => !withLimit.byCgroup.has(a.id === "limits-processes" ? "processes" : "memoryBytes"));
      for (const a of missing) {
        settle(a, "not-here", `this host's cgroups carry no ${a.id === "limits-processes" ? "pids" : "memory"} controller for a seat (${withLimit.summary})`, {
          documentedCondition: "docs/enforcement.md claims A for limits only where the seat's cgroups carry them",
          fix: "mount the missing controller (v1) or enable it in teamd's v2 subtree",
        });
      }
      const limitScript = `${balloonScript(facts.node)}; ${fanOutScript()}; sleep 5`;
      for (const [cg, into, seatLimits] of [
        [withLimit, limits, limited],
        [without, limitsControl, "none"],
      ] as const) {
        const plan = await world.plan("production", seatLimits);
        const seat = await world.launch(plan, sh(limitScript), { filtered: true, timeoutMs: remaining(), cgroup: cg });
        seats.push(
          (async () => {
            await seat.waitFor(/^@limits-processes spawned=/);
            const pidsFile = cg.plan.meter.processes?.file;
            const probe: Record<string, string> = {};
            if (pidsFile !== undefined) {
              const read = (name: string) => readFile(join(dirname(pidsFile), name), "utf8").catch(() => "");
              const current = Number((await read("pids.current")).trim() || 0);
              const peak = Number((await read("pids.peak")).trim() || 0);
              probe.peak = String(Math.max(current, peak));
              probe.refused = /max (\d+)/.exec(await read("pids.events"))?.[1] ?? "0";
            }
            seat.process.kill();
            const run = await seat.done;
            const memory = parseProbeLines(run.stdout).get("limits-memory") ?? {};
            probe.status = memory.status ?? "?";
            probe.chunks = String([...run.stdout.matchAll(/^@limits-memory chunk=\d+$/gm)].length);
            into.set("all", probe);
          })(),
        );
      }
    }

    await Promise.all(seats);

    for (const a of runnable) {
      if (results.has(a.id)) continue;
      let evidence: { main: Probe; control: Probe };
      if (a.kind === "batch") evidence = { main: lines.main.get(a.id) ?? {}, control: lines.control.get(a.id) ?? {} };
      else if (a.kind === "keyring")
        evidence = { main: lines.main.get("keyring") ?? {}, control: { ...(lines.control.get("keyring") ?? {}), ...(lines.peer.get("keyring") ?? {}) } };
      else evidence = { main: limits.get("all") ?? {}, control: limitsControl.get("all") ?? {} };
      const cutShort = ["main", "control"].filter((n) => ended[n]?.timedOut).map((n) => `the ${n} seat was cut short at the deadline`);
      const judged = a.judge({ facts, host, ...evidence });
      if (!judged.controlOk)
        settle(
          a,
          "unproven",
          `the control did not succeed, so the attack proves nothing: ${judged.detail}${cutShort.length ? `; ${cutShort.join(", ")}` : ""}`,
        );
      else settle(a, judged.held ? "held" : "broken", judged.detail);
    }
  } finally {
    if (hadCanary === undefined) delete process.env[canaryVar];
    else process.env[canaryVar] = hadCanary;
    leftovers.push(...(await world.close()));
    for (const cg of cgroups) leftovers.push(...(await cg.remove(5_000)));
  }
  return { attacks: attacks.map((a) => results.get(a.id) as AttackResult), leftovers };
}

function hostConnect(address: string | { host: string; port: number }): Promise<string> {
  return new Promise((resolve) => {
    const socket = typeof address === "string" ? connect(address) : connect(address.port, address.host);
    let data = "";
    socket.setTimeout(3_000, () => socket.destroy(new Error("TIMEOUT")));
    socket
      .on("data", (d) => (data += String(d)))
      .on("end", () => resolve(data.split("\n")[0] ?? ""))
      .on("error", (e: NodeJS.ErrnoException) => resolve(`error ${e.code ?? e.message}`));
  });
}

export type { World };
