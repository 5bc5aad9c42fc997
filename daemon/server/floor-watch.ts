import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { daemonPrincipal, type Ledger } from "../../src/ledger/index.js";
import { describeError } from "../../src/ledger/errors.js";

/**
 * Being told when a floor breaks between owner acts (§5, §11): a lease's expiry can leave a
 * minimum unmet with no record to hang a notice on — the kernel pauses the acts it gates at
 * their next decision (constraint.paused), and this watch tells the owner, once per episode.
 *
 * Every `intervalMs` it asks, per team with a policy in force, which minimums are unmet now
 * (standing plus live leases, `unmetFloors`). A floor unmet now and not at the last look is
 * told as a notice about the policy record in force; one met again is forgotten, so a later
 * break is told again. Under a new policy record the floors it leaves unmet are taken as told
 * (its own notice names them, notices.ts). When the daemon starts, a floor unmet then is told
 * unless a notice since the policy record already names it — so a lease that expired while the
 * daemon was down is told at the next start, and a restart repeats nothing. Cheap when no team
 * has a minimum: one policy read per team.
 */
export interface FloorWatch {
  /** One look now (the tests' clock need not wait for the interval). */
  check(): Promise<void>;
  close(): void;
}

interface TeamState {
  readonly policySeq: number;
  readonly unmet: Set<string>;
}

/** How many notices the start-up look reads back at most, per team: a bound on the daemon's start. */
const START_LOOK_NOTICES = 10_000;

/** The texts of the team's notices from the policy record on (the policy's own notice names its unmet floors). */
function noticesSince(ledger: Ledger, team: string, policySeq: number): string {
  const texts: string[] = [];
  for (let at = policySeq, read = 0; read < START_LOOK_NOTICES;) {
    const page = ledger.entries(at, 500, RecordType.NOTICE);
    if (page.length === 0) break;
    for (const entry of page) {
      read++;
      at = entry.seq + 1;
      const detail = entry.payload?.detail;
      if (entry.team === team && detail?.case === "notice") texts.push(detail.value.text);
    }
  }
  return texts.join("\n");
}

export function watchFloors(options: {
  readonly ledger: () => Ledger | undefined;
  /** The floors a team's policy in force leaves unmet now, in words (daemon/owner/leases.ts unmetFloors). */
  readonly unmetFloors: (ledger: Ledger, team: string) => readonly string[];
  readonly log: (line: string) => void;
  readonly intervalMs?: number;
}): FloorWatch {
  const teams = new Map<string, TeamState>();
  let busy = false;

  const look = (ledger: Ledger, first: boolean): { team: string; policySeq: number; floor: string }[] => {
    const told: { team: string; policySeq: number; floor: string }[] = [];
    for (const { team } of ledger.view.teams()) {
      const inForce = ledger.view.policy(team);
      if (inForce === undefined) continue;
      let unmet: readonly string[];
      try {
        unmet = options.unmetFloors(ledger, team);
      } catch {
        continue; // the policy cannot be read now: status says so, and no act of the team runs
      }
      const before = teams.get(team);
      const now = new Set(unmet);
      // A new policy's floors are told by its own notice; at start, what no notice since the policy named.
      if (first) {
        const named = now.size === 0 ? "" : noticesSince(ledger, team, inForce.seq);
        for (const floor of now) if (!named.includes(floor)) told.push({ team, policySeq: inForce.seq, floor });
      } else if (before !== undefined && before.policySeq === inForce.seq)
        for (const floor of now) if (!before.unmet.has(floor)) told.push({ team, policySeq: inForce.seq, floor });
      teams.set(team, { policySeq: inForce.seq, unmet: now });
    }
    return told;
  };

  // The first look that finds the ledger ready is the start-up look (the ledger may open late).
  let looked = false;
  const check = async (): Promise<void> => {
    const ledger = options.ledger();
    if (busy || ledger === undefined || ledger.state.status !== "ready") return;
    busy = true;
    try {
      const first = !looked;
      looked = true;
      for (const { team, policySeq, floor } of look(ledger, first)) {
        await ledger
          .append({
            type: RecordType.NOTICE,
            team,
            actor: daemonPrincipal(),
            action: "notice",
            payload: {
              fields: [{ key: "about", value: String(policySeq) }],
              detail: {
                case: "notice",
                value: {
                  subject: `floor unmet (team ${team}): acts paused`,
                  text: `a floor of the policy in force (record ${policySeq}) is unmet now — a lease expired or was revoked: ${floor}`,
                },
              },
            },
          })
          .catch((error: unknown) => options.log(`could not record a floor notice for team ${team}: ${describeError(error)}`));
      }
    } catch (error) {
      options.log(`floor watch: ${describeError(error)}`);
    } finally {
      busy = false;
    }
  };

  void check();
  const timer = setInterval(() => void check(), options.intervalMs ?? 5_000);
  timer.unref();
  return {
    check: () => check(),
    close: () => clearInterval(timer),
  };
}
