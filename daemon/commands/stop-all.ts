import { ControlService } from "../../src/gen/teamd/v1/control_pb.js";
import { createFlags, LedgerRefusal, publicKeyFromRaw, signOwnerAct, stopDraft } from "../../src/ledger/index.js";
import { EXIT } from "../../src/rpc/cli-outcome.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { RefusalError } from "../../src/rpc/errors.js";
import { resolveHome } from "../host/home.js";
import { ledgerLayout, readPinnedOwnerKey } from "../host/ledger-host.js";
import { ownerKeyForAct } from "./owner-session.js";
import { killRegisteredSeats } from "../lifecycle/kill.js";
import type { Ambient } from "../host/ambient.js";

/**
 * `teamd stop --all`: the machine-wide stop (§11), built so that it holds when nothing else
 * works (§15). The CLI signs the stop and writes the owner-signed flag under TEAMD_HOME/flags
 * itself — from then on the daemon (this one, or any later one) refuses every start and owner
 * act but resume. Then it asks the daemon, within a short deadline, to stop every seat and
 * record the stop; whatever the answer, it reads the seat registry and kills any seat still
 * running itself (all of them, when the daemon is hung or dead). It exits 0 only when every
 * registered seat is down.
 */
const DAEMON_DEADLINE_MS = 2_000;
const KILL_WAIT_MS = 5_000;

function stoppedSeats(
  daemon: { answered: true; stopped: { team: string; seat: string }[] } | { answered: false },
  byCli: readonly { team: string; seat: string }[],
): { team: string; seat: string }[] {
  const seen = new Map<string, { team: string; seat: string }>();
  for (const s of [...(daemon.answered ? daemon.stopped : []), ...byCli]) seen.set(`${s.team}/${s.seat}`, { team: s.team, seat: s.seat });
  return [...seen.values()];
}

export async function stopAllCommand(options: { json?: boolean; team?: string; reason?: string }, ambient: Ambient): Promise<void> {
  const team = options.team;
  const what = team === undefined ? "stop --all" : `stop --team ${team}`;
  const home = resolveHome();
  const layout = ledgerLayout(home);
  const pinned = readPinnedOwnerKey(layout);
  if (pinned === undefined)
    throw new Error(`no owner key is pinned under ${layout.keysDir}: this TEAMD_HOME was never initialised (teamd init), so there is nothing to stop`);
  const key = await ownerKeyForAct();
  const act = await signOwnerAct(stopDraft({ ...(team !== undefined ? { team } : {}), reason: options.reason ?? `teamd ${what}` }), key.seed);
  let flagId: string;
  try {
    flagId = (await createFlags({ dir: layout.flagsDir, ownerKey: publicKeyFromRaw(pinned) }).raise(act)).id;
  } catch (error) {
    if (error instanceof LedgerRefusal) throw RefusalError.from(error.refusal);
    throw error;
  }

  const client = createRpcClient(ControlService, home.controlSocket, { deadlineMs: DAEMON_DEADLINE_MS });
  let daemon:
    | { answered: true; recorded: boolean; seq: number; reason: string; stopped: { team: string; seat: string; initPid: number }[] }
    | { answered: false; error: string };
  try {
    const reply = await client.stopAll({ act });
    daemon = {
      answered: true,
      recorded: reply.recorded,
      seq: Number(reply.seq),
      reason: reply.reason,
      stopped: reply.stopped.map((s) => ({ team: s.team, seat: s.seat, initPid: s.initPid })),
    };
  } catch (error) {
    daemon = { answered: false, error: error instanceof Error ? error.message : String(error) };
  } finally {
    client.close();
  }

  const kills = await killRegisteredSeats(home, KILL_WAIT_MS, ambient.now, team);
  const byCli = kills.filter((k) => k.outcome === "killed");
  // A seat the CLI could not inspect (another uid's) counts as still running: never a false "stopped".
  const alive = kills.filter((k) => k.outcome === "alive" || k.outcome === "unseen");
  const path = daemon.answered && byCli.length === 0 ? "daemon" : "cli";
  const list = (outcome: string) => alive.filter((k) => k.outcome === outcome).map((k) => `${k.seat}@${k.team} (init pid ${k.initPid})`);
  const problems = [
    ...(list("alive").length > 0 ? [`seat(s) still running after SIGKILL: ${list("alive").join(", ")}`] : []),
    ...(list("unseen").length > 0
      ? [
          `seat(s) this user may neither inspect nor signal (they run as the seat user): ${list("unseen").join(", ")} — run teamd ${what} as root; the daemon stops them as soon as it runs again`,
        ]
      : []),
  ];
  const problem =
    problems.length === 0
      ? undefined
      : `${problems.join("; ")}; the stop flag holds (no start, no ${team === undefined ? "owner act" : "gated act of the team"} but resume) — check with teamd status`;

  if (options.json) {
    process.stdout.write(
      JSON.stringify({
        // The machine's stop says whether every seat is down; a team's lists the seats it stopped (as a seat stop does) and holds.
        stopped: team === undefined ? alive.length === 0 : stoppedSeats(daemon, byCli),
        scope: team === undefined ? "machine" : "team",
        ...(team !== undefined ? { team, holds: true, allDown: alive.length === 0 } : {}),
        flagId,
        path,
        daemon,
        killedByCli: byCli,
        alive,
        ...(problem ? { problem } : {}),
      }) + "\n",
    );
    // One object for scripts: the exit code says it failed, the object says why.
    if (problem) process.exitCode = EXIT.failure;
    return;
  } else {
    const out: string[] = [
      team === undefined
        ? `stop --all: in force (flag ${flagId.slice(0, 12)}); every start and owner act but teamd resume is refused`
        : `stop --team ${team}: in force (flag ${flagId.slice(0, 12)}); every start and gated act of team ${team} is refused until teamd resume --team ${team} (other teams run on)`,
    ];
    if (daemon.answered) {
      out.push(`the daemon stopped ${daemon.stopped.length} seat(s)${daemon.stopped.map((s) => ` ${s.seat}@${s.team}`).join(",")}`);
      out.push(daemon.recorded ? `recorded: record ${daemon.seq}` : `not recorded yet (${daemon.reason}); it is appended, marked late, when the store returns`);
    } else {
      out.push(`the daemon did not answer within ${DAEMON_DEADLINE_MS / 1000} s (${daemon.error}); killing the seats from ${home.runDir}`);
    }
    if (byCli.length > 0) out.push(`killed by the CLI: ${byCli.map((k) => `${k.seat}@${k.team} (init pid ${k.initPid})`).join(", ")}`);
    out.push(`path: ${path}`);
    process.stdout.write(out.join("\n") + "\n");
  }
  if (problem) throw new Error(problem);
}
