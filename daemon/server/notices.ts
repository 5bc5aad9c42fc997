import { spawn } from "node:child_process";
import { RecordType } from "../../src/gen/teamd/v1/ledger_pb.js";
import { daemonPrincipal, type Ledger, type LedgerEntry } from "../../src/ledger/index.js";
import { describeError } from "../../src/ledger/errors.js";
import type { NotifyHook } from "../host/notify-config.js";

/**
 * Being told (§11): every change to what a team may do becomes a notice record, delivered
 * unasked — `teamd notices` shows the ones the owner has not seen, and the owner's hook
 * command (notify-config.ts) runs once for each.
 *
 * What counts: a policy applied, a lease issued to a seat, a lease or grant revoked, a stop and a resume, a head or
 * outcome reconciled, an outcome left unknown, a refusal of an owner act, and a seat's run
 * that ended by itself. A notice names the record it is about (field `about`), so it can be
 * checked against the chain; a notice is never about a notice.
 */
export interface Notice {
  readonly subject: string;
  readonly text: string;
}

/** A lease's scope in its notice: enough to recognise, bounded (the full scope is in its record). */
const NOTICE_SCOPE_CHARS = 200;

const FIELD = (entry: LedgerEntry, key: string): string => entry.payload?.fields.find((f) => f.key === key)?.value ?? "";

/**
 * The notice a committed record calls for, if any (pure: the record decides). `floors`: for a
 * policy, the minimums it leaves unmet as the daemon counted them when it was recorded (§5:
 * the owner's narrowing commits and pauses, and the owner is told).
 */
export function noticeFor(entry: LedgerEntry, floors: readonly string[] = []): Notice | undefined {
  const team = entry.team ? `team ${entry.team}` : "this machine";
  switch (entry.type) {
    case "team": {
      if (entry.action !== "team.create") return undefined;
      // §10: a create is the creating seat's act, never the owner's; the owner is told of every one.
      const detail = entry.payload?.detail.case === "team" ? entry.payload.detail.value : undefined;
      return {
        subject: `team created (${team})`,
        text: `seat ${entry.signer} of team ${detail?.parent ?? "?"} created ${team} at ${detail?.repository ?? "?"} (record ${entry.seq}); its policy is that seat's act, never yours: read its teamd.yaml there, and teamd apply it to make it yours`,
      };
    }
    case "policy":
      // A created team's first policy is told with its team record.
      if (entry.action === "policy.create") return undefined;
      if (entry.action === "policy.rebind")
        return {
          subject: `seat rebound (${team})`,
          text: `the owner rebound ${entry.target.replace(/^seat:/, "seat ")} to another lab (record ${entry.seq}); the leases that rested on the old binding were revoked`,
        };
      if (entry.action === "policy.abandon")
        return {
          subject: `team abandoned (${team})`,
          text: `the owner abandoned ${team}: it has no leads, and every live lease in it was revoked (record ${entry.seq})`,
        };
      return {
        subject: `policy applied (${team})${floors.length > 0 ? `: ${floors.length} floor(s) unmet, acts paused` : ""}`,
        text: `the owner applied a team file: record ${entry.seq} is the policy in force for ${team}${floors.map((f) => `; floor unmet: ${f}`).join("")}`,
      };
    case "lease": {
      // A lease to a seat changes what the team may do (§11): who gave what to whom, until when.
      const detail = entry.payload?.detail.case === "lease" ? entry.payload.detail.value : undefined;
      const holder = detail?.holder?.seat ?? "?";
      const until = detail !== undefined ? new Date(Number(detail.expiresUnixMs)).toISOString() : "?";
      const scope = FIELD(entry, "scope");
      const shown = scope.length > NOTICE_SCOPE_CHARS ? `${scope.slice(0, NOTICE_SCOPE_CHARS)}…` : scope;
      const issuer = entry.actor === "owner" ? "the owner" : `seat ${FIELD(entry, "issuer") || entry.actor}`;
      return {
        subject: `lease issued (${team})`,
        text: `${issuer} leased ${FIELD(entry, "capability") || "a capability"} ${shown} to seat ${holder} until ${until} (${entry.target}, record ${entry.seq})`,
      };
    }
    case "grant":
    case "agreement": {
      // §10: a delegate changed the policy in force; the owner's file on disk no longer says all of it.
      const change = entry.payload?.detail.case === "policy" ? entry.payload.detail.value.change : "";
      const shown = change.length > NOTICE_SCOPE_CHARS ? `${change.slice(0, NOTICE_SCOPE_CHARS)}…` : change;
      const co = entry.coAuthorizer !== "" ? `, confirmed by ${entry.coAuthorizer}` : "";
      return {
        subject: `${entry.type === "grant" ? "delegated grant" : "same-copy agreement"} (${team})`,
        text: `${entry.signer}${co} changed the policy in force: ${shown} (record ${entry.seq}); teamd policy export writes it to your file, teamd apply --drop-delegated takes it back`,
      };
    }
    case "revocation":
      return {
        subject: `revoked (${team})`,
        text: `${entry.target || "an authority"} was revoked (record ${entry.seq}${entry.late ? ", recorded late: it held by its flag first" : ""})`,
      };
    case "stop":
      return {
        subject: `stop (${team})`,
        text: `${entry.signer === "owner" ? "the owner" : `leads (${entry.signer})`} stopped ${entry.team ? team : "every team on this machine"} (record ${entry.seq}${entry.late ? ", recorded late" : ""}); every start and gated act is refused until your teamd resume${entry.team ? ` --team ${entry.team}` : ""}`,
      };
    case "resume":
      return { subject: `resumed (${team})`, text: `the owner resumed (record ${entry.seq})` };
    case "reconcile":
      return { subject: `reconciled (${team})`, text: `a recovery decision was recorded: ${entry.result || "reconcile"} (record ${entry.seq})` };
    case "outcome":
      if (entry.result !== "unknown") return undefined;
      return {
        subject: `unknown outcome (${team})`,
        text: `intent ${entry.intentSeq} (${entry.action} ${entry.target}) has an unknown outcome; its target is blocked until teamd ledger resolve`,
      };
    case "refusal":
      if (entry.actor !== "owner") return undefined;
      return { subject: "owner act refused", text: `an owner act (${entry.action}) was refused: ${entry.result} (record ${entry.seq})` };
    case "seat_stop": {
      const reason = FIELD(entry, "reason");
      // Stopped by teamd for a bound it passed (the refusal budget, daemon/seat/pipeline.ts): once per run, like its stop.
      if (reason.startsWith("halted: ")) {
        const seat = entry.target.replace(/^seat:/, "");
        return {
          subject: `seat halted (${team})`,
          text: `teamd stopped seat ${seat}: ${reason} (record ${entry.seq}); ${
            FIELD(entry, "run_state") === "suspended"
              ? `its run is suspended, its handoff checkpoint in teamd checkpoint show ${seat}@${entry.team}`
              : "its refusals are in teamd log"
          }; it runs again when you start it (teamd start ${seat}@${entry.team})`,
        };
      }
      if (!reason.startsWith("the seat's command ended")) return undefined;
      return { subject: `seat halted (${team})`, text: `seat ${entry.target.replace(/^seat:/, "")} stopped by itself: ${reason} (record ${entry.seq})` };
    }
    default:
      return undefined;
  }
}

const UNTOLD_PAGE = 500;
/** How far back the start-up look goes at most (records): a bound on the daemon's start. */
const UNTOLD_MAX_SCAN = 100_000;

/**
 * The records after the last notice that call for one and have none, oldest first. The scan
 * goes back from the newest record to the record the newest notice is about (a notice is
 * appended after its record, and records may land between the two).
 */
export function untold(ledger: Pick<Ledger, "entries" | "view">): { entry: LedgerEntry; notice: Notice }[] {
  const noticed = new Set<number>();
  const candidates: { entry: LedgerEntry; notice: Notice }[] = [];
  let stopAt = 0;
  const last = ledger.view.lastSeq;
  for (let hi = last; hi >= 1 && hi > stopAt && last - hi < UNTOLD_MAX_SCAN; hi -= UNTOLD_PAGE) {
    const lo = Math.max(1, hi - UNTOLD_PAGE + 1);
    const page = ledger.entries(lo, hi - lo + 1);
    for (let i = page.length - 1; i >= 0; i--) {
      const entry = page[i] as LedgerEntry;
      if (entry.seq <= stopAt) break;
      if (entry.type === "notice") {
        const about = Number(FIELD(entry, "about"));
        if (!Number.isSafeInteger(about) || about <= 0) continue;
        noticed.add(about);
        if (stopAt === 0) stopAt = about;
        continue;
      }
      const notice = noticeFor(entry);
      if (notice) candidates.push({ entry, notice });
    }
  }
  return candidates.filter((c) => c.entry.seq > stopAt && !noticed.has(c.entry.seq)).reverse();
}

export interface NoticeService {
  /** Follow this ledger's appends (the daemon's ledger may be created or replaced while it runs). */
  attach(ledger: Ledger | undefined): void;
  /** Settles once every notice record and hook run started so far has finished. */
  idle(): Promise<void>;
  close(): void;
}

export interface NoticeDeps {
  /** The owner's hook as last loaded (undefined: none). */
  hook(): NotifyHook | undefined;
  log(line: string): void;
  /** The minimums a team's policy in force leaves unmet now, in words (told with a policy's notice). */
  unmetFloors?(ledger: Ledger, team: string): readonly string[];
}

const HOOK_TIMEOUT_MS = 10_000;
const HOOK_QUEUE_MAX = 1000;

export function createNoticeService(deps: NoticeDeps): NoticeService {
  let detach: (() => void) | undefined;
  let pending: Promise<void> = Promise.resolve();
  let queued = 0;

  function runHook(entry: LedgerEntry): Promise<void> {
    const hook = deps.hook();
    if (hook === undefined) return Promise.resolve();
    const notice = entry.payload?.detail.case === "notice" ? entry.payload.detail.value : undefined;
    if (!notice) return Promise.resolve();
    const json = JSON.stringify({
      seq: entry.seq,
      team: entry.team,
      about: Number(FIELD(entry, "about")) || undefined,
      subject: notice.subject,
      text: notice.text,
      time: new Date(entry.timeUnixMs).toISOString(),
    });
    return new Promise<void>((resolve) => {
      // argv only, never a shell; the notice on stdin and in three variables; none of the
      // daemon's own environment beyond PATH, HOME and the display a desktop notifier needs.
      const env: NodeJS.ProcessEnv = { TEAMD_NOTICE_SEQ: String(entry.seq), TEAMD_NOTICE_SUBJECT: notice.subject, TEAMD_NOTICE_TEXT: notice.text };
      for (const name of ["PATH", "HOME", "LANG", "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"])
        if (process.env[name] !== undefined) env[name] = process.env[name];
      let child;
      try {
        child = spawn(hook.command[0] as string, hook.command.slice(1), { env, stdio: ["pipe", "ignore", "pipe"], detached: true });
      } catch (error) {
        deps.log(`notice hook could not start: ${describeError(error)}`);
        return resolve();
      }
      let err = "";
      child.stderr?.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-500)));
      const timer = setTimeout(() => {
        // The hook's whole process group, by the pid we started: never by name.
        if (child.pid !== undefined) {
          try {
            process.kill(-child.pid, "SIGKILL");
          } catch {
            // Already gone.
          }
        }
      }, HOOK_TIMEOUT_MS);
      child.stdin?.on("error", () => undefined);
      child.stdin?.end(json + "\n");
      child.once("error", (error) => {
        clearTimeout(timer);
        deps.log(`notice hook ${hook.command[0]} failed: ${describeError(error)}`);
        resolve();
      });
      child.once("close", (code, signal) => {
        clearTimeout(timer);
        if (code !== 0) deps.log(`notice hook ${hook.command[0]} exited ${signal ?? code} for notice ${entry.seq}${err ? `: ${err.trim()}` : ""}`);
        resolve();
      });
    });
  }

  function enqueue(work: () => Promise<void>): void {
    // Notices are told in order, one hook at a time; a flood beyond the queue is logged, not
    // held in memory (the records are in the ledger either way: `teamd notices` shows them).
    if (queued >= HOOK_QUEUE_MAX) {
      deps.log("notice queue full: a notice was recorded but its hook not run");
      return;
    }
    queued++;
    pending = pending.then(work).finally(() => void queued--);
  }

  return {
    attach(ledger) {
      detach?.();
      detach = undefined;
      if (!ledger) return;
      const record = (entry: LedgerEntry, notice: Notice) =>
        enqueue(() =>
          ledger
            .append({
              type: RecordType.NOTICE,
              team: entry.team,
              actor: daemonPrincipal(),
              action: "notice",
              payload: { fields: [{ key: "about", value: String(entry.seq) }], detail: { case: "notice", value: notice } },
            })
            .then(
              () => undefined,
              (error: unknown) => deps.log(`notice for record ${entry.seq} not recorded: ${describeError(error)}`),
            ),
        );
      detach = ledger.onAppend((entries) => {
        for (const entry of entries) {
          if (entry.type === "notice") {
            if (FIELD(entry, "about") !== "") enqueue(() => runHook(entry));
            continue;
          }
          const floors = entry.type === "policy" && entry.team ? (deps.unmetFloors?.(ledger, entry.team) ?? []) : [];
          const notice = noticeFor(entry, floors);
          if (notice) record(entry, notice);
        }
      });
      // What was recorded while no daemon told: acts made with the daemon down (the owner's
      // CLI records them directly in user mode), and a notice the last daemon died before
      // recording. Told now, saying it is late.
      if (ledger.state.status === "ready") {
        try {
          const missed = untold(ledger);
          if (missed.length > 0) deps.log(`telling ${missed.length} notice(s) recorded while no daemon told`);
          for (const { entry, notice } of missed)
            record(entry, { subject: notice.subject, text: `${notice.text} (told late: no daemon was running to tell it when it was recorded)` });
        } catch (error) {
          deps.log(`could not look for untold notices: ${describeError(error)}`);
        }
      }
    },
    idle: async () => {
      while (queued > 0) await pending;
    },
    close() {
      detach?.();
      detach = undefined;
    },
  };
}
