import { ControlService, type SelftestStanding, type StatusResponse } from "../../src/gen/teamd/v1/control_pb.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { DaemonUnavailableError } from "../../src/rpc/errors.js";
import { EXIT } from "../../src/rpc/cli-outcome.js";
import type { SelftestSummary } from "../host/selftest-record.js";
import { resolveHome } from "../host/home.js";
import type { Ambient } from "../host/ambient.js";
import { terminalJson, terminalLines } from "../host/terminal-text.js";
import type { TeamdHome } from "../host/home.js";
import type { RunMeta } from "../host/run-logs.js";
import { lastPlainLines } from "../host/plain-text.js";
import { describeRunEnd } from "../host/run-state.js";
import { START_CHANGED_REMOVED } from "../../src/rpc/protocol.js";

/**
 * `teamd status`: what the daemon serves, from the control socket — the daemon, the ledger's
 * head, the owner's stops in force, each team (its policy in force against the file on disk,
 * leads, live leases) and each seat. `--json` prints one object whose shape is documented in
 * docs/status.md and versioned by its `schema` field: fields are only ever added.
 */

export const STATUS_SCHEMA = "teamd.status/1";

type Seat = StatusResponse["seats"][number];
type Team = StatusResponse["teams"][number];

/** A seat that is not running, with how its last run stands (from TEAMD_HOME/logs: daemon/host/run-logs.ts). */
export interface LastRun {
  readonly team: string;
  readonly seat: string;
  readonly run: RunMeta;
  /** Its output's last lines, plain. */
  readonly lastLines: readonly string[];
}

const LAST_LINES = 3;
const LAST_LINES_BYTES = 64 * 1024;

/** The last run of every seat of the teams shown that is not running now. */
export async function lastRuns(home: TeamdHome, reply: StatusResponse): Promise<LastRun[]> {
  const running = new Set(reply.seats.map((s) => `${s.team}/${s.seat}`));
  const out: LastRun[] = [];
  for (const team of reply.teams) {
    for (const seat of team.seats) {
      if (running.has(`${team.team}/${seat}`)) continue;
      // Imported for a seat that is not running only (its node:fs/promises is ~1 ms of a status).
      const { listRuns, runTail } = await import("../host/run-logs.js");
      const run = (await listRuns(home, team.team, seat)).at(-1);
      if (run === undefined) continue;
      // The tail only: a status is quick whatever a seat left in its 16 MiB of log.
      const lastLines = lastPlainLines(await runTail(home, team.team, seat, run.runId, LAST_LINES_BYTES), LAST_LINES).map((l) =>
        l.length > 160 ? `${l.slice(0, 160)}…` : l,
      );
      out.push({ team: team.team, seat, run, lastLines });
    }
  }
  return out;
}

function runWords(run: RunMeta): string {
  if (run.state === "ended" || run.state === "stopped" || run.state === "crashed" || run.state === "suspended") {
    return describeRunEnd({
      state: run.state,
      reason: run.reason ?? "",
      ...(run.exitCode !== undefined ? { exitCode: run.exitCode } : {}),
      ...(run.stoppedBy !== undefined ? { stoppedBy: run.stoppedBy } : {}),
    });
  }
  return run.state;
}

/** The stable JSON shape (docs/status.md). */
export function statusJson(
  reply: StatusResponse,
  unseen: number | undefined,
  last: readonly LastRun[] = [],
  selftest?: SelftestSummary,
): Record<string, unknown> {
  const ledger = reply.ledger;
  return {
    schema: STATUS_SCHEMA,
    ...(selftest !== undefined ? { selftest } : {}),
    daemon: { running: true, protocol: reply.daemon?.protocol, version: reply.daemon?.program, instance: reply.daemonInstance, pid: reply.pid },
    mode: reply.mode,
    home: reply.home,
    ledger:
      ledger === undefined
        ? null
        : {
            state: ledger.state,
            rule: ledger.rule,
            reason: ledger.reason,
            headSeq: Number(ledger.headSeq),
            headHash: ledger.headHash,
            verified: ledger.verified,
          },
    stopped: reply.stops.length > 0,
    stops: reply.stops.map((s) => ({ flagId: s.flagId, scope: s.scope, team: s.team, recordedSeq: Number(s.recordedSeq) })),
    notices: { unseen: unseen ?? null },
    teams: reply.teams.map(teamJson),
    seats: reply.seats.map(seatJson),
    lastRuns: last.map((l) => ({
      team: l.team,
      seat: l.seat,
      runId: l.run.runId,
      state: l.run.state,
      ...(l.run.exitCode !== undefined ? { exitCode: l.run.exitCode } : {}),
      ...(l.run.stoppedBy !== undefined ? { stoppedBy: l.run.stoppedBy } : {}),
      reason: l.run.reason ?? null,
      startedAt: l.run.startedAt,
      endedAt: l.run.endedAt ?? null,
      lastLines: l.lastLines,
    })),
  };
}

function teamJson(t: Team): Record<string, unknown> {
  return {
    team: t.team,
    repository: t.repository,
    hub: t.hub,
    policy: t.policySeq === 0n ? null : { seq: Number(t.policySeq), hash: t.policyHash },
    teamFile: { state: t.teamFile, detail: t.teamFileDetail },
    delegatedChanges: t.delegatedChanges,
    // A team a seat created (§10): its parent and the creating seat; null for the owner's teams.
    createdBy: t.parent === "" ? null : { parent: t.parent, seat: t.createdBy },
    policyProblem: t.policyProblem,
    leads: t.leads === "" ? null : t.leads,
    seats: [...t.seats],
    liveLeases: t.liveLeases,
    review: t.reviewMode === "" ? null : { mode: t.reviewMode, floor: t.reviewFloor },
    // The unattended runtime (§8): null when the ceiling sets none; leftMs at most 0: paused.
    runtime: t.runtimeMs === 0n ? null : { limitMs: Number(t.runtimeMs), leftMs: Math.max(0, Number(t.runtimeLeftMs)), paused: t.runtimeLeftMs <= 0n },
    // The resource envelope per lab (§8): null for a dimension the ceiling does not cap.
    envelope: t.envelope.map((e) => ({
      lab: e.lab,
      seats: e.seatsCapped ? { cap: e.seatsCap, live: e.seatsLive, left: Math.max(0, e.seatsCap - e.seatsLive) } : null,
      visibility: e.visibilityCapped ? [...e.visibility] : null,
    })),
    // The spend envelope (§8), in the currency's minor units: null when the ceiling sets none. A soft bound.
    spend: t.spend === undefined ? null : spendJson(t.spend),
  };
}

function spendJson(s: NonNullable<Team["spend"]>): Record<string, unknown> {
  return {
    currency: s.currency,
    period: { start: new Date(Number(s.periodStartUnixMs)).toISOString(), end: new Date(Number(s.periodEndUnixMs)).toISOString() },
    limit: Number(s.limit),
    reported: Number(s.reported),
    reserved: Number(s.reserved),
    remainder: Number(s.remainder),
    overage: Number(s.overage),
    perDispatch: Number(s.perDispatch),
    soft: true,
    labs: s.labs.map((l) => ({
      lab: l.lab,
      limit: l.limited ? Number(l.limit) : null,
      reported: Number(l.reported),
      reserved: Number(l.reserved),
      remainder: Number(l.remainder),
      meter: l.meter,
      meters: l.meters.map((m) => ({
        name: m.name,
        at: m.atUnixMs === 0n ? null : new Date(Number(m.atUnixMs)).toISOString(),
        error: m.error === "" ? null : m.error,
      })),
    })),
  };
}

/** An amount in minor units, for a person: "USD 12.50". */
function money(minor: bigint, currency: string): string {
  const n = Number(minor);
  const abs = Math.abs(n);
  return `${n < 0 ? "-" : ""}${currency} ${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}

function seatJson(s: Seat): Record<string, unknown> {
  return {
    team: s.team,
    seat: s.seat,
    lab: s.lab === "" ? null : s.lab,
    socket: s.socket,
    state: s.state,
    initPid: s.initPid,
    runId: s.runId,
    startedAt: s.startedAt,
    limits: s.limits,
    repository: s.repository,
    uid: s.uid,
    containment: s.containment,
    cgroup: s.cgroup,
    cpuMs: Number(s.cpuMs),
    memoryBytes: Number(s.memoryBytes),
    meteredBy: s.meteredBy,
    frozen: s.frozen,
    startChanged: s.startChanged === "" ? null : s.startChanged,
  };
}

function uptime(startedAt: string, now: number): string {
  const started = Date.parse(startedAt);
  if (Number.isNaN(started)) return "-";
  const seconds = Math.max(0, Math.round((now - started) / 1000));
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  return `${Math.round(seconds / 3600)}h`;
}

const TEAM_FILE_WORDS: Record<string, string> = {
  "in-force": "the file on disk is in force",
  differs: "the file on disk differs from the policy in force",
  delegated: "the policy in force holds delegated grants your file does not say",
  missing: "no team file on disk",
  invalid: "the file on disk does not load",
  unapplied: "no policy applied yet",
};

/** The table for a terminal. */
export function statusText(reply: StatusResponse, unseen: number | undefined, now: number, last: readonly LastRun[] = [], selftest?: SelftestSummary): string {
  const ledger = reply.ledger;
  const lines = [`teamd ${reply.daemon?.program} (protocol ${reply.daemon?.protocol}), pid ${reply.pid}, ${reply.mode} mode`, `home: ${reply.home}`];
  if (selftest !== undefined)
    lines.push(
      selftest.standing === "passed"
        ? `containment: proven on this host by teamd selftest (${selftest.at})`
        : selftest.standing === "failed"
          ? `containment: BROKEN on this host — ${selftest.reason}`
          : `containment: unproven — ${selftest.reason?.replace(/^containment is unproven on this host: /, "")}`,
    );
  if (ledger === undefined || ledger.state === "absent") lines.push("ledger: none yet (teamd init)");
  else if (ledger.state === "ready") lines.push(`ledger: ready, head ${ledger.headSeq} verified`);
  else lines.push(`ledger: ${ledger.state}${ledger.rule ? ` (${ledger.rule})` : ""}, head ${ledger.headSeq}: ${ledger.reason}`);
  if (reply.stops.length === 0) lines.push("stop: none");
  for (const s of reply.stops) {
    const what =
      s.scope === "machine"
        ? "STOPPED: every team on this machine"
        : s.scope === "team"
          ? `STOPPED: team ${s.team}`
          : `STOPPED: a flag that does not verify (${s.flagId})`;
    lines.push(`${what}${s.recordedSeq === 0n ? " (not yet recorded)" : ` (record ${s.recordedSeq})`}; teamd resume lifts it`);
  }
  lines.push(unseen === undefined ? "notices: no ledger" : unseen === 0 ? "notices: none new" : `notices: ${unseen} not yet seen (teamd notices)`);
  lines.push(reply.teams.length === 0 ? "teams: none (teamd init in a repository)" : "teams:");
  for (const t of reply.teams) {
    lines.push(
      `  ${t.team}  ${t.repository}${t.parent !== "" ? `  (created by ${t.createdBy}@${t.parent}; its policy is that seat's act until you apply its file)` : ""}`,
    );
    lines.push(
      `    policy: ${t.policySeq === 0n ? "none applied" : `record ${t.policySeq} ${t.policyHash.slice(0, 19)}…`}; ${TEAM_FILE_WORDS[t.teamFile] ?? t.teamFile}${t.teamFileDetail && t.teamFile !== "differs" ? ` (${t.teamFileDetail})` : ""}`,
    );
    if (t.policyProblem) lines.push(`    policy cannot be read: ${t.policyProblem}`);
    if (t.policySeq !== 0n)
      lines.push(
        `    seats: ${t.seats.join(", ") || "none"}; leads: ${t.leads || "none"}; live leases: ${t.liveLeases}${t.reviewMode ? `; review: ${t.reviewMode}, floor ${t.reviewFloor}` : ""}`,
      );
    const envelope = t.envelope.flatMap((e) => [
      ...(e.seatsCapped ? [`${e.lab} seats ${e.seatsLive} of ${e.seatsCap} live (${Math.max(0, e.seatsCap - e.seatsLive)} left)`] : []),
      ...(e.visibilityCapped ? [`${e.lab} sees ${e.visibility.join(", ") || "nothing"}`] : []),
    ]);
    if (t.runtimeMs !== 0n)
      envelope.unshift(
        t.runtimeLeftMs <= 0n
          ? `runtime spent: PAUSED (teamd renew --team ${t.team})`
          : `runtime ${Math.ceil(Number(t.runtimeLeftMs) / 1000)} s left of ${Math.round(Number(t.runtimeMs) / 1000)} s`,
      );
    if (envelope.length > 0) lines.push(`    envelope: ${envelope.join("; ")}`);
    const spend = t.spend;
    if (spend !== undefined) {
      const c = spend.currency;
      lines.push(
        `    spend (a soft bound: counted from meter reports): ${money(spend.remainder, c)} left of ${money(spend.limit, c)} this period (reported ${money(spend.reported, c)}, reserved ${money(spend.reserved, c)}${spend.overage > 0n ? `, OVER BY ${money(spend.overage, c)}` : ""}); each launch reserves ${money(spend.perDispatch, c)}`,
      );
      for (const l of spend.labs)
        lines.push(
          `      ${l.lab}: ${l.meter === "fresh" ? `${money(l.remainder, c)} left` : `usage ${l.meter.toUpperCase()}: counted as spent, launches refused`}${l.limited ? ` (cap ${money(l.limit, c)})` : ""}; meters: ${
            l.meters.map((m) => `${m.name}${m.error ? ` failing: ${m.error}` : m.atUnixMs === 0n ? " (no report yet)" : ""}`).join(", ") ||
            "none (configure one in TEAMD_HOME/meters.json)"
          }`,
        );
    }
  }
  lines.push(reply.seats.length === 0 ? "seats running: none" : "seats running:");
  for (const s of reply.seats) {
    lines.push(
      s.state === "socket" || s.state === ""
        ? `  ${s.seat}@${s.team}  socket only  ${s.socket}`
        : s.state.startsWith("halted")
          ? `  ${s.seat}@${s.team}  ${s.state}  (run ${s.runId} was stopped by teamd; teamd log shows why; teamd start ${s.seat}@${s.team} runs it again)`
          : s.state === "restarting"
            ? `  ${s.seat}@${s.team}  restarting  (its run ${s.runId} ended by itself and start.restart brings it back; teamd stop ${s.seat}@${s.team} ends the retries)`
            : `  ${s.seat}@${s.team}  ${s.state}${s.state === "paused" ? ` (runtime spent: teamd renew --team ${s.team})` : s.frozen ? " (FROZEN: teamd thaw)" : ""}  up ${uptime(s.startedAt, now)}  init pid ${s.initPid}  uid ${s.uid}  containment: ${s.containment === "none" ? "none (M)" : "bwrap (A: escape suite)"}`,
    );
    if (s.state !== "socket" && s.state !== "" && s.state !== "restarting" && !s.state.startsWith("halted")) {
      const cgroup = s.cgroup && !s.limits.includes(s.cgroup) ? `; cgroup: ${s.cgroup}` : "";
      lines.push(
        `      limits: ${s.limits}${cgroup}; cpu ${s.cpuMs} ms, memory ${(Number(s.memoryBytes) / 2 ** 20).toFixed(1)} MiB (${s.meteredBy || "not metered"})`,
      );
      if (s.startChanged === START_CHANGED_REMOVED) lines.push(`      REMOVED: ${s.startChanged}; it runs until teamd stop ${s.seat}@${s.team}`);
      else if (s.startChanged !== "")
        lines.push(`      RESTART NEEDED: ${s.startChanged}; it runs the start it had: teamd stop ${s.seat}@${s.team} && teamd start ${s.seat}@${s.team}`);
    }
  }
  if (last.length > 0) lines.push("seats not running (their last run; teamd logs SEAT shows its output):");
  for (const l of last) {
    const ended = l.run.endedAt !== undefined ? ` ${uptime(l.run.endedAt, now)} ago` : "";
    lines.push(`  ${l.seat}@${l.team}  ${runWords(l.run)}${ended}`);
    for (const line of l.lastLines) lines.push(`      | ${line}`);
  }
  return lines.join("\n") + "\n";
}

function fromDaemon(reply: StatusResponse, standing: SelftestStanding): { unseen: number | undefined; selftest: SelftestSummary } {
  const kind = standing.standing === "passed" || standing.standing === "failed" ? standing.standing : "unproven";
  return {
    unseen: reply.noticesUnseen,
    selftest: { standing: kind, ...(standing.at !== "" ? { at: standing.at } : {}), ...(kind !== "passed" ? { reason: standing.reason } : {}) },
  };
}

async function readHere(home: TeamdHome): Promise<{ unseen: number | undefined; selftest: SelftestSummary }> {
  const [{ unseenNotices }, { selftestSummary }] = await Promise.all([import("./notices.js"), import("../host/selftest-record.js")]);
  return { unseen: unseenNotices(home), selftest: selftestSummary(home) };
}

export async function status(options: { json?: boolean; socket?: string }, ambient: Ambient): Promise<void> {
  const home = resolveHome();
  const socket = options.socket ?? home.controlSocket;
  const client = createRpcClient(ControlService, socket, { deadlineMs: 5000 });
  try {
    let reply: StatusResponse;
    try {
      reply = await client.status();
    } catch (error) {
      if (!(error instanceof DaemonUnavailableError)) throw error;
      // Not an error of status: the daemon is simply not running. Say so, with the fix,
      // and exit "unavailable" so scripts can tell.
      if (options.json) process.stdout.write(JSON.stringify({ schema: STATUS_SCHEMA, daemon: { running: false, socket, reason: error.message } }) + "\n");
      else process.stdout.write(`teamd: the daemon is not running (${socket}): start it with teamd serve, or systemctl start teamd\n`);
      process.exitCode = EXIT.unavailable;
      return;
    }
    // The daemon counts the unseen notices and reads the last selftest (issue 26: no SQLite and
    // no bubblewrap in this process). A daemon that answers neither is older than this client:
    // then both are read here, as before — the ledger read-only, the seen mark beside it.
    const { unseen, selftest } = reply.selftest !== undefined ? fromDaemon(reply, reply.selftest) : await readHere(home);
    const last = await lastRuns(home, reply);
    // Line by line through the one renderer: a reason may quote what a seat sent.
    process.stdout.write(
      options.json
        ? terminalJson(JSON.stringify(statusJson(reply, unseen, last, selftest))) + "\n"
        : terminalLines(statusText(reply, unseen, ambient.now(), last, selftest)),
    );
  } finally {
    client.close();
  }
}
