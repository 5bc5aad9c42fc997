import { UsageError } from "../../src/rpc/errors.js";
import { setTimeout as sleep } from "node:timers/promises";
import { findCut, recordTypeFromName, toHex, type LedgerEntry } from "../../src/ledger/index.js";
import { RecordType, ScopeState } from "../../src/gen/teamd/v1/ledger_pb.js";
import { fitRow, terminalJson, terminalText } from "../host/terminal-text.js";
import { checkName } from "../host/names.js";
import type { Ambient } from "../host/ambient.js";
import { detailText, recordDetail } from "./log-detail.js";
import { isSeatRecord } from "../../src/ledger/entry.js";
import { entriesFrom, openLedgerReader, recordTime, sinceTime, tombstonesFrom, type TombstoneMark } from "./ledger-read.js";

function typeNames(): string {
  return Object.keys(RecordType)
    .filter((k) => Number.isNaN(Number(k)) && k !== "UNSPECIFIED")
    .map((k) => k.toLowerCase())
    .join(", ");
}

/**
 * Assent has provenance (§11): an owner act is on record only with the signature of the owner
 * key pinned at genesis, checked when it was appended and again by every verify — the tool
 * witnessed the key holder's assent. teamd records no told assent: an act reported by anyone
 * else (a seat's call on the control channel, another key, a replay) is refused and recorded
 * as a refusal, never as the owner's.
 */
function assent(e: LedgerEntry): "witnessed" | undefined {
  return e.signer === "owner" ? "witnessed" : undefined;
}

function line(e: LedgerEntry, mark?: TombstoneMark): string {
  const time = recordTime(e.timeUnixMs);
  const actor = assent(e) === "witnessed" ? `${e.actor} (witnessed)` : e.actor;
  const claimed = e.claimedName && e.actor !== e.claimedName ? `${actor} (claims ${e.claimedName})` : actor;
  // §9: the signer (whose authority) and a two-granter record's co-authorizer, where they are not the actor.
  const signedBy = e.signer !== "" && e.signer !== e.actor && e.signer !== "owner" ? ` (signer ${e.signer})` : "";
  const who = `${claimed}${signedBy}${e.coAuthorizer !== "" ? ` (co-authorized by ${e.coAuthorizer})` : ""}`;
  const cols = [
    String(e.seq).padStart(6),
    time,
    e.type.padEnd(10),
    (e.team || "-").padEnd(12),
    who.padEnd(14),
    e.action.padEnd(16),
    e.target || "-",
    e.result,
    e.late ? "(late)" : "",
    mark === undefined ? "" : `[tombstoned by record ${mark.by}: ${mark.reason}]`,
    e.error ? `!! ${e.error}` : "",
    detailText(e, recordDetail(e)),
  ];
  // A target, an action or an error can carry what a seat sent (a refused ref name): made visible, never played to the terminal.
  return cols
    .filter((c) => c !== "")
    .map(terminalText)
    .join("  ");
}

/**
 * §15's statement of an act where the record has it: the capability with the scope that
 * covered it, the exact input state (tree, team-file and lease-set hashes, hex), and the
 * artifact before and after ({none} where there is none).
 */
function statement(e: LedgerEntry): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const use = e.header?.capability;
  if (use !== undefined && use.capability !== "") {
    out.capabilityUsed = {
      capability: use.capability,
      scope: Object.fromEntries(use.scope.map((d) => [d.name, d.state === ScopeState.BOUNDED ? d.values : d.state === ScopeState.EMPTY ? [] : "*"])),
    };
  }
  const input = e.payload?.inputState;
  if (input !== undefined) {
    out.input = { tree: input.treeHash, teamFile: toHex(input.teamFileHash), leaseSet: toHex(input.leaseSetHash) };
  }
  for (const side of ["before", "after"] as const) {
    const id = e.payload?.[side]?.identity;
    if (id === undefined || id.case === undefined) continue;
    out[side] = id.case === "none" ? { none: true } : { [id.case]: id.value instanceof Uint8Array ? toHex(id.value) : id.value };
  }
  return out;
}

/** A record whose content a tombstone hides: its header's statement, and none of its payload. */
function stubOf(entry: LedgerEntry): LedgerEntry {
  return { ...entry, target: "", result: "", effectId: "", intentSeq: 0, payload: undefined };
}

function json(e: LedgerEntry, mark?: TombstoneMark): string {
  const { header: _h, payload, ...rest } = e;
  const witnessed = assent(e);
  // The payload's named fields as recorded (an exec's argv with credentials redacted, an egress
  // connection's address and bytes, a stop's run state): what the record says, nothing added.
  const fields = payload?.fields.length ? { fields: Object.fromEntries(payload.fields.map((f) => [f.key, f.value])) } : {};
  // The type's own detail: a refusal's rule and reason, an outcome's note (and a connection's bytes and time).
  const detail = recordDetail(e);
  return terminalJson(
    JSON.stringify({
      ...rest,
      ...fields,
      ...(detail ? { detail } : {}),
      ...statement(e),
      ...(witnessed === undefined ? {} : { assent: witnessed }),
      ...(mark === undefined ? {} : { tombstoned: { by: mark.by, reason: mark.reason } }),
    }),
  );
}

/**
 * `teamd log`: the records, oldest first, read-only (the daemon may be running: SQLite's
 * WAL lets a reader in beside the writer). --follow keeps printing what is appended.
 */
export interface LogOptions {
  readonly json?: boolean;
  readonly type?: string;
  readonly follow?: boolean;
  /** Only this team's records. */
  readonly team?: string;
  /** Only records of this seat: its acts (the actor) and the records about it (its target). */
  readonly seat?: string;
  /** Only records from this long ago (30m, 2h, 1d) or this time (RFC 3339) on. */
  readonly since?: string;
  /** Only the last N matching records (with --follow and no -n: the last 10, then what is appended). */
  readonly lines?: string;
}

/** With --follow and no -n: `tail -f`'s default, not the whole history first (issue 23). */
const FOLLOW_BACKLOG = 10;

export async function log(options: LogOptions, ambient: Ambient): Promise<void> {
  let type: RecordType | undefined;
  if (options.type !== undefined) {
    type = recordTypeFromName(options.type.toLowerCase());
    if (type === undefined) throw new UsageError(`unknown record type '${options.type}': choose from ${typeNames()}`);
  }
  const team = options.team === undefined ? undefined : checkName("team", options.team);
  const seat = options.seat === undefined ? undefined : checkName("seat", options.seat);
  const since = options.since === undefined ? undefined : sinceTime(options.since, ambient.now());
  const last = options.lines !== undefined ? lineCount(options.lines) : options.follow ? FOLLOW_BACKLOG : undefined;
  const matches = (entry: LedgerEntry) =>
    (type === undefined || entry.header?.type === type) &&
    (team === undefined || entry.team === team) &&
    (seat === undefined || isSeatRecord(entry, seat, team)) &&
    (since === undefined || entry.timeUnixMs >= since);
  const store = openLedgerReader();
  if (!options.json) {
    // After an archive the live store starts at its cut (§15 archival): say where the rest is.
    let cut;
    try {
      cut = findCut(store);
    } catch {
      cut = undefined; // teamd verify names a cut record that does not read
    }
    if (cut !== undefined)
      process.stderr.write(
        terminalText(
          `(the records before ${cut.cutSeq} are archived in ${cut.file}, but for ${cut.kept.size} the gate still reads; the log shows the live store)`,
        ) + "\n",
      );
  }
  let stopping = false;
  const stop = () => void (stopping = true);
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    const at = { next: 0 };
    // On a terminal each record is one visual row (cut at its width): a field cannot wrap into what looks like another record.
    const columns = process.stdout.isTTY ? process.stdout.columns : undefined;
    // A tombstoned record shows its stub (§15): its header, and which tombstone hid its content, why.
    const hidden = tombstonesFrom(store, 0);
    const show = (entry: LedgerEntry) => {
      const mark = hidden.get(entry.seq);
      const shown = mark === undefined ? entry : stubOf(entry);
      process.stdout.write((options.json ? json(shown, mark) : fitRow(line(shown, mark), columns)) + "\n");
    };
    const print = (keep?: number) => {
      // -n: the last `keep` matching records of what is there now, in order (one pass, a ring of them).
      const held: LedgerEntry[] = [];
      for (const entry of entriesFrom(store, at.next, at)) {
        if (!matches(entry)) continue;
        if (keep === undefined) show(entry);
        else {
          held.push(entry);
          if (held.length > keep) held.shift();
        }
      }
      for (const entry of held) show(entry);
    };
    print(last);
    while (options.follow && !stopping) {
      await sleep(300);
      tombstonesFrom(store, at.next, hidden);
      print();
    }
  } finally {
    store.close();
    process.removeListener("SIGINT", stop);
    process.removeListener("SIGTERM", stop);
  }
}

function lineCount(text: string): number {
  if (!/^\d{1,9}$/.test(text)) throw new UsageError(`-n takes a number of records, not '${text}'`);
  return Number(text);
}
